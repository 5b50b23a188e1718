"""The cl100k_base pattern, vectorised: where its pieces start."""

from __future__ import annotations

from functools import cache
from itertools import product

import numpy as np

from ..arrays import sorted_distinct, spans
from .characters import (
    CRLF, LETTER, NUMBER, OTHER, SPACE, WHITESPACE, byte_classes, byte_offsets, char_sizes, contraction_letters,
    first_bytes, later_starts,
)

CLASSES = 6  # LETTER to CRLF: three classes in a row are one code below 6 ** 3 = 216
# The bits of the flags _rule_table gives a code: the byte starts a piece; the byte before it is
# the last blank of a run before a word; the three are numbers.
STARTS, BEFORE_WORD, NUMBERS = 0, 1, 2
_WORDS, _BLANKS = (LETTER, NUMBER, OTHER), (WHITESPACE, SPACE)


def cl100k_piece_starts(data: bytes, doc_starts=None, cuts=None):
    """gpt2_piece_starts for the cl100k pattern. Its rules, as this reads them (a start wherever
    the kind - letter, number, other, whitespace - changes, then):
    - letters join the one character before them if it is blank (whitespace but \\r and \\n), or
      an other that starts its piece (one other, after no space);
    - others join one space before them, and take the \\r and \\n right after them;
    - numbers: a run cut into threes from its start;
    - whitespace runs: a piece up to and including their last \\r or \\n; of the blanks after
      it, all but the last are one piece, the last starts one (joined by what follows); a run
      that ends its document is one piece;
    - an apostrophe that starts a piece and comes before letters takes s, d, m, t, ll, ve or re
      (any case) as a contraction.
    The rules read bytes, each with its character's class (characters.byte_classes): those that
    count characters - one other, the last blank, numbers in threes, ſ in a contraction - mend
    what multi-byte characters (a few) make them read. The rules that read a byte and the two
    before it are one bytes.translate of a code of their three classes (_rule_table), mended
    where an edge or a multi-byte other is near; runs of \\r and \\n, runs of four or more number
    bytes and apostrophes are taken as positions.

    Example: b"it's  (x)\\n" -> [0, 2, 4, 5, 7, 8, 10]  ("it", "'s", " ", " (", "x", ")\\n")
    """
    if not data:
        return np.zeros(1, dtype=np.int64)
    raw, cls, edges, wide = byte_classes(data, doc_starts)  # wide: where multi-byte characters start
    m = len(cls)
    inside = later_starts(doc_starts, m)
    # every rule that reads a byte and the two before it (and last_blank the one after), by a
    # table of the three classes in a row, away from edges and multi-byte others (mended below)
    starts, last_blank, three_numbers = _by_neighbours(cls)
    wide_other = wide[cls[wide] == OTHER]
    ends_of_other = np.minimum(wide_other + char_sizes(raw[wide_other]) - 1, m - 1)
    near = np.concatenate(([1], inside - 1, inside + 1, ends_of_other + 1))
    near = sorted_distinct(near[(near > 0) & (near < m)])
    starts[near], last_blank[near] = _rules_at(near, raw, cls, edges)
    starts[inside] = True
    starts[0] = True
    # the last blank before a word, when multi-byte (a few), starts a piece at its first byte
    wide_blank = wide[_is_blank(cls[wide])]
    last_byte = np.minimum(wide_blank + char_sizes(raw[wide_blank]) - 1, m - 1)
    moved = last_blank[last_byte]
    starts[last_byte[moved]] = False
    starts[wide_blank[moved]] = True
    _after_line_ends(starts, cls, edges, inside)
    _numbers_in_threes(starts, raw, three_numbers, edges)

    # an apostrophe that starts a piece before letters: a contraction, then the rest of the letters
    a = np.flatnonzero(raw[:-1] == 0x27)
    a = a[_continues_letters(a + 1, cls, edges) & _other_starts(a, cls, edges)]
    if len(a):
        second, third = _continues_letters(a + 2, cls, edges), _continues_letters(a + 3, cls, edges)
        letters_end = a + 2 + second + (second & third)  # as far as a contraction can reach
        after = a + 1 + contraction_letters(data, None, raw, a, letters_end, in_bytes=True)
        starts[after[(after > a + 1) & (after < letters_end)]] = True
    return byte_offsets(starts, None, len(data), cuts)


