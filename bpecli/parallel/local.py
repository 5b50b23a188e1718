"""Worker processes on this machine: each runs a function over the items sent to it, and the
results come back in order (see parallel.map_in_order).

Each worker has a pipe of its own to the parent: nothing is shared between processes, so a worker
that is killed (Ctrl-C, SIGTERM, the kernel's OOM killer) can never leave a lock held that another
waits for, as multiprocessing.Pool's shared queues can when it terminates workers mid-send.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import BpecliError, arg

# multiprocessing and pickle are imported where workers start: a one-line encode, which imports
# this module for keep_freed_memory, starts none.


def keep_freed_memory() -> None:
    """Have glibc's malloc keep the memory numpy frees for its next arrays: bulk encoding makes and
    drops arrays of several MB for every batch, and each fresh page from the kernel costs a fault
    (see docs/performance.md). The process keeps its high-water mark of memory instead. Nothing
    happens where malloc is not glibc's."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MB (its most) come from the heap...
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: ...and up to 1 GB of it stays when freed


class Workers:
    """Worker processes, each serving the items sent down its pipe one at a time."""

    def __init__(self, count: int, setup: Callable, args: tuple):
        import multiprocessing

        # fork shares the parent's modules and tables (a prepared Tokenizer) for free
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context: Any = multiprocessing.get_context(method)
        self.processes: list[Any] = []
        self.pipes: list[Any] = []
        try:
            for _ in range(count):
                parent_end, child_end = context.Pipe()
                # a forked worker closes its copies of the parent's ends: its own, and those of the
                # workers started before it, or none would see end-of-file when the parent is gone
                inherited = [*self.pipes, parent_end] if method == "fork" else []
                process = context.Process(target=_serve, args=(child_end, setup, args, os.getpid(), inherited), daemon=True)
                self.pipes.append(parent_end)
                try:
                    process.start()
                finally:
                    child_end.close()
                self.processes.append(process)
        except BaseException:  # a fork that failed (no memory, no more processes): end those started
            for pipe in self.pipes[len(self.processes):]:
                pipe.close()
            del self.pipes[len(self.processes):]
            self._stop(gently=False)
            raise

    def map_in_order(self, function: Callable, items: Iterable, *, in_flight: int) -> Iterator:
        from multiprocessing.connection import wait

        numbered = enumerate(items)
        idle = list(range(len(self.pipes)))
        busy: dict[int, int] = {}  # worker -> the item it works on
        done: dict[int, tuple] = {}  # item -> (ok, result) not yet yielded
        sent = next_out = 0
        exhausted = False
        finished = False
        try:
            while True:
                while idle and not exhausted and sent - next_out < in_flight:
                    try:
                        index, item = next(numbered)
                    except StopIteration:
                        exhausted = True
                        break
                    worker = idle.pop()
                    self.pipes[worker].send((function, item))
                    busy[worker] = index
                    sent += 1
                if next_out in done:
                    ok, result = done.pop(next_out)
                    next_out += 1
                    if not ok:
                        raise result
                    yield result
                    continue
                if exhausted and next_out == sent:
                    finished = True
                    return
                by_pipe: dict[Any, int] = {self.pipes[w]: w for w in busy}
                by_sentinel: dict[Any, int] = {self.processes[w].sentinel: w for w in busy}
                for ready in wait([*by_pipe, *by_sentinel]):
                    done_by: Any = by_pipe.get(ready, by_sentinel.get(ready))
                    if done_by not in busy:
                        continue  # its pipe and its sentinel were both ready
                    try:
                        done[busy.pop(done_by)] = self.pipes[done_by].recv()
                    except (EOFError, OSError):
                        code = self.processes[done_by].exitcode
                        raise BpecliError(
                            f"a worker process died (exit status {code}; killed, or out of memory?); "
                            f"rerun, perhaps with fewer {arg('workers')}"
                        ) from None
                    idle.append(done_by)
        finally:
            self._stop(gently=finished)

    def _stop(self, gently: bool) -> None:
        """End every worker: asked to when all went well, else terminated at once."""
        for pipe, process in zip(self.pipes, self.processes):
            if gently:
                try:
                    pipe.send(None)
                except OSError:
                    pass
            else:
                process.terminate()
        for pipe, process in zip(self.pipes, self.processes):
            process.join(timeout=5)
            if process.exitcode is None:
                process.kill()
                process.join()
            pipe.close()


def _serve(pipe, setup: Callable, args: tuple, parent: int, inherited: list) -> None:
    """A worker's life: set up once, then answer each (function, item) with (ok, result)."""
    _die_with(parent)
    for connection in inherited:
        connection.close()
    _quiet()
    # Ctrl-C and SIGTERM are the parent's to handle: it ends the workers, which go quietly
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})  # the CLI blocks them in its threads
    # Whatever fails here is answered, never left to multiprocessing, which would print a traceback
    # and leave the parent to say only that a worker died.
    try:
        keep_freed_memory()
        state, failed = setup(*args), None
    except BaseException as error:  # raised in the parent, at the first item's turn
        state, failed = None, error
    while True:
        try:
            task = pipe.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        except BaseException as error:  # no memory to unpickle the item: its answer says so
            task = error
        if task is None:
            return
        try:
            if failed is not None:
                raise failed
            if isinstance(task, BaseException):
                raise task
            function, item = task
            answer = (True, function(state, item))
        except BaseException as error:  # raised in the parent, at this item's turn
            answer = (False, error)
        if not _send(pipe, answer):
            return


def _send(pipe, answer: tuple) -> bool:
    """Send an answer to the parent; an error it could not unpickle, or a result there is no memory
    to pickle, goes as an error that says what it was. False once the parent is gone."""
    ok, value = answer
    try:
        if not ok and not _picklable(value):
            answer = (False, BpecliError(f"{type(value).__name__}: {value}"))
        pipe.send(answer)
        return True
    except (EOFError, OSError):
        return False
    except BaseException as error:  # pickling found no memory
        try:
            pipe.send((False, error if isinstance(error, MemoryError) else BpecliError(f"{type(error).__name__}: {error}")))
            return True
        except BaseException:
            return False


def _quiet() -> None:
    """Point a worker's stdout and stderr at /dev/null. Everything a worker has to say goes down its
    pipe as an answer, and its parent says it in one line; what a library would print there as it
    crashes (pyarrow's C++ aborting on std::bad_alloc under ulimit -v) would be lines beside it, and
    the parent says the worker died."""
    to_devnull(1, 2)


def to_devnull(*fds: int) -> None:
    """Point these file descriptors (1 for stdout, 2 for stderr) at /dev/null, if the system lets."""
    try:
        quiet = os.open(os.devnull, os.O_WRONLY)
        for fd in fds:
            os.dup2(quiet, fd)
        os.close(quiet)
    except OSError:
        pass


# prctl's option that has the kernel send a signal to a process when its parent dies (Linux)
_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Have the kernel kill this worker the moment its parent dies, even a `kill -9` of it (on
    Linux; elsewhere the worker leaves when its pipe reaches end-of-file). A worker busy in numpy
    reads no pipe, and one left alive would keep the output folder's lock and its memory.

    The signal comes when the parent's thread that started the worker ends, so workers are
    started and used by one thread (parallel.map_in_order runs in its caller's thread)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died between fork and prctl: no signal will come
        os._exit(0)


def _picklable(error: BaseException) -> bool:
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return True
    except Exception:
        return False
