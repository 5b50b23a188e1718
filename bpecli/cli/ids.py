"""The lines of ids plain `bpecli encode` writes: one per text input, per line with --lines, or per
JSONL line or Parquet row; a long text or record is read, encoded and written a block at a time."""

from __future__ import annotations

import json
from typing import Any

from ..pretokenize import SAFE_CUT, is_preset, safe_blocks, special_splitter
from .options import Format
from .render import ids_line

# corpus is imported inside functions: --help, --version and shell completion do not load it.

# A text or record longer than this is encoded and written a block at a time (a list of Python
# ints takes 36 bytes an id: a 20 MB record would hold 660 MB).
_LONG_UNIT = 1 << 22


def write_ids(tok, inputs: list[str], format: Format, lines: bool, allow_special: bool, text_column: str, errors: str,
              stdout, *, add_special_tokens: bool = True) -> None:
    """A line of ids for each text input (each of its lines with lines), JSONL line or Parquet row,
    with the tokenizer's template around each (add_special_tokens). A tokenizer that adds to its
    text (a template, add_prefix_space) reads a text whole: its parts would each get what it adds."""
    from ..inputs.utf8 import ERRORS_HINT
    from ..inputs.sources import input_kind
    from ..inputs.documents import read_records, read_text
    from ..inputs.parts import reads_whole

    for name in inputs:
        key: str | None
        if name != "-" and input_kind(name)[0] != "text":
            # JSONL and Parquet: the documents train and encode --out read, one line of ids for each
            # record (as tiktoken's encode_batch gives a list each), never the JSON syntax as text
            numbered: Any = read_records(name, text_column=text_column, errors=errors)
            key = "row" if input_kind(name)[0] == "parquet" else "line"
        elif reads_whole(name) or _adds(tok):
            text = read_text(name, errors=errors, hint=ERRORS_HINT)
            units = text.split("\n") if lines else [text]
            if lines and text.endswith("\n"):
                units.pop()
            numbered, key = enumerate(units, 1), "line" if lines else None
        elif lines:  # a large file (or a compressed one, or a URI) a part at a time
            numbered, key = enumerate(_lines_in_parts(name, errors), 1), "line"
        else:
            _encode_in_parts(tok, name, format, allow_special, errors, stdout)
            continue
        for number, unit in numbered:
            if len(unit) > _LONG_UNIT and _cuts_safely(tok, allow_special):  # written a block at a time
                where = {key: number} if key else {}
                _write_ids_line(tok, _blocks(tok, unit, allow_special), format, allow_special, name, where, stdout)
                continue
            ids = _encode(tok, unit, allow_special, add_special_tokens)
            stdout.write((ids_line(tok, ids, format, name, number if key else None, key or "line") + "\n").encode())


def _encode(tok, text: str, allow_special: bool, add_special_tokens: bool = False) -> list[int]:
    if allow_special:
        return tok.encode(text, allowed_special="all", add_special_tokens=add_special_tokens)
    return tok.encode_ordinary(text, add_special_tokens=add_special_tokens)


def _adds(tok) -> bool:
    """Whether the tokenizer adds to each text it encodes (a template, a space before it) or takes
    whitespace beside special tokens: a text cut into parts would not encode as the whole."""
    return tok.vocab.adds


def _blocks(tok, text: str, allow_special: bool) -> list[str]:
    """text cut where it encodes as the whole: where special tokens are allowed, around each of
    them first (a word cut, after a letter before punctuation, could fall inside <|endoftext|>),
    then at safe cuts and word cuts (pretokenize.safe_blocks).

    Example: "a<|endoftext|>b" with special tokens allowed -> ["a", "<|endoftext|>", "b"]
    """
    finder = special_splitter(tok.special_tokens) if allow_special else None
    parts = finder.split(text) if finder is not None else [text]  # the tokens themselves are captured: odd places
    return [block for i, part in enumerate(parts) for block in ([part] if i % 2 else safe_blocks(part, _LONG_UNIT)) if block]


