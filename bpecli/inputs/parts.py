"""Parts: runs of whole documents of one input, the unit of parallel work and of resume, cut
from a file before a separator (or at a safe cut, in training), read from a compressed stream a
block at a time, or a Parquet row group each."""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import InputError, arg
from .sources import (MAX_DOCUMENT_BYTES, ReadOnce, RemoteBytes, file_version, input_kind, input_stat, is_stream, is_uri,
                      lines_in, map_local, not_empty, open_input)

# pyarrow is imported where it is used: only Parquet and compressed inputs need it.

# Inputs are handed to workers in parts of about this many bytes, whatever the worker count, so
# that a part's number means the same thing on every run (resuming relies on it).
PART_BYTES = 2 << 20

# A Parquet row group is one part, read whole: the most of its text column bpecli reads at once.
MAX_ROW_GROUP_BYTES = 1 << 30


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
    weight: int = 0  # the bytes of the input file it accounts for, for progress (compressed ones, for a stream)
    version: tuple | None = None  # a local file's state when it was cut into parts (see sources.open_local)


def reads_whole(name: str) -> bool:
    """Whether encode reads this text input whole: local uncompressed files of at most PART_BYTES;
    others (stdin and other streams, compressed files, URIs) it reads in parts."""
    if name == "-" or is_stream(name) or is_uri(name) or input_kind(name)[1]:
        return False
    try:
        return os.stat(name).st_size <= PART_BYTES
    except OSError:
        return True  # missing or unreadable: said by the read


