"""The conventions every command keeps: -h and --help, one metavar style, examples in the help,
out-of-range values as usage errors (exit 2, as the README's table says), one rendering of a
token, counts in words, one throughput, and bench's peer on --workers threads."""

import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from bpecli.cli import app

runner = CliRunner()

COMMANDS = ["train", "encode", "decode", "inspect", "bench"]


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def click_command(name):
    return typer.main.get_command(app).commands[name]


def out_of_range(tmp_path, vocab):
    text = tmp_path / "in.txt"
    text.write_text("hello world", encoding="utf-8")
    train = ["train", text, "--out", tmp_path / "tok"]
    encode = ["encode", "-t", vocab, text, "--out", tmp_path / "shards"]
    return {
        "vocab-size below 256": [*train, "--vocab-size", 255],
        "vocab-size past 32-bit ids": [*train, "--vocab-size", 2**31],
        "workers 0": [*train, "--vocab-size", 300, "--workers", 0],
        "min-frequency negative": [*train, "--vocab-size", 300, "--min-frequency", -1],
        "shard-tokens 0": [*encode, "--shard-tokens", 0],
        "val-fraction 1.5": [*encode, "--val-fraction", 1.5],
        "val-fraction 0": [*encode, "--val-fraction", 0],
        "val-fraction 1": [*encode, "--val-fraction", 1],
        "llmc shard past int32": [*encode, "--shard-format", "llmc", "--shard-tokens", 2**31],
        "bench repeat 0": ["bench", "-t", vocab, text, "--repeat", 0],
        "bench workers 0": ["bench", "-t", vocab, text, "--workers", 0],
    }

CASES = ["vocab-size below 256", "vocab-size past 32-bit ids", "workers 0", "min-frequency negative", "shard-tokens 0",
         "val-fraction 1.5", "val-fraction 0", "val-fraction 1", "llmc shard past int32", "bench repeat 0", "bench workers 0"]


def shown(token: bytes) -> str:
    """How the issue asks a token to show: a space as ␣, a newline and a tab as \\n and \\t, other
    characters as they are (written out here, not taken from bpecli)."""
    return token.decode("utf-8").replace(" ", "\u2423").replace("\n", "\\n").replace("\t", "\\t")


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
