"""What each thread keeps for itself: the pieces encoding or counting has learned are written by
one thread only, so threads that share a Tokenizer (or a Dask worker's threads that share a
counter) never lock nor race, as tiktoken's Rust core keeps a cache per thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerThread(Generic[T]):
    """A value made by make() once per thread, made afresh when stale(value) says so (a cache
    grown past its limit) and in every thread after reset().

    Example: caches = PerThread(dict); caches.get()["hello"] = (31373,)  # this thread's dict
    """

    def __init__(self, make: Callable[[], T], stale: Callable[[T], bool] | None = None):
        self._make, self._stale = make, stale
        self._local = threading.local()

    def get(self) -> T:
        local = self._local
        if not hasattr(local, "value") or (self._stale is not None and self._stale(local.value)):
            local.value = self._make()
        return local.value

    def reset(self) -> None:
        """Forget every thread's value."""
        self._local = threading.local()
