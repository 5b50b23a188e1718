"""The o200k_base pattern, vectorised: where its pieces start."""

from __future__ import annotations

import numpy as np

from ..arrays import spans
from .characters import (
    BOTH, CRLF, LETTER, LOWER, MARK, NUMBER, OTHER, SPACE, UPPER, WHITESPACE, byte_offsets, char_offsets, characters,
    contraction_letters,
)
from .patterns import PATTERNS, compiled


def o200k_piece_starts(data: bytes, doc_starts=None, cuts=None):
    """gpt2_piece_starts for the o200k pattern. Its rules, as this reads them, where they differ
    from cl100k's (cl100k_piece_starts):
    - letters: a run splits before each upper-case letter that follows a lower-case one; a word
      takes a contraction ('s, 't, 're, 've, 'm, 'll, 'd in any case) right after it;
    - others: a run takes the \\r, \\n and / right after it;
    - whitespace: up to and including its last \\r or \\n, also at the end of a document.
    Lines holding combining marks (letters to some of the pattern's classes, others to the rest)
    are split by the regex instead.

    Example: b"don't HTMLParser iPhone" -> [0, 5, 17, 19, 23]  ("don't", " HTMLParser", " i", "Phone")
    """
    if not data:
        return np.zeros(1, dtype=np.int64)
    leading, chars, cls, edges, case = characters(data, doc_starts, cases=True)
    m = len(cls)
    kind, starts, firsts, ends, run_kind, follows = _class_runs(cls, edges)

    # 1. others followed by \r or \n take the run of \r, \n and / after them (within the document)
    effective = firsts.copy()  # where each run's own pieces start, past what such a run took
    takers = np.flatnonzero((run_kind == OTHER) & (follows == WHITESPACE))
    takers = takers[cls[ends[takers]] == CRLF]
    if len(takers):
        taken = np.flatnonzero((cls == CRLF) | (chars == 0x2F))
        new_group = np.concatenate(([True], (np.diff(taken) != 1) | edges[taken[1:]]))
        group_end = taken[np.append(np.flatnonzero(new_group)[1:] - 1, len(taken) - 1)] + 1
        k = ends[takers]
        f = group_end[np.cumsum(new_group)[np.searchsorted(taken, k)] - 1]
        in_tail = np.zeros(m + 1, dtype=bool)
        in_tail[spans(k, f - k)] = True
        starts[in_tail[:m]] = False
        starts[f[f < m]] = True
        entered = np.flatnonzero(in_tail[firsts])
        whole = entered[in_tail[ends[entered] - 1]]
        effective[whole] = ends[whole]
        part = entered[~in_tail[ends[entered] - 1]]
        effective[part] = f[np.searchsorted(f, firsts[part], "right")]

    # 2. whitespace runs [q, k): up to the last \r or \n; then all but the last character, which
    # letters, or (a space) others after it, join
    runs = np.flatnonzero(run_kind == WHITESPACE)
    _split_whitespace(starts, cls, effective[runs], ends[runs], follows[runs])

    # 3. others: one character that starts a piece before letters joins them, unless it is an
    # apostrophe whose letters make a contraction of the word before it
    runs = np.flatnonzero((run_kind == OTHER) & (follows == LETTER))
    runs = runs[(ends[runs] - effective[runs] == 1)]
    a = effective[runs]
    keep = starts[a]
    runs, a = runs[keep], a[keep]
    after_word = (runs > 0) & (a == firsts[runs]) & ~edges[a] & (run_kind[runs - 1] == LETTER) & (chars[a] == 0x27)
    length = np.zeros(len(a), dtype=np.int64)
    if after_word.any():
        length = np.where(after_word, contraction_letters(data, leading, chars, a, ends[runs + 1]), 0)
        # a contraction's letters are no word: an apostrophe right after them starts a piece
        # ("x's's" is "x's", "'s"); such chains are rare, so they are settled one by one
        word_before = np.ones(len(a), dtype=bool)
        previous = np.searchsorted(a, firsts[runs - 1] - 1)
        linked = np.flatnonzero((length > 0) & (previous < len(a)))
        for i in linked.tolist():
            j = previous[i]
            if j < i and a[j] == firsts[runs[i] - 1] - 1 and length[j] == ends[runs[j] + 1] - a[j] - 1 and length[j] > 0 and word_before[j]:
                word_before[i] = False
        length[~word_before] = 0
    suffix = length > 0
    # 4. words, in letters past what a contraction took
    effective[runs[suffix] + 1] = a[suffix] + 1 + length[suffix]
    _split_words(starts, case, effective, firsts, ends, run_kind)
    starts[a[suffix]] = False
    starts[(a + 1)[~suffix]] = False  # the character joins the letters after it
    for n in (1, 2):
        at = a[length == n]
        starts[at + 1] = False
        if n == 2:
            starts[at + 2] = False
        after = at + n + 1
        starts[after[after < ends[runs[length == n] + 1]]] = True

    # 5. lines the rules above do not cover: the regex. A character after \r or \n that is neither
    # whitespace nor "/" always starts a piece, and nothing before it changes what follows.
    hard = np.flatnonzero(case == MARK)
    if len(hard):
        fresh = edges[:m].copy()
        fresh[1:] |= (cls[:-1] == CRLF) & (kind[1:] != WHITESPACE) & (chars[1:] != 0x2F)
        line_firsts = np.flatnonzero(fresh)
        line_ends = np.append(line_firsts[1:], m)
        line_bytes = np.append(char_offsets(leading, line_firsts), len(data))  # where each line starts, then the end
        findall = compiled(PATTERNS["o200k"]).findall
        for d in np.unique(np.searchsorted(line_firsts, hard, "right") - 1).tolist():
            c0, c1 = int(line_firsts[d]), int(line_ends[d])
            b0, b1 = int(line_bytes[d]), int(line_bytes[d + 1])
            sizes = [len(piece) for piece in findall(data[b0:b1].decode("utf-8"))]
            starts[c0:c1] = False
            starts[c0 + np.cumsum([0] + sizes[:-1], dtype=np.int64)] = True
    return byte_offsets(starts, leading, len(data), cuts)