def _by_neighbours(cls):
    """(starts, last_blank, three_numbers) as the rules set them from the classes of each byte and
    the two before it, read as if the text had no edges and no multi-byte others: one code per
    byte, one bytes.translate through _rule_table. last_blank: the last blank of a run before a
    word; three_numbers: the byte and the two before it are numbers."""
    m = len(cls)
    codes = bytearray(m + 1)  # codes[i]: the classes of bytes i - 2, i - 1, i (translate reads a bytearray in place)
    if m >= 3:
        code = np.frombuffer(codes, dtype=np.uint8)[2:m]
        np.multiply(cls[:-2], np.uint8(CLASSES * CLASSES), out=code)
        code += cls[1:-1] * np.uint8(CLASSES)
        code += cls[2:]
    flags = np.frombuffer(codes.translate(_rule_table()), dtype=np.uint8)
    starts = ((flags[:m] >> STARTS) & 1).view(bool)
    last_blank = ((flags[1:] >> BEFORE_WORD) & 1).view(bool)  # from the byte after
    starts |= last_blank
    return starts, last_blank, ((flags[:m] >> NUMBERS) & 1).view(bool)


@cache
def _rule_table() -> bytes:
    """A bytes.translate table over the code of three classes in a row (c2, c1, c0: the byte's own
    last): its flags (STARTS, BEFORE_WORD, NUMBERS). Code 0 (three letters) has none."""
    table = bytearray(256)
    for c2, c1, c0 in product(range(CLASSES), repeat=3):
        other_starts = c1 == OTHER and c2 not in (OTHER, SPACE)
        joined = (c0 == LETTER and (c1 in _BLANKS or other_starts)) or (c0 == OTHER and c1 == SPACE)
        starts = c0 != c1 and (c0 in _WORDS or c1 in _WORDS) and not joined
        before_word = c2 in _BLANKS and c1 in _BLANKS and c0 in _WORDS
        numbers = c2 == c1 == c0 == NUMBER
        table[(c2 * CLASSES + c1) * CLASSES + c0] = starts << STARTS | before_word << BEFORE_WORD | numbers << NUMBERS
    return bytes(table)


def _rules_at(at, raw, cls, edges):
    """(starts, last_blank) of the bytes at `at` (0 < at < len(cls)), by _rule_table, with their
    neighbours read as the rules read them: the class before a multi-byte other is the one before
    its first byte; an other that starts a document starts its piece whatever came before (read as
    a letter); a byte next to an edge, or the last, is no last blank. For the few bytes next to an
    edge or after a multi-byte other."""
    m = len(cls)
    table = np.frombuffer(_rule_table(), dtype=np.uint8)
    before, own = cls[at - 1].astype(np.intp), cls[at].astype(np.intp)
    first = first_bytes(raw, at - 1)  # of the character before each byte
    earlier = np.where((first == 0) | edges[first], LETTER, cls[np.maximum(first - 1, 0)])
    flags = table[(earlier * CLASSES + before) * CLASSES + own]
    following = table[(before * CLASSES + own) * CLASSES + cls[np.minimum(at + 1, m - 1)]]
    last_blank = ((following >> BEFORE_WORD) & 1).astype(bool) & (at + 1 < m) & ~edges[at] & ~edges[at + 1]
    return ((flags >> STARTS) & 1).astype(bool) | last_blank | edges[at], last_blank


