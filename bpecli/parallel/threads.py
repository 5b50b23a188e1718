"""Threads of this process sharing one numpy step. numpy lets go of the GIL while it gathers and
scatters (array[index], array[index] = values), so two threads take a large index at up to twice
one's pace: the merge loop's steps at the corpus sizes users train on are such."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

# Below this many items a step runs in the calling thread alone: handing half of it to another
# thread costs about what it saves.
LEAST_SHARED = 1 << 16


class Threads:
    """count threads (this one and count - 1 more) that share steps (see in_parts)."""

    def __init__(self, count: int = 1):
        self.count = max(1, count)
        self._pool = ThreadPoolExecutor(self.count - 1, thread_name_prefix="bpecli") if self.count > 1 else None

    def in_parts(self, n: int, work: Callable[[int, int], None]) -> None:
        """work(lo, hi) over [0, n), in self.count parts at once when n is large: each part must
        touch only its own items' places in the arrays it writes.

        Example: in_parts(10, work) with 2 threads -> work(5, 10) on the other thread, work(0, 5) here
        """
        if self._pool is None or n < LEAST_SHARED:
            work(0, n)
            return
        bounds = [n * k // self.count for k in range(self.count + 1)]
        others = [self._pool.submit(work, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:])]
        try:
            work(bounds[0], bounds[1])
        finally:
            wait(others)  # no thread is left writing when this returns or raises
        for future in others:
            future.result()

    def take(self, array, index, dtype=None):
        """array[index] (as dtype, if given), its parts read at once."""
        out = np.empty(len(index), dtype=dtype or array.dtype)

        def read(lo, hi):
            out[lo:hi] = array[index[lo:hi]]

        self.in_parts(len(index), read)
        return out

    def put(self, array, index, values) -> None:
        """array[index] = values, its parts written at once (index holds no place twice)."""

        def write(lo, hi):
            array[index[lo:hi]] = values[lo:hi]

        self.in_parts(len(index), write)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()

    def __enter__(self) -> Threads:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
