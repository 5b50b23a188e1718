"""The words of the merge loop: every distinct pre-token's symbols end to end, linked, and the
positions each pair was made at; merging a pair (or a pass of them) relinks them and numbers
the pairs the new tokens make."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays import with_room, without_overlaps
from ..parallel.threads import Threads
from .counting import PieceCounts
from .pairs import BLOCK, NO_PAIR, _Items, _Pairs

# A merge of a pair made at this many positions or fewer runs as Python steps, not numpy calls.
FEW = 32
# Positions per block when the pairs of bytes are numbered: temporaries that stay in the caches.
BYTE_PAIR_BLOCK = 1 << 17


class _Words:
    """Every distinct pre-token's symbols end to end, linked within its word (next/prev positions),
    each position weighted by its word's count and holding the id of the pair starting there.

    Position n (one past the last) is a sentinel: -1, "no neighbour", indexes it, so it reads as
    symbol -1, weight 0 and NO_PAIR, and lookups through next/prev need no masks. Each pair keeps
    the positions it was made at (found[found_from[p]:found_from[p + 1]], ascending): a merge reads
    them, skipping those the pair has left since. Every position made is kept once, so there are at
    most three times as many as symbols (each merge removes a symbol and makes two).

    Positions and pair ids are kept as int32 (half int64's memory) and made intp before they index
    an array: numpy indexes by any other integer type on a slower path (docs/performance.md).
    """

    def __init__(self, symbols, nxt, prv, weight):
        self.symbols, self.nxt, self.prv, self.weight = symbols, nxt, prv, weight
        self.threads = Threads(1)  # the threads that share the large steps (train_bpe gives more)
        self.pair_at = np.zeros(len(symbols), dtype=np.int32)
        # room for every position at once: a large zeroed array's pages take memory only once written
        self.found = np.zeros(3 * len(symbols), dtype=np.int32)
        self.found_from = np.zeros(BLOCK, dtype=np.int64)
        # the same memory read one item at a time, as Python ints (a third of numpy's cost per item)
        self.items = _Items(symbols=symbols, nxt=nxt, prv=prv, weight=weight, pair_at=self.pair_at,
                            found=self.found, found_from=self.found_from)

    @classmethod
    def of(cls, counts: PieceCounts) -> _Words:
        data, lengths, freqs = _pieces_of_two_bytes_or_more(counts)
        n = len(data)
        symbols = np.empty(n + 1, dtype=np.int32)
        symbols[:n], symbols[n] = data, -1
        weight = np.repeat(np.append(freqs, 0).astype(np.int64, copy=False), np.append(lengths, 1))
        ends = np.cumsum(lengths)
        nxt = np.arange(1, n + 2, dtype=np.int32)  # int32: half the memory of int64
        nxt[ends - 1] = -1
        nxt[n] = -1
        prv = np.arange(-1, n, dtype=np.int32)
        prv[ends - lengths] = -1
        return cls(symbols, nxt, prv, weight)

    def is_few(self, pair: int) -> bool:
        """Whether pair was made at FEW positions or fewer (it may have left some since): it merges
        by Python steps, alone."""
        return self.items.found_from[pair + 1] - self.items.found_from[pair] <= FEW

    def merge(self, batch: list[int], pairs: _Pairs) -> None:
        """Merge the pairs of batch (see _merges_from) everywhere, each into a new token: the pairs
        beside each occurrence lose its count, the pairs the new tokens make are numbered and
        counted."""
        first_new = len(pairs.token_bytes)
        for pair in batch:
            pairs.new_token(pair)
        if len(batch) == 1:
            best = batch[0]
            start, end = self.items.found_from[best], self.items.found_from[best + 1]
            if end - start == 1 <= FEW:
                return self._merge_one(best, self.items.found[start], pairs, first_new)
            if end - start <= FEW:
                return self._merge_few(best, self.items.found[start:end].tolist(), pairs, first_new)
        self._merge_numpy(batch, pairs, first_new)

    def _merge_numpy(self, batch: list[int], pairs: _Pairs, first_new: int) -> None:
        """merge() by numpy calls, each step over every occurrence of every pair of batch at once."""
        symbols, nxt, pair_at = self.symbols, self.nxt, self.pair_at
        if len(batch) == 1:
            best = batch[0]
            made_at = self.found[self.items.found_from[best] : self.items.found_from[best + 1]].astype(np.intp)
            at = made_at[self.threads.take(pair_at, made_at) == best]
            if pairs.items.left[best] == pairs.items.right[best]:  # "aaa": 0 and 1 overlap; 0 goes first
                at = without_overlaps(at, nxt)
            member: Any = 0  # the pair of batch each occurrence is of
        else:  # pairs that never overlap, each one's positions ascending
            spans = [(self.items.found_from[p], self.items.found_from[p + 1]) for p in batch]
            made_at = np.concatenate([self.found[a:b] for a, b in spans]).astype(np.intp)
            member = np.repeat(np.arange(len(batch)), [b - a for a, b in spans])
            kept = self.threads.take(pair_at, made_at) == np.array(batch)[member]
            at, member = made_at[kept], member[kept]
        # 1. The pair before each occurrence, (x, a), and the one after it, (b, y), are lost
        w, before, right, after, lost = self._read_around(at)
        weights = np.concatenate((w, w))  # before's and right's: a word's positions share its weight
        # 2. Relink: a's position takes the new token, b's dies.
        self._relink(at, right, after, member + first_new)
        # Side by side ("ab ab") the pair after one is the pair before the next, whose b died: it
        # is lost once. (No neighbour, -1, reads as symbol -1 and NO_PAIR too.)
        x, y = self.threads.take(symbols, before), self.threads.take(symbols, after)
        lost[: len(at)][x < 0] = NO_PAIR
        np.subtract.at(pairs.count, lost.astype(np.intp), weights)
        pairs.count[batch] = 0
        # 3. The pairs the new tokens make, all new: (new, y) at each occurrence and (x, new) before
        #    it (side by side, (new, new') is the first occurrence's (new, y)). Keyed by
        #    (2 * member + side) * tokens + the other token; side 0 for (new, y), 1 for (x, new).
        tokens = first_new + len(batch)
        if 2 * len(batch) * tokens >= 1 << 31:  # keys past int32
            x, y = x.astype(np.int64), y.astype(np.int64)
        ahead = member * (2 * tokens)
        other = np.concatenate((y, x))
        real = other >= 0
        keys = np.concatenate((y + ahead, x + (ahead + tokens)))[real]
        made, other = np.concatenate((at, before))[real], other[real]
        if tokens <= 1 << 16:  # the other tokens fit 16 bits, which numpy's stable sort sorts by radix
            other = other.astype(np.uint16)
        self._number(pairs, first_new, tokens, made, keys, other, weights[real])

    def _read_around(self, at):
        """(weight, before, right, after, lost) of the occurrences at positions at: the word's
        weight, the positions before a, of b and after b, and the pairs there (before's, then b's)."""
        n = len(at)
        w = np.empty(n, dtype=np.int64)
        before, right, after = (np.empty(n, dtype=np.intp) for _ in range(3))
        lost = np.empty(2 * n, dtype=np.int32)
        weight, nxt, prv, pair_at = self.weight, self.nxt, self.prv, self.pair_at

        def read(lo, hi):
            a = at[lo:hi]
            w[lo:hi], before[lo:hi], right[lo:hi] = weight[a], prv[a], nxt[a]
            after[lo:hi] = nxt[right[lo:hi]]
            lost[lo:hi], lost[n + lo : n + hi] = pair_at[before[lo:hi]], pair_at[right[lo:hi]]

        self.threads.in_slices(n, read)
        return w, before, right, after, lost

    def _relink(self, at, right, after, new) -> None:
        """a's position (at) takes the new token, b's (right) dies, and the two around are linked."""
        symbols, nxt, prv, pair_at = self.symbols, self.nxt, self.prv, self.pair_at

        def write(lo, hi):
            a, r, f = at[lo:hi], right[lo:hi], after[lo:hi]
            symbols[a] = new if np.ndim(new) == 0 else new[lo:hi]
            symbols[r] = -1
            pair_at[a] = NO_PAIR
            pair_at[r] = NO_PAIR
            nxt[a] = f
            prv[f] = a

        self.threads.in_slices(len(at), write)
        prv[-1] = -1

    def _merge_few(self, best: int, made_at: list[int], pairs: _Pairs, new: int) -> None:
        """merge() for a pair made at FEW positions or fewer, step by step in Python (most merges of
        a large vocabulary: docs/performance.md)."""
        items = self.items
        symbols, nxt, prv, pair_at, weight = items.symbols, items.nxt, items.prv, items.pair_at, items.weight
        count = pairs.items.count
        # each occurrence relinked in turn, its neighbours read first: an occurrence it overlaps ("aaa":
        # at 0 and 1, 0 goes first) lost its pair with it; one side by side ("ab ab") finds its pair
        # before, the earlier one's pair after, gone from the counts already
        occurrences = []  # (a's position, before it (-1: side by side), after it)
        last_after = -1
        for p in made_at:
            if pair_at[p] == best:
                x, r, w = prv[p], nxt[p], weight[p]
                y = nxt[r]
                count[pair_at[x]] -= w
                count[pair_at[r]] -= w
                symbols[p], symbols[r], pair_at[p], pair_at[r], nxt[p], prv[y] = new, -1, NO_PAIR, NO_PAIR, y, p
                occurrences.append((p, -1 if p == last_after else x, y, w))
                last_after = y
        count[best] = 0
        prv[-1] = -1
        # the pairs made: (new, y) at each occurrence, (x, new) before it; key -> [count, positions...]
        made: dict[tuple[int, int], list[int]] = {}
        for p, x, y, w in occurrences:
            if symbols[y] >= 0:
                entry = made.setdefault((new, symbols[y]), [0])
                entry[0] += w
                entry.append(p)
            if symbols[x] >= 0:
                entry = made.setdefault((symbols[x], new), [0])
                entry[0] += w
                entry.append(x)
        if made:
            self._keep_few(pairs.add_few(made), made.values())

    def _merge_one(self, best: int, p: int, pairs: _Pairs, new: int) -> None:
        """_merge_few for a pair made at one position (over half the merges of a large vocabulary),
        without its lists, dict and loops."""
        items = self.items
        symbols, nxt, prv, pair_at = items.symbols, items.nxt, items.prv, items.pair_at
        count = pairs.items.count
        x, r, w = prv[p], nxt[p], items.weight[p]
        y = nxt[r]
        count[pair_at[x]] -= w
        count[pair_at[r]] -= w
        count[best] = 0
        symbols[p], symbols[r], pair_at[p], pair_at[r], nxt[p], prv[y] = new, -1, NO_PAIR, NO_PAIR, y, p
        prv[-1] = -1
        if symbols[y] >= 0:
            self._keep_one(pairs.add_one(new, symbols[y], w), p)
        if symbols[x] >= 0:
            self._keep_one(pairs.add_one(symbols[x], new, w), x)

    def _keep_one(self, pair: int, position: int) -> None:
        """Keep the one position of the pair numbered last."""
        if pair + 2 > len(self.found_from):  # the positions have room: see __init__
            self._make_room(pair + 2)
        items = self.items
        used = items.found_from[pair]
        items.pair_at[position] = pair
        items.found[used] = position
        items.found_from[pair + 1] = used + 1

    def _keep_few(self, first: int, made) -> None:
        """Keep the positions of new pairs first, first + 1... (few), each [count, *positions
        ascending] in made, without numpy calls."""
        items = self.items
        end = first + len(made)
        if end + 1 > len(self.found_from):  # the positions have room: see __init__
            self._make_room(end + 1)
            items = self.items
        pair_at, found, found_from = items.pair_at, items.found, items.found_from
        used = found_from[first]
        for pair, entry in enumerate(made, first):
            for p in entry[1:]:
                pair_at[p] = pair
                found[used] = p
                used += 1
            found_from[pair + 1] = used

    def _number(self, pairs: _Pairs, first_new: int, tokens: int, made, keys, other, weights) -> None:
        """Number the pairs of the new tokens first_new... starting at positions made, one id per
        distinct key (see _merge_numpy), with their counts (weights added up by key), and keep their
        positions. (Method calls, not numpy's functions: these arrays are small, the functions'
        Python wrappers cost as much as the work.)"""
        if not len(made):
            return
        # Sorted by the other token alone: the keys of one (member, side) come together, positions
        # ascending, and a stable sort keeps each key's together and ascending.
        order = other.argsort(kind="stable")
        keys, made, weights = (self.threads.take(a, order) for a in (keys, made, weights))
        starts_group = np.empty(len(keys), dtype=bool)
        starts_group[0] = True
        np.not_equal(keys[1:], keys[:-1], out=starts_group[1:])
        first = starts_group.nonzero()[0]
        code, other = np.divmod(keys[first].astype(np.int64), tokens)
        new, side = (code >> 1) + first_new, code & 1
        left, right = np.where(side, other, new), np.where(side, new, other)
        first_id = pairs.add(left, right, np.add.reduceat(weights, first))
        self.threads.put(self.pair_at, made, np.add.accumulate(starts_group, dtype=np.int32) + np.int32(first_id - 1))
        self._keep(first_id, made, first)

    def _keep(self, first_id: int, made, first) -> None:
        """Keep the positions made of the pairs first_id, first_id + 1...; pair i's from first[i]."""
        used = self.reserve(first_id, first, len(made))
        self.found[used : used + len(made)] = made

    def reserve(self, first_id: int, first, total: int) -> int:
        """Say where the positions of pairs first_id, first_id + 1... will be kept (pair i's from
        first[i] on, total in all); where the first one goes in found."""
        used = int(self.found_from[first_id])
        if first_id + len(first) + 1 > len(self.found_from):  # the positions have room: see __init__
            self._make_room(first_id + len(first) + 1)
        self.found_from[first_id : first_id + len(first)] = first + used
        self.found_from[first_id + len(first)] = used + total
        return used

    def _make_room(self, pairs: int) -> None:
        self.found_from = with_room(self.found_from, pairs)
        self.items.found_from = memoryview(self.found_from)


def number_byte_pairs(words: _Words, pairs: _Pairs) -> None:
    """Give every pair of bytes in the words an id and its count. Their keys take 16 bits: the
    pairs are counted over all 65,536 keys at once, then their positions are kept in the order
    of their keys by a counting sort; both a block of positions at a time, in order (no
    temporaries as long as the words, no gathers at random)."""
    n = len(words.symbols) - 1
    blocks = range(0, n, BYTE_PAIR_BLOCK)
    sizes = np.zeros(1 << 16, dtype=np.int64)
    counts = np.zeros(1 << 16, dtype=np.int64)
    for start in blocks:
        keys, at = _byte_pairs(words, start)
        sizes += np.bincount(keys, minlength=1 << 16)
        np.add.at(counts, keys, words.weight[at])  # int64 sums, exact
    present = np.flatnonzero(sizes)
    if not len(present):
        return
    first_id = pairs.add(present >> 8, present & 255, counts[present])
    ids = np.zeros(1 << 16, dtype=np.int32)
    ids[present] = np.arange(first_id, first_id + len(present))
    group_start = np.cumsum(sizes) - sizes  # where each key's positions go, after the blocks before
    used = words.reserve(first_id, group_start[present], int(sizes.sum()))
    for start in blocks:
        keys, at = _byte_pairs(words, start)
        words.pair_at[at] = ids[keys]
        order = keys.argsort(kind="stable")  # by radix: 16 bits
        in_block = np.bincount(keys, minlength=1 << 16)
        # the block's i-th position of key k (in order) goes i places after group_start[k]
        shift = group_start - (np.cumsum(in_block) - in_block)
        words.found[used + shift[keys[order]] + np.arange(len(keys))] = at[order]
        group_start += in_block


def _byte_pairs(words: _Words, start: int):
    """(keys, positions) of the pairs of bytes starting in the block of positions from start."""
    end = min(start + BYTE_PAIR_BLOCK, len(words.symbols) - 1)
    at = (words.nxt[start:end] >= 0).nonzero()[0] + start  # the next byte is at + 1
    byte = words.symbols[start : end + 1].astype(np.uint16)
    return (byte[:-1] << 8 | byte[1:])[at - start], at


def _pieces_of_two_bytes_or_more(counts: PieceCounts):
    """(the bytes of every piece of two or more bytes end to end, each one's length, its count):
    a single byte holds no pair."""
    packed, packed_lengths = counts.packed_bytes()
    long_lengths = np.diff(np.concatenate(([0], counts.long_ends)))
    data = np.concatenate([packed, np.frombuffer(counts.long_bytes, dtype=np.uint8)])
    lengths = np.concatenate([packed_lengths, long_lengths])
    freqs = np.concatenate([counts.counts, counts.long_counts])
    kept = lengths > 1
    return data[np.repeat(kept, lengths)], lengths[kept], freqs[kept]
