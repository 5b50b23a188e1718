"""The pre-tokenizer patterns (tiktoken's presets or a custom regex), checked and compiled, and
splitting text into documents at special tokens."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from functools import cache, partial

import regex

from ..errors import BpecliError, arg
from . import unicode_classes

# The exact patterns tiktoken uses for its gpt2 / r50k, cl100k_base and o200k_base encodings.
PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}


# Where a preset pattern surely starts a piece: after a newline that has a printable ASCII
# character (no space) before it and an ASCII letter or digit after it. (Not any non-space after
# it: o200k's punctuation pieces take newlines and "/" after them, so ".\n/" is one piece. Not any
# non-space before it: read as bytes, the last byte of U+2028, a space to the presets, is none.)
# Text cut there splits into the same pieces as it does whole, so it can be counted or encoded in parts.
SAFE_CUT = r"(?<=[!-~]\n)(?=[A-Za-z0-9])"
_SAFE_CUT_BYTES, _SAFE_CUT_STR = re.compile(SAFE_CUT.encode()), re.compile(SAFE_CUT)


# Where a preset pattern surely ends a piece, for text with no safe cut near (one long line, text
# without spaces): after an ASCII letter and before a space or an ASCII punctuation mark but the
# apostrophe. No preset's piece holds a letter followed by either (letters run to a non-letter; a
# contraction ends in a letter, and o200k's, which letters before it take, starts with an
# apostrophe), and what a preset matches at a space or a punctuation mark depends on the text from
# there on only.
WORD_CUT = r"(?<=[A-Za-z])(?=[ !-&(-/:-@\[-`{-~])"
_WORD_CUT_BYTES, _WORD_CUT_STR = re.compile(WORD_CUT.encode()), re.compile(WORD_CUT)


def safe_blocks(document, size: int) -> list:
    """document (bytes or str) cut into blocks of about `size` bytes (characters) or more, at safe
    cuts, or, where none comes within `size` more, at a word cut (WORD_CUT): a long line is cut
    too. Each block pre-tokenizes, counts and encodes by a preset pattern as it does in the whole.

    Example: b"one\ntwo\nthree" with size 2 -> [b"one\n", b"two\n", b"three"]
    """
    blocks, start = [], 0
    text = isinstance(document, str)
    newline, safe, word = ("\n", _SAFE_CUT_STR, _WORD_CUT_STR) if text else (b"\n", _SAFE_CUT_BYTES, _WORD_CUT_BYTES)
    while len(document) - start > size:
        cut = _safe_cut(document, start + size - 1, start + 2 * size, newline, safe)
        if cut < 0:
            found = word.search(document, start + size, start + 2 * size + 1)
            cut = found.start() if found else _safe_cut(document, start + 2 * size, len(document), newline, safe)
        if cut < 0:
            break
        blocks.append(document[start:cut])
        start = cut
    blocks.append(document[start:] if start else document)
    return blocks


def _safe_cut(document, at: int, end: int, newline, safe) -> int:
    """The first safe cut after document[at:end]'s first newline that has one, or -1 (a safe cut
    is just after a newline: found by a newline's search)."""
    while (at := document.find(newline, at, end)) >= 0 and not safe.match(document, at + 1):
        at += 1
    return at + 1 if at >= 0 else -1


# The preset of each family of tiktoken's encodings, by the first part of their names (r50k_base,
# o200k_harmony...): a --pattern may be given an encoding's name
ENCODING_PATTERNS = {"r50k": "gpt2", "p50k": "gpt2", "cl100k": "cl100k", "o200k": "o200k"}


def is_preset(pattern: str) -> bool:
    """Whether pattern is one of tiktoken's (gpt2, cl100k, o200k): vectorised, and known to keep
    every character."""
    return pattern in PATTERNS.values()


def resolve_pattern(name_or_regex: str, *, source: str = arg("pattern")) -> str:
    """A preset name gives its pattern; anything else must be a valid regex whose pieces keep
    every character. source names where the pattern came from, for the error.

    Example: resolve_pattern("gpt2") -> "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++|..."
    """
    pattern = PATTERNS.get(name_or_regex, name_or_regex)
    if is_preset(pattern):
        return pattern
    if re.fullmatch(r"\w+", pattern, re.ASCII):  # a name ("cl100k_base"), no regex that splits text
        family = ENCODING_PATTERNS.get(pattern.lower().split("_")[0])
        close = [family] if family else difflib.get_close_matches(pattern.lower(), PATTERNS, 1)
        raise BpecliError(f"{pattern[:60]!r}{_given_as(source)} names no preset pattern ({', '.join(PATTERNS)})"
                          + (f": did you mean {close[0]}?" if close else "; as a regex it would leave text out of every piece"))
    try:
        compiled = regex.compile(pattern)
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as e:  # deep nesting: RecursionError
        raise BpecliError(f"invalid regex {pattern[:60]!r} ({source}): {e}") from None
    if sum(map(len, _pieces(compiled, _PROBE, source))) != len(_PROBE):
        raise uncovered_error(pattern, _PROBE, source)
    return pattern


