"""Stdin and FIFOs copied to a temporary file, so that they can be read in parts and again, like
any file: each copy locked by its run, and the copies a killed run left removed by the next."""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

from ..errors import InputError
from .sources import MAX_DOCUMENT_BYTES, open_error, stdin_buffer, input_kind, input_pairs, is_stream
from .utf8 import ERRORS_HINT, decode_utf8


def spool(name: str, directory: str | None = None, separators: Sequence[str] = (), errors: str = "replace") -> str:
    """Copy a stream ("-" for stdin, a FIFO...) to a temporary file so it can be read in ranges
    like any other input; the copy is removed again if it cannot be made whole. Text or JSONL that
    runs MAX_DOCUMENT_BYTES without a newline or one of separators is an error here (/dev/zero
    would fill the disk): no document of it could be read; so is invalid UTF-8 with errors="strict"
    (/dev/urandom would)."""
    import tempfile

    label = "<stdin>" if name == "-" else name
    kind = ("text", None) if name == "-" else input_kind(name)
    # the copy keeps the suffixes that say the kind (a FIFO named docs.jsonl holds JSONL)
    suffix = "".join(Path(name).suffixes[-2:]) if kind != ("text", None) else ".txt"
    ends = [b"\n", *(s.encode("utf-8") for s in separators)] if kind[0] != "parquet" and not kind[1] else []
    remove_spool_leftovers(directory or tempfile.gettempdir())
    fd, path = tempfile.mkstemp(prefix=SPOOL_PREFIX, suffix=suffix, dir=directory)
    _SPOOL_LOCKS[path] = _locked_file(path)
    try:
        with os.fdopen(fd, "wb") as out, (open(name, "rb") if name != "-" else nullcontext(stdin_buffer())) as source:
            _copy_checked(source, out, ends, label, strict=errors == "strict")
    except OSError as e:
        _unspool(path)
        if e.filename is None or e.filename == path:
            what = "standard input" if name == "-" else label
            raise InputError(f"cannot copy {what} to {os.path.dirname(path)} ({e.strerror or e}); "
                             "set TMPDIR to a folder with room") from None
        raise open_error(label, e) from None
    except BaseException:
        _unspool(path)
        raise
    return path


# Copies of streams are named so, and each is locked (flock) by the run that reads it: one that no
# run holds is what a run killed midway (kill -9, the OOM killer) left, and the next run removes it.
SPOOL_PREFIX = "bpecli-stdin-"
_SPOOL_LOCKS: dict[str, int | None] = {}
_SPOOL_GRACE_SECONDS = 60  # younger ones may be a run's that has not locked its copy yet


def _locked_file(path: str) -> int | None:
    """A descriptor of path holding a flock on it (None where there is no flock)."""
    try:
        import fcntl
    except ImportError:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # a filesystem without flock: the copy goes only with its own run
    return fd


def unspool_all() -> None:
    """Remove every copy this run made: the process is ending without its cleanup (see
    cli.signals), and a copy of a stream may be large."""
    for path in list(_SPOOL_LOCKS):
        try:
            _unspool(path)
        except OSError:
            pass


def _unspool(path: str) -> None:
    """Remove a copy this run made, and give up its lock."""
    fd = _SPOOL_LOCKS.pop(path, None)
    try:
        os.unlink(path)
    finally:
        if fd is not None:
            os.close(fd)


def remove_spool_leftovers(directory: str) -> None:
    """Remove the copies of streams that killed runs left in directory: this user's regular files
    named SPOOL_PREFIX..., over a minute old, that no live run holds locked."""
    try:
        import fcntl
        import time

        names = [entry for entry in os.listdir(directory) if entry.startswith(SPOOL_PREFIX)]
    except (ImportError, OSError):
        return
    for entry in names:
        path = os.path.join(directory, entry)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            found = os.fstat(fd)
            if (not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid()
                    or time.time() - found.st_mtime < _SPOOL_GRACE_SECONDS):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live run: OSError, and it stays
            os.unlink(path)
        except OSError:
            continue
        finally:
            os.close(fd)


def _copy_checked(source, out, ends: list[bytes], label: str, strict: bool = False) -> None:
    """Copy source to out a block at a time; with ends, stop once MAX_DOCUMENT_BYTES pass without
    one, and if strict (and ends: text), at the first invalid UTF-8."""
    keep = max(map(len, ends), default=1) - 1  # the bytes before a block that an end may start in
    copied, after_end, tail = 0, 0, b""  # after_end: where the bytes after the last end start
    checker = codecs.getincrementaldecoder("utf-8")() if strict and ends else None
    lines = 0  # the newlines copied, for where invalid UTF-8 is
    while block := source.read(1 << 20):
        out.write(block)
        if checker is not None:
            held = checker.getstate()[0]  # a character's first bytes, from the block before
            try:
                checker.decode(block)
            except UnicodeDecodeError:  # said as reading it would say it (decode_utf8), where it is
                decode_utf8(held + block, label, offset=copied - len(held), first_line=lines + 1, hint=ERRORS_HINT)
            lines += block.count(b"\n")
        if ends:
            window = tail + block  # window starts at byte copied - len(tail)
            found = max((at + len(end) for end in ends if (at := window.rfind(end)) >= 0), default=0)
            if found:
                after_end = max(after_end, copied - len(tail) + found)
            if copied + len(block) - after_end > MAX_DOCUMENT_BYTES:
                more = "or special token " if len(ends) > 1 else ""
                raise InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB from byte {after_end:,} with no line end "
                                 f"{more}in it (is it an endless stream, such as /dev/zero?); bpecli holds a "
                                 f"document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one")
            tail = window[len(window) - keep :] if keep else b""
        copied += len(block)


@contextmanager
def streams_spooled(names: list[str], separators: Sequence[str] = (), errors: str = "replace"):
    """(path, label) for each input name; stdin ("-") and other streams (FIFOs, `<(...)`) are
    copied to temporary files first and removed afterwards, so that every input can be read in
    byte ranges like a file. separators end documents in them, errors says how invalid UTF-8 is
    read (see spool)."""
    spooled: dict[str, str] = {}
    try:
        for name in names:
            if (name == "-" or is_stream(name)) and name not in spooled:
                spooled[name] = spool(name, separators=separators, errors=errors)
        yield input_pairs([(spooled.get(name, name), "<stdin>" if name == "-" else name) for name in names])
    finally:
        for path in spooled.values():
            _unspool(path)
