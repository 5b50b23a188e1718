"""Plain `encode` and `decode` read their input a block at a time: stdin past the 64 MiB budget
for one document is encoded when it has places to cut, an ids file of any size is decoded, and
encode -> decode gives back the bytes of a text past the budget; only a stream with no cut in
64 MiB (/dev/zero) is refused."""

import gzip
import subprocess
import sys

import pytest

from conftest import CORPUS

from bpecli.folders import file_sha256

BPECLI = [sys.executable, "-m", "bpecli"]



@pytest.fixture(scope="module")
def tok(fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "tok"
    subprocess.run([*BPECLI, "train", str(fixtures / "tinystories_sample.txt"), "--vocab-size", "400", "--special",
                    "<|endoftext|>", "--out", str(out), "-q", "--workers", "1"], check=True)
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Real text past the 64 MiB budget: the kernel docs, end to end until 70 MB or more."""
    if not CORPUS.exists():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    text = gzip.decompress(CORPUS.read_bytes())
    path = tmp_path_factory.mktemp("big") / "big.txt"
    with open(path, "wb") as f:
        for _ in range(-(-70_000_000 // len(text))):
            f.write(text)
    return path


@pytest.mark.system
def test_encode_of_stdin_over_the_budget_and_decode_of_its_ids_give_back_the_text(tok, big, tmp_path):
    ids = tmp_path / "ids.txt"
    with open(big, "rb") as stdin, open(ids, "wb") as stdout:
        done = subprocess.run([*BPECLI, "encode", "-t", str(tok)], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert ids.stat().st_size > 64 << 20  # the ids file is past the budget too
    back = tmp_path / "back.txt"
    with open(back, "wb") as stdout:
        done = subprocess.run([*BPECLI, "decode", "-t", str(tok), str(ids)], stdout=stdout, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert file_sha256(back) == file_sha256(big)


@pytest.mark.system
def test_stdin_with_no_cut_in_64_mib_is_refused_in_one_line(tok):
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([*BPECLI, "encode", "-t", str(tok)], stdin=zero, capture_output=True, timeout=300)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode().startswith("bpecli: error: <stdin>: over 64 MiB") and len(done.stderr.splitlines()) == 1
