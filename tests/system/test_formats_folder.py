"""A tokenizer folder is replaced whole: readers in other processes see the old tokenizer or the
new one (or an error), a kill -9 at any moment leaves one of the two or a folder refused in one
line, and the next run leaves no temporary folder behind."""

import json
import os
import re
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
# Where a reader may load a tokenizer folder from, as bpecli's -t takes them.
TARGETS = [".", "vocab.json", "tokenizer.json", "tokenizer.tiktoken"]


def train_command(corpus: Path, out: Path) -> list[str]:
    return [*BPECLI, "train", str(corpus), "--vocab-size", "400", "--special", "<|endoftext|>", "--out", str(out),
            "--force", "-q", "--workers", "1"]


@pytest.fixture(scope="module")
def two(fixtures, tmp_path_factory):
    """Two tokenizers of one size trained by the CLI on different corpora (their ids for TEXT
    differ), as reference folders."""
    root = tmp_path_factory.mktemp("two")
    corpora = {"a": fixtures / "corpus.en", "b": fixtures / "tinystories_sample.txt"}
    for name, corpus in corpora.items():
        subprocess.run(train_command(corpus, root / name), check=True)
    ids = {name: {target: Tokenizer.load(root / name / target).encode(TEXT, allowed_special="all") for target in TARGETS}
           for name in corpora}
    assert all(ids["a"][target] != ids["b"][target] for target in TARGETS)
    return corpora, root, ids


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def what_loads(out: Path, ids: dict) -> dict[str, str]:
    """For each target: "a" or "b" (the ids of one of the two), or "error" (one line)."""
    seen = {}
    for target in TARGETS:
        try:
            got = Tokenizer.load(out / target).encode(TEXT, allowed_special="all")
        except BpecliError as e:
            assert "\n" not in str(e)
            seen[target] = "error"
            continue
        seen[target] = next((name for name in ("a", "b") if ids[name][target] == got), f"WRONG {got}")
    return seen


# ---- readers in other processes while train --force runs ------------------------------------

READER = r"""
import json, sys, time
from pathlib import Path
import bpecli, tokenizers, transformers
transformers.logging.set_verbosity_error()
out, text, stop = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
seen = []
print("ready", flush=True)
while not stop.exists():
    for target in (".", "vocab.json", "tokenizer.tiktoken", "tokenizers", "transformers"):
        try:
            if target == "tokenizers":
                ids = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json")).encode(text).ids
            elif target == "transformers":
                ids = transformers.AutoTokenizer.from_pretrained(str(out)).encode(text)
            else:
                ids = bpecli.load(out / target).encode(text, allowed_special="all")
            seen.append([target, ids])
        except bpecli.BpecliError as e:
            seen.append([target, "error", str(e)])
        except Exception as e:
            seen.append([target, "other error", repr(e)])
print(json.dumps(seen), flush=True)
"""


def their_ids(folder: Path) -> dict:
    """The ids each reader of READER gets from a folder that nothing replaces."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    ids = {target: Tokenizer.load(folder / target).encode(TEXT, allowed_special="all") for target in TARGETS}
    ids["tokenizers"] = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(TEXT).ids
    ids["transformers"] = transformers.AutoTokenizer.from_pretrained(str(folder)).encode(TEXT)
    return ids


def read_while_replaced(out: Path, tmp_path: Path, writes: list[list[str]]) -> list:
    """What two reader processes saw while the writes ran, one after another."""
    stop = tmp_path / "stop"
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(out), TEXT, str(stop)], stdout=subprocess.PIPE,
                                text=True) for _ in range(2)]
    try:
        for reader in readers:
            assert reader.stdout.readline() == "ready\n"
        for command in writes:
            subprocess.run(command, check=True, capture_output=True)
    finally:
        stop.touch()
    return [entry for reader in readers for entry in json.loads(reader.communicate(timeout=120)[0])]


def slowed(command: list[str], syscalls: str = "rename,renameat,renameat2", microseconds: int = 300_000) -> list[str]:
    """command with each of the syscalls held for a while after it returns (strace -e inject)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    return ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"inject={syscalls}:delay_exit={microseconds}", *command]


