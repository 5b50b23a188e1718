"""Credentials in a URI never reach stderr, whatever the URI was given as (an input, a tokenizer,
a shard folder to inspect) and whichever error reports it (bpecli's own, or a usage error); and
redacting them leaves the rest of the URI (bucket, key) as the user wrote it."""

from bpecli.inputs.sources import redact

SECRET = "SeCrEtKeY0123"

URI = f"s3://AKIAKEY:{SECRET}@bucket/tok"


def test_userinfo_is_only_what_comes_right_after_the_scheme():
    assert redact("s3://bucket/logs/user@example.com/a.jsonl: no such object") == "s3://bucket/logs/user@example.com/a.jsonl: no such object"
    assert redact("s3://b1/x@v2.txt") == "s3://b1/x@v2.txt"
    assert redact("http://host:8080/u@x.txt") == "http://host:8080/u@x.txt"
    assert redact("hdfs://u@host:9000/p@q") == "hdfs://***@host:9000/p@q"


def test_credentials_are_hidden_however_the_uri_is_written():
    assert redact(f"s3:/AKIAKEY:{SECRET}@bucket/tok: no such file") == "s3:/***@bucket/tok: no such file"  # as pathlib writes it
    assert redact(f"s3://AKIAKEY:{SECRET}/x+y@bucket/a.txt") == "s3://***@bucket/a.txt"  # a "/" left unencoded
