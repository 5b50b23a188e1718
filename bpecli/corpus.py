"""Inputs: text files memory-mapped and cut into chunks whose edges sit on special tokens."""

from __future__ import annotations

import mmap
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError


@dataclass(frozen=True)
class Chunk:
    """A byte range of an input file; no document crosses its edges."""

    path: str
    start: int
    end: int


def open_mmap(path: str | Path) -> mmap.mmap | bytes:
    """Map a file read-only; an empty file gives b"" (mmap refuses length 0)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a text file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None


def spool_stdin(directory: str | None = None) -> str:
    """Copy standard input to a temporary file so it can be mapped like any other input."""
    fd, name = tempfile.mkstemp(prefix="bpecli-stdin-", suffix=".txt", dir=directory)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return name


def chunk_boundaries(data: mmap.mmap | bytes, n_chunks: int, split_tokens: list[bytes]) -> list[int]:
    """Offsets that cut data into about n_chunks pieces, each cut at the start of a special token.

    Example: b"ab<s>cd<s>ef" cut in 3 at b"<s>" -> [0, 2, 7, 12]
    """
    size = len(data)
    if n_chunks <= 1 or not split_tokens or size == 0:
        return [0, size]
    step = size // n_chunks
    bounds = [0]
    for i in range(1, n_chunks):
        guess = max(i * step, bounds[-1] + 1)
        found = [pos for tok in split_tokens if (pos := data.find(tok, guess)) != -1]
        bounds.append(min(found) if found else size)
    bounds.append(size)
    return sorted(set(bounds))


def file_chunks(path: str, n_chunks: int, special_tokens: list[str]) -> list[Chunk]:
    """Cut one file into chunks at special-token occurrences."""
    data = open_mmap(path)
    bounds = chunk_boundaries(data, n_chunks, [t.encode() for t in special_tokens])
    return [Chunk(path, a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def read_chunk(chunk: Chunk, errors: str = "strict") -> str:
    """Decode one chunk as UTF-8; invalid bytes are an error naming the file, line and byte."""
    data = open_mmap(chunk.path)
    return decode_utf8(data[chunk.start : chunk.end], chunk.path, errors=errors, whole=data, offset=chunk.start)


def decode_utf8(raw: bytes, name: str, *, errors: str = "strict", whole=None, offset: int = 0) -> str:
    """raw as text; invalid UTF-8 is an error that says where (line and byte of whole, if given)."""
    try:
        return raw.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        where = offset + e.start
        line = (raw if whole is None else whole)[:where].count(b"\n") + 1
        raise InputError(
            f"{name}:{line}: invalid UTF-8 at byte {where} ({raw[e.start:e.start + 4]!r}); "
            "to carry on with U+FFFD in its place, use --errors replace"
        ) from None


def read_bytes(name: str) -> bytes:
    """The whole of a file, or of stdin for "-"."""
    if name == "-":
        return sys.stdin.buffer.read()
    data = open_mmap(name)
    return bytes(data)


def read_text(name: str, errors: str = "strict") -> str:
    return decode_utf8(read_bytes(name), "<stdin>" if name == "-" else name, errors=errors)


def read_ids(name: str) -> list[int]:
    """Token ids from a .npy shard, or whitespace-separated integers in a file or stdin."""
    if name.endswith(".npy"):
        import numpy as np

        try:
            array = np.load(name, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise InputError(f"{name}: not a readable .npy shard ({e})") from None
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise InputError(f"{name}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
        return array.tolist()
    text = read_text(name)
    try:
        return list(map(int, text.split()))
    except ValueError:
        label = "<stdin>" if name == "-" else name
        for number, line in enumerate(text.splitlines(), 1):
            for word in line.split():
                if not word.lstrip("-").isdigit():
                    raise InputError(f"{label}:{number}: {word[:40]!r} is not a token id (expected integers)") from None
        raise