def check_readers(seen: list, expected: dict) -> None:
    outcomes = {}
    for target, *result in seen:
        if result[0] in ("error", "other error"):
            assert target not in TARGETS or result[0] == "error", result  # bpecli fails in its own words
            outcome = "error"
        else:
            outcome = next((name for name in ("a", "b") if expected[name][target] == result[0]), None)
            assert outcome is not None, f"{target} loaded a tokenizer that is neither: {result[0]}"
        outcomes.setdefault(target, set()).add(outcome)
    assert {"a", "b"} <= outcomes["."], outcomes  # the readers ran while the folder changed


@pytest.mark.system
def test_readers_in_other_processes_see_the_old_tokenizer_or_the_new_one(two, tmp_path):
    """train --force with its renames slowed, readers loading the folder all the while: bpecli
    (-t DIR, DIR/vocab.json, DIR/tokenizer.tiktoken), tokenizers and transformers each get the ids
    of one of the two tokenizers, or an error."""
    corpora, root, _ = two
    expected = {name: their_ids(root / name) for name in ("a", "b")}
    out = tmp_path / "tok"
    shutil.copytree(root / "a", out)
    writes = [slowed(train_command(corpora[name], out)) for name in ("b", "a", "b")]
    check_readers(read_while_replaced(out, tmp_path, writes), expected)
    assert listing(tmp_path) == ["stop", "tok"] and listing(out) == sorted(TOKENIZER_FILES)


@pytest.mark.system
def test_readers_see_one_tokenizer_where_the_folder_is_a_mount_point(two, tmp_path, mounted_tok):
    """A folder that cannot be renamed (a tmpfs mounted on it, as a container's volume) has its
    files replaced one by one, bpecli.json first: bpecli's readers get one of the two or an error."""
    corpora, root, _ = two
    expected = {name: their_ids(root / name) for name in ("a", "b")}
    out = mounted_tok
    subprocess.run(train_command(corpora["a"], out), check=True)
    writes = [slowed(train_command(corpora[name], out)) for name in ("b", "a")]
    seen = read_while_replaced(out, tmp_path, writes)
    check_readers([entry for entry in seen if entry[0] in TARGETS], expected)
    assert listing(out) == sorted(TOKENIZER_FILES)


# ---- kill -9 at several moments ---------------------------------------------------------------

