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
    where, chars, cls, edges, _ = characters(data, doc_starts)
    m = len(cls)
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
    if after_other.any():
        not_crlf = np.append(np.flatnonzero(cls != CRLF), m)
        q[after_other] = np.minimum(not_crlf[np.searchsorted(not_crlf, a[after_other])], k[after_other])
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
        after = a + 1 + contraction_letters(data, where, chars, a, letters_end)
        starts[after[(after > a + 1) & (after < letters_end)]] = True
    return byte_offsets(starts, where, len(data))
