"""Inputs on object storage (s3://bucket/key) read as local files are: the same merges, the same
shards, the same one-line errors. A local S3-compatible server (moto's) runs on 127.0.0.1 for the
module; the endpoint comes from AWS_ENDPOINT_URL, as for the AWS tools, or from the URI's query."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpecli.shards import write_shards
from bpecli.training import train

moto_server = pytest.importorskip("moto.server")

BUCKET = "corpora"


@pytest.fixture(scope="module")
def s3(tmp_path_factory, kernel_docs_sample):
    """The server, the AWS environment pointing at it, and the corpus uploaded three ways."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        from pyarrow import fs

        storage = fs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="test", secret_key="test",
                                  region="us-east-1", allow_bucket_creation=True)
        storage.create_dir(BUCKET)
        local = tmp_path_factory.mktemp("local")
        files = _corpus_files(local, kernel_docs_sample)
        for path in files.values():
            with storage.open_output_stream(f"{BUCKET}/{path.name}", compression=None) as out:
                out.write(path.read_bytes())
        yield {"env": env, "files": files, "host": f"{host}:{port}"}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


def _corpus_files(folder: Path, text: str) -> dict[str, Path]:
    import pyarrow as pa
    from pyarrow import parquet

    documents = text.split("<|endoftext|>")
    txt = folder / "docs.txt"
    txt.write_text(text, encoding="utf-8")
    jsonl = folder / "docs.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": d}) + "\n" for d in documents)
    table = folder / "docs.parquet"
    parquet.write_table(pa.table({"text": documents}), table, row_group_size=100)
    return {"txt": txt, "jsonl": jsonl, "parquet": table}


def uri(name: str) -> str:
    return f"s3://{BUCKET}/{name}"


def test_training_on_s3_inputs_equals_the_local_file(s3):
    local = train([s3["files"]["txt"]], vocab_size=500, special_tokens=["<|endoftext|>"])
    for path in s3["files"].values():
        assert train([uri(path.name)], vocab_size=500, special_tokens=["<|endoftext|>"]).merges == local.merges


def test_the_endpoint_may_come_from_the_uri_query(s3, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    local = train([s3["files"]["txt"]], vocab_size=400, special_tokens=["<|endoftext|>"])
    query = f"?endpoint_override={s3['host']}&scheme=http"
    assert train([uri("docs.txt") + query], vocab_size=400, special_tokens=["<|endoftext|>"]).merges == local.merges


def test_shards_of_s3_inputs_equal_the_local_ones(s3, gpt2, tmp_path):
    for kind, path in s3["files"].items():
        write_shards(gpt2, [str(path)], tmp_path / f"local-{kind}", shard_tokens=60_000)
        write_shards(gpt2, [uri(path.name)], tmp_path / f"s3-{kind}", shard_tokens=60_000, workers=2)
        local = {p.name: p.read_bytes() for p in (tmp_path / f"local-{kind}").glob("*.npy")}
        assert local and {p.name: p.read_bytes() for p in (tmp_path / f"s3-{kind}").glob("*.npy")} == local
        manifest = json.loads((tmp_path / f"s3-{kind}" / "manifest.json").read_text())
        assert manifest["inputs"][0]["path"] == uri(path.name) and manifest["inputs"][0]["size"] == path.stat().st_size


def test_the_commands_read_s3(s3, gpt2_vocab, tmp_path):
    def bpecli(*args):
        return subprocess.run([sys.executable, "-m", "bpecli", *map(str, args)], capture_output=True, text=True,
                              env={**os.environ, **s3["env"]})

    done = bpecli("encode", "-t", gpt2_vocab, uri("docs.txt"), "-f", "count")
    local = bpecli("encode", "-t", gpt2_vocab, s3["files"]["txt"], "-f", "count")
    assert done.returncode == 0 and done.stdout == local.stdout
    done = bpecli("train", uri("docs.parquet"), "--vocab-size", 300, "--out", tmp_path / "tok", "-q")
    assert done.returncode == 0, done.stderr
    missing = bpecli("train", uri("nothing.txt"), "--vocab-size", 300, "--out", tmp_path / "tok2")
    assert missing.returncode == 1
    assert missing.stderr == f"bpecli: error: {uri('nothing.txt')}: no such object\n"
