"""Threads sharing one numpy step: every item once, slices never too small, and no thread left
running after an error or an interrupt."""

import threading
import time

import pytest

from bpecli.parallel import threads as threads_module
from bpecli.parallel.threads import Threads


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch):
    monkeypatch.setattr(threads_module, "available_cpus", lambda: 2)


def test_a_large_step_is_cut_into_one_slice_per_thread_covering_every_item_once():
    slices = []
    with Threads(2) as threads:
        threads.in_slices(100_000, lambda lo, hi: slices.append((lo, hi, threading.get_ident())))
    assert sorted((lo, hi) for lo, hi, _ in slices) == [(0, 50_000), (50_000, 100_000)]
    assert len({ident for *_, ident in slices}) == 2


def test_a_small_step_or_one_thread_runs_here_whole():
    for count, n in ((2, 2 * threads_module.LEAST_SLICE - 1), (1, 100_000)):
        slices = []
        with Threads(count) as threads:
            threads.in_slices(n, lambda lo, hi: slices.append((lo, hi, threading.get_ident())))
        assert slices == [(0, n, threading.get_ident())]


def test_no_more_threads_than_cpus_nor_slices_smaller_than_least(monkeypatch):
    assert Threads(64).count == 2
    monkeypatch.setattr(threads_module, "available_cpus", lambda: 8)
    slices = []
    with Threads(8) as threads:
        threads.in_slices(3 * threads_module.LEAST_SLICE, lambda lo, hi: slices.append(hi - lo))
    assert len(slices) == 3 and min(slices) >= threads_module.LEAST_SLICE


def test_an_error_in_a_slice_is_raised_once_every_slice_has_ended():
    ended = []

    def work(lo, hi):
        if lo == 0:
            raise ValueError("bad slice")
        time.sleep(0.05)
        ended.append(hi)

    with Threads(2) as threads, pytest.raises(ValueError, match="bad slice"):
        threads.in_slices(100_000, work)
    assert ended == [100_000]


def test_interrupts_while_waiting_still_wait_for_the_other_slice(monkeypatch):
    """Ctrl-C pressed again and again while the other thread's slice runs: the step still waits
    for it, then raises the interrupt."""
    ended = []
    waits = iter([KeyboardInterrupt(), KeyboardInterrupt()])
    real_wait = threads_module.wait

    def interrupted_wait(futures):
        error = next(waits, None)
        if error is not None:
            raise error
        return real_wait(futures)

    monkeypatch.setattr(threads_module, "wait", interrupted_wait)

    def work(lo, hi):
        if lo:
            time.sleep(0.05)
            ended.append(hi)

    with Threads(2) as threads, pytest.raises(KeyboardInterrupt):
        threads.in_slices(100_000, work)
    assert ended == [100_000]
