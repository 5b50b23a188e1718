"""Threads of this process sharing one numpy step. numpy lets go of the GIL while it gathers and
scatters (array[index], array[index] = values), so two threads take a large index at up to twice
one's pace: the merge loop's steps at the corpus sizes users train on are such."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from . import available_cpus

# A step is cut into slices of at least this many items, one per thread: below that, handing a
# slice to another thread costs about what it saves (measured: docs/performance.md).
LEAST_SLICE = 1 << 15


class Threads:
    """count threads (this one and count - 1 more, no more than the CPUs) that share steps (see in_slices)."""

    def __init__(self, count: int = 1):
        self.count = max(1, min(count, available_cpus()))
        self._pool = ThreadPoolExecutor(self.count - 1, thread_name_prefix="bpecli") if self.count > 1 else None

    def in_slices(self, n: int, work: Callable[[int, int], None]) -> None:
        """work(lo, hi) over [0, n), in slices run at once, one per thread, each at least
        LEAST_SLICE items: each must touch only its own items' places in the arrays it writes.

        Example: in_slices(100_000, work) with 2 threads -> work(50_000, 100_000) on the other
        thread, work(0, 50_000) on this one
        """
        slices = self._slices(n)
        if self._pool is None or slices < 2:  # (one thread has no pool)
            work(0, n)
            return
        bounds = [n * k // slices for k in range(slices + 1)]
        others = [self._pool.submit(work, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:])]
        try:
            work(bounds[0], bounds[1])
        finally:
            _wait_through_interrupts(others)  # no thread is left writing when this returns or raises
        for future in others:
            future.result()

    def take(self, array, index):
        """array[index], its slices read at once."""
        if self._slices(len(index)) < 2:  # read here whole, into no array but its own
            return array[index]
        out = np.empty(len(index), dtype=array.dtype)

        def read(lo, hi):
            out[lo:hi] = array[index[lo:hi]]

        self.in_slices(len(index), read)
        return out

    def put(self, array, index, values) -> None:
        """array[index] = values, its slices written at once (index holds no place twice)."""

        def write(lo, hi):
            array[index[lo:hi]] = values[lo:hi]

        self.in_slices(len(index), write)

    def _slices(self, n: int) -> int:
        """How many slices a step of n items is cut into (1: it runs here whole)."""
        return max(1, min(self.count, n // LEAST_SLICE))

    def close(self) -> None:
        """End the other threads (they hold no work by then: each step waits for its slices)."""
        if self._pool is not None:
            self._pool.shutdown()

    def __enter__(self) -> Threads:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _wait_through_interrupts(futures) -> None:
    """Wait for futures to end even through Ctrl-C (a slice takes milliseconds), then raise the
    last interrupt, if any."""
    interrupt = None
    while True:
        try:
            wait(futures)
            break
        except KeyboardInterrupt as error:
            interrupt = error
    if interrupt is not None:
        raise interrupt
