"""Threads sharing one numpy step: every item once, and no thread left running after an error."""

import threading
import time

import pytest

from bpecli.parallel import threads as threads_module
from bpecli.parallel.threads import Threads


def test_a_large_step_is_cut_into_one_part_per_thread_covering_every_item_once():
    parts = []
    with Threads(2) as threads:
        threads.in_parts(100_000, lambda lo, hi: parts.append((lo, hi, threading.get_ident())))
    assert sorted((lo, hi) for lo, hi, _ in parts) == [(0, 50_000), (50_000, 100_000)]
    assert len({ident for *_, ident in parts}) == 2


def test_a_small_step_or_one_thread_runs_here_whole():
    for count, n in ((2, threads_module.LEAST_SHARED - 1), (1, 100_000)):
        parts = []
        with Threads(count) as threads:
            threads.in_parts(n, lambda lo, hi: parts.append((lo, hi, threading.get_ident())))
        assert parts == [(0, n, threading.get_ident())]


def test_an_error_in_a_part_is_raised_once_every_part_has_ended():
    ended = []

    def work(lo, hi):
        if lo == 0:
            raise ValueError("bad part")
        time.sleep(0.05)
        ended.append(hi)

    with Threads(2) as threads, pytest.raises(ValueError, match="bad part"):
        threads.in_parts(100_000, work)
    assert ended == [100_000]