# The calls by which bpecli changes folders: the moments a kill -9 may fall between.
CHANGES = ["mkdir", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir"]


def killed_at(command: list[str], at: int, log: Path, fail: str = "") -> bool:
    """Run command under strace, each of its CHANGES held a moment as it starts, and kill -9 it
    held at the at-th of them since it made its first temporary folder (that call not run). False
    if it finished first. fail: a call that fails with EINVAL instead."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    held = [call for call in CHANGES if call != fail]
    injected = ["-e", f"inject={fail}:error=EINVAL"] if fail else []
    traced = subprocess.Popen(["strace", "-f", "-qq", "-o", str(log), "-e", f"trace={','.join(CHANGES)}",
                               "-e", f"inject={','.join(held)}:delay_enter=300000", *injected, *command],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while traced.poll() is None:
            calls = log.read_text().splitlines() if log.exists() else []
            first = next((n for n, call in enumerate(calls) if " mkdir(" in call and ".bpecli-tmp" in call), None)
            if first is not None and len(calls) >= first + at:
                pid = int(calls[first + at - 1].split()[0])
                os.kill(pid, signal.SIGKILL)  # pending while strace holds it:
                traced.kill()  # strace's end lets it go, to die before that call runs
                while _alive(pid):
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
@pytest.mark.parametrize("at", [1, 2, 3, 5, 8])
def test_a_kill_at_any_moment_leaves_the_old_tokenizer_or_the_new_one(two, tmp_path, at):
    """Killed as it makes its temporary folder (1), as it puts the new files in place (2), and
    while it removes the old ones (3 on): one tokenizer loads, or none in one line; the next run
    leaves no temporary folder."""
    corpora, root, ids = two
    out = tmp_path / "tok"
    shutil.copytree(root / "a", out)
    assert killed_at(train_command(corpora["b"], out), at, tmp_path / "strace.log")
    seen = what_loads(out, ids)
    assert set(seen.values()) <= {"a", "b", "error"}, seen
    assert len(set(seen.values())) == 1, seen  # one tokenizer, whatever file names it
    cli = subprocess.run([*BPECLI, "encode", "-t", str(out)], input=TEXT, capture_output=True, text=True)
    if seen["."] == "error":
        assert cli.returncode == 1 and len(cli.stderr.splitlines()) == 1 and "Traceback" not in cli.stderr, cli.stderr
    subprocess.run(train_command(corpora["b"], out), check=True)  # the next run
    assert what_loads(out, ids) == {target: "b" for target in TARGETS}
    assert listing(tmp_path) == ["strace.log", "tok"]  # no temporary folder left
    assert listing(out) == sorted(TOKENIZER_FILES)


@pytest.mark.system
def test_without_an_atomic_exchange_a_kill_between_the_two_renames_leaves_no_folder_and_the_next_run_mends_it(
        two, tmp_path):
    """Where renameat2 cannot exchange (EINVAL, injected), the old folder is renamed aside and the
    new one into place: between the two, readers find no tokenizer (one line), never a mix."""
    corpora, root, ids = two
    out = tmp_path / "tok"
    shutil.copytree(root / "a", out)
    # mkdir, the exchange refused, the old folder aside, and held before the new one takes its place
    assert killed_at(train_command(corpora["b"], out), 4, tmp_path / "strace.log", fail="renameat2")
    assert not out.exists()
    with pytest.raises(BpecliError, match="no such tokenizer file or folder"):
        Tokenizer.load(out)
    # the next run, without the exchange either
    subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=renameat2", "-e", "inject=renameat2:error=EINVAL",
                    *train_command(corpora["b"], out)], check=True)
    assert what_loads(out, ids) == {target: "b" for target in TARGETS}
    assert listing(tmp_path) == ["strace.log", "tok"]


@pytest.mark.system
def test_a_kill_while_a_mount_point_is_replaced_leaves_a_folder_refused_in_one_line(two, tmp_path, mounted_tok):
    corpora, root, ids = two
    out = mounted_tok
    subprocess.run(train_command(corpora["a"], out), check=True)
    # mkdir, bpecli.json in place, and held before tokenizer.tiktoken
    assert killed_at(train_command(corpora["b"], out), 3, tmp_path / "strace.log")
    for target in TARGETS:
        with pytest.raises(BpecliError, match="bpecli.json: tokenizer.tiktoken is not the file written with it"):
            Tokenizer.load(out / target)
    subprocess.run(train_command(corpora["b"], out), check=True)
    assert what_loads(out, ids) == {target: "b" for target in TARGETS}
    assert listing(out) == sorted(TOKENIZER_FILES)


@pytest.mark.system
def test_a_file_a_user_writes_into_the_folder_while_it_is_replaced_stays_with_the_old_one(two, tmp_path):
    corpora, root, ids = two
    out = tmp_path / "tok"
    shutil.copytree(root / "a", out)
    log = tmp_path / "strace.log"
    traced = subprocess.Popen(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=renameat2",
                               "-e", "inject=renameat2:delay_enter=1000000", *train_command(corpora["b"], out)],
                              stderr=subprocess.PIPE, text=True)
    while not (log.exists() and "renameat2" in log.read_text()):
        assert traced.poll() is None, traced.stderr.read()
        time.sleep(0.005)
    (out / "notes.txt").write_text("mine")
    assert traced.wait(timeout=60) == 1
    assert re.fullmatch(r"bpecli: error: \S+ gained files bpecli did not write \(notes.txt\) while bpecli replaced "
                        r"it; it was left as it was\n", traced.stderr.read())
    assert (out / "notes.txt").read_text() == "mine"
    assert what_loads(out, ids) == {target: "a" for target in TARGETS}
    assert listing(tmp_path) == ["strace.log", "tok"]


# ---- the folder stays the user's ----------------------------------------------------------------
