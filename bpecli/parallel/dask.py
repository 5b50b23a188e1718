"""The Dask side of parallel.map_in_order: the same items, run by the workers of a cluster.

Imported only when a scheduler is given, so a local run never loads `distributed`. Each worker
gets the run's setup once, as a worker plugin (workers that join later, or replace one that died,
get it too); tasks carry only the function and a small item (an input and a range), and read
their data themselves, so inputs must be reachable from the workers: a shared filesystem or an
object store. A task lost with its worker is run again by Dask.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import shlex
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from typing import Any

from ..errors import BpecliError, arg
from ..folders import Unreadable, parse_json, read_regular
from .local import keep_freed_memory

try:
    import dask
    from dask.utils import parse_timedelta
    from distributed import Client, KilledWorker, WorkerPlugin, get_worker
    from distributed.comm import connect as open_comm
    from distributed.comm.core import CommClosedError
except ModuleNotFoundError:  # the extra is not installed: said when a scheduler is asked for (an
    # ImportError of another kind, a library that cannot load, is raised as it is)
    Client = None  # type: ignore[misc,assignment]
    WorkerPlugin = object  # type: ignore[misc,assignment]

_clients: dict[str, Any] = {}
_connecting = threading.Lock()


def connect(scheduler: str) -> Any:
    """A client of the scheduler at an address (tcp://host:8786) or named by a scheduler file
    (the JSON `dask scheduler --scheduler-file` writes); one per scheduler, for this process."""
    if Client is None:
        raise BpecliError(f"{arg('scheduler')} needs Dask: pip install 'dask[distributed]' (bpecli's dask extra)")
    with _connecting:
        if scheduler not in _clients:
            # (anything at that path is read at once: a FIFO or a folder is named as such, not waited for)
            if os.path.lexists(scheduler) or _written_soon(scheduler):
                address = _address_in(scheduler)
            elif _ADDRESS.fullmatch(scheduler):
                address = scheduler
            elif _file_to_come(scheduler):
                raise BpecliError(f"{arg('scheduler')} {scheduler}: no scheduler wrote this file within "
                                  f"{_connect_seconds():.0f} s; start `dask scheduler --scheduler-file {scheduler}` first")
            else:
                raise BpecliError(f"{arg('scheduler')} {scheduler}: no such scheduler file, nor an address such as "
                                  "tcp://host:8786")
            # a lost worker is retried, not news; a lost scheduler is one error, without the client's
            # tracebacks of reconnecting (Dask's config gives distributed.client a level of its own)
            for logger in ("distributed", "distributed.client"):
                logging.getLogger(logger).setLevel(logging.CRITICAL)
            _clients[scheduler] = _client(address, scheduler)
        return _clients[scheduler]


def _connect_seconds() -> float:
    """Dask's connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)."""
    return parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")


def _file_to_come(scheduler: str) -> bool:
    """A scheduler file not written yet: a .json name of nothing yet, in a folder that exists (a
    scheduler started in the background a moment before, as in a Makefile or a CI script)."""
    return (scheduler.endswith(".json") and not os.path.lexists(scheduler)
            and os.path.isdir(os.path.dirname(os.path.abspath(scheduler))))


def _written_soon(scheduler: str) -> bool:
    """Whether a scheduler file to come appears within the connect timeout, as `dask worker
    --scheduler-file` waits for it too."""
    if not _file_to_come(scheduler):
        return False
    deadline = time.monotonic() + _connect_seconds()
    while time.monotonic() < deadline:
        if os.path.isfile(scheduler):
            return True
        time.sleep(0.1)
    return False


def _client(address: str, scheduler: str) -> Any:
    """A client connected to address, or an error within Dask's connect timeout
    (distributed.comm.timeouts.connect, 30 s). Dask bounds the connection but not the first
    answer: a server that accepts and stays silent (a hung scheduler, or no scheduler at all) held
    Client() forever, and one that answers something else made it allocate what the first bytes
    said. So the address first gets a handshake of its own, bounded, in a thread of its own (the
    caller may run an event loop already)."""
    seconds = _connect_seconds()

    async def shake_hands() -> None:
        comm = await open_comm(address, timeout=seconds)
        await comm.close()

    failed: list[BaseException] = []

    def probe() -> None:
        try:
            asyncio.run(asyncio.wait_for(shake_hands(), seconds + 1))
        except BaseException as e:  # said below, in the caller's thread
            failed.append(e)

    thread = threading.Thread(target=probe, name="bpecli-connect", daemon=True)
    thread.start()
    thread.join()
    try:
        if failed:
            raise failed[0]
        return Client(address=address, set_as_default=False, timeout=seconds)
    except (asyncio.TimeoutError, TimeoutError):
        reason = f"it did not answer within {seconds:.0f} s"
    except (OSError, ValueError, TypeError) as e:
        reason = str(e)
    except Exception as e:  # MemoryError, a protocol error: what answered is no Dask scheduler
        reason = f"what answers there is not a Dask scheduler: {type(e).__name__}"
    raise BpecliError(f"cannot reach the Dask scheduler {scheduler} ({reason}); "
                      "check the address or scheduler file, and that the scheduler runs")


_ADDRESS = re.compile(r"(\w+://)?[^/\s]+:\d+")
# A scheduler file holds an address and a few words about the scheduler: far less than this.
_SCHEDULER_FILE_BYTES = 1 << 20


def _address_in(path: str) -> str:
    """The address in a scheduler file, read here rather than by Dask: Dask waits a minute on a
    file without one and then raises its own traceback. A file that is no JSON yet (a scheduler
    starting, writing it) gets a few tries."""
    problem = ""
    for attempt in range(10):
        if attempt:
            time.sleep(0.1)
        try:
            data, _ = read_regular(path, _SCHEDULER_FILE_BYTES)
        except OSError as e:
            raise BpecliError(f"{arg('scheduler')} {path}: cannot read it ({e.strerror or e})") from None
        except Unreadable as e:
            problem = f"it {e}"
            break
        try:
            document = parse_json(data)
        except Unreadable:  # not JSON yet, not UTF-8, or nested too deep
            problem = "it is not JSON"
            continue
        address = document.get("address") if isinstance(document, dict) else None
        if isinstance(address, str) and _ADDRESS.fullmatch(address):
            return address
        problem = "it has no \"address\" such as tcp://host:8786"
        break
    raise BpecliError(f"{arg('scheduler')} {path}: not a Dask scheduler file, {problem}; give the file `dask scheduler "
                      "--scheduler-file` writes, or the scheduler's address")


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


def map_in_order(function: Callable, items: Iterable, setup: Callable, args: tuple, scheduler: str, ahead: int = 0) -> Iterator:
    """See parallel.map_in_order. Items go ITEMS_PER_TASK to a task; 2 tasks per worker thread, and
    the tasks of `ahead` items, are in flight besides the one whose results are being used."""
    client = connect(scheduler)
    name = f"bpecli-{uuid.uuid4().hex}"
    with _said(scheduler):
        client.register_plugin(_Setup(setup, args), name=name)
        _wait_for_a_worker(client, scheduler)
        in_flight = 2 * threads(scheduler) + -(-ahead // ITEMS_PER_TASK)
    batches = _batches(items, ITEMS_PER_TASK)
    pending: deque = deque()

    def submit_next() -> None:
        batch = next(batches, None)
        if batch is not None:
            with _said(scheduler):
                pending.append(client.submit(_run, name, function, batch, pure=False))

    try:
        for _ in range(in_flight):
            submit_next()
        while pending:
            oldest = pending.popleft()
            submit_next()  # before its results are used: the workers never wait for the client
            with _said(scheduler):
                results = oldest.result()
            yield from results
    finally:
        if client.status == "running":  # else the scheduler is gone, with our tasks and plugin
            for future in pending:
                future.cancel()
            try:
                client.unregister_worker_plugin(name)
            except Exception:  # the cluster is going away: nothing of ours is left to remove
                pass


# A cluster that has had no worker for this long is said to the user (a logging warning of the
# "bpecli" logger, which the CLI prints as a note); workers started beside bpecli join sooner.
WORKER_GRACE_SECONDS = 10.0
log = logging.getLogger("bpecli")


def _wait_for_a_worker(client: Any, scheduler: str) -> None:
    """Return once the cluster has a worker; past WORKER_GRACE_SECONDS without one, say how to
    start them, and wait on."""
    try:
        client.wait_for_workers(1, timeout=WORKER_GRACE_SECONDS)
    except TimeoutError:
        given = shlex.quote(scheduler)
        start = f"dask worker {given}" if _ADDRESS.fullmatch(scheduler) else f"dask worker --scheduler-file {given}"
        log.warning(f"the Dask cluster of {scheduler} has had no worker for {WORKER_GRACE_SECONDS:.0f} s; "
                    f"waiting for one (start them: {start})")
        client.wait_for_workers(1)


@contextmanager
def _said(scheduler: str):
    """Dask's own failures as one error each: the scheduler lost (its futures are cancelled), or
    workers dying again and again on one task. Errors the work raised pass as they are."""
    try:
        yield
    except (CancelledError, CommClosedError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BpecliError(f"lost the Dask scheduler {scheduler} ({reason}); check that it runs, then rerun") from None
    except KilledWorker:
        raise BpecliError(f"Dask workers of {scheduler} died, again and again, running the same part (out of memory? "
                          "killed?); give them more memory, or rerun") from None


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
