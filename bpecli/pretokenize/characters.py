"""Characters as numpy arrays: UTF-8 bytes -> code points and the classes the preset patterns
read (letter, number, other, whitespace...), and the runs they form. The splitters (gpt2.py,
cl100k.py, o200k.py) are rules over these classes, applied with numpy array operations to UTF-8
bytes; they return exactly the pieces of regex's findall (tests compare them); the regex stays the
reference, and the path for every other pattern."""

from __future__ import annotations

from functools import cache

import numpy as np
import regex

from ..arrays import sorted_distinct, spans
from . import unicode_classes

LETTER, NUMBER, OTHER, WHITESPACE, SPACE, CRLF = 0, 1, 2, 3, 4, 5  # letter, number, other, whitespace, " ", \r or \n
# No code point past this one is whitespace to the regex module
# (tests/conformance/test_tiktoken_unicode.py checks them all).
LAST_WHITESPACE = 0x3000


UPPER, LOWER, BOTH, MARK = 1, 2, 3, 4  # letter cases as o200k's two letter classes see them


@cache
def class_table():
    r"""The class of every code point, as one lookup table (1.1 MB) filled from the class ranges:
    " ", then \r and \n, then whitespace as the regex module's \s has it (which agrees with
    tiktoken's on every code point), then letters (L), numbers (N), and other for the rest."""
    table = np.full(0x110000, OTHER, dtype=np.uint8)
    for name, value in (("N", NUMBER), ("L", LETTER)):
        for first, last in unicode_classes.ranges(name):
            table[first : last + 1] = value
    table[[m.start() for m in regex.finditer(r"\s", "".join(map(chr, range(LAST_WHITESPACE + 1))))]] = WHITESPACE
    table[[ord("\r"), ord("\n")]] = CRLF
    table[ord(" ")] = SPACE
    return table


@cache
def case_table():
    """The letter case of every code point, as class_table: Lu or Lt (upper); Ll (lower); Lm or Lo
    (in both of o200k's classes: CJK, for one); a combining mark; else 0."""
    table = np.zeros(0x110000, dtype=np.uint8)
    for names, value in ((("M",), MARK), (("Lm", "Lo"), BOTH), (("Ll",), LOWER), (("Lu", "Lt"), UPPER)):
        for name in names:
            for first, last in unicode_classes.ranges(name):
                table[first : last + 1] = value
    return table


# What _byte_classes gives a UTF-8 continuation byte (10xxxxxx): no class gets this value.
CONTINUATION = 0xFF


@cache
def _byte_classes(table) -> bytes:
    """table() of the 128 ASCII code points, then CONTINUATION for bytes 80-BF and zeros for the
    first bytes of longer characters: a bytes.translate table that gives every byte its class in
    one pass in C (a numpy lookup first widens each byte to an index)."""
    return table()[:128].tobytes() + bytes([CONTINUATION] * 64) + bytes(64)


def characters(data: bytes, doc_starts, cases: bool = False):
    """(leading, chars, cls, edges, case) for UTF-8 data: which bytes start a character (None
    when every byte is one), each character's first byte (the character itself if ASCII), its
    class, edges[i]: character i starts a document (edges[-1], one past the last character, is
    True), and with cases its letter case (case_table), else None. Bytes are classed first and
    the characters taken out with the flags: no array of positions as long as the text."""
    raw = np.frombuffer(data, dtype=np.uint8)
    cls = np.frombuffer(data.translate(_byte_classes(class_table)), dtype=np.uint8)
    case = np.frombuffer(data.translate(_byte_classes(case_table)), dtype=np.uint8) if cases else None
    inside = later_starts(doc_starts, len(raw))
    if raw.max() < 0x80:
        leading, chars, m = None, raw, len(raw)
        cls, case = cls.copy(), None if case is None else case.copy()  # writable, as below
    else:
        # the first bytes of multi-byte characters (few) get their character's class, then the
        # characters are the bytes that are not 10xxxxxx
        multi = np.flatnonzero(raw >= 0xC0)
        cp, size = _code_points(raw, multi)
        leading = cls != CONTINUATION
        cls = cls.copy()
        cls[multi] = class_table()[cp]
        if case is not None:
            case = case.copy()
            case[multi] = case_table()[cp]
            case = case[leading]
        chars, cls = raw[leading], cls[leading]
        m = len(chars)
        if len(raw) - m != (size - 1).sum():
            raise _not_utf8(raw)
        # a document's first character: its byte offset less the continuation bytes before it
        continuations = np.concatenate(([0], np.cumsum(size - 1)))
        inside = inside - continuations[np.searchsorted(multi, inside)]
    edges = np.zeros(m + 1, dtype=bool)
    edges[0] = edges[m] = True
    edges[inside] = True
    return leading, chars, cls, edges, case


def byte_classes(data: bytes, doc_starts):
    """(raw, cls, edges, multi) as characters gives (leading, chars, cls, edges), but byte by
    byte: the bytes of a multi-byte character all take its class; multi: where those characters
    start (a few). For rules that count characters rarely (gpt2's, cl100k's): the characters are
    not taken out of the bytes, nor the starts spread back over them (two passes over every byte
    each)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    cls = np.frombuffer(data.translate(_byte_classes(class_table)), dtype=np.uint8).copy()
    multi = np.zeros(0, dtype=np.int64)
    if raw.max() >= 0x80:
        multi = np.flatnonzero(raw >= 0xC0)
        cp, size = _code_points(raw, multi)
        cls[spans(multi, size)] = np.repeat(class_table()[cp], size)
        if (cls == CONTINUATION).any():
            raise _not_utf8(raw)
    edges = np.zeros(len(raw) + 1, dtype=bool)
    edges[0] = edges[-1] = True
    edges[later_starts(doc_starts, len(raw))] = True
    return raw, cls, edges, multi


def later_starts(doc_starts, n: int):
    """Where the documents after the first start in n bytes (doc_starts, if any), sorted, once
    each: the edges inside the text (an empty document starts where the next one does)."""
    if doc_starts is None:
        return np.zeros(0, dtype=np.int64)
    starts = np.asarray(doc_starts, dtype=np.int64)
    return sorted_distinct(starts[(starts > 0) & (starts < n)])


def char_sizes(first):
    """How many bytes each UTF-8 character has, by its first byte (1 for ASCII)."""
    return 1 + (first >= 0xC0) + (first >= 0xE0).astype(np.int64) + (first >= 0xF0)


class NotUTF8(ValueError):
    """Bytes given to a splitter that are not valid UTF-8 (its callers check text as they read it;
    this is for bytes that come to the library unchecked); at: the offset of the first bad byte."""

    def __init__(self, at: int):
        super().__init__(f"not valid UTF-8 at byte {at}")
        self.at = at


# The least code point of a character of each size in bytes: a smaller one there is an overlong form.
_LEAST = np.array([0, 0, 0x80, 0x800, 0x10000], dtype=np.uint32)


def _code_points(raw, multi):
    """(code point, size in bytes) of the multi-byte characters whose first bytes are at multi;
    NotUTF8 where one is no whole, shortest-form character of Unicode (as Python's decoder has it)."""
    last = len(raw) - 1  # bytes past the end are read as the last one: the sizes say they are past it
    b0, b1, b2, b3 = (raw[np.minimum(multi + k, last)].astype(np.uint32) for k in range(4))
    cp = np.where(
        b0 >= 0xF0, ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F),
        np.where(b0 >= 0xE0, ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F), ((b0 & 0x1F) << 6) | (b1 & 0x3F)),
    )
    size = char_sizes(b0)
    bad = (b0 >= 0xF8) | (multi + size > len(raw)) | (cp < _LEAST[size]) | ((cp >= 0xD800) & (cp < 0xE000)) | (cp > 0x10FFFF)
    for k, b in ((1, b1), (2, b2), (3, b3)):
        bad |= (size > k) & ((b & 0xC0) != 0x80)
    if bad.any():
        raise _not_utf8(raw)
    return cp, size


def _not_utf8(raw) -> NotUTF8:
    """The error for bytes found not to be UTF-8, at the first bad byte as Python's decoder finds it."""
    try:
        raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as e:
        return NotUTF8(e.start)
    return NotUTF8(0)  # (never: the checks here find what the decoder finds)


def first_bytes(raw, at):
    """The first byte of the character each byte offset in at falls in (UTF-8: back over its
    10xxxxxx bytes, three at most)."""
    for _ in range(3):
        at = at - ((raw[at] & 0xC0) == 0x80)
    return at


def char_offsets(leading, at):
    """The byte offset of each character number in at (see characters: leading)."""
    return at if leading is None else np.flatnonzero(leading)[at]


def _is_long_s(data: bytes, leading, chars, at):
    """Whether character number `at` is ſ (U+017F, bytes C5 BF), which (?i) matches as s."""
    first = (at < len(chars)) & (chars[np.minimum(at, len(chars) - 1)] == 0xC5)
    if not first.any():
        return first
    raw = np.frombuffer(data, dtype=np.uint8)
    offsets = char_offsets(leading, at[first])
    first[first] = raw[np.minimum(offsets + 1, len(raw) - 1)] == 0xBF
    return first


def byte_offsets(starts, leading, n: int, cuts=None):
    """The byte offset of each character where starts is True, and of each byte in cuts (first
    bytes of characters where a piece is cut too), then n."""
    if leading is None:
        spread = np.append(starts, True)  # (n: the flag after the last byte)
    else:
        spread = np.zeros(n + 1, dtype=bool)  # the starts, spread back over the bytes
        spread[:n][leading] = starts
        spread[n] = True
    if cuts is not None:
        spread[cuts] = True
    return np.flatnonzero(spread)


def contraction_letters(data: bytes, leading, chars, at, letters_end, in_bytes: bool = False):
    """How many letters after the apostrophe at each position `at` make a contraction with it:
    1 for s, d, m, t; 2 for ll, ve, re (any case, ſ as s); else 0. letters_end: where the
    letters after each apostrophe end. in_bytes: positions and the count are bytes (chars is
    the raw bytes, leading None): ſ counts 2."""
    # the two characters after each apostrophe, ASCII lower case; none (0) past the end
    c1, c2 = (np.where(at + k < len(chars), chars[np.minimum(at + k, len(chars) - 1)], 0) | 0x20 for k in (1, 2))
    long_s = _is_long_s(data, leading, chars, at + 1)
    one = np.isin(c1, np.frombuffer(b"sdmt", dtype=np.uint8)) | long_s
    two = ~one & (at + 2 < letters_end) & (((c1 == 0x6C) & (c2 == 0x6C)) | (((c1 == 0x76) | (c1 == 0x72)) & (c2 == 0x65)))
    return np.where(one, 1 + (in_bytes & long_s), np.where(two, 2, 0))
