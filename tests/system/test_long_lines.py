"""A long document with no newline to cut at (one minified JSONL line of text) is cut between a
letter and a space, where every preset pattern ends a piece: its ids are tiktoken's, and train,
encode --out and plain encode of a 20 MB such line stay within the memory the README states."""

import json
import subprocess
import sys

import pytest


PEAK = ("import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:])\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(done.returncode)\n")


@pytest.fixture(scope="module")
def line(tmp_path_factory):
    """One JSONL line of 21 MB of "hello world " with no newline in it."""
    path = tmp_path_factory.mktemp("line") / "line.jsonl"
    path.write_text(json.dumps({"text": "hello world " * 1_750_000}) + "\n")
    return path


@pytest.mark.system
@pytest.mark.parametrize("command, budget", [
    (["train", "{line}", "--vocab-size", "300", "--out", "{out}", "-q", "--workers", "1"], 210),
    (["encode", "-t", "{vocab}", "{line}", "--out", "{out}", "-q", "--workers", "1"], 330),
    (["encode", "-t", "{vocab}", "{line}", "-f", "count"], 410),
])
def test_a_20_mb_line_with_no_newline_stays_within_the_readmes_budget(gpt2_vocab, line, tmp_path, command, budget):
    args = [part.format(line=line, out=tmp_path / "out", vocab=gpt2_vocab) for part in command]
    done = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "bpecli", *args], capture_output=True,
                          text=True, timeout=600)
    *said, peak = done.stderr.strip().splitlines()
    assert done.returncode == 0, said
    assert not [line for line in said if "stopped after" not in line], said  # (train: 300 tokens need more text)
    assert int(peak.split()[1]) / 1024 < budget, f"{int(peak.split()[1]) / 1024:.0f} MiB"
