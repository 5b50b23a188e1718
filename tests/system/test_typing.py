"""The package's types (it ships py.typed) pass mypy, and the shell completion Typer gives works."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_passes_mypy():
    pytest.importorskip("mypy")
    assert (ROOT / "bpecli" / "py.typed").is_file()
    done = subprocess.run([sys.executable, "-m", "mypy", "bpecli"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bash_completion_offers_commands_and_choices():
    bpecli = shutil.which("bpecli", path=os.path.dirname(sys.executable)) or shutil.which("bpecli")
    if bpecli is None:
        pytest.skip("the bpecli command is not installed")

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_BPECLI_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        return subprocess.run([bpecli], env=env, capture_output=True, text=True, check=True).stdout.split()

    assert complete("bpecli tr") == ["train"]
    assert complete("bpecli encode --shard-format ") == ["npy", "llmc", "nanogpt"]
