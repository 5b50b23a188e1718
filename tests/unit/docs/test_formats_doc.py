"""docs/formats.md describes the files bpecli writes: every field of a real bpecli.json and
manifest.json is documented there, and a reader written from the document alone (the llm.c header,
the document index, the validation rule) agrees with a real shard folder."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

import bpecli
from bpecli.shards import write_shards

ROOT = Path(__file__).resolve().parents[3]
FORMATS = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
DOCS = ROOT / "examples" / "docs.jsonl"


def _documented(table_title: str) -> set[str]:
    """The field names in the first column of the table under a heading."""
    section = FORMATS.split(table_title, 1)[1].split("\n#", 1)[0]
    return {name for row in re.findall(r"^\| (.+?) \|", section, re.M) for name in re.findall(r"`([a-z_0-9]+)`", row)}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats")
    bpecli.train([str(DOCS)], vocab_size=400, special_tokens=["<|endoftext|>"]).save(base / "tok")
    tok = bpecli.Tokenizer.load(base / "tok")
    write_shards(tok, [str(DOCS)], base / "llmc", shard_tokens=5000, shard_format="llmc", val_fraction=0.2,
                 eot=tok.special_tokens["<|endoftext|>"])
    return base


def test_every_bpecli_json_field_is_documented(folders):
    written = json.loads((folders / "tok" / "bpecli.json").read_text(encoding="utf-8"))
    assert set(written) <= _documented("### `bpecli.json`")


def test_every_manifest_field_is_documented(folders):
    manifest = json.loads((folders / "llmc" / "manifest.json").read_text(encoding="utf-8"))
    documented = _documented("### `manifest.json`")
    assert set(manifest) <= documented
    assert set(manifest["tokenizer"]) | set(manifest["shards"][0]) | set(manifest["read"][0]) <= set(
        re.findall(r"`([a-z_0-9]+)`", FORMATS))


def test_a_reader_written_from_the_document(folders):
    out = folders / "llmc"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    eot = manifest["eot"]["id"]
    texts = [json.loads(line)["text"] for line in DOCS.read_text(encoding="utf-8").splitlines()]
    limit = int(manifest["val_fraction"] * 2**64)
    val = [t for t in texts if t and int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") < limit]
    assert manifest["splits"]["val"]["documents"] == len(val) > 0
    for shard in manifest["shards"]:
        data = (out / shard["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard["sha256"]
        header = np.frombuffer(data[:1024], dtype="<i4")
        magic, version, count = header[:3]
        dtype = {(20240520, 1): "<u2", (20240801, 7): "<u4"}[(int(magic), int(version))]
        assert np.dtype(dtype).name == manifest["dtype"] and not header[3:].any()
        tokens = np.frombuffer(data[1024:], dtype=dtype)
        assert len(tokens) == count == shard["tokens"]
        starts = np.load(out / shard["index"])
        assert starts.dtype == np.dtype("<i8") and np.all(np.diff(starts) > 0)
        # without bos, the token before every document's start is the eot that ended the one before
        assert all(tokens[s - 1] == eot for s in starts if s > 0)
        assert int((tokens == eot).sum()) == shard["documents"]
