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


# Pieces of one or two bytes (about half of all in source code and prose) go by a code instead:
# a byte b is b, two bytes a, b are 256 + (a | b << 8). Counting counts them in one dense array,
# the bulk encoder reads their ids from one; they are never packed, hashed or looked up.
SMALL_CODES = 256 + (1 << 16)


def pack_by_size(data: bytes, bounds):
    """(small, codes, packed, low, high, mixed, long_at) for the pieces data[bounds[i]:bounds[i + 1]]:
    the numbers of those of one or two bytes (small) and their codes (see SMALL_CODES); of those
    of 3 to 15 bytes (packed), packed as pack_spans does with their piece_hash; of the longer ones.

    Example: b"a bcd" cut [0, 1, 2, 5] -> small [0, 1], codes [97, 32], packed [2] (b"bcd"), long_at []
    """
    starts, sizes = bounds[:-1], np.diff(bounds)
    words = _words(data)
    small = np.flatnonzero(sizes <= 2)
    small_sizes = sizes[small]
    # one byte: its byte; two: both, plus 256 (the mask keeps the second byte only for two)
    codes = (words[starts[small]] & _LOW_MASKS[small_sizes]).astype(np.intp) + ((small_sizes - 1) << 8)
    packed = np.flatnonzero((sizes > 2) & (sizes <= PACKED_BYTES))
    low, high = pack_spans(data, starts[packed], sizes[packed], words)
    return small, codes, packed, low, high, piece_hash(low, high), np.flatnonzero(sizes > PACKED_BYTES)


def small_pieces(codes):
    """(low, high) of the pieces of one or two bytes with these codes (see SMALL_CODES), packed
    as pack_spans packs them."""
    two = codes >= 256
    low = np.where(two, codes - 256, codes).astype(np.uint64)
    return low, (two.astype(np.uint64) + np.uint64(1)) << np.uint64(LENGTH_SHIFT)


def _words(data: bytes) -> np.ndarray:
    """The little-endian uint64 read at every byte offset of data (zeros past its end)."""
    return np.ndarray((len(data) + 9,), dtype="<u8", buffer=data + bytes(16), strides=(1,))


def pack_spans(data: bytes, starts, sizes, words=None):
    """(low, high): the bytes data[start : start + size] (size at most 15) as two uint64: bytes
    0-7 little-endian in low, bytes 8-14 in high with the size in its top byte. words: the
    8-byte words at every offset of data (as made here), if the caller has them."""
    if words is None:
        words = _words(data)
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
    bit above it, so to the top ones; six passes over the pieces (fewer than splitmix64's
    finaliser twice), as even a spread over slots on corpus pieces, and no two of them alike."""
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
