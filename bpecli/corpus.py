"""Inputs: text files memory-mapped and cut into chunks whose edges sit on special tokens."""

from __future__ import annotations

import mmap
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def stdin_spooled(names: list[str]):
    """(path, label) for each input name, "-" (stdin) copied to a temporary file first and
    removed afterwards, so that every input can be mapped like a file."""
    spooled = {name: spool_stdin() for name in names if name == "-"}
    try:
        yield [(spooled.get(name, name), "<stdin>" if name == "-" else name) for name in names]
    finally:
        for path in spooled.values():
            os.unlink(path)


def chunk_boundaries(data: mmap.mmap | bytes, n_chunks: int, split_tokens: list[bytes]) -> list[int]:
    """Offsets that cut data into about n_chunks pieces, each cut at the start of a special token.

    Example: b"ab<s>cd<s>ef" cut in 3 at b"<s>" -> [0, 2, 7, 12]
    """
    size = len(data)
    if n_chunks <= 1 or not split_tokens or size == 0:
        return [0, size]
    step = size // n_chunks
    bounds = [0]
    # where each token occurs next; a token is looked for again only once a cut has passed it, and
    # dropped when it occurs no more, so the data is read about once per token (not once per cut)
    next_at = dict.fromkeys(split_tokens, -1)
    for i in range(1, n_chunks):
        guess = max(i * step, bounds[-1] + 1)
        for token, at in list(next_at.items()):
            if at < guess and (at := data.find(token, guess)) == -1:
                del next_at[token]
            else:
                next_at[token] = at
        bounds.append(min(next_at.values(), default=size))
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


def decode_utf8(raw: bytes, name: str, *, errors: str = "strict", whole=None, offset: int = 0, first_line: int = 1) -> str:
    """raw as text; invalid UTF-8 is an error that says where (line and byte of whole, if given)."""
    try:
        return raw.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        where = offset + e.start
        line = (raw if whole is None else whole)[:where].count(b"\n") + first_line
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


