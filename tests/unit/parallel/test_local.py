"""The executor: results in order, bounded work in flight, errors at their item's turn, and no
hang whatever happens to the workers or the consumer."""

import os
import time

import numpy as np
import pytest

from bpecli.errors import InputError
from bpecli.folders import locked
from bpecli.parallel import available_cpus, map_in_order

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


def test_results_come_in_order_from_several_workers():
    assert list(map_in_order(_add, range(200), workers=2, setup=_setup, args=(1000,))) == list(range(1000, 1200))
    assert list(map_in_order(_add, [], workers=2, setup=_setup, args=(0,))) == []


def _slow_first(_, item):
    if item == 0:
        time.sleep(1)
    return item


@pytest.mark.skipif(available_cpus() < 2, reason="needs two CPUs for two workers")
@pytest.mark.parametrize("ahead", [0, 5])
def test_the_other_workers_go_on_past_a_slow_item_as_far_as_ahead_lets_them(ahead):
    taken = []

    def items():
        for i in range(40):
            taken.append(i)
            yield i

    results = map_in_order(_slow_first, items(), workers=2, setup=_setup, args=(0,), ahead=ahead)
    assert next(results) == 0
    assert len(taken) == 2 * 2 + ahead  # the slow one, and all the rest in flight could take
    assert list(results) == list(range(1, 40))


def test_one_worker_runs_in_this_process():
    assert list(map_in_order(_add, [1, 2], workers=1, setup=_setup, args=(10,))) == [11, 12]


def test_an_error_is_raised_at_its_items_turn():
    seen = []
    with pytest.raises(InputError, match="item 5 is bad"):
        for result in map_in_order(_fails_at_five, range(20), workers=2, setup=_setup, args=(0,)):
            seen.append(result)
    assert seen == [0, 1, 2, 3, 4]


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
