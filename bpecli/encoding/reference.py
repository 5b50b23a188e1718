"""BPE of one pre-token in Python, the reference every faster path is checked against: merge the
pair whose bytes have the lowest rank, leftmost first, until no pair is a token. No numpy here:
the regex path of a shell one-liner uses it."""

from __future__ import annotations

import sys
from itertools import islice, repeat
from operator import add

BYTE_TOKENS = [bytes([b]) for b in range(256)]
# Pieces longer than this are merged by the bulk engine's linked list (bulk.merge.bpe_long): no
# Python object per byte, and no rescan of the whole piece per merge. Shorter ones merge here, so
# that a one-liner loads numpy only for a piece this long (see docs/performance.md).
NUMPY_PIECE = 4096


def piece_ids(piece: bytes, ranks: dict[bytes, int]) -> tuple[int, ...]:
    """The ids of one piece: itself if it is a token, else its merged parts.

    Example (GPT-2 ranks): b" tokenizer" -> (11241, 7509)
    """
    rank = ranks.get(piece)
    if rank is not None:  # a piece that is itself a token is one token
        return (rank,)
    return tuple(ranks[part] for part in merge_parts(piece, ranks))


def merge_parts(piece: bytes, ranks: dict[bytes, int], max_rank: int | None = None) -> list[bytes]:
    """Merge adjacent parts of piece, the pair whose bytes have the lowest rank first (leftmost on
    ties), until no pair is a token; ranks at or above max_rank are left out.

    Example (GPT-2 ranks): b"hello" -> [b"hello"]; b" tokenizer" -> [b" token", b"izer"]
    """
    # the pair ranks in a list whose minimum min() finds in C; after a merge only the two pairs
    # beside it are looked up again
    limit = sys.maxsize if max_rank is None else max_rank
    if max_rank is None:
        rank_of = ranks.get
    else:  # ranks at or above max_rank count as no rank at all
        rank_of = lambda pair, default: min(ranks.get(pair, default), default)  # type: ignore[assignment]  # noqa: E731

    parts = list(map(BYTE_TOKENS.__getitem__, piece))
    pair_ranks = list(map(rank_of, map(add, parts, islice(parts, 1, None)), repeat(limit, len(piece) - 1)))
    while pair_ranks:
        best = min(pair_ranks)
        if best == limit:
            break
        i = pair_ranks.index(best)  # the leftmost of equal ranks, as tiktoken does
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        del pair_ranks[i]
        if i > 0:
            pair_ranks[i - 1] = rank_of(parts[i - 1] + parts[i], limit)
        if i < len(pair_ranks):
            pair_ranks[i] = rank_of(parts[i] + parts[i + 1], limit)
    return parts

