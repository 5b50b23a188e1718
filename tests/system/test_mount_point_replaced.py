"""A tokenizer folder that cannot be renamed (a tmpfs mounted on it) has its files replaced one by
one: a kill -9 between any two of those steps leaves a folder bpecli loads as the old tokenizer or
the new one, whatever file it is loaded through, or refuses in one line; where bpecli loads it,
Hugging Face's tokenizers and transformers read the same tokenizer from it."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpecli import BpecliError, Tokenizer
from bpecli.formats import TOKENIZER_FILES

BPECLI = [sys.executable, "-m", "bpecli"]
TEXT = "Once upon a time, the theory of tokenizers<|endoftext|> had 2026 cats and a dog."
TARGETS = [".", "vocab.json", "tokenizer.json", "tokenizer.tiktoken"]  # what -t takes in a folder
CHANGES = ["mkdir", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir"]


def train_command(corpus: Path, out: Path) -> list[str]:
    return [*BPECLI, "train", str(corpus), "--vocab-size", "400", "--special", "<|endoftext|>", "--out", str(out),
            "--force", "-q", "--workers", "1"]


def hugging_face_ids(folder: Path) -> dict:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    return {"tokenizers": tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(TEXT).ids,
            "transformers": transformers.AutoTokenizer.from_pretrained(str(folder)).encode(TEXT)}


@pytest.fixture(scope="module")
def two(fixtures, tmp_path_factory):
    """Two tokenizers trained by the CLI on different corpora, and the ids each reader gets of TEXT."""
    root = tmp_path_factory.mktemp("two")
    corpora = {"a": fixtures / "corpus.en", "b": fixtures / "tinystories_sample.txt"}
    ids = {}
    for name, corpus in corpora.items():
        subprocess.run(train_command(corpus, root / name), check=True)
        ids[name] = {target: Tokenizer.load(root / name / target).encode(TEXT, allowed_special="all") for target in TARGETS}
        ids[name].update(hugging_face_ids(root / name))
    assert all(ids["a"][reader] != ids["b"][reader] for reader in ids["a"])
    return corpora, ids


def killed_at(command: list[str], at: int, log: Path) -> bool:
    """Run command under strace, each call that changes a folder held a moment as it starts, and
    kill -9 it held at the at-th of them since it made its temporary folder (that call not run).
    False if it finished first."""
    traced = subprocess.Popen(["strace", "-f", "-qq", "-o", str(log), "-e", f"trace={','.join(CHANGES)}",
                               "-e", f"inject={','.join(CHANGES)}:delay_enter=200000", *command],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while traced.poll() is None:
            calls = log.read_text().splitlines() if log.exists() else []
            first = next((n for n, call in enumerate(calls) if " mkdir(" in call and ".bpecli-tmp" in call), None)
            if first is not None and len(calls) >= first + at:
                pid = int(calls[first + at - 1].split()[0])
                os.kill(pid, signal.SIGKILL)  # pending while strace holds the call: strace's end lets it die
                traced.kill()
                while Path(f"/proc/{pid}").exists() and _alive(pid):
                    time.sleep(0.005)
                return True
            time.sleep(0.005)
        return False
    finally:
        if traced.poll() is None:
            traced.kill()
        traced.wait()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.system
@pytest.mark.parametrize("at", range(1, 11))
def test_a_kill_at_each_step_of_an_in_place_replacement_leaves_one_tokenizer_or_a_refusal(two, tmp_path, at):
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    corpora, ids = two
    out = tmp_path / "tok"
    out.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(out)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (it needs root)")
    try:
        subprocess.run(train_command(corpora["a"], out), check=True)
        killed = killed_at(train_command(corpora["b"], out), at, tmp_path / "strace.log")
        seen = {}
        for target in TARGETS:
            try:
                got = Tokenizer.load(out / target).encode(TEXT, allowed_special="all")
            except BpecliError as e:
                assert "\n" not in str(e) and "mixes files of two tokenizers" in str(e), e
                seen[target] = "refused"
                continue
            seen[target] = next((name for name in ("a", "b") if ids[name][target] == got), f"WRONG {got}")
        assert len(set(seen.values())) == 1 and set(seen.values()) <= {"a", "b", "refused"}, (killed, seen)
        loaded = seen["."]
        if loaded != "refused":  # what bpecli loads is what Hugging Face reads from the folder
            assert hugging_face_ids(out) == {reader: ids[loaded][reader] for reader in ("tokenizers", "transformers")}
        if not killed:
            assert loaded == "b"
        cli = subprocess.run([*BPECLI, "encode", "-t", str(out / "tokenizer.json")], input=TEXT, capture_output=True, text=True)
        assert (cli.returncode == 1) == (loaded == "refused"), cli.stderr
        assert len(cli.stderr.splitlines()) == (1 if loaded == "refused" else 0) and "Traceback" not in cli.stderr
        subprocess.run(train_command(corpora["b"], out), check=True)  # the next run mends it
        assert {target: Tokenizer.load(out / target).encode(TEXT, allowed_special="all") for target in TARGETS} == \
            {target: ids["b"][target] for target in TARGETS}
        assert sorted(p.name for p in out.iterdir()) == sorted(TOKENIZER_FILES)  # no temporary folder stays
    finally:
        subprocess.run(["umount", "-l", str(out)], check=False)
