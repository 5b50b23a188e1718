"""The cl100k_base pattern, vectorised: where its pieces start."""

from __future__ import annotations

import numpy as np

from ..arrays import spans
from .characters import (
    CRLF, LETTER, NUMBER, OTHER, SPACE, WHITESPACE, byte_classes, byte_offsets, char_sizes, contraction_letters,
    first_bytes,
)


def cl100k_piece_starts(data: bytes, doc_starts=None):
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
    what multi-byte characters (a few) make them read. Runs of \\r and \\n, digits and
    apostrophes are taken as positions; every other rule is a few passes over arrays of flags.

    Example: b"it's  (x)\\n" -> [0, 2, 4, 5, 7, 8, 10]  ("it", "'s", " ", " (", "x", ")\\n")
    """
    if not data:
        return np.zeros(1, dtype=np.int64)
    raw, cls, edges, wide = byte_classes(data, doc_starts)  # wide: where multi-byte characters start
    m = len(cls)
    inner = ~edges[1:m]  # inner[i - 1]: bytes i - 1 and i are in one document
    word = cls < WHITESPACE  # letters, numbers, others; the rest is whitespace of some class
    starts = edges[:m].copy()
    starts[1:] |= (cls[1:] != cls[:-1]) & (word[1:] | word[:-1])
    blank = (cls == WHITESPACE) | (cls == SPACE)
    other = cls == OTHER
    space = cls == SPACE

    # an other starts its piece if it is the first of its run and no space comes before it (its
    # last byte says so for a multi-byte one, as letters after it read that)
    other_starts = other.copy()
    other_starts[1:] &= ~(other[:-1] | space[:-1]) | edges[1:m]
    wide_other = wide[other[wide]]
    other_starts[np.minimum(wide_other + char_sizes(raw[wide_other]) - 1, m - 1)] = other_starts[wide_other]
    letter = cls[1:] == LETTER
    starts[1:] &= ~(letter & inner & (blank[:-1] | other_starts[:-1]))
    starts[1:] &= ~(other[1:] & space[:-1] & inner)
    # the last blank of a run of them before a word starts a piece (at its first byte)
    last_blank = blank[1:-1] & blank[:-2] & inner[:-1] & word[2:] & inner[1:]
    starts[1:-1] |= last_blank
    if len(wide):
        at = np.flatnonzero(last_blank & (raw[1:-1] >= 0x80)) + 1
        starts[at] = False
        starts[first_bytes(raw, at)] = True
    _after_line_ends(starts, cls, edges, blank, other, word)
    _numbers_in_threes(starts, raw, cls, edges)

    # an apostrophe that starts a piece before letters: a contraction, then the rest of the letters
    a = np.flatnonzero(raw[:-1] == 0x27)
    a = a[other_starts[a] & letter[a] & inner[a]]
    if len(a):
        in_letters = np.append(letter & inner, False)  # in_letters[j - 1]: byte j continues the letters before it
        second, third = in_letters[np.minimum(a + 1, m - 1)], in_letters[np.minimum(a + 2, m - 1)]
        letters_end = a + 2 + second + (second & third)  # as far as a contraction can reach
        after = a + 1 + contraction_letters(data, None, raw, a, letters_end, in_bytes=True)
        starts[after[(after > a + 1) & (after < letters_end)]] = True
    return byte_offsets(starts, None, len(data))


def _after_line_ends(starts, cls, edges, blank, other, word) -> None:
    """The starts around runs of \\r and \\n: an other right before one takes it (no start at
    it, a start at the blanks after it); blanks after the last run of a whitespace run start a
    piece, unless the run ends its document."""
    m = len(cls)
    crlf = np.flatnonzero(cls == CRLF)
    if not len(crlf):
        return
    first = np.ones(len(crlf), dtype=bool)  # starts a run of \r and \n within a document
    first[1:] = (np.diff(crlf) != 1) | edges[crlf[1:]]
    run_first = crlf[first]
    run_after = np.append(crlf[np.flatnonzero(first)[1:] - 1], crlf[-1]) + 1
    taken = (run_first > 0) & ~edges[run_first] & other[run_first - 1]
    starts[run_first[taken]] = False
    tail = (run_after < m) & ~edges[run_after]
    tail[tail] = blank[run_after[tail]]
    # blanks after a run that is not the last of its whitespace run, or that end the document,
    # start no piece (unless an other took the run): they are the middle or end of one piece
    own = tail & ~taken
    t = run_after[own]
    doc_ends = np.flatnonzero(edges[1:]) + 1
    stop = np.minimum(np.append(run_first[1:], m)[own], doc_ends[np.searchsorted(doc_ends, t, "right")])  # next \r, \n or end
    doubt = np.flatnonzero(blank[stop - 1])
    if len(doubt):  # blanks up to the stop? (else a word comes first: a start)
        bounds = np.stack([t[doubt], stop[doubt]], axis=1).ravel()
        reaches = ~np.logical_or.reduceat(word, np.minimum(bounds, m - 1))[::2]
        reaches &= t[doubt] < stop[doubt]
        keep = np.ones(len(t), dtype=bool)
        keep[doubt[reaches]] = False
        t = t[keep]
    starts[t] = True
    starts[run_after[tail & taken]] = True


def _numbers_in_threes(starts, raw, cls, edges) -> None:
    """Starts every three characters into a run of more than three numbers (within a document)."""
    digits = np.flatnonzero(cls == NUMBER)  # a few in a hundred bytes
    digits = digits[(raw[digits] & 0xC0) != 0x80]  # their first bytes
    if len(digits) < 4:
        return
    size = char_sizes(raw[digits])
    first = np.ones(len(digits), dtype=bool)  # starts a run of them
    first[1:] = (digits[1:] != digits[:-1] + size[:-1]) | edges[digits[1:]]
    runs = np.flatnonzero(first)
    more = (np.diff(np.append(runs, len(digits))) - 1) // 3  # starts after the run's first
    starts[digits[np.repeat(runs, more) + 3 * (spans(np.zeros_like(more), more) + 1)]] = True
