"""The conventions every command keeps: -h and --help, one metavar style, examples in the help,
out-of-range values as usage errors (exit 2, as the README's table says), one rendering of a
token, counts in words, one throughput, and bench's peer on --workers threads."""

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from bpecli.cli import app

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.mark.system
def test_the_exit_codes_the_readme_promises(gpt2_vocab, tmp_path):
    """0 done, 1 bad input, 2 a usage error or a value out of range: each one line on stderr."""
    def bpecli(*args, input=""):
        return subprocess.run([sys.executable, "-m", "bpecli", *map(str, args)], input=input, capture_output=True,
                              text=True, timeout=120)

    readme = (__import__("pathlib").Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    promised = dict(re.findall(r"^\| ([0-9]+) \| (.*) \|$", readme, re.M))
    assert {"0", "1", "2"} <= set(promised)
    done = bpecli("encode", "-t", gpt2_vocab, input="hello world")
    assert done.returncode == 0 and done.stdout == "31373 995\n"
    for args, status in (
        (["encode", "-t", gpt2_vocab, tmp_path / "missing.txt"], 1),
        (["encode", "-t", gpt2_vocab, "--no-such-option"], 2),
        (["encode", "-t", gpt2_vocab, "--out", tmp_path / "s", "--val-fraction", "1.5"], 2),
        (["train", "-", "--vocab-size", "255", "--out", tmp_path / "t"], 2),
    ):
        failed = bpecli(*args, input="hello")
        assert failed.returncode == status, (args, failed.stderr)
        assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr, failed.stderr


@pytest.mark.system
@pytest.mark.parametrize("workers", [1, 3])
def test_bench_against_tokenizers_runs_on_workers_threads(gpt2_vocab, workers):
    """tokenizers encodes a batch on rayon's threads: --workers of them, counted in /proc."""
    pytest.importorskip("tokenizers")
    code = (
        "import os, sys\n"
        "from bpecli import Tokenizer\n"
        "from bpecli.bench import peer_encoder\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        f"encode, _ = peer_encoder('tokenizers', Tokenizer.load({str(gpt2_vocab)!r}), {workers})\n"
        "encode(['hello world %d' % i for i in range(5000)])\n"
        "print(len(os.listdir('/proc/self/task')) - before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in __import__("os").environ.items() if k != "RAYON_NUM_THREADS"})
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == workers
