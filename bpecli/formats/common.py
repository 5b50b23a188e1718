"""What the format modules share as they read a file: the pattern (the one given, or the file's),
the vocabulary checked with the file named in the error, and JSON types in words."""

from __future__ import annotations

from pathlib import Path

from ..errors import BpecliError, TokenizerFileError
from ..pretokenize import resolve_pattern
from ..vocab import Vocab, check


def pattern_of(given: str | None, found: str, source: str) -> str:
    """The pattern given (by the caller) if any, else what the file says; an error names where
    the bad one came from."""
    if given:
        return resolve_pattern(given)
    if not isinstance(found, str):
        raise TokenizerFileError(f"the pattern {found!r} ({source}) is not text")
    return resolve_pattern(found, source=source)


def checked(path: Path, ranks: dict[bytes, int], specials: dict[str, int], pattern: str, files: list[Path],
            normalize: tuple[str, ...] = ()) -> Vocab:
    """The vocabulary read from path, if it is one bpecli can use (see vocab.check)."""
    checked_ranks(path, ranks, specials)
    return Vocab(ranks, dict(specials), pattern, normalize=normalize, files=tuple(map(str, files)))


def checked_ranks(source: str | Path, ranks: dict[bytes, int], specials: dict[str, int]) -> None:
    """vocab.check, with source (a file, or an encoding's name) named in the error."""
    try:
        check(ranks, specials)
    except BpecliError as e:
        raise TokenizerFileError(f"{source}: {e.args[0]}") from None


def json_kind(value) -> str:
    """The JSON type of a value, for messages: "a list", "a number"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(type(value), "a value")
