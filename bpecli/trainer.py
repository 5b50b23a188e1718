"""Pre-token counts -> merges: the words as linked symbols, pairs numbered as they are made, their
counts in an array with a blocked maximum, the ties in order, and the positions each pair was made at;
merges known to come next merged in one pass."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .arrays import with_room, without_overlaps
from .corpus import PART_BYTES, document_parts, input_bytes, input_pairs
from .errors import BpecliError, InputError
from .counting import PieceCounts, count_pretokens
from .executor import parallelism
from .progress import progress_bar
from .normalize import check as check_normalize
from .pretokenize import SAFE_CUT, document_separators, is_preset, resolve_pattern
from .tokenizer import Tokenizer
from .vocab import MAX_ID, check_special_tokens


def tie_break_key(left: bytes, right: bytes) -> bytes:
    """A key whose ascending order is the descending order of (left, right) as byte strings: of
    pairs of equal count, the one with the smallest key merges first (the trainer joins its
    tokens' _descending, kept by token id).
    Example: tie_break_key(b"b", b"a") < tie_break_key(b"a", b"z") < tie_break_key(b"a", b"")
    """
    return _descending(left) + _descending(right)


def _descending(token: bytes) -> bytes:
    """Each byte b becomes 255 - b, and 256 (which no byte takes) ends the token, so that a
    token sorts after every token it is a prefix of; each number as 2 bytes, big-endian (bytes
    compare like the tuple of those numbers, in a third of a tuple's memory)."""
    key = bytearray(2 * len(token) + 2)
    key[1:-2:2] = token.translate(_INVERTED)  # the high bytes stay 0
    key[-2] = 1  # 256 = 0x0100
    return bytes(key)


_INVERTED = bytes(range(255, -1, -1))
_MAX_VOCAB = MAX_ID + 1  # ids 0 to MAX_ID
# A training part of the corpus is at most this big: a worker holds its text, documents and counts.
MAX_PART_BYTES = 16 << 20
NO_PAIR = 0  # the pair id of a position no pair starts at (a word's last symbol, a merged-away one)
BLOCK = 256  # pair ids per block of the blocked maximum: a block's largest count is kept apart
# A merge of a pair made at this many positions or fewer runs as Python steps, not numpy calls.
FEW = 32
# Positions per block when the pairs of bytes are numbered: temporaries that stay in the caches.
BYTE_PAIR_BLOCK = 1 << 17
# Pairs of the best count looked through before a merge joins a pass of several (see _merges_from).
LOOK_AT_TIES = 64
# Stale block maxima mended one at a time before all that claim the largest are mended at once.
MEND_ONE_AT_A_TIME = 8


def merges_wanted(vocab_size: int, special_tokens: Sequence[str]) -> int:
    """How many merges a vocabulary of vocab_size leaves room for; an error if it is too small."""
    n_merges = vocab_size - 256 - len(special_tokens)
    if vocab_size > _MAX_VOCAB:
        raise BpecliError(f"--vocab-size {vocab_size:,} is too large: ids are 32-bit, so at most {_MAX_VOCAB:,}")
    if n_merges < 0:
        raise BpecliError(
            f"--vocab-size {vocab_size} is too small: it must hold the 256 byte tokens "
            f"and {len(special_tokens)} special token(s), so at least {256 + len(special_tokens)}"
        )
    return n_merges


def train_bpe(
    counts: PieceCounts | Mapping[str, int] | Mapping[bytes, int],
    *,
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    min_frequency: int = 0,
    progress=None,
) -> list[tuple[bytes, bytes]]:
    """The merges of a byte-level BPE trained on pre-token counts, best first.

    counts: {piece: count} (pieces as str or bytes) or counting.PieceCounts. vocab_size counts the
    256 bytes, the merges and the special tokens. Ties go to the lexicographically greatest pair of
    byte strings (the smallest tie_break_key).
    Example: {"aaabdaaabac": 1} with vocab_size 259 -> [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    """
    n_merges = merges_wanted(vocab_size, special_tokens)
    if not isinstance(counts, PieceCounts):
        counts = PieceCounts.of_mapping(counts)
    # 1. The words, end to end; 2. every pair of bytes in them numbered and counted.
    words = _Words.of(counts)
    pairs = _Pairs(n_merges)
    words.number_byte_pairs(pairs)
    # 3. Merge the best pair (and those known to follow it), n_merges times or until no pair is frequent enough.
    fewest = max(min_frequency, 1)
    while len(pairs.merges) < n_merges:
        best = pairs.best()
        if best is None or pairs.items.count[best] < fewest:
            break
        few = words.size(best) <= FEW  # merged by Python steps, alone (most merges of a large vocabulary)
        batch = [best] if few else _merges_from(best, pairs, n_merges - len(pairs.merges), fewest)
        words.merge(batch, pairs)
        if progress is not None:
            progress.update(len(batch))
    return pairs.merges


def _merges_from(best: int, pairs: _Pairs, room: int, fewest: int) -> list[int]:
    """best (made at more than FEW positions) and the pairs that will merge right after it, known
    before it merges, to merge in one pass: a merge by numpy calls costs about 100 us however few
    its positions. (Vocabulary 10,000 on the benchmark corpus: 9,074 of the 9,743 merges in 542
    passes; 691 numpy passes where there were 4,375 numpy merges.)

    While best = (a, b) is unmerged, the next best pair B = (c, d) is known if best's merge leaves
    B's count as it is (B is no (x, a) and no (b, y): c != b, d != a) and if best is no (a, a):
    then the pairs best makes, (best, y) and (x, best), count at most what (b, y) and (x, a) do,
    which is at most B's count. One of them counts as much as B (and may come first) only if such
    a (b, y) or (x, a) has B's count, which _Pairs.none_beside rules out. So on for the pair after
    B (B no (c, c) either), against all the pairs taken: then no occurrence of one overlaps
    another's, and one pass merges them as one after another would."""
    items = pairs.items
    left, right, count = items.left, items.right, items.count
    if left[best] == right[best]:
        return [best]
    batch, lefts, rights = [best], {left[best]}, {right[best]}
    while len(batch) < room:
        count[batch[-1]] = 0  # out of the ranking: it merges in this pass
        after = pairs.best()
        if after is None or count[after] < fewest:
            break
        c, d = left[after], right[after]
        if c == d or c in rights or d in lefts or not pairs.none_beside(lefts, rights):
            break
        batch.append(after)
        lefts.add(c)
        rights.add(d)
    return batch


class _Words:
    """Every distinct pre-token's symbols end to end, linked within its word (next/prev positions),
    each position weighted by its word's count and holding the id of the pair starting there.

    Position n (one past the last) is a sentinel: -1, "no neighbour", indexes it, so it reads as
    symbol -1, weight 0 and NO_PAIR, and lookups through next/prev need no masks. Each pair keeps
    the positions it was made at (found[found_from[p]:found_from[p + 1]], ascending): a merge reads
    them, skipping those the pair has left since. Every position made is kept once, so there are at
    most three times as many as symbols (each merge removes a symbol and makes two).

    Positions and pair ids are kept as int32 (half int64's memory) and made intp before they index
    an array: numpy indexes by any other integer type on a slower path (measured: twice the time
    of the gather, for a few dozen to thousands of positions).
    """

    def __init__(self, symbols, nxt, prv, weight):
        self.symbols, self.nxt, self.prv, self.weight = symbols, nxt, prv, weight
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

    def number_byte_pairs(self, pairs: _Pairs) -> None:
        """Give every pair of bytes in the words an id and its count. Their keys take 16 bits: the
        pairs are counted over all 65,536 keys at once, then their positions are kept in the order
        of their keys by a counting sort; both a block of positions at a time, in order (no
        temporaries as long as the words, no gathers at random)."""
        n = len(self.symbols) - 1
        blocks = range(0, n, BYTE_PAIR_BLOCK)
        sizes = np.zeros(1 << 16, dtype=np.int64)
        counts = np.zeros(1 << 16, dtype=np.int64)
        for start in blocks:
            keys, at = self._byte_pairs(start)
            sizes += np.bincount(keys, minlength=1 << 16)
            np.add.at(counts, keys, self.weight[at])  # int64 sums, exact
        present = np.flatnonzero(sizes)
        if not len(present):
            return
        first_id = pairs.add(present >> 8, present & 255, counts[present])
        ids = np.zeros(1 << 16, dtype=np.int32)
        ids[present] = np.arange(first_id, first_id + len(present))
        group_start = np.cumsum(sizes) - sizes  # where each key's positions go, after the blocks before
        used = self._index(first_id, group_start[present], int(sizes.sum()))
        for start in blocks:
            keys, at = self._byte_pairs(start)
            self.pair_at[at] = ids[keys]
            order = keys.argsort(kind="stable")  # by radix: 16 bits
            in_block = np.bincount(keys, minlength=1 << 16)
            # the block's i-th position of key k (in order) goes i places after group_start[k]
            shift = group_start - (np.cumsum(in_block) - in_block)
            self.found[used + shift[keys[order]] + np.arange(len(keys))] = at[order]
            group_start += in_block

    def _byte_pairs(self, start: int):
        """(keys, positions) of the pairs of bytes starting in the block of positions from start."""
        end = min(start + BYTE_PAIR_BLOCK, len(self.symbols) - 1)
        at = (self.nxt[start:end] >= 0).nonzero()[0] + start  # the next byte is at + 1
        byte = self.symbols[start : end + 1].astype(np.uint16)
        return (byte[:-1] << 8 | byte[1:])[at - start], at

    def size(self, pair: int) -> int:
        """How many positions pair was made at (it may have left some since)."""
        return self.items.found_from[pair + 1] - self.items.found_from[pair]

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
        symbols, nxt, prv, pair_at = self.symbols, self.nxt, self.prv, self.pair_at
        if len(batch) == 1:
            best = batch[0]
            made_at = self.found[self.items.found_from[best] : self.items.found_from[best + 1]].astype(np.intp)
            at = made_at[pair_at[made_at] == best]
            if pairs.items.left[best] == pairs.items.right[best]:  # "aaa": 0 and 1 overlap; 0 goes first
                at = without_overlaps(at, nxt)
            member: Any = 0  # the pair of batch each occurrence is of
        else:  # pairs that never overlap, each one's positions ascending
            spans = [(self.items.found_from[p], self.items.found_from[p + 1]) for p in batch]
            made_at = np.concatenate([self.found[a:b] for a, b in spans]).astype(np.intp)
            member = np.repeat(np.arange(len(batch)), [b - a for a, b in spans])
            kept = pair_at[made_at] == np.array(batch)[member]
            at, member = made_at[kept], member[kept]
        w = self.weight[at]
        before, right = prv[at].astype(np.intp), nxt[at].astype(np.intp)
        after = nxt[right].astype(np.intp)
        # 1. The pair before each occurrence, (x, a), and the one after it, (b, y), are lost
        weights = np.concatenate((w, w))  # before's and right's: a word's positions share its weight
        lost = pair_at[np.concatenate((before, right))]
        # 2. Relink: a's position takes the new token, b's dies.
        symbols[at] = member + first_new
        symbols[right] = -1
        pair_at[at] = NO_PAIR
        pair_at[right] = NO_PAIR
        nxt[at] = after
        prv[after] = at
        prv[-1] = -1
        # Side by side ("ab ab") the pair after one is the pair before the next, whose b died: it
        # is lost once. (No neighbour, -1, reads as symbol -1 and NO_PAIR too.)
        x, y = symbols[before], symbols[after]
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

    def _merge_few(self, best: int, made_at: list[int], pairs: _Pairs, new: int) -> None:
        """merge() for a pair made at FEW positions or fewer, step by step in Python (most merges
        of a large vocabulary: 91% at 200,000 on the benchmark corpus)."""
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
        """_merge_few for a pair made at one position (most merges of a large vocabulary: 57% at
        200,000 on the benchmark corpus), without its lists, dict and loops."""
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
        keys, made, weights = keys[order], made[order], weights[order]
        starts_group = np.empty(len(keys), dtype=bool)
        starts_group[0] = True
        np.not_equal(keys[1:], keys[:-1], out=starts_group[1:])
        first = starts_group.nonzero()[0]
        code, other = np.divmod(keys[first].astype(np.int64), tokens)
        new, side = (code >> 1) + first_new, code & 1
        left, right = np.where(side, other, new), np.where(side, new, other)
        first_id = pairs.add(left, right, np.add.reduceat(weights, first))
        self.pair_at[made] = np.add.accumulate(starts_group, dtype=np.int64) + (first_id - 1)
        self._keep(first_id, made, first)

    def _keep(self, first_id: int, made, first) -> None:
        """Keep the positions made of the pairs first_id, first_id + 1...; pair i's from first[i]."""
        used = self._index(first_id, first, len(made))
        self.found[used : used + len(made)] = made

    def _index(self, first_id: int, first, total: int) -> int:
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


class _Items:
    """Memoryviews of numpy arrays, by name: item reads give Python ints, writes go to the arrays."""

    def __init__(self, **arrays):
        for name, array in arrays.items():
            setattr(self, name, memoryview(array))

    def __getattr__(self, name: str) -> Any:  # (only for type checkers: the names are set above)
        raise AttributeError(name)


class _Pairs:
    """Pair id -> left token, right token, count, with the best pair found by a blocked maximum.

    A pair's count is set when the pair is made (every pair the new token makes is new) and then
    only falls, so the best count never rises: the pairs of the best count are sorted once by
    tie_break_key and taken in that order (heaped if they outnumber the merges left), and later
    pairs of that count join a heap beside them.
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
        # the pairs of count level by their tie_break_keys (bytes compare about three times as fast
        # as (key, pair) tuples, which test their keys for equality first): those found when the
        # level was reached, sorted, taken from next_tie on (a pointer moves on where a heap sifts);
        # those made since, a heap; and the pair of each key
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
        its loop: calling it per pair cost 3.4% more instructions over 60,000 merges.)"""
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


def counting_part_bytes(total_bytes: int, parallel: int) -> int:
    """Parts of about a quarter of a worker's share: few counts to add up in this process and few
    tasks to send, enough parts to keep every worker busy (they need not be the same on every run,
    as shards' do), and at most MAX_PART_BYTES, which bounds a worker's memory."""
    return min(max(PART_BYTES, total_bytes // (4 * max(1, parallel)) + 1), MAX_PART_BYTES)


def train(
    inputs: list[str | Path | tuple[str, str]],
    *,
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
    workers: int = 1,
    scheduler: str | None = None,
    min_frequency: int = 0,
    errors: str = "strict",
    text_column: str = "text",
    normalize: tuple[str, ...] | list[str] = (),
    progress=None,
) -> Tokenizer:
    """Train a byte-level BPE on the documents of inputs (text, JSONL, Parquet, compressed: see
    corpus.document_parts; paths, URIs or (path, label) pairs), counted by `workers` processes or
    the workers of a Dask cluster (scheduler: see executor.map_in_order): byte b has id b, merge i id 256 + i,
    and the special tokens take the last ids in the order given. normalize names the steps
    (normalize.STEPS: nfkc, lowercase...) applied to every document first, and by encode. progress, if given, makes a bar
    for each stage: progress(description, total, unit) -> an object with update(n) and close().

    Example: train(["corpus.txt"], vocab_size=1000, special_tokens=["<|endoftext|>"]).save("tok")
    """
    special_tokens = list(dict.fromkeys(special_tokens))
    check_special_tokens(dict.fromkeys(special_tokens, 0))  # fail before the long count
    n_merges = merges_wanted(vocab_size, special_tokens)
    pattern = resolve_pattern(pattern)
    normalize = check_normalize(normalize)
    pairs = input_pairs(inputs)
    # text without special tokens is cut where the preset patterns surely start a piece
    safe_cut = SAFE_CUT if is_preset(pattern) else None
    total_bytes = input_bytes(pairs)
    part_bytes = counting_part_bytes(total_bytes, parallelism(workers, scheduler))
    separators = document_separators(special_tokens)
    parts = document_parts(pairs, separators=separators, text_column=text_column, safe_cut=safe_cut,
                           part_bytes=part_bytes)
    with progress_bar(progress, "counting", total_bytes, "B") as bar:
        counts = count_pretokens(parts, pattern=pattern, separators=separators, text_column=text_column,
                                 workers=workers, scheduler=scheduler, errors=errors, normalize=normalize,
                                 progress=bar)
    if not counts:
        raise InputError(f"{', '.join(label for _, label in pairs)}: the corpus is empty (no text outside special tokens)")
    with progress_bar(progress, "merging", n_merges, "merge") as bar:
        merges = train_bpe(
            counts, vocab_size=vocab_size, special_tokens=special_tokens, min_frequency=min_frequency, progress=bar
        )
    ranks = {bytes([b]): b for b in range(256)}
    for left, right in merges:
        ranks[left + right] = len(ranks)
    specials = {token: len(ranks) + i for i, token in enumerate(special_tokens)}
    return Tokenizer(ranks=ranks, special_tokens=specials, pattern=pattern, trained_merges=tuple(merges), normalize=normalize)