def document_parts(
    inputs: list[tuple[str, str]], *, separators: list[str], text_column: str = "text", safe_cut: str | None = None,
    part_bytes: int | None = None,
) -> Iterator[Part]:
    """Parts of every input, in order. inputs are (path, label) pairs; separators are the special
    tokens that end documents in text files. Text without separators is one document, unless
    safe_cut (a regex where the pattern surely starts a piece: training) says where else to cut it.
    A document longer than MAX_DOCUMENT_BYTES is an error that says where it starts.

    part_bytes overrides PART_BYTES where the parts need not be the same on every run (training).

    Example: a 10 MB text file -> Part(start=0, end=2097190), Part(start=2097190, ...), ...
    """
    part_bytes = part_bytes or PART_BYTES
    for path, label in inputs:
        path = path if is_uri(path) or path == "-" else os.path.abspath(path)  # workers elsewhere may not share our cwd
        kind, compression = input_kind(path)
        if kind == "parquet":
            yield from _parquet_parts(path, label, text_column)
            continue
        cuts = _Cuts(kind, separators, safe_cut)
        if compression or path == "-" or is_stream(path):  # read once, front to back, a block at a time
            yield from _stream_parts(path, label, kind, compression, cuts, part_bytes)
            continue
        data, version = (RemoteBytes(path, label), None) if is_uri(path) else map_local(path, label)
        n_parts = -(-len(data) // part_bytes)
        if cuts.safe is not None:
            bounds = cuts.boundaries(data, n_parts)
        else:  # (JSONL files cut before a newline: see _Cuts)
            bounds = part_boundaries(data, n_parts, cuts.literals)
        for a, b in zip(bounds, bounds[1:]):
            if b - a > MAX_DOCUMENT_BYTES:  # a part this long may hold a document past the budget
                _check_lengths(data, a, b, cuts, label)
        yield from (Part(path, label, kind, a, b, weight=b - a, version=version) for a, b in zip(bounds, bounds[1:]) if b > a)


def part_boundaries(data: mmap.mmap | bytes | RemoteBytes, n_parts: int, split_tokens: list[bytes]) -> list[int]:
    """Offsets that cut data into about n_parts parts, each cut at the start of a special token.

    Example: b"ab<s>cd<s>ef" cut in 3 at b"<s>" -> [0, 2, 7, 12]
    """
    size = len(data)
    if n_parts <= 1 or not split_tokens or size == 0:
        return [0, size]
    step = size // n_parts
    # one search for any of the tokens: one that never occurs is not looked for through all the
    # data at every cut (a whole remote object read once per such token)
    tokens = re.compile(b"|".join(map(re.escape, split_tokens)))  # a match starts where the first token does
    bounds = [0]
    for i in range(1, n_parts):
        at = _search(data, tokens, max(i * step, bounds[-1] + 1))
        if at < 0:
            break
        bounds.append(at)
    return sorted(set(bounds + [size]))


def _search(data, pattern: re.Pattern, start: int) -> int:
    """Where pattern first matches data at or after start; -1 if nowhere."""
    if isinstance(data, RemoteBytes):
        return data.search(pattern, start)
    match = pattern.search(data, start)
    return match.start() if match else -1


# Where a safe cut (SAFE_CUT) may be: right after a newline, before an ASCII letter or digit.
_LINE_STARTS = re.compile(rb"\n[A-Za-z0-9]")


class _Cuts:
    """Where an input may be cut into parts: before a separator in text, and in training also at a
    safe cut (a regex that matches just after a newline, where a piece surely starts: SAFE_CUT).
    JSONL is cut at its newlines: before one in a file, after one in a stream. The two differ
    because a file's parts are numbered and recorded in the journal of a run (a rerun must cut
    them where the first run did), while a stream's blocks are only ever read once, front to back;
    a file's part after the first starts with the newline that ends the line before it."""

    def __init__(self, kind: str, separators: list[str], safe_cut: str | None):
        self.kind, self.separators = kind, separators
        self.literals = [s.encode("utf-8") for s in separators] if kind == "text" else [b"\n"]
        self.after = 1 if kind != "text" else 0  # a JSONL cut is after its newline
        # (a safe cut is never inside a separator unless a separator holds a newline)
        use_safe = kind == "text" and safe_cut is not None and not any("\n" in s for s in separators)
        self.safe = re.compile(safe_cut.encode()) if use_safe and safe_cut is not None else None
        self.margin = max(map(len, self.literals), default=0) + 8  # a match may end this far into new data

    def last(self, data, start: int) -> int:
        """The last cut in data[start - margin:], -1 if none."""
        start = max(0, start - self.margin)
        found = max((data.rfind(c, start) for c in self.literals), default=-1)
        found = found + self.after if found >= 0 else -1
        if self.safe is not None:  # newlines found by a literal search, then checked: far faster than a regex search
            at = len(data)
            while (at := data.rfind(b"\n", max(start, found), at)) >= 0 and at + 1 > found:
                if self.safe.match(data, at + 1):
                    return at + 1
        return found

    def first(self, data, start: int, end: int | None = None) -> int:
        """The first cut in data[start + 1:end], -1 if none."""
        end = len(data) if end is None else end
        if isinstance(data, RemoteBytes):  # searched a window at a time
            needles: list = [*self.literals, *([self.safe] if self.safe is not None else [])]
            found = [at + (self.after if i < len(self.literals) else 0)
                     for i, at in enumerate(data.search(needle, start + 1) for needle in needles) if 0 <= at < end]
            return min(found, default=-1)
        found = [at + self.after for at in (data.find(c, start + 1, end) for c in self.literals) if at >= 0]
        best = min(found, default=end)
        if self.safe is not None:
            # a newline then a letter or digit, found by the regex engine's search for the newline
            # (in source code most lines start with spaces: one find per newline took 0.27 s to
            # cut 1.5 GB into parts, before any worker started), then checked
            for candidate in _LINE_STARTS.finditer(data, start, max(start, best)):
                if self.safe.match(data, candidate.start() + 1):
                    best = candidate.start() + 1
                    break
        return best if best < end else -1

    def boundaries(self, data, n_parts: int) -> list[int]:
        """Offsets that cut data into about n_parts pieces, each at a cut."""
        size, bounds = len(data), [0]
        for i in range(1, n_parts):
            found = self.first(data, max(i * size // n_parts, bounds[-1] + 1) - 1)
            if found < 0:
                break
            bounds.append(found)
        return sorted(set(bounds + [size]))

    def too_long(self, label: str, start: int, line: int | None, decompressed: bool = False) -> InputError:
        """The error for a document of over MAX_DOCUMENT_BYTES that starts at byte `start`."""
        at = f"byte {start:,}" + (" of the decompressed data" if decompressed else "")
        budget = f"bpecli holds a document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one"
        if self.kind == "jsonl":
            where = f"{label}:{line}" if line is not None else label
            return InputError(f"{where}: a line of over {MAX_DOCUMENT_BYTES >> 20} MiB (from {at}); {budget}")
        names = " or ".join(s if s.isprintable() else repr(s) for s in self.separators[:3]) or "special token"
        if self.safe is not None:
            return InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB from {at} with no {names} and no line "
                              f"starting with a letter or digit to cut it at (is it text?); {budget}")
        hint = f"put {names.split(' or ')[0]} between documents" if self.separators else "name a special token that separates them"
        return InputError(f"{label}: the document at {at} runs over {MAX_DOCUMENT_BYTES >> 20} MiB with no {names} "
                          f"in it (is it text?); {budget}: {hint}")


def _check_lengths(data, a: int, b: int, cuts: _Cuts, label: str) -> None:
    """An error for the first document in data[a:b] longer than MAX_DOCUMENT_BYTES."""
    start = a + 1 if cuts.after and bytes(data[a : a + 1]) == b"\n" else a  # (a JSONL file's part starts at a newline)
    while start < b:
        end = cuts.first(data, start, min(b, start + MAX_DOCUMENT_BYTES + cuts.margin + 1))
        if end < 0 or end - start > MAX_DOCUMENT_BYTES:
            if b - start <= MAX_DOCUMENT_BYTES:
                return
            line = lines_in(data, start) + 1 if cuts.kind == "jsonl" else None
            raise cuts.too_long(label, start, line)
        start = end


def _parquet_parts(path: str, label: str, column: str) -> Iterator[Part]:
    from pyarrow import ArrowException, parquet

    version = None
    try:
        with open_input(path, label) as source:
            metadata = parquet.ParquetFile(source).metadata
            if not is_uri(path):
                version = file_version(os.fstat(source.fileno()))
    except (OSError, ArrowException) as e:
        raise InputError(f"{label}: not a readable Parquet file ({e})") from None
    top = parquet_text_column(metadata.schema.to_arrow_schema(), column, label)[0]
    row, groups, size = 0, metadata.num_row_groups, (version or input_stat(path, label))[0]  # (a URI: asked of its store)
    for group in range(groups):  # progress: the file's bytes shared out among its row groups
        columns = metadata.row_group(group)
        held = sum(columns.column(i).total_uncompressed_size for i in range(columns.num_columns)
                   if (found := columns.column(i).path_in_schema) == top or found.startswith(top + "."))  # what reading it holds
        if held > MAX_ROW_GROUP_BYTES:
            raise row_group_too_large(label, group, held)
        weight = size * (group + 1) // groups - size * group // groups
        yield Part(path, label, "parquet", start=group, first_line=row + 1, weight=weight, version=version)
        row += columns.num_rows


def parquet_text_column(schema, column: str, label: str):
    """The path to the text column: a top-level name (a dot in it too), or "outer.inner" for a field of a struct.
    Anything but text (dictionary-encoded text is text) is an error saying what it holds."""
    import pyarrow as pa

    names = [column] if column in schema.names else column.split(".")  # a name of its own first: "meta.text"
    if names[0] not in schema.names:
        raise InputError(f"{label}: no column {column!r} (it has {', '.join(schema.names)}); name one with {arg('text_column')}")
    kind = schema.field(names[0]).type
    for depth, name in enumerate(names[1:], 1):
        if not pa.types.is_struct(kind) or kind.get_field_index(name) < 0:
            raise InputError(f"{label}: column {'.'.join(names[:depth])!r} has no field {name!r} ({kind})")
        kind = kind.field(name).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_struct(kind):
        fields = ", ".join(f"{column}.{kind.field(i).name}" for i in range(kind.num_fields))
        raise InputError(f"{label}: column {column!r} is a struct; name its text field with {arg('text_column')} ({fields})")
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        raise InputError(f"{label}: column {column!r} holds lists ({kind}), not one text per row; "
                         f"flatten it first, or name another column with {arg('text_column')}")
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or str(kind) == "string_view"):
        raise InputError(f"{label}: column {column!r} holds {kind}, not text; name a text column with {arg('text_column')}")
    return names


def row_group_too_large(label: str, group: int, held: int) -> InputError:
    return InputError(f"{label}: row group {group} holds {held / 2**20:,.0f} MiB of the text column, more than the "
                      f"{MAX_ROW_GROUP_BYTES >> 20} MiB bpecli reads at once (a row group is read whole); write the file "
                      "with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=10_000)")


def _stream_parts(path: str, label: str, kind: str, compression: str | None, cuts: _Cuts,
                  part_bytes: int = PART_BYTES) -> Iterator[Part]:
    """Blocks of a compressed stream, or of stdin ("-") or a FIFO, each cut at its last cut (see
    _Cuts); a document longer than MAX_DOCUMENT_BYTES is an error, so what is held stays within the
    budget (and /dev/zero is stopped)."""
    if compression is None:  # (pyarrow, and numpy with it, only to decompress: a one-line encode needs neither)
        raw = stream = ReadOnce(path, label)
        read_errors: tuple[type[Exception], ...] = (OSError,)
    else:
        import pyarrow as pa

        if not is_uri(path):
            not_empty(path, label, compression)
        raw = open_input(path, label)  # its position: the compressed bytes read so far, for progress
        read_errors = (OSError, pa.ArrowException)
        try:
            stream = pa.CompressedInputStream(raw, compression)
        except read_errors as e:
            raise InputError(f"{label}: cannot read ({e})") from None
    pending = bytearray()  # what is read and not yet in a part: it starts where a document does
    offset = 0  # where pending starts in the decompressed data
    line = 1
    counted = 0

    def advance() -> int:  # the compressed bytes read since the last part
        nonlocal counted
        step, counted = max(0, raw.tell() - counted), max(counted, raw.tell())
        return step

    with stream, raw:
        while True:
            try:
                block = stream.read(part_bytes)
            except read_errors as e:
                raise InputError(f"{label}: cannot decompress ({e})") from None
            if not block:
                if len(pending) > MAX_DOCUMENT_BYTES:
                    raise cuts.too_long(label, offset, line, decompressed=compression is not None)
                if pending:
                    yield Part(path, label, kind, data=bytes(pending), first_line=line, weight=advance())
                return
            searched = len(pending)
            pending += block
            # pending held no cut but at its start: only the new bytes (and a margin) can hold one,
            # and the first of them ends the document pending starts with
            cut = cuts.last(pending, searched)
            first = cuts.first(pending, max(0, searched - cuts.margin - 1)) if cut > 0 else -1
            if (first if first > 0 else len(pending)) > MAX_DOCUMENT_BYTES:
                raise cuts.too_long(label, offset, line, decompressed=compression is not None)
            if cut <= 0:
                continue
            part = bytes(pending[:cut])
            del pending[:cut]
            yield Part(path, label, kind, data=part, first_line=line, weight=advance())
            line += part.count(b"\n")
            offset += cut
