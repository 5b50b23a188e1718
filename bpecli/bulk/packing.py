"""Pieces of up to 15 bytes packed into two uint64 each, hashed and numbered with numpy; the
bulk encoder and counting both work on pieces in this form."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


# The packed layout of a piece of up to PACKED_BYTES bytes: two little-endian uint64, `low`
# holding bytes 0-7 and `high` bytes 8-14 and, in its top byte (from bit LENGTH_SHIFT), the
# piece's length; viewed as bytes, a row of PACKED_ROW_BYTES whose first `length` are the piece.
PACKED_BYTES = 15
LENGTH_SHIFT = 56
PACKED_ROW_BYTES = 16


def pack_pieces(data: bytes, bounds):
    """(short, low, high, mixed, long_at, long_codes, long_pieces) for the pieces
    data[bounds[i]:bounds[i + 1]]: those of up to 15 bytes (their numbers: short) packed as
    pack_spans does, with their piece_hash (mixed); the longer ones (their numbers: long_at) as
    the distinct bytes objects long_pieces, long_codes saying which of them each one is.
    """
    starts, sizes = bounds[:-1], np.diff(bounds)
    is_short = sizes <= PACKED_BYTES
    short = np.flatnonzero(is_short)
    low, high = pack_spans(data, starts[short], sizes[short])
    long_at = np.flatnonzero(~is_short)
    index: dict[bytes, int] = {}
    codes = [index.setdefault(data[a:b], len(index)) for a, b in zip(starts[long_at].tolist(), bounds[long_at + 1].tolist())]
    return short, low, high, piece_hash(low, high), long_at, np.array(codes, dtype=np.int64), list(index)


def pack_spans(data: bytes, starts, sizes, words=None):
    """(low, high): the bytes data[start : start + size] (size at most 15) as two uint64: bytes
    0-7 little-endian in low, bytes 8-14 in high with the size in its top byte. words: the
    8-byte words at every offset of data (as made here), if the caller has them."""
    if words is None:
        words = np.ndarray((len(data) + 9,), dtype="<u8", buffer=data + bytes(16), strides=(1,))
    low = words[starts] & _LOW_MASKS[sizes]
    high = sizes.astype(np.uint64) << np.uint64(LENGTH_SHIFT)
    beyond = np.flatnonzero(sizes > 8)  # most pieces are shorter: their high word is the length alone
    high[beyond] |= words[starts[beyond] + 8] & _LOW_MASKS[sizes[beyond] - 8]
    return low, high


# By a piece's size: the bits of its bytes in the low word (the first 8 bytes)
_LOW_MASKS = np.array([(1 << (8 * min(k, 8))) - 1 for k in range(PACKED_BYTES + 1)], dtype=np.uint64)


def distinct_packed(low, high, mixed):
    """(an index of each distinct packed piece, the number of every piece's group), exactly.
    mixed (piece_hash) is one uint64 per piece for numpy to sort; pieces whose hashes collide are
    caught and settled by comparing both words."""
    first, codes = group(mixed)
    if (low[first][codes] == low).all() and (high[first][codes] == high).all():
        return first, codes
    _, first, codes = np.unique(np.stack([low, high], axis=1), axis=0, return_index=True, return_inverse=True)
    return first, codes.ravel()


def group(values):
    """(one index of each distinct value, the group number of every value), by a hash table:
    values (uint64 hashes) pick their slot by their top bits and take the next slot while it
    holds another value. Each round is a few numpy passes over the values not yet placed; at most
    half the slots are used, so rounds are few. About twice as fast as sorting the values.

    Example: [7, 5, 7] -> ([1, 2], [1, 0, 1]): 5 alone, the two 7s together
    """
    bits = max(4, (2 * len(values)).bit_length())
    index = np.int32 if len(values) < 2**31 else np.int64  # half the memory to wander through
    table = np.full(1 << bits, -1, dtype=index)  # slot -> the index of the value that holds it
    slots = (values >> np.uint64(64 - bits)).astype(np.intp)
    holder = np.empty(len(values), dtype=index)
    waiting = np.arange(len(values), dtype=index)
    while len(waiting):
        held = table[slots]
        free = held < 0
        table[slots[free]] = waiting[free]  # of several values claiming one slot, one wins
        held[free] = table[slots[free]]
        placed = values[held] == values[waiting]
        holder[waiting[placed]] = held[placed]
        waiting, slots = waiting[~placed], (slots[~placed] + 1) & ((1 << bits) - 1)
    first = np.flatnonzero(holder == np.arange(len(values), dtype=index))
    number = np.empty(len(values), dtype=np.int64)
    number[first] = np.arange(len(first))
    return first, number[holder]


def piece_hash(low, high):
    """A uint64 hash of each packed piece (see pack_spans), for tables that read its top bits:
    high turned so that its top byte, the length (all a short piece's high holds), comes first,
    times an odd constant, xor low, times another. A multiply carries a change in any bit to every
    bit above it, so to the top ones; six passes over the pieces (splitmix64's finaliser twice
    took seventeen), as even a spread over slots on corpus pieces, and no two of them alike."""
    turned = (high >> _LENGTH_FIRST) | (high << _REST_AFTER)
    return (low ^ (turned * GOLDEN)) * _SPREAD


_LENGTH_FIRST, _REST_AFTER = np.uint64(LENGTH_SHIFT), np.uint64(64 - LENGTH_SHIFT)  # high turned by a byte
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # odd, its bits well spread: 2**64 over the golden ratio
_SPREAD = np.uint64(0xBF58476D1CE4E5B9)  # odd: splitmix64's first multiplier


def document_batches(documents: list, size: int = 1 << 22) -> Iterator[list]:
    """Documents in groups of about `size` bytes: numpy is several times faster on arrays that
    fit the caches than on one huge one."""
    batch, total = [], 0
    for document in documents:
        batch.append(document)
        total += len(document)
        if total >= size:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch
