"""The cl100k_base pattern, vectorised: where its pieces start."""

from __future__ import annotations

import numpy as np

from .characters import (
    CRLF, LETTER, OTHER, SPACE, WHITESPACE, byte_offsets, characters, class_runs, contraction_letters, split_whitespace,
)


def cl100k_piece_starts(data: bytes, doc_starts=None):
    """gpt2_piece_starts for the cl100k pattern. Its rules, as this reads them, run by run:
    - letters: a maximal run, with the one character before it if that starts a piece and is
      neither a number, \\r nor \\n (a space, a tab, a bracket...);
    - numbers: a run cut into threes from its start;
    - others: a maximal run, with one space before it, and the \\r and \\n right after it;
    - whitespace: at the end of a document, one piece; else up to and including its last \\r or
      \\n, then all but its last character, then that last character alone (which letters, or,
      if it is a space, others after it join);
    - an apostrophe that starts a piece and comes before letters takes s, d, m, t, ll, ve or re
      (any case) as a contraction.

    Example: b"it's  (x)\\n" -> [0, 2, 4, 5, 7, 8, 10]  ("it", "'s", " ", " (", "x", ")\\n")
    """
    if not data:
        return np.zeros(1, dtype=np.int64)
    leading, chars, cls, edges, _ = characters(data, doc_starts)
    kind, starts, firsts, ends, run_kind, follows = class_runs(cls, edges)

    # whitespace runs [a, k); most are one space or tab before a word, done first
    runs = np.flatnonzero(run_kind == WHITESPACE)
    a, k = firsts[runs], ends[runs]
    one = (k - a == 1) & (cls[a] != CRLF)
    follows_w = follows[runs]
    joins = one & ((follows_w == LETTER) | ((follows_w == OTHER) & (cls[a] == SPACE)))
    starts[k[joins]] = False
    runs, a, k, follows_w = runs[~one], a[~one], k[~one], follows_w[~one]
    after_other = (runs > 0) & ~edges[a] & (run_kind[runs - 1] == OTHER)
    q = a.copy()  # where the run's first piece starts: others took the \r and \n right after them
    crlf = np.flatnonzero(cls == CRLF) if after_other.any() else ()  # few: q is found among them
    if len(crlf):  # q: past the run of \r and \n at a, if there is one
        last = np.append(np.flatnonzero(np.diff(crlf) != 1), len(crlf) - 1)  # the last of each run of them
        past = np.repeat(crlf[last] + 1, np.diff(last, prepend=-1))  # for each, where its run ends
        starting = a[after_other]
        at = np.minimum(np.searchsorted(crlf, starting), len(crlf) - 1)
        q[after_other] = np.minimum(np.where(crlf[at] == starting, past[at], starting), k[after_other])
    starts[a] = False
    split_whitespace(starts, cls, q, k, follows_w, whole_at_end=True)

    # others: one character that starts a piece, then letters: a contraction or one piece
    runs = np.flatnonzero((run_kind == OTHER) & (ends - firsts == 1) & (follows == LETTER))
    a = firsts[runs]
    a = a[starts[a]]
    starts[a + 1] = False
    a = a[chars[a] == 0x27]
    if len(a):
        letters_end = ends[np.searchsorted(firsts, a + 1)]
        after = a + 1 + contraction_letters(data, leading, chars, a, letters_end)
        starts[after[(after > a + 1) & (after < letters_end)]] = True
    return byte_offsets(starts, leading, len(data))