def _split_words(starts, case, effective, firsts, ends, run_kind) -> None:
    """o200k's starts within runs of letters (from effective: past the letters a contraction
    took). A word is upper-case letters then lower-case ones (letters of both classes may stand
    anywhere), so a word starts at each upper-case letter whose nearest cased letter before it,
    in the same run, is lower-case; and the run's last stretch without lower-case letters ends a
    word after its last letter of both classes."""
    both = np.flatnonzero(case == BOTH)
    if not len(both):  # cased letters only (the common case): upper after lower
        starts[1:] |= (case[1:] == UPPER) & (case[:-1] == LOWER)
        return
    cased = np.flatnonzero((case == UPPER) | (case == LOWER))
    run_of = np.searchsorted(firsts, cased, "right") - 1
    kept = cased >= effective[run_of]
    cased, run_of = cased[kept], run_of[kept]
    new_word = np.zeros(len(cased), dtype=bool)
    new_word[1:] = (case[cased[1:]] == UPPER) & (case[cased[:-1]] == LOWER) & (run_of[1:] == run_of[:-1])
    starts[cased[new_word]] = True
    # each run's stretch without lower-case letters at its end, from the upper-case letter after
    # its last lower-case one (or from its start): a start after the stretch's last letter of
    # both classes, if upper-case letters follow it
    runs = np.flatnonzero(run_kind == LETTER)
    first, end = effective[runs], ends[runs]
    lower, upper = cased[case[cased] == LOWER], cased[case[cased] == UPPER]
    last_lower = np.append(-1, lower)[np.searchsorted(lower, end)]  # -1: none
    upper_after = np.append(upper, len(case))[np.searchsorted(upper, last_lower + 1)]
    stretch = np.where(last_lower >= first, upper_after, first)
    last_both = np.append(-1, both)[np.searchsorted(both, end)]
    split = (last_both >= stretch) & (last_both + 1 < end)
    starts[last_both[split] + 1] = True


def _split_whitespace(starts, cls, q, k, follows) -> None:
    """Starts in whitespace runs [q, k) (q: where each run's own pieces begin, k when others took
    all of it; follows: the kind after it, -1 at a document's end): a piece up to and including
    its last \\r or \\n, then all but its last character, then that last character, which letters,
    or (if it is a space) others after it, join (also at the end of a document: o200k has no
    \\s++$)."""
    live = q < k
    q, k, follows = q[live], k[live], follows[live]
    starts[q] = True
    crlf = np.append(-1, np.flatnonzero(cls == CRLF))
    last_crlf = crlf[np.searchsorted(crlf, k) - 1]  # the last \r or \n before k (-1: none)
    cut = last_crlf >= q
    t = np.where(cut, last_crlf + 1, q)  # where the run's tail without \r or \n starts
    starts[t[t < k]] = True
    tail = (t < k) & (follows >= 0)
    starts[(k - 1)[tail & (k - t >= 2)]] = True
    joins = tail & ((follows == LETTER) | ((follows == OTHER) & (cls[k - 1] == SPACE)))
    starts[k[joins]] = False


def _class_runs(cls, edges):
    """(kind, starts, firsts, ends, run_kind, follows): each character's kind (letter, number,
    other, whitespace), a start at every run of one kind within a document, where each run starts
    and ends, its kind, and the kind of the run after it in the same document (-1: none). The
    starts also cut numbers into threes."""
    m = len(cls)
    kind = np.minimum(cls, np.full_like(cls, WHITESPACE))  # (numpy's minimum with a scalar is 8x slower on uint8)
    bounds = edges.copy()  # every run's start, then m
    bounds[1:m] |= kind[1:] != kind[:-1]
    starts = bounds[:m]
    firsts_and_m = np.flatnonzero(bounds)
    firsts, ends = firsts_and_m[:-1], firsts_and_m[1:]
    run_kind = kind[firsts]
    follows = np.empty(len(firsts), dtype=np.int8)
    follows[:-1] = run_kind[1:]
    follows[np.searchsorted(firsts_and_m, np.flatnonzero(edges[1:]) + 1) - 1] = -1  # runs that end a document
    long_numbers = np.flatnonzero(run_kind == NUMBER)
    long_numbers = long_numbers[ends[long_numbers] - firsts[long_numbers] > 3]
    more = (ends[long_numbers] - firsts[long_numbers] - 1) // 3  # starts after the run's first
    starts[np.repeat(firsts[long_numbers], more) + 3 * (spans(np.zeros_like(more), more) + 1)] = True
    return kind, starts, firsts, ends, run_kind, follows
