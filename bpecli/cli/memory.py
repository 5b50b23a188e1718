"""Running out of memory, said in one line: under a memory limit (ulimit -v / -d) numpy is loaded
first in a forked check, and a run that finds no memory says the limit, or what takes less."""

from __future__ import annotations

import importlib
import os
import re
import resource
import sys
from typing import NoReturn

from .streams import fail, say

# numpy is imported inside functions here (and mmap in the forked check alone): a one-line
# `bpecli encode` never loads numpy.

# The address space a bpecli process takes, with numpy and pyarrow loaded and their threads: the
# one-liner, `encode --out` and `train` of 3 MB of .txt, .gz or .jsonl run in ulimit -v 300000 to
# 400000; `encode --out` of .parquet needs 700000 (pyarrow's threads reserve address space).
NEEDS_MB = (300, 700)

# Address space the forked check keeps free beyond what numpy took (see load_numpy_within_limit)
_SPARE_MB = 64

# What the dynamic loader says when a library finds no memory to be mapped into
MAPPING_FAILED = re.compile(r"failed to map segment|cannot allocate memory|cannot map zero-fill pages", re.IGNORECASE)

_AS_PROCESS = {"main": False}  # set by as_own_process(): the process is bpecli's own


def as_own_process() -> None:
    """The process is bpecli's own (not a test's): out of memory, it leaves at once. numpy's
    OpenBLAS starts a thread per CPU at import, and reserves memory for each, which bpecli (no
    linear algebra) never uses: under a memory limit their start fails, out loud; nor does
    pyarrow's jemalloc start a thread whose start would fail, out loud."""
    _AS_PROCESS["main"] = True
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if memory_limit() is not None:
        os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")


def memory_limit() -> tuple[int, str] | None:
    """(the bytes of memory a process may map, the ulimit option that sets them), if limited."""
    limits = [(resource.getrlimit(kind)[0], option) for kind, option in ((resource.RLIMIT_AS, "-v"), (resource.RLIMIT_DATA, "-d"))]
    finite = [limit for limit in limits if limit[0] != resource.RLIM_INFINITY]
    return min(finite) if finite else None


def ran_out_of_memory(error: BaseException) -> bool:
    """Whether an error was raised while handling a MemoryError (its context, even if hidden)."""
    seen = 0
    context = error.__context__
    while context is not None and seen < 20:
        if isinstance(context, MemoryError):
            return True
        context, seen = context.__context__, seen + 1
    return False


def out_of_memory(ctx) -> NoReturn:
    """Say that the run found no memory: the limit when one is set (fewer workers would not help:
    each process has the limit to itself), else what takes less. The command's cleanup has run; a
    process then leaves at once, without the libraries' own exit: pyarrow's allocator (mimalloc),
    once out of memory, crashed it (SIGSEGV after the line, at ulimit -v 320000)."""
    limited = memory_limit()
    if limited is not None:
        limit, option = limited
        line = (f"bpecli: error: out of memory within the limit of {limit >> 20:,} MB a process (ulimit {option} {limit >> 10}); "
                f"raise it: a bpecli process takes {NEEDS_MB[0]} to {NEEDS_MB[1]} MB (Parquet the most), more for long documents")
    else:
        workers = ctx.params.get("workers", 1) > 1 and (ctx.info_name != "encode" or ctx.params.get("out") is not None)
        line = "bpecli: error: out of memory; use " + ("fewer --workers or " if workers else "") + "smaller inputs"
    if not _AS_PROCESS["main"]:  # called in a test's process, not bpecli's own
        fail(line, 1)
    say(line)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(1)


def load_numpy_within_limit(args: list[str] | None = None) -> None:
    """Under a memory limit, load numpy now, while the command has taken no memory yet, and first
    in a forked child to see that it loads: OpenBLAS, which numpy loads, ends a process it cannot
    allocate for with exit(1) and a line of its own, before Python can say a word. pyarrow too,
    where the command line names a file it reads (Parquet, compressed, a URI): glibc ends a process
    whose dlopen of it finds no room for thread-local data ("cannot allocate memory for
    thread-local data: ABORT"). (Without a limit nothing happens here: each is loaded where it is
    needed, if it is.)"""
    modules = ["numpy"] + (["pyarrow"] if any(map(_read_by_pyarrow, args or [])) else [])
    if all(name in sys.modules for name in modules) or memory_limit() is None or not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            from ..parallel.local import to_devnull

            to_devnull(1, 2)
            import mmap

            for name in modules:
                importlib.import_module(name)
            # and room to spare: glibc reserves 64 MB for a thread's first malloc, and near the
            # limit OpenBLAS's own allocation may find less than it did here
            mmap.mmap(-1, _SPARE_MB << 20).close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise MemoryError
    for name in modules:
        importlib.import_module(name)


def _read_by_pyarrow(arg: str) -> bool:
    """Whether a command-line argument names an input pyarrow reads."""
    return "://" in arg or arg.lower().endswith((".parquet", ".gz", ".zst", ".bz2"))
