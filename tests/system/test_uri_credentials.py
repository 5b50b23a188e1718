"""Credentials in a URI never reach stderr, whatever the URI was given as (an input, a tokenizer,
a shard folder to inspect) and whichever error reports it (bpecli's own, or a usage error); and
redacting them leaves the rest of the URI (bucket, key) as the user wrote it."""

import subprocess
import sys

import pytest

SECRET = "SeCrEtKeY0123"

URI = f"s3://AKIAKEY:{SECRET}@bucket/tok"


def _bpecli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "bpecli", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.system
@pytest.mark.parametrize("args", [
    ["encode", "-t", URI, "x.txt"],
    ["decode", "-t", URI, "x.txt"],
    ["bench", "-t", URI, "x.txt"],
    ["inspect", URI],
    ["inspect", "--compare", URI, URI + "2"],
    ["inspect", URI, "--verify"],  # a usage error, printed by click
    ["inspect", URI, "--text", "a", "--report", "r.html"],
])
def test_a_uri_given_as_a_tokenizer_keeps_its_credentials_out_of_errors(tmp_path, args):
    (tmp_path / "x.txt").write_text("hello\n")
    done = _bpecli(*args, cwd=tmp_path)
    assert done.returncode in (1, 2)
    assert SECRET not in done.stderr and "AKIAKEY" not in done.stderr, done.stderr
    assert "s3://***@bucket/tok" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
