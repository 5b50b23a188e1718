"""Run a function over parts in order: in this process, in local worker processes (local.py), or
on the workers of a Dask cluster (dask.py). threads.py shares one numpy step between threads of
this process."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from .local import Workers

# The Dask side is imported only when a scheduler is given: `distributed` is an optional extra.


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1


def map_in_order(function: Callable, items: Iterable, *, workers: int, setup: Callable, args: tuple,
                 scheduler: str | None = None, ahead: int = 0) -> Iterator:
    """function(state, item) for each item, in the order of items, where state = setup(*args) is
    made once per worker process (a Tokenizer shipped once, never with every item). Runs in this
    process for one worker, in worker processes (no more than the CPUs), or on a Dask cluster when
    a scheduler is given (see dask.connect). At most 2 items per worker are in flight, and `ahead`
    more, so memory stays bounded however many items come: results wait for those of the items
    before them, and with small results (a part's ids) `ahead` keeps the other workers going
    while one works on a slow item. An error in a worker is raised here, at its item's turn.

    Example: map_in_order(lambda state, x: len(x) + state, ["ab", "c"], workers=2, setup=int, args=()) -> 2, 1
    """
    if scheduler:
        from . import dask

        yield from dask.map_in_order(function, items, setup, args, scheduler, ahead)
        return
    workers = parallelism(workers)
    if workers == 1:
        state = setup(*args)
        yield from (function(state, item) for item in items)
        return
    yield from Workers(workers, setup, args).map_in_order(function, items, in_flight=2 * workers + ahead)


def parallelism(workers: int, scheduler: str | None = None) -> int:
    """How many items run at once: the worker threads of the cluster, or the local workers."""
    if scheduler:
        from . import dask

        return dask.threads(scheduler)
    return max(1, min(workers, available_cpus()))
