"""The pairs of the merge loop: each pair's tokens and count, the best one found by a blocked
maximum, and the ties of the best count taken in the order of tie_break_key."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from ..arrays import with_room

NO_PAIR = 0  # the pair id of a position no pair starts at (a word's last symbol, a merged-away one)
BLOCK = 256  # pair ids per block of the blocked maximum: a block's largest count is kept apart
# Pairs of the best count looked through before a merge joins a pass of several (see _merges_from).
LOOK_AT_TIES = 64
# Stale block maxima mended one at a time before all that claim the largest are mended at once.
MEND_ONE_AT_A_TIME = 8


def tie_break_key(left: bytes, right: bytes) -> bytes:
    """A key whose ascending order is the descending order of (left, right) as byte strings: of
    pairs of equal count, the one with the smallest key merges first (_Pairs joins its tokens'
    _descending, kept by token id; why the order is right: docs/design.md, "The tie-break key").
    Example: tie_break_key(b"b", b"a") < tie_break_key(b"a", b"z") < tie_break_key(b"a", b"")
    """
    return _descending(left) + _descending(right)


def _descending(token: bytes) -> bytes:
    """Each byte b becomes 255 - b, and 256 (which no byte takes) ends the token, so that a
    token sorts after every token it is a prefix of; each number as 2 bytes, big-endian, so that
    the bytes compare like the tuple of those numbers (in a fraction of a tuple's memory)."""
    key = bytearray(2 * len(token) + 2)
    key[1:-2:2] = token.translate(_INVERTED)  # the high bytes stay 0
    key[-2] = 1  # 256 = 0x0100
    return bytes(key)


_INVERTED = bytes(range(255, -1, -1))


class _Items:
    """Memoryviews of numpy arrays, by name: item reads give Python ints, writes go to the arrays."""

    def __init__(self, **arrays):
        for name, array in arrays.items():
            setattr(self, name, memoryview(array))

    def __getattr__(self, name: str) -> Any:  # (only for type checkers: the names are set above)
        raise AttributeError(name)


class _Pairs:
    """Pair id -> left token, right token, count, with the best pair found by a blocked maximum.

    The best count never rises (docs/design.md, "Ties in order"): the pairs of the best count are
    sorted once by tie_break_key and taken in that order (heaped if they outnumber the merges
    left), and later pairs of that count join a heap beside them.
    block_max[i] bounds the counts of pair ids i*BLOCK... from above (a fall leaves it stale; it is
    mended when it is the largest).
    """

    def __init__(self, wanted: int = 1 << 62):
        self.wanted = wanted  # merges to make: a level of more ties than are left is never used up
        self.token_bytes = [bytes([i]) for i in range(256)]
        self.merges: list[tuple[bytes, bytes]] = []  # (left, right) of each new token, in order
        self.descending = [_descending(token) for token in self.token_bytes]  # by token id, made once
        self.left = np.zeros(BLOCK, dtype=np.int32)
        self.right = np.zeros(BLOCK, dtype=np.int32)
        self.count = np.full(BLOCK, -1, dtype=np.int64)  # -1: no pair yet
        self.count[NO_PAIR] = 0
        self.block_max = np.zeros(1, dtype=np.int64)
        self.items = _Items(left=self.left, right=self.right, count=self.count, block_max=self.block_max)
        self.size = NO_PAIR + 1
        self.level = 0  # the count of the pairs in ties
        # the pairs of count level by their tie_break_keys (bytes, which compare faster than (key,
        # pair) tuples): those found when the level was reached, sorted, taken from next_tie on (a
        # pointer moves on where a heap sifts); those made since, a heap; and the pair of each key
        self.ties: list[bytes] = []
        self.next_tie = 0
        self.late_ties: list[bytes] = []
        self.tie_pair: dict[bytes, int] = {}

    def new_token(self, pair: int) -> int:
        """The id of the token pair merges into; the merge is listed."""
        left, right, descending = self.items.left[pair], self.items.right[pair], self.descending
        merge = self.token_bytes[left], self.token_bytes[right]
        self.merges.append(merge)
        self.token_bytes.append(merge[0] + merge[1])
        descending.append(descending[left][:-2] + descending[right])  # _descending of the joined bytes
        return len(self.token_bytes) - 1

    def _tie(self, pair: int) -> None:
        """Put a pair of count level among the ties (a pair's tokens, hence its key, are its own)."""
        key = self.descending[self.items.left[pair]] + self.descending[self.items.right[pair]]
        self.tie_pair[key] = pair
        heapq.heappush(self.late_ties, key)

    def add(self, left, right, count) -> int:
        """Number new pairs; the first one's id (the others follow)."""
        start, end = self.size, self.size + len(count)
        if end > len(self.count):
            self._grow(end)
        self.left[start:end], self.right[start:end], self.count[start:end] = left, right, count
        self.size = end
        top = int(count.max())
        lo, hi = start // BLOCK, -(-end // BLOCK)
        if hi - lo == 1:  # (most additions: a bound from above may stay one)
            self.items.block_max[lo] = max(self.items.block_max[lo], top)
        else:
            self.block_max[lo:hi] = self.count[lo * BLOCK : hi * BLOCK].reshape(-1, BLOCK).max(axis=1)
        if self.level and top == self.level:  # ties with the pairs in the heap
            for pair in (start + (count == self.level).nonzero()[0]).tolist():
                self._tie(pair)
        return start

    def add_few(self, made: dict[tuple[int, int], list[int]]) -> int:
        """add() for a few pairs, without numpy calls: made maps (left, right) -> [count, ...]."""
        start = self.size
        self.size += len(made)
        if self.size > len(self.count):
            self._grow(self.size)
        items = self.items
        left, right, counts, block_max = items.left, items.right, items.count, items.block_max
        for pair, ((left[pair], right[pair]), entry) in enumerate(made.items(), start):
            count = counts[pair] = entry[0]
            if count > block_max[pair // BLOCK]:
                block_max[pair // BLOCK] = count
            if count == self.level:
                self._tie(pair)
        return start

    def add_one(self, left: int, right: int, count: int) -> int:
        """add() for one pair, without numpy calls or loops; its id. (add_few repeats its body in
        its loop rather than call it: a call per pair costs more, docs/performance.md.)"""
        pair = self.size
        self.size += 1
        if self.size > len(self.count):
            self._grow(self.size)
        items = self.items
        items.left[pair], items.right[pair], items.count[pair] = left, right, count
        if count > items.block_max[pair // BLOCK]:
            items.block_max[pair // BLOCK] = count
        if count == self.level:
            self._tie(pair)
        return pair

    def _grow(self, size: int) -> None:
        capacity = -(-max(size, 2 * len(self.count)) // BLOCK) * BLOCK
        self.left, self.right = with_room(self.left, capacity), with_room(self.right, capacity)
        self.count = with_room(self.count, capacity, fill=-1)
        self.block_max = with_room(self.block_max, capacity // BLOCK, fill=-1)
        self.items = _Items(left=self.left, right=self.right, count=self.count, block_max=self.block_max)

    def best(self) -> int | None:
        """The pair of the highest count, ties to the smallest tie_break_key; None if no pair is left."""
        count, level, tie_pair = self.items.count, self.level, self.tie_pair
        ties, at, late = self.ties, self.next_tie, self.late_ties
        while at < len(ties) and count[tie_pair[ties[at]]] != level:  # it fell (or merged)
            at += 1
        self.next_tie = at
        while late and count[tie_pair[late[0]]] != level:
            heapq.heappop(late)
        if at < len(ties):
            return tie_pair[late[0] if late and late[0] < ties[at] else ties[at]]
        if late:
            return tie_pair[late[0]]
        top = self._largest_count()
        if top <= 0:
            return None
        blocks = (self.block_max == top).nonzero()[0]
        counts = self.count.reshape(-1, BLOCK)[blocks]  # the blocks' counts, a row each
        self.block_max[blocks] = counts.max(axis=1)
        self.level = top
        rows, columns = (counts == top).nonzero()
        tied = blocks[rows] * BLOCK + columns
        descending = self.descending
        keys = [descending[a] + descending[b] for a, b in zip(self.left[tied].tolist(), self.right[tied].tolist())]
        self.tie_pair = dict(zip(keys, tied.tolist()))
        self.next_tie = 0
        if len(keys) > self.wanted - len(self.merges):  # (the last level) a heap sorts only what is taken
            heapq.heapify(keys)
            self.ties, self.late_ties = [], keys
        else:
            keys.sort()
            self.ties = keys
        return self.tie_pair[keys[0]]

    def none_beside(self, lefts: set[int], rights: set[int]) -> bool:
        """Whether no pair of the level's count has its left token in rights or its right token in
        lefts (see _merges_from); False, perhaps wrongly, if too many are left to look at."""
        ties, at, late = self.ties, self.next_tie, self.late_ties
        if len(ties) - at + len(late) > LOOK_AT_TIES:
            return False
        items, level, tie_pair = self.items, self.level, self.tie_pair
        for key in ties[at:] + late:
            pair = tie_pair[key]
            if items.count[pair] == level and (items.left[pair] in rights or items.right[pair] in lefts):
                return False
        return True

    def _largest_count(self) -> int:
        """The largest count (0 or less: none left), from the largest block maximum, mended until
        it is true: one block at a time at first (few are stale at high counts), then every block
        that claims the largest maximum at once (at low counts many fell to the same few values)."""
        block_max = self.block_max
        for _ in range(MEND_ONE_AT_A_TIME):
            block = int(block_max.argmax())
            top = int(block_max[block])
            true = int(self.count[block * BLOCK : (block + 1) * BLOCK].max()) if top > 0 else top
            if true == top:
                return top
            block_max[block] = true
        while True:
            top = int(block_max.max())
            if top <= 0:
                return top
            blocks = (block_max == top).nonzero()[0]
            true = self.count.reshape(-1, BLOCK)[blocks].max(axis=1)
            block_max[blocks] = true
            if (true == top).any():
                return top