def _cuts_safely(tok, allow_special: bool) -> bool:
    """Whether text cut at safe cuts encodes as the whole: a preset pattern, no special token that a
    cut could fall inside (one holding a newline or a space), and nothing added to each text."""
    return (is_preset(tok.pattern) and not (allow_special and any("\n" in t or " " in t for t in tok.special_tokens))
            and not _adds(tok))


def _lines_in_parts(name: str, errors: str):
    """The lines of a text input read a part at a time (parts cut before a newline)."""
    from ..inputs.documents import text_parts

    last = None  # a part's last line, complete only once the next part (or the end) comes
    for index, text in enumerate(text_parts(name, separators=["\n"], errors=errors)):
        found = text.split("\n")
        if index:  # a part after the first starts with the newline that ended the last line
            yield last
            found = found[1:]
        yield from found[:-1]
        last = found[-1] if found else ""
    if last:  # (a text that ends in a newline ends in no line)
        yield last


def _encode_in_parts(tok, name: str, format: Format, allow_special: bool, errors: str, stdout) -> None:
    """The one line of ids of a text input too large to read whole, written a part at a time: parts
    are cut before a special token, or where a piece surely starts, so they encode as the whole."""
    from ..inputs.documents import text_parts

    separators = list(tok.special_tokens) if allow_special else []
    safe_cut = SAFE_CUT if _cuts_safely(tok, allow_special) else None
    texts = text_parts(name, separators=separators, safe_cut=safe_cut, errors=errors)
    _write_ids_line(tok, texts, format, allow_special, name, {}, stdout)


def _write_ids_line(tok, texts, format: Format, allow_special: bool, name: str, where: dict, stdout) -> None:
    """The line ids_line makes of the ids of "".join(texts), written a text at a time (texts cut
    where they encode as the whole)."""
    from ..inputs.sources import redact

    count, gap = 0, ""
    if format is Format.json:
        stdout.write((json.dumps({"input": redact(name), **where})[:-1] + ', "ids": [').encode())
    for text in texts:
        ids = _encode(tok, text, allow_special)  # (a tokenizer that adds to its text never comes here)
        if ids and format is not Format.count:
            rendered = ids_line(tok, ids, Format.tokens if format is Format.tokens else Format.ids, name, None)
            stdout.write((gap + (rendered.replace(" ", ", ") if format is Format.json else rendered)).encode())
            gap = ", " if format is Format.json else " "
        count += len(ids)
    ending = {Format.count: str(count), Format.json: f"], \"count\": {count}}}"}.get(format, "")
    stdout.write((ending + "\n").encode())


def write_decoded(tok, blocks, errors: str, stdout, label: str = "the input") -> None:
    """The text of ids given a block at a time, written a block at a time: a character whose bytes
    two blocks share is written whole with the second. With errors="strict", invalid UTF-8 is an
    error that names its byte in the whole text; an id outside the vocabulary, which id it is.
    label: what the ids were read from, for those errors."""
    import codecs
    from itertools import chain

    from ..errors import BpecliError, UnknownIdError

    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    done = 0  # the bytes of text decoded so far, those the decoder holds included
    ids_before = 0
    for block in chain(blocks, [None]):  # None: the end
        try:
            data = None if block is None else tok.decode_bytes(block)
        except UnknownIdError as e:
            raise UnknownIdError(f"{label}: {e.args[0]}, at id {ids_before + e.position + 1:,}") from None
        held = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data or b"", final=data is None)
        except UnicodeDecodeError as e:
            raise BpecliError(f"{label}: the ids decode to invalid UTF-8 at byte {done - held + e.start}; "
                              "use --errors replace to see U+FFFD instead") from None
        stdout.write(text.encode("utf-8", errors="surrogateescape"))
        done += len(data or b"")
        ids_before += 0 if block is None else len(block)