def _other_starts(at, cls, edges):
    """Whether the (first bytes of) characters at `at` are others that start their piece: the
    first of a run of others, after no space."""
    before = cls[np.maximum(at - 1, 0)]
    return (cls[at] == OTHER) & ((at == 0) | edges[at] | ((before != OTHER) & (before != SPACE)))


def _continues_letters(at, cls, edges):
    """Whether the bytes at `at` are letters in the document of the byte before them (False past
    the end)."""
    m = len(cls)
    return (at < m) & (cls[np.minimum(at, m - 1)] == LETTER) & ~edges[np.minimum(at, m)]


def _after_line_ends(starts, cls, edges, inside) -> None:
    """The starts around runs of \\r and \\n: an other right before one takes it (no start at
    it, a start at the blanks after it); blanks after the last run of a whitespace run start a
    piece, unless the run ends its document. inside: where the documents after the first start."""
    m = len(cls)
    crlf = np.flatnonzero(cls == CRLF)
    if not len(crlf):
        return
    first = np.ones(len(crlf), dtype=bool)  # starts a run of \r and \n within a document
    first[1:] = (np.diff(crlf) != 1) | edges[crlf[1:]]
    run_first = crlf[first]
    run_after = np.append(crlf[np.flatnonzero(first)[1:] - 1], crlf[-1]) + 1
    taken = (run_first > 0) & ~edges[run_first] & (cls[run_first - 1] == OTHER)
    starts[run_first[taken]] = False
    tail = (run_after < m) & ~edges[run_after]
    tail[tail] = _is_blank(cls[run_after[tail]])
    # blanks after a run that is not the last of its whitespace run, or that end the document,
    # start no piece (unless an other took the run): they are the middle or end of one piece
    own = tail & ~taken
    t = run_after[own]
    doc_ends = np.append(inside, m)
    stop = np.minimum(np.append(run_first[1:], m)[own], doc_ends[np.searchsorted(doc_ends, t, "right")])  # next \r, \n or end
    doubt = np.flatnonzero(_is_blank(cls[stop - 1]))
    if len(doubt):  # blanks up to the stop? (else a word comes first: a start)
        bounds = np.stack([t[doubt], stop[doubt]], axis=1).ravel()
        reaches = ~np.logical_or.reduceat(cls < WHITESPACE, np.minimum(bounds, m - 1))[::2]
        reaches &= t[doubt] < stop[doubt]
        keep = np.ones(len(t), dtype=bool)
        keep[doubt[reaches]] = False
        t = t[keep]
    starts[t] = True
    starts[run_after[tail & taken]] = True


def _is_blank(cls):
    """Whitespace but \\r and \\n."""
    return (cls == WHITESPACE) | (cls == SPACE)


def _numbers_in_threes(starts, raw, three_numbers, edges) -> None:
    """Starts every three characters into a run of more than three numbers (within a document).
    Such a run has four number bytes in a row: only the bytes of those runs are looked at."""
    four = np.flatnonzero(three_numbers[1:] & three_numbers[:-1]) + 1  # bytes i - 3 to i are numbers
    if not len(four):
        return
    first = np.ones(len(four), dtype=bool)
    first[1:] = np.diff(four) != 1
    run_first = four[first] - 3
    run_bytes = np.append(four[np.flatnonzero(first)[1:] - 1], four[-1]) + 1 - run_first
    digits = spans(run_first, run_bytes)
    digits = digits[(raw[digits] & 0xC0) != 0x80]  # their first bytes
    size = char_sizes(raw[digits])
    first = np.ones(len(digits), dtype=bool)  # starts a run of them
    first[1:] = (digits[1:] != digits[:-1] + size[:-1]) | edges[digits[1:]]
    runs = np.flatnonzero(first)
    more = (np.diff(np.append(runs, len(digits))) - 1) // 3  # starts after the run's first
    starts[digits[np.repeat(runs, more) + 3 * (spans(np.zeros_like(more), more) + 1)]] = True
