"""The documents of a part (text between special tokens, a JSONL record's text, a Parquet value),
as str or as the UTF-8 bytes the bulk engine reads; and what the one-line commands read whole:
a text (read_text), token ids (read_ids), the records of JSONL and Parquet one by one."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, overload

import regex

from ..errors import InputError, arg
from ..folders import too_deep
from ..pretokenize import special_byte_splitter, special_splitter
from .parts import MAX_ROW_GROUP_BYTES, Part, document_parts, parquet_text_column, row_group_too_large
from .sources import MAX_DOCUMENT_BYTES, label_of, lines_before, open_input, read_bytes, read_range
from .spool import streams_spooled
from .utf8 import ERRORS_HINT, binary_kind, decode_utf8

# pyarrow and hashlib are imported where they are used: a one-line encode of a text needs neither.


@dataclass(frozen=True)
class Splitters:
    """The special-token splitters that cut a text part into documents, made once for a run: one
    for its text, one for its UTF-8 bytes (they cut in the same places)."""

    text: regex.Pattern | None
    utf8: re.Pattern | None

    @staticmethod
    def of(separators: Iterable[str]) -> Splitters:
        """The splitters at separators (pretokenize.document_separators gives a tokenizer's)."""
        return Splitters(special_splitter(separators), special_byte_splitter(separators))


@overload
def read_documents(part: Part, *, splitters: Splitters, text_column: str = ..., errors: str = ...,
                   as_bytes: Literal[False] = ..., checksum: bool = ...) -> tuple[list[str], int, str]: ...


@overload
def read_documents(part: Part, *, splitters: Splitters, text_column: str = ..., errors: str = ...,
                   as_bytes: bool, checksum: bool = ...) -> tuple[list[str] | list[bytes], int, str]: ...


def read_documents(part: Part, *, splitters: Splitters, text_column: str = "text", errors: str = "strict",
                   as_bytes: bool = False, checksum: bool = True) -> tuple[list[str] | list[bytes], int, str]:
    """The non-empty documents of a part, the number of bytes they came from, and the sha256 of
    what was read (a rerun checks that its inputs still hold the same bytes; "" if not asked for).

    Training and sharding read a part alike: as_bytes says the reader takes UTF-8 bytes (the bulk
    engine, the vectorised pre-tokenizers: nothing normalizes the text first), and then a text part
    read strictly comes as bytes, the part's own; JSONL, Parquet and text read with errors="replace"
    come as str, as they must be decoded to be read.

    Example: text part b"a<|endoftext|>b<|endoftext|>" -> (["a", "b"], 28, "9f2c...")
    """
    if part.kind == "parquet":
        return _parquet_documents(part, text_column, errors)
    if as_bytes and part.kind == "text" and errors == "strict":
        return _document_bytes(part, splitters.utf8, checksum)
    raw = _part_bytes(part)
    text = _part_text(part, raw, errors)
    digest = _sha256(raw) if checksum else ""
    if part.kind == "text":
        documents = splitters.text.split(text)[::2] if splitters.text else [text]
        return [d for d in documents if d], len(raw), digest
    return _jsonl_documents(text, part, text_column, errors), len(raw), digest


def _sha256(data: bytes) -> str:
    hasher = _hasher()
    hasher.update(data)
    return hasher.hexdigest()


def _hasher():
    import hashlib

    return hashlib.sha256()


def _document_bytes(part: Part, splitter: re.Pattern | None, checksum: bool) -> tuple[list[bytes], int, str]:
    """read_documents of a text part as UTF-8 bytes, checked without a str of the part (a second
    copy, made in a slow pass as soon as the part holds one non-ASCII character): only documents
    that hold one are decoded, to check them."""
    raw = _part_bytes(part)
    digest = _sha256(raw) if checksum else ""
    documents = [d for d in (splitter.split(raw)[::2] if splitter else [raw]) if d]
    if not raw.isascii():
        try:
            for document in documents:
                if not document.isascii():
                    document.decode("utf-8")
        except UnicodeDecodeError:
            _part_text(part, raw, "strict")  # says where: a document is invalid only where the part is
    return documents, len(raw), digest


def read_records(name: str, *, text_column: str = "text", errors: str = "strict") -> Iterator[tuple[int, str]]:
    """(line or row number, text) of every record of a JSONL or Parquet input (plain or
    compressed, a file, a stream or a URI), empty texts too, read a part at a time: the documents
    training and shards read, one by one, for encode to print a line of ids each.

    Example: a.jsonl holding {"text": "hi"}, a blank line, {"text": ""} -> (1, "hi"), (3, "")
    """
    with streams_spooled([name], errors=errors) as pairs:
        before = 0  # the lines of the parts before this one (JSONL parts start where a line does)
        for part in document_parts(pairs, separators=[], text_column=text_column):
            if part.kind == "parquet":
                yield from enumerate(_parquet_texts(part, text_column, errors)[0], part.first_line)
                continue
            text = _part_text(part, _part_bytes(part), errors)
            first = part.first_line if part.data is not None else before + 1
            yield from ((first + i, value) for i, value in _jsonl_records(text, part, text_column, errors))
            before = first - 1 + text.count("\n")


def _part_bytes(part: Part) -> bytes:
    return read_range(part.path, part.label, part.start, part.end, version=part.version) if part.data is None else part.data


def _part_text(part: Part, raw: bytes, errors: str) -> str:
    """A part's bytes as text; invalid UTF-8 is an error that says where (see decode_utf8)."""
    if part.data is None:
        return decode_utf8(raw, part.label, errors=errors, offset=part.start, hint=ERRORS_HINT,
                           lines_before=lambda: lines_before(part.path, part.start, part.label, version=part.version))
    return decode_utf8(raw, part.label, errors=errors, first_line=part.first_line, hint=ERRORS_HINT)


def _jsonl_documents(text: str, part: Part, column: str, errors: str = "strict") -> list[str]:
    return [value for _, value in _jsonl_records(text, part, column, errors) if value]


def _jsonl_records(text: str, part: Part, column: str, errors: str = "strict") -> Iterator[tuple[int, str]]:
    """(index of its line in the part, its text) for each record of a JSONL part, empty texts too;
    blank lines hold no record."""
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        where = lambda: f"{part.label}:{_line_number(part, i)}"  # noqa: E731 (counted only for an error)
        try:
            # numbers as floats: only the text field matters, and int() refuses over 4,300 digits
            record = json.loads(line, parse_int=float)
        except json.JSONDecodeError as e:
            if line.startswith("\ufeff"):
                raise InputError(f"{where()}: starts with a byte-order mark (U+FEFF), which JSON Lines does not have; "
                                 "save the file as UTF-8 without one") from None
            raise InputError(f"{where()}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise InputError(f"{where()}: JSON {too_deep()}") from None
        if not isinstance(record, dict):
            raise InputError(f"{where()}: a JSON {_json_kind(record)}, not an object with a {column!r} field")
        if column not in record:
            fields = ", ".join(map(repr, list(record)[:8])) or "none"
            raise InputError(f"{where()}: no field {column!r} (fields: {fields}); name the text field with {arg('text_column')}")
        value = record[column]
        if not isinstance(value, str):
            raise InputError(f"{where()}: field {column!r} holds a JSON {_json_kind(value)}, not a string of text")
        if not value.isascii() and (surrogate := _SURROGATE.search(value)):
            # "\ud800" alone is valid JSON but no character: an error, or U+FFFD as tiktoken makes it
            if errors == "strict":
                raise InputError(f"{where()}: field {column!r} holds a lone surrogate ({surrogate.group()!r} at character "
                                 f"{surrogate.start():,}), which is not text; {ERRORS_HINT}")
            value = _SURROGATE.sub("\ufffd", value)
        yield i, value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_kind(value) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _line_number(part: Part, index: int) -> int:
    """The line number of line `index` of a part (counted only when an error needs it)."""
    if part.data is not None:
        return part.first_line + index
    return lines_before(part.path, part.start, part.label, version=part.version) + 1 + index


def _parquet_documents(part: Part, column: str, errors: str = "strict") -> tuple[list[str], int, str]:
    texts, n_bytes, digest = _parquet_texts(part, column, errors)
    return [text for text in texts if text], n_bytes, digest


def _parquet_texts(part: Part, column: str, errors: str = "strict") -> tuple[list[str], int, str]:
    """The text of every row of a Parquet part (a row group), empty ones too; the bytes they
    hold and their sha256."""
    import pyarrow as pa
    from pyarrow import compute, parquet

    try:
        with open_input(part.path, part.label, version=part.version) as source:
            file = parquet.ParquetFile(source)
            names = parquet_text_column(file.schema_arrow, column, part.label)
            values = file.read_row_group(part.start, columns=[names[0]]).column(0)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{part.label}: cannot read row group {part.start} ({e})") from None
    for name in names[1:]:
        values = compute.struct_field(values, name)
    if pa.types.is_dictionary(values.type):  # its texts written out: a few repeated ones may be huge
        held = sum(compute.sum(compute.take(compute.binary_length(chunk.dictionary), chunk.indices)).as_py() or 0
                   for chunk in values.chunks)
        if held > MAX_ROW_GROUP_BYTES:
            raise row_group_too_large(part.label, part.start, held)
        values = values.cast(values.type.value_type)
    values = values.cast(pa.large_string()).combine_chunks()
    lengths = compute.binary_length(values)
    if len(values) and (compute.max(lengths).as_py() or 0) > MAX_DOCUMENT_BYTES:
        row = part.first_line + compute.index(compute.greater(lengths, MAX_DOCUMENT_BYTES), True).as_py()
        raise InputError(f"{part.label}: row {row}: column {column!r} holds over {MAX_DOCUMENT_BYTES >> 20} MiB of text; "
                         f"bpecli holds a document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one")
    if values.null_count:
        row = part.first_line + compute.index(compute.is_null(values), True).as_py()
        raise InputError(f"{part.label}: row {row}: column {column!r} is null, not text")
    digest = _hasher()
    for buffer in values.buffers()[1:]:
        digest.update(buffer)
    try:
        documents = values.to_pylist()
    except UnicodeDecodeError:  # a writer that did not check its strings: said as for a text file
        documents = _checked_texts(values.cast(pa.large_binary()).to_pylist(), part, column, errors)
    return documents, compute.sum(compute.binary_length(values)).as_py() or 0, digest.hexdigest()


def _checked_texts(values: list[bytes], part: Part, column: str, errors: str) -> list[str]:
    """The values of a Parquet string column that holds invalid UTF-8: an error naming the first
    bad row, or with errors="replace" U+FFFD in place of each bad byte."""
    texts = []
    for row, value in enumerate(values, part.first_line):
        try:
            texts.append(value.decode("utf-8", errors=errors))
        except UnicodeDecodeError as e:
            raise InputError(f"{part.label}: row {row}: column {column!r} holds invalid UTF-8 at byte {e.start} "
                             f"({value[e.start:e.start + 4]!r}); {ERRORS_HINT}") from None
    return texts


def text_parts(name: str, *, separators: list[str], safe_cut: str | None = None, errors: str = "strict") -> Iterator[str]:
    """The text of a file, URI (plain or compressed), FIFO or stdin ("-") a part at a time, cut
    before a separator or at a safe cut (see document_parts): what encode reads of a text too
    large to read whole."""
    label = label_of(name)
    for part in document_parts([(name, label)], separators=separators, safe_cut=safe_cut):
        yield _part_text(part, _part_bytes(part), errors)


def read_text(name: str, errors: str = "strict", hint: str | None = None) -> str:
    """The text of a file or stdin; hint is what to suggest for invalid UTF-8 (ERRORS_HINT where
    the caller can read with errors="replace")."""
    return decode_utf8(read_bytes(name), label_of(name), errors=errors, hint=hint)


def read_ids(name: str) -> list[int]:
    """Whitespace-separated token ids in a file or stdin ("-")."""
    return [i for block in id_blocks(name) for i in block]


def id_blocks(name: str) -> Iterator[list[int]]:
    """Whitespace-separated token ids in a file or stdin ("-"), a block at a time (each cut at
    whitespace): an ids file of any size is read in bounded memory."""
    from .sources import read_blocks

    label = label_of(name)
    pending, at, row = b"", 0, 1  # what is read and not yet parsed, where it starts, its line
    for block in read_blocks(name):
        data = pending + block
        if at == 0 and (found := binary_kind(data, label, "token ids")) is not None:
            raise found
        cut = max(data.rfind(space) for space in _SPACES) + 1
        if cut == 0 and len(data) <= _WORD_BYTES:  # a word that goes on into the next block
            pending = data
            continue
        whole = data[:cut] if cut else data  # (a word this long is no id: an error below)
        yield _parsed_ids(whole, label, at, row)
        pending, at, row = data[len(whole):], at + len(whole), row + whole.count(b"\n")
    if pending:
        yield _parsed_ids(pending, label, at, row)


_WORD_BYTES = 1 << 20  # a word read whole to name it in an error: far longer than any id
_SPACES = (b" ", b"\n", b"\t", b"\r", b"\f", b"\v")


def _parsed_ids(raw: bytes, label: str, at: int, row: int) -> list[int]:
    """The ids in raw, which starts at byte `at` (line `row`) of the input."""
    text = decode_utf8(raw, label, offset=at, first_line=row)
    if _IDS.fullmatch(text):  # int() alone would take "²"'s neighbours "١" and "1_0"
        long = _LONG_ID.search(text)
        if long is None:
            return list(map(int, text.split()))
        row += text.count("\n", 0, long.start())
        raise InputError(f"{label}:{row}: {shown(long.group())} is no token id: ids have at most {MAX_ID_DIGITS} digits")
    for number, line in enumerate(text.splitlines(), row):
        for word in line.split():
            if not _ID.fullmatch(word):
                raise InputError(f"{label}:{number}: {shown(word)} is not a token id (expected integers 0, 1, 2, ...)")
    raise InputError(f"{label}: holds something other than token ids and spaces")


# The largest id any shard holds, 2**64 - 1, has 20 digits: a longer number is no id (and int()
# refuses numbers of over 4,300 digits with a ValueError).
MAX_ID_DIGITS = 20
_IDS = re.compile(r"[0-9\s]*", re.ASCII)
_ID = re.compile(r"[0-9]+", re.ASCII)
_LONG_ID = re.compile(r"[0-9]{%d,}" % (MAX_ID_DIGITS + 1), re.ASCII)


def parse_id(text: str) -> int | None:
    """text as a token id or a count: ASCII digits alone, at most MAX_ID_DIGITS of them; else None
    (int() also takes "٣" as 3, and " 7" and "1_0").

    Example: "50256" -> 50256; "٣" -> None; "-1" -> None
    """
    if len(text) > MAX_ID_DIGITS or not _ID.fullmatch(text):
        return None
    return int(text)


def shown(text: str, limit: int = 40) -> str:
    """text quoted for a message, cut short if long: a 5,000-digit number makes one short line.

    Example: "7" * 5000 -> "'7777777777777777777777777777777777777777'… (5,000 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"