# Text a pattern must split without leaving a character out: letters, digits, punctuation, every
# kind of space, marks, CJK, emoji.
_PROBE = "Hello, World! It's 12,345.6 \u00bd x\n\n\t  y \r\n caf\u00e9 e\u0301 \u4e2d\u6587 \U0001F600 \u00a0end?"


def uncovered_error(pattern: str, text: str, source: str | None = None) -> BpecliError:
    """The error for a pattern whose pieces leave characters of text out (`\\w+` skips spaces):
    a byte-level tokenizer must keep every byte, or decode(encode(text)) is not text."""
    at = 0
    try:
        for match in regex.finditer(pattern, text, timeout=time_bound(len(text))):
            if match.start() != at:
                break
            at = match.end()
    except TimeoutError:
        return backtracking_error(pattern, text, source)
    return BpecliError(
        f"the pattern {pattern[:60]!r}{_given_as(source)} leaves {text[at:at + 1]!r} (character {at}) out of every piece; "
        "a byte-level tokenizer must keep every character: add an alternative that matches the rest, e.g. |\\s+|."
    )


# How long a custom pattern may run on one text: TIMEOUT_SECONDS and TIMEOUT_PER_CHARACTER for
# each of its characters, in CPU seconds of the process (what the regex module counts, so threads
# that run beside it count too): twenty times the slowest linear pattern measured, and 2 s for any
# text, keep a legitimate pattern on a long document clear of the bound whatever else the process
# does, and stop one that backtracks catastrophically (see docs/performance.md).
TIMEOUT_SECONDS = 2.0
TIMEOUT_PER_CHARACTER = 200e-6


def _given_as(source: str | None) -> str:
    return f" ({source})" if source else ""


def time_bound(characters: int) -> float:
    """The CPU seconds a custom pattern may take on a text of this many characters."""
    return TIMEOUT_SECONDS + TIMEOUT_PER_CHARACTER * characters


def backtracking_error(pattern: str, text: str, source: str | None = None) -> BpecliError:
    """The error for a pattern that ran out of time on a text."""
    return BpecliError(
        f"the pattern {pattern[:60]!r}{_given_as(source)} ran for over {time_bound(len(text)):.0f} s on a text of "
        f"{len(text):,} characters: it backtracks catastrophically (a repeat of alternatives that overlap, "
        "as (a|aa)+); rewrite it with possessive quantifiers (++, *+) or atomic groups (?>...), or use gpt2, cl100k or o200k"
    )


def splitter(pattern: str, *, plain: bool = False, source: str | None = None) -> Callable[[str], list[str]]:
    """text -> its pre-tokens: each whole match of pattern, as tiktoken takes them (the groups a
    pattern captures change nothing). A custom pattern runs within time_bound, and raises
    BpecliError past it; a preset runs unbounded, as the bound costs time on every call and the
    presets never backtrack far. plain: the pattern as the regex module reads it, which compiles
    faster for ASCII text (see compiled). source names where the pattern came from, for the error
    (where it is known: a tokenizer's pattern may be its file's or one given to replace it).

    Example: splitter(r"(a)|b")("ab") -> ["a", "b"]
    """
    if is_preset(pattern):
        return (regex.compile(pattern) if plain else compiled(pattern)).findall
    return partial(_pieces, regex.compile(pattern), source=source)


def _pieces(compiled: regex.Pattern, text: str, source: str | None) -> list[str]:
    try:
        if compiled.groups:  # findall would give the groups
            return [match.group() for match in compiled.finditer(text, timeout=time_bound(len(text)))]
        return compiled.findall(text, timeout=time_bound(len(text)))
    except TimeoutError:
        raise backtracking_error(compiled.pattern, text, source) from None


@cache
def compiled(pattern: str) -> regex.Pattern:
    r"""The compiled pattern: a preset with tiktoken's Unicode classes (see unicode_classes: each
    \p{..} spelled out as its ranges), any other pattern as the regex module reads it."""
    if not is_preset(pattern):
        return regex.compile(pattern)
    out, i, in_class = [], 0, False
    while i < len(pattern):
        if pattern.startswith("\\p{", i):
            end = pattern.index("}", i)
            ranges = unicode_classes.regex_class(pattern[i + 3 : end])
            out.append(ranges if in_class else f"[{ranges}]")
            i = end + 1
            continue
        if pattern[i] == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        in_class = {"[": True, "]": False}.get(pattern[i], in_class)
        out.append(pattern[i])
        i += 1
    return regex.compile("".join(out))
