"""The executor: results in order, bounded work in flight, errors at their item's turn, and no
hang whatever happens to the workers or the consumer."""

import os
import signal
import time

import numpy as np
import pytest

from bpecli.errors import BpecliError, InputError
from bpecli.parallel import available_cpus, map_in_order
from bpecli.folders import locked

def _setup(offset):
    return offset


def _add(offset, item):
    return item + offset


def _big(_, item):
    return np.full(1 << 20, item, dtype=np.int64)  # 8 MB: workers are mid-send most of the time


def _fails_at_five(_, item):
    if item == 5:
        raise InputError("item 5 is bad")
    return item


def _dies_at_three(_, item):
    if item == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_results_come_in_order_from_several_workers():
    assert list(map_in_order(_add, range(200), workers=2, setup=_setup, args=(1000,))) == list(range(1000, 1200))
    assert list(map_in_order(_add, [], workers=2, setup=_setup, args=(0,))) == []


def test_one_worker_runs_in_this_process():
    assert list(map_in_order(_add, [1, 2], workers=1, setup=_setup, args=(10,))) == [11, 12]


def test_an_error_is_raised_at_its_items_turn():
    seen = []
    with pytest.raises(InputError, match="item 5 is bad"):
        for result in map_in_order(_fails_at_five, range(20), workers=2, setup=_setup, args=(0,)):
            seen.append(result)
    assert seen == [0, 1, 2, 3, 4]


def test_a_worker_killed_mid_run_is_one_clear_error():
    with pytest.raises(BpecliError, match="a worker process died"):
        list(map_in_order(_dies_at_three, range(10), workers=2, setup=_setup, args=(0,)))


def test_stopping_early_while_workers_send_big_results_never_hangs():
    """multiprocessing.Pool could hang here: terminate() killed a worker holding the result
    queue's lock. Each worker has a pipe of its own now."""
    started = time.monotonic()
    for _ in range(20):
        for n, result in enumerate(map_in_order(_big, range(50), workers=2, setup=_setup, args=(0,))):
            if n == 3:
                break
    assert time.monotonic() - started < 60
    if available_cpus() > 1:
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_our_zombie(int(p))]


def _is_our_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] == "Z" and int(fields[1]) == os.getpid()


def _setup_fails(offset):
    raise InputError("the tokenizer cannot be set up")


class _NoMemoryToPickle:
    def __reduce__(self):
        raise MemoryError


def _unpicklable_at_three(_, item):
    return _NoMemoryToPickle() if item == 3 else item


@pytest.mark.parametrize("function, setup, raised, seen", [
    (_add, _setup_fails, InputError, []),
    (_unpicklable_at_three, _setup, MemoryError, [0, 1, 2]),
])
def test_a_worker_answers_every_failure_and_prints_no_traceback(capfd, function, setup, raised, seen):
    """A setup that fails, a result there is no memory to pickle: each is an answer the parent
    raises, with no traceback from multiprocessing on stderr and no worker left dead."""
    if available_cpus() < 2:
        pytest.skip("one CPU: the work runs in this process")
    got = []
    with pytest.raises(raised):
        for result in map_in_order(function, range(6), workers=2, setup=setup, args=(0,)):
            got.append(result)
    assert got == seen
    assert "Traceback" not in capfd.readouterr().err


def _noisy(_, item):
    os.write(2, b"terminate called after throwing an instance of 'std::bad_alloc'\n")
    os.write(1, b"stray\n")
    return item


def test_what_a_library_prints_in_a_worker_never_reaches_the_terminal(capfd):
    """A worker answers down its pipe; the lines a crashing library writes to its stdout or stderr
    would stand beside the parent's one line (and in the middle of ids on stdout)."""
    if available_cpus() < 2:
        pytest.skip("one CPU: the work runs in this process")
    assert list(map_in_order(_noisy, range(4), workers=2, setup=_setup, args=(0,))) == [0, 1, 2, 3]
    assert capfd.readouterr() == ("", "")


def test_no_more_workers_than_cpus():
    pids = set(map_in_order(_pid, range(50), workers=1000, setup=_setup, args=(0,)))
    assert len(pids) <= available_cpus()


def _pid(_, item):
    return os.getpid()


# ---- a worker never outlives its parent -----------------------------------------------------------

def test_workers_see_end_of_file_once_the_parent_closes_its_ends():
    """Where the kernel sends no signal at the parent's death, a worker still leaves: no worker
    holds a copy of the parent's end of its pipe (each held its own, and those of the workers
    started before it)."""
    from bpecli.parallel.local import Workers

    workers = Workers(2, _setup, (0,))
    for pipe in workers.pipes:
        pipe.close()
    for process in workers.processes:
        process.join(timeout=10)
        if process.exitcode is None:
            process.kill()
    assert [process.exitcode for process in workers.processes] == [0, 0]


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


def test_workers_started_before_a_fork_fails_are_ended(monkeypatch):
    """The second fork fails (EAGAIN: no more processes): the first worker does not stay behind."""
    import multiprocessing

    from bpecli.parallel.local import Workers

    context = multiprocessing.get_context("fork")
    started = []
    real_start = context.Process.start

    def start(process):
        if started:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        real_start(process)
        started.append(process)

    monkeypatch.setattr(context.Process, "start", start)
    with pytest.raises(BlockingIOError):
        Workers(2, _setup, (0,))
    assert len(started) == 1
    assert started[0].exitcode is not None


def _lock_descriptors(folder, item):
    fds = os.listdir("/proc/self/fd")
    return [fd for fd in fds if _target(fd) == str(folder)]


def _target(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def test_workers_hold_no_descriptor_of_the_lock(tmp_path):
    """A flock lives as long as any process holds its file open: a worker must not."""
    if available_cpus() < 2:
        pytest.skip("one CPU: the work runs in this process")
    with locked(tmp_path):
        assert _lock_descriptors(tmp_path, 0)  # this process holds it
        assert list(map_in_order(_lock_descriptors, range(4), workers=2, setup=str, args=(tmp_path,))) == [[]] * 4


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
