"""Messages that say what is true: a journal or manifest that no longer parses is named as
damaged (never as a stranger's file); a journal whose part list was extended says it may be the
journal that changed; a pattern error names where the pattern came from only where that is known;
an unknown id is said one way, from ids and from a shard alike."""

import subprocess
import sys

import numpy as np
import pytest


BPECLI = [sys.executable, "-m", "bpecli"]


@pytest.mark.system
def test_encode_with_a_catastrophic_pattern_does_not_blame_the_tokenizers_own(gpt2_vocab, tmp_path):
    (tmp_path / "x.txt").write_text("a" * 40 + "b\n")
    done = subprocess.run([*BPECLI, "encode", "-t", str(gpt2_vocab), "--pattern", r"(?:a|aa)+$|[\s\S]", str(tmp_path / "x.txt")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "backtracks catastrophically" in done.stderr and "tokenizer's pattern" not in done.stderr


@pytest.mark.system
def test_decode_of_a_shard_of_another_dtype_than_its_manifest_says_is_refused(gpt2_vocab, tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n" * 50)
    out = tmp_path / "shards"
    subprocess.run([*BPECLI, "encode", "-t", str(gpt2_vocab), str(tmp_path / "a.txt"), "--out", str(out), "-q"], check=True)
    shard = out / "shard_00000.npy"
    good = subprocess.run([*BPECLI, "decode", "-t", str(gpt2_vocab), str(shard)], capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout.startswith("hello world"), good.stderr
    np.save(shard, np.load(shard).astype(np.int64))  # the same ids, in a dtype the manifest does not say
    done = subprocess.run([*BPECLI, "decode", "-t", str(gpt2_vocab), str(shard)], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "holds int64 ids where the manifest says uint16; encode again with --force" in done.stderr
