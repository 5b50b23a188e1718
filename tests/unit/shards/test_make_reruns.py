"""encode --out --force as Make needs it: the same run is resumed or kept, anything else rebuilt,
and examples/Makefile runs as a data-prep step with no hand step."""

import json
import os

import numpy as np
import pytest

from bpecli.inputs import parts as input_parts
from bpecli.shards import verify, write_shards

from conftest import Interrupt

EOT = 50256


def concatenated(folder) -> np.ndarray:
    return np.concatenate([np.load(p) for p in sorted(folder.glob("shard_*.npy"))])


@pytest.fixture
def corpus(tmp_path, kernel_docs_sample, monkeypatch):
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 14)
    path = tmp_path / "corpus.txt"
    path.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    return path


def test_force_resumes_an_interrupted_run_of_the_same_settings(gpt2, tiktoken_gpt2, corpus, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(corpus)], out, shard_tokens=5000, eot=EOT, progress=Interrupt(after=8))
    kept = {p.name: p.stat().st_mtime_ns for p in out.glob("shard_*.npy")}
    assert len(kept) > 2
    run = write_shards(gpt2, [str(corpus)], out, shard_tokens=5000, eot=EOT, force=True)
    assert run.status == "resumed" and run.kept_shards >= len(kept) - 1
    # its throughput counts what it wrote, not the shards it kept
    assert run.n_tokens == run.manifest["total_tokens"] - sum(s["tokens"] for s in run.manifest["shards"][:run.kept_shards])
    expected = []
    for document in corpus.read_text(encoding="utf-8").split("<|endoftext|>"):
        if document:
            expected += tiktoken_gpt2.encode_ordinary(document) + [EOT]
    assert concatenated(out).tolist() == expected
    assert verify(out) == []


def test_force_rebuilds_an_interrupted_run_of_other_settings(gpt2, tiktoken_gpt2, corpus, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(corpus)], out, shard_tokens=5000, eot=EOT, progress=Interrupt(after=8))
    run = write_shards(gpt2, [str(corpus)], out, shard_tokens=7000, eot=EOT, force=True)
    assert run.status == "written" and run.kept_shards == 0
    assert all(s["tokens"] <= 7000 for s in run.manifest["shards"]) and verify(out) == []


def test_force_keeps_a_finished_run_of_the_same_settings_and_marks_it_current(gpt2, corpus, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT)
    shards = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.glob("shard_*")}
    os.utime(out / "manifest.json", ns=(1, 1))  # as if older than the inputs, to Make
    run = write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT, force=True)
    assert run.status == "complete"
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.glob("shard_*")} == shards
    assert (out / "manifest.json").stat().st_mtime_ns >= corpus.stat().st_mtime_ns


def test_force_rebuilds_a_finished_run_whose_shard_was_changed(gpt2, corpus, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT)
    whole = concatenated(out)
    data = bytearray((out / "shard_00001.npy").read_bytes())
    data[-5] ^= 1
    (out / "shard_00001.npy").write_bytes(bytes(data))
    assert verify(out) != []
    run = write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT, force=True)
    assert run.status == "written" and verify(out) == [] and concatenated(out).tolist() == whole.tolist()


def test_force_rebuilds_a_finished_run_whose_input_changed(gpt2, corpus, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT)
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("one more document<|endoftext|>")
    run = write_shards(gpt2, [str(corpus)], out, shard_tokens=50_000, eot=EOT, force=True)
    assert run.status == "written" and verify(out) == []
    assert json.loads((out / "manifest.json").read_text())["inputs"][0]["size"] == corpus.stat().st_size
