"""The executor: results in order, bounded work in flight, errors at their item's turn, and no
hang whatever happens to the workers or the consumer."""

import os
import signal
import time

import numpy as np
import pytest

from bpecli.errors import BpecliError, InputError
from bpecli.executor import available_cpus, map_in_order

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


def test_no_more_workers_than_cpus():
    pids = set(map_in_order(_pid, range(50), workers=1000, setup=_setup, args=(0,)))
    assert len(pids) <= available_cpus()


def _pid(_, item):
    return os.getpid()
