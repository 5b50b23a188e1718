"""The Dask side of executor.map_in_order: the same items, run by the workers of a cluster.

Imported only when a scheduler is given, so a local run never loads `distributed`. Each worker
gets the run's setup once, as a worker plugin (workers that join later, or replace one that died,
get it too); tasks carry only the function and a small item (an input and a range), and read
their data themselves, so inputs must be reachable from the workers: a shared filesystem or an
object store. A task lost with its worker is run again by Dask.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .errors import BpecliError
from .executor import keep_freed_memory

try:
    from distributed import Client, WorkerPlugin, get_worker
except ImportError:  # the extra is not installed: said when a scheduler is asked for
    Client = None  # type: ignore[misc,assignment]
    WorkerPlugin = object  # type: ignore[misc,assignment]

_clients: dict[str, Any] = {}
_connecting = threading.Lock()


def connect(scheduler: str) -> Any:
    """A client of the scheduler at an address (tcp://host:8786) or named by a scheduler file
    (the JSON `dask scheduler --scheduler-file` writes); one per scheduler, for this process."""
    if Client is None:
        raise BpecliError("--scheduler needs Dask: pip install 'bpecli[dask]' (dask[distributed])")
    with _connecting:
        if scheduler not in _clients:
            if os.path.isfile(scheduler):
                where = {"scheduler_file": scheduler}
            elif re.fullmatch(r"(\w+://)?[^/\s]+:\d+", scheduler):
                where = {"address": scheduler}
            else:
                raise BpecliError(f"--scheduler {scheduler}: no such scheduler file, nor an address such as "
                                  "tcp://host:8786")
            logging.getLogger("distributed").setLevel(logging.ERROR)  # a lost worker is retried, not news
            try:
                # how long to try: Dask's own setting, distributed.comm.timeouts.connect (30 s)
                _clients[scheduler] = Client(**where, set_as_default=False)
            except (OSError, ValueError, TypeError) as e:
                raise BpecliError(f"cannot reach the Dask scheduler {scheduler} ({e}); "
                                  "check the address or scheduler file, and that the scheduler runs") from None
        return _clients[scheduler]


@atexit.register
def disconnect() -> None:
    """Close this process's clients (before their cluster goes away, or at exit)."""
    while _clients:
        _clients.popitem()[1].close()


# Items per task: a task costs the scheduler and the client some milliseconds whatever its size,
# and 2 MB parts of shards are small next to that; a few per task keep the overhead low.
ITEMS_PER_TASK = 4


def threads(scheduler: str) -> int:
    """The worker threads of the cluster: how many tasks run at once."""
    return max(1, sum(connect(scheduler).nthreads().values()))


def map_in_order(function: Callable, items: Iterable, setup: Callable, args: tuple, scheduler: str) -> Iterator:
    """See executor.map_in_order. Items go ITEMS_PER_TASK to a task; 2 tasks per worker thread are
    in flight besides the one whose results are being used."""
    client = connect(scheduler)
    name = f"bpecli-{uuid.uuid4().hex}"
    client.register_plugin(_Setup(setup, args), name=name)
    in_flight = 2 * threads(scheduler)
    batches = _batches(items, ITEMS_PER_TASK)
    pending: deque = deque()

    def submit_next() -> None:
        batch = next(batches, None)
        if batch is not None:
            pending.append(client.submit(_run, name, function, batch, pure=False))

    try:
        for _ in range(in_flight):
            submit_next()
        while pending:
            oldest = pending.popleft()
            submit_next()  # before its results are used: the workers never wait for the client
            yield from oldest.result()
    finally:
        for future in pending:
            future.cancel()
        try:
            client.unregister_worker_plugin(name)
        except Exception:  # the cluster is going away: nothing of ours is left to remove
            pass


class _Setup(WorkerPlugin):
    """setup(*args) for each worker, made at its first task (not in the worker's event loop)."""

    def __init__(self, setup: Callable, args: tuple):
        self.setup_function, self.args = setup, args
        self._state, self._made = None, False

    def __getstate__(self):
        return {"setup_function": self.setup_function, "args": self.args}

    def __setstate__(self, state):
        self.__init__(state["setup_function"], state["args"])

    def state(self):
        with _making:
            if not self._made:
                keep_freed_memory()  # as a local worker does: a dask worker's process is ours to tune too
                self._state, self._made = self.setup_function(*self.args), True
            return self._state


_making = threading.Lock()


def _batches(items: Iterable, size: int) -> Iterator[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _run(name: str, function: Callable, batch: list) -> list:
    plugin: Any = get_worker().plugins[name]
    state = plugin.state()
    return [function(state, item) for item in batch]
