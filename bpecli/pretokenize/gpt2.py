"""The gpt2 (r50k) pattern, vectorised: where its pieces start."""

from __future__ import annotations

import numpy as np

from .characters import SPACE, WHITESPACE, byte_classes, byte_offsets, first_bytes


def gpt2_piece_starts(data: bytes, doc_starts=None, cuts=None):
    """Byte offsets where the gpt2 pattern's pieces start in UTF-8 data (valid UTF-8), plus
    len(data) at the end; doc_starts (sorted byte offsets) are document edges no piece crosses;
    cuts (sorted byte offsets of first bytes of characters), if given, start pieces too.

    The rules: a piece is a maximal run of letters (L), of numbers (N), or of other characters
    (O); one ASCII space just before such a run belongs to it; a whitespace run followed by more
    text leaves its last character to the next piece (at the end of a document it is one piece);
    an apostrophe that starts a piece takes s, d, m, t, ll, ve or re after it as a contraction.

    Example: b"I'm  here" -> [0, 1, 3, 4, 5, 9]  ("I", "'m", " ", " here")
    """
    if not data:
        return np.zeros(1, dtype=np.int64)
    raw, cls, seg, _ = byte_classes(data, doc_starts)  # the rules read bytes: only their classes go past ASCII
    m = len(cls)
    is_w = cls >= WHITESPACE  # " ", \r and \n are whitespace, save for the rules that name them
    starts = seg[:m].copy()
    starts[1:] |= (cls[1:] != cls[:-1]) & ~(is_w[1:] & is_w[:-1])  # the kind changes
    # the last character of a whitespace run goes with what follows it in the same document
    last = is_w[:-1] & ~is_w[1:] & ~seg[1:m]
    starts[:-1] |= last
    wide = np.flatnonzero(last & (raw[:-1] >= 0x80))  # the last byte of a multi-byte character (a few)...
    if len(wide):  # ...whose first byte starts the piece
        starts[wide] = False
        starts[first_bytes(raw, wide)] = True
    # a space just before an L, N or O run belongs to that run: no start between them
    starts[1:] &= ~((cls[:-1] == SPACE) & ~is_w[1:] & ~seg[1:m])
    # contractions: an apostrophe that starts a piece, then s|d|m|t or ll|ve|re in the same document
    apostrophes = np.flatnonzero(starts & (raw == 0x27))
    if len(apostrophes):
        nxt = np.concatenate([raw, np.zeros(2, dtype=raw.dtype)])
        same = ~np.concatenate([seg[1:], np.ones(2, dtype=bool)])
        c1, c2 = nxt[apostrophes + 1], nxt[apostrophes + 2]
        ok1, ok2 = same[apostrophes], same[apostrophes + 1]
        two = ok1 & np.isin(c1, np.frombuffer(b"sdmt", dtype=np.uint8))
        three = ok1 & ok2 & (((c1 == 0x6C) & (c2 == 0x6C)) | (((c1 == 0x76) | (c1 == 0x72)) & (c2 == 0x65)))
        for found, length in ((two, 2), (three, 3)):
            at = apostrophes[found]
            starts[at + 1] = False
            after = at + length
            starts[after[after < m]] = True
    return byte_offsets(starts, None, len(data), cuts)
