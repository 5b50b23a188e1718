"""Worker processes killed or orphaned, and kill -9 of a whole run: no worker left behind, the
lock freed, the rerun identical."""

import os
import signal
import time

import pytest

from bpecli.errors import BpecliError
from bpecli.parallel import map_in_order


def _setup(offset):
    return offset


def _dies_at_three(_, item):
    if item == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_a_worker_killed_mid_run_is_one_clear_error():
    with pytest.raises(BpecliError, match="a worker process died"):
        list(map_in_order(_dies_at_three, range(10), workers=2, setup=_setup, args=(0,)))


def _outlive(parent: int) -> None:
    from bpecli.parallel.local import _die_with

    _die_with(parent)
    time.sleep(60)


def test_a_worker_whose_parent_died_before_prctl_leaves_at_once():
    """The parent can die between fork and prctl, and then no signal comes: the worker sees it
    has another parent already, and leaves."""
    import multiprocessing

    process = multiprocessing.get_context("fork").Process(target=_outlive, args=(os.getpid() + 1_000_000,))
    process.start()
    process.join(timeout=10)
    if process.exitcode is None:
        process.kill()
    assert process.exitcode == 0


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # it ended
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.update(map(int, f.read().split()))
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie is dead: its memory and descriptors are gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.01)


def _lock_is_free(folder) -> bool:
    import fcntl

    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(handle)
    return True


def _bpecli(*args, **popen):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "bpecli", *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **popen)


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _kill_and_check(process, when, seconds=120):
    """Kill -9 process once when() holds and its two workers run; its workers must be gone within
    about a second."""
    workers: set[int] = set()
    try:
        _wait_for(lambda: len(_children(process.pid)) == 2 and when() or process.poll() is not None, seconds,
                  "the moment to kill")
        workers = _children(process.pid)
        assert process.poll() is None, "the run ended before the moment to kill it came"
        process.kill()
        process.wait()
        started = time.monotonic()
        _wait_for(lambda: not any(map(_alive, workers)), 5, f"the workers {sorted(workers)} to end")
        assert time.monotonic() - started < 1.5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
        for pid in filter(_alive, workers):  # left by a failure: not left to hold the machine
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def eight_mb(tmp_path_factory):
    """8 MB of the benchmark corpus: several parts for each of 2 workers."""
    import gzip

    from conftest import CORPUS

    if not CORPUS.is_file():
        pytest.skip(f"the benchmark corpus is not at {CORPUS}")
    path = tmp_path_factory.mktemp("corpus") / "docs.txt"
    with gzip.open(CORPUS, "rb") as f:
        path.write_bytes(f.read(8_000_000))
    return path


@pytest.fixture(scope="module")
def whole_shards(eight_mb, gpt2_vocab, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "shards"
    process = _bpecli("encode", "-t", gpt2_vocab, eight_mb, "--out", out, "--workers", 2, "--shard-tokens", 50_000, "-q")
    assert process.wait(timeout=300) == 0, process.stderr.read()
    process.stderr.close()
    return _files(out)


@pytest.mark.system
@pytest.mark.parametrize("shards", [0, 1, 20])
def test_kill_9_of_encode_out_ends_its_workers_frees_the_lock_and_the_rerun_is_identical(
        eight_mb, gpt2_vocab, whole_shards, tmp_path, shards):
    """Killed once its workers run and `shards` shards are written (of 44): the workers go with it
    (none keeps the folder's lock), and the rerun writes what an uninterrupted run writes."""
    out = tmp_path / "shards"
    args = ["encode", "-t", gpt2_vocab, eight_mb, "--out", out, "--workers", 2, "--shard-tokens", 50_000, "-q"]
    _kill_and_check(_bpecli(*args), lambda: len(list(out.glob("*.npy"))) >= shards)
    assert _lock_is_free(out)
    rerun = _bpecli(*args)
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    rerun.stderr.close()
    assert _files(out) == whole_shards


@pytest.mark.system
@pytest.mark.parametrize("after", [0.0, 0.5])
def test_kill_9_of_train_ends_its_workers_and_the_rerun_is_identical(eight_mb, tmp_path, after):
    """Killed while its workers count (at once, and after half a second): a custom pattern counts
    by the regex, some seconds for 8 MB."""
    pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s"""
    args = ["train", eight_mb, "--vocab-size", 400, "--special", "<|endoftext|>", "--workers", 2, "--pattern", pattern, "-q"]
    whole = _bpecli(*args, "--out", tmp_path / "whole")
    assert whole.wait(timeout=300) == 0, whole.stderr.read()
    whole.stderr.close()
    started: list[float] = []

    def moment() -> bool:
        started.append(time.monotonic())
        return time.monotonic() - started[0] >= after

    _kill_and_check(_bpecli(*args, "--out", tmp_path / "tok"), moment)
    rerun = _bpecli(*args, "--out", tmp_path / "tok")
    assert rerun.wait(timeout=300) == 0, rerun.stderr.read()
    rerun.stderr.close()
    assert _files(tmp_path / "tok") == _files(tmp_path / "whole")