def read_ids(name: str):
    """Token ids from a .npy shard (as its numpy array), or whitespace-separated integers in a
    file or stdin (as a list)."""
    if name.endswith(".npy"):
        import numpy as np

        try:
            array = np.load(name, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise InputError(f"{name}: not a readable .npy shard ({e})") from None
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise InputError(f"{name}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
        return array
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


# ---- documents for encoding to shards: text, JSONL and Parquet, plain or compressed -----------

# Compressed inputs are read through pyarrow's own streams; no extra packages.
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2"}
# Inputs are handed to workers in parts of about this many bytes, whatever the worker count, so
# that a part's number means the same thing on every run (resuming relies on it).
PART_BYTES = 2 << 20


@dataclass(frozen=True)
class Part:
    """A piece of one input that holds whole documents: a byte range of a file (start, end), a
    Parquet row group (start), or a block of a decompressed stream (data, first_line)."""

    path: str
    label: str  # the input as the user named it, for messages
    kind: str  # "text", "jsonl" or "parquet"
    start: int = 0
    end: int = 0
    data: bytes | None = None
    first_line: int = 1


def input_kind(name: str) -> tuple[str, str | None]:
    """(kind, compression) from a file name.

    Example: "docs.jsonl.gz" -> ("jsonl", "gzip"); "notes.txt" -> ("text", None)
    """
    path = Path(name)
    compression = COMPRESSIONS.get(path.suffix)
    suffix = Path(path.stem).suffix if compression else path.suffix
    kind = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "text")
    if kind == "parquet" and compression:
        raise InputError(f"{name}: Parquet compresses itself; give the .parquet file uncompressed")
    return kind, compression


def document_parts(
    inputs: list[tuple[str, str]], *, separators: list[str], text_column: str = "text"
) -> Iterator[Part]:
    """Parts of every input, in order. inputs are (path, label) pairs; separators are the special
    tokens that end documents in text files.

    Example: a 10 MB text file -> Part(start=0, end=2097190), Part(start=2097190, ...), ...
    """
    cuts = [s.encode("utf-8") for s in separators]
    for path, label in inputs:
        kind, compression = input_kind(path)
        if kind == "parquet":
            yield from _parquet_parts(path, label, text_column)
        elif compression:
            yield from _stream_parts(path, label, kind, compression, cuts if kind == "text" else [b"\n"])
        else:
            data = open_mmap(path)
            n_parts = -(-len(data) // PART_BYTES)
            bounds = chunk_boundaries(data, n_parts, cuts if kind == "text" else [b"\n"])
            yield from (Part(path, label, kind, a, b) for a, b in zip(bounds, bounds[1:]) if b > a)


def _parquet_parts(path: str, label: str, column: str) -> Iterator[Part]:
    from pyarrow import ArrowException, parquet

    try:
        metadata = parquet.ParquetFile(path).metadata
    except (OSError, ArrowException) as e:
        raise InputError(f"{label}: not a readable Parquet file ({e})") from None
    names = metadata.schema.names
    if column not in names:
        raise InputError(f"{label}: no column {column!r} (it has {', '.join(names)}); name one with --text-column")
    row = 0
    for group in range(metadata.num_row_groups):
        yield Part(path, label, "parquet", start=group, first_line=row + 1)
        row += metadata.row_group(group).num_rows


def _stream_parts(path: str, label: str, kind: str, compression: str, cuts: list[bytes]) -> Iterator[Part]:
    """Blocks of a compressed stream, each cut after its last document (or line) end."""
    import pyarrow as pa

    try:
        stream = pa.input_stream(path, compression=compression)
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{label}: cannot read ({e})") from None
    carry = b""
    line = 1
    with stream:
        while True:
            try:
                block = stream.read(PART_BYTES)
            except (OSError, pa.ArrowException) as e:
                raise InputError(f"{label}: cannot decompress ({e})") from None
            buffer = carry + block
            if not block:
                if buffer:
                    yield Part(path, label, kind, data=buffer, first_line=line)
                return
            # text: cut where the last special token starts; JSONL: after the last newline
            cut = max((buffer.rfind(c) for c in cuts), default=-1)
            if kind != "text" and cut >= 0:
                cut += 1
            if cut <= 0:
                carry = buffer
                continue
            part, carry = buffer[:cut], buffer[cut:]
            yield Part(path, label, kind, data=part, first_line=line)
            line += part.count(b"\n")


def read_documents(part: Part, *, splitter, text_column: str = "text", errors: str = "strict") -> tuple[list[str], int]:
    """The non-empty documents of a part and the number of bytes they came from. splitter is
    the compiled special-token splitter for text inputs (see pretokenize.special_splitter).

    Example: text part b"a<|endoftext|>b<|endoftext|>" -> (["a", "b"], 28)
    """
    if part.kind == "parquet":
        return _parquet_documents(part, text_column)
    if part.data is None:
        whole = open_mmap(part.path)
        raw = whole[part.start : part.end]
        text = decode_utf8(raw, part.label, errors=errors, whole=whole, offset=part.start)
    else:
        raw = part.data
        text = decode_utf8(raw, part.label, errors=errors, first_line=part.first_line)
    if part.kind == "text":
        documents = splitter.split(text)[::2] if splitter else [text]
        return [d for d in documents if d], len(raw)
    return _jsonl_documents(text, part, text_column), len(raw)


def _jsonl_documents(text: str, part: Part, column: str) -> list[str]:
    import json

    documents = []
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            value = json.loads(line)[column]
            if not isinstance(value, str):
                raise TypeError
        except json.JSONDecodeError as e:
            raise InputError(f"{part.label}:{_line_number(part, i)}: not valid JSON ({e.msg})") from None
        except (KeyError, TypeError, IndexError):
            raise InputError(
                f"{part.label}:{_line_number(part, i)}: no text in field {column!r}; name the field with --text-column"
            ) from None
        if value:
            documents.append(value)
    return documents


def _line_number(part: Part, index: int) -> int:
    """The line number of line `index` of a part (counted only when an error needs it)."""
    if part.data is not None:
        return part.first_line + index
    return open_mmap(part.path)[: part.start].count(b"\n") + 1 + index


def _parquet_documents(part: Part, column: str) -> tuple[list[str], int]:
    from pyarrow import ArrowException, compute, parquet

    try:
        values = parquet.ParquetFile(part.path).read_row_group(part.start, columns=[column]).column(0)
    except (OSError, ArrowException) as e:
        raise InputError(f"{part.label}: cannot read row group {part.start} ({e})") from None
    documents = values.to_pylist()
    for row, value in enumerate(documents):
        if not isinstance(value, str):
            raise InputError(f"{part.label}: row {part.first_line + row}: column {column!r} holds {type(value).__name__}, not text")
    return [d for d in documents if d], compute.sum(compute.binary_length(values)).as_py() or 0
