"""The read-only tables of one vocabulary, for numpy: its tokens as arrays, short tokens and
pairs of tokens in open-addressing hash tables that look up whole arrays at once."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..arrays import spans
from ..encoding.reference import BYTE_TOKENS
from .packing import GOLDEN, PACKED_BYTES, SMALL_CODES, distinct_packed, pack_spans, piece_hash, small_pieces

NO_RANK = np.int32(np.iinfo(np.int32).max)  # what a lookup gives for a pair that is no token (ranks are int32)
# Lookups of more pairs than this go in blocks, so their temporaries stay small.
LOOKUP_BLOCK = 1 << 20


class VocabTables:
    """A vocabulary's tables, each built when first used: ranks (token bytes -> id) is all it needs."""

    def __init__(self, ranks: dict[bytes, int]):
        self.ranks = ranks

    @cached_property
    def decoder(self) -> dict[int, bytes]:
        return {rank: token for token, rank in self.ranks.items()}

    @cached_property
    def token_arrays(self):
        """(every ordinary token's bytes end to end, where each starts, its length, its rank),
        the tokens in the order of ranks; the bulk tables are built from these."""
        sizes = np.fromiter(map(len, self.ranks), dtype=np.int64, count=len(self.ranks))
        values = np.fromiter(self.ranks.values(), dtype=np.int64, count=len(self.ranks))
        return b"".join(self.ranks), np.cumsum(sizes) - sizes, sizes, values

    @cached_property
    def inner_byte_pairs(self):
        """For every two bytes a, b: whether some token holds b right after a (65,536 flags)."""
        flags = np.zeros(1 << 16, dtype=bool)
        flags[self._runs_inside_tokens(2)] = True
        return flags

    @cached_property
    def edge_tokens(self):
        """What a token that holds both sides of an edge between two bytes a, b holds: for every
        a, b, whether a, b is a token (65,536 flags); for every three bytes, whether some token
        holds them in a row (2**24 bits: packed_bits). See docs/design.md, "Cuts BPE never crosses"."""
        return self.byte_pair_ranks != NO_RANK, self.three_byte_runs

    @cached_property
    def three_byte_runs(self):
        """For every three bytes, whether some token holds them in a row (2**24 bits: packed_bits)."""
        return packed_bits(self._runs_inside_tokens(3), 1 << 24)

    def _runs_inside_tokens(self, length: int):
        """Every run of `length` bytes inside a token, as a number (its bytes, big-endian)."""
        joined, starts, sizes, _ = self.token_arrays
        data = np.frombuffer(joined, dtype=np.uint8).astype(np.int64)
        inside = np.ones(max(0, len(data) - length + 1), dtype=bool)  # run i ends in the token it starts in
        for back in range(1, length):
            ends = starts + sizes - back
            inside[ends[ends < len(inside)]] = False
        runs = np.zeros(len(inside), dtype=np.int64)
        for k in range(length):
            runs = runs << 8 | data[k : len(data) - length + 1 + k]
        return runs[inside]

    @cached_property
    def short_tokens(self) -> PieceTable:
        """Every token of up to 15 bytes, packed as packing.pack_spans does -> its rank."""
        data, starts, sizes, values = self.token_arrays
        short = np.flatnonzero(sizes <= PACKED_BYTES)
        low, high = pack_spans(data, starts[short], sizes[short])
        return PieceTable.of(low, high, values[short])

    @cached_property
    def small_piece_ids(self):
        """(ids, counts): the ids of every piece of one or two bytes by its code (packing.SMALL_CODES),
        two slots each (ids[2 * code], and ids[2 * code + 1] if counts[code] is 2): a piece that is a
        token is that token, else its two bytes' tokens (no pair of bytes merges to anything else)."""
        codes = np.arange(SMALL_CODES)
        low, high = small_pieces(codes)
        tokens = self.short_tokens
        slots = tokens.find(low, high, piece_hash(low, high))
        whole = slots >= 0
        byte_ids = self.byte_ids
        ids = np.empty((SMALL_CODES, 2), dtype=np.int64)
        ids[:, 0] = np.where(whole, tokens.value[slots], byte_ids[(low & np.uint64(0xFF)).astype(np.intp)])
        ids[:, 1] = byte_ids[(low >> np.uint64(8)).astype(np.intp) & 0xFF]
        return ids.ravel(), np.where(whole, 1, 2)

    @cached_property
    def longest_token(self) -> int:
        return max(map(len, self.ranks))

    @cached_property
    def byte_pair_ranks(self):
        """The rank of the pair of one-byte tokens a, b at [a << 8 | b] (the two-byte token's), where
        they join to a token; NO_RANK elsewhere: BPE's first pairs without hashing."""
        joined, starts, sizes, values = self.token_arrays
        data = np.frombuffer(joined, dtype=np.uint8)
        two = np.flatnonzero(sizes == 2)
        table = np.full(1 << 16, NO_RANK, dtype=np.int32)
        table[data[starts[two]].astype(np.int64) << 8 | data[starts[two] + 1]] = values[two]
        return table

    @cached_property
    def byte_ids(self):
        """The id of each of the 256 one-byte tokens, by byte."""
        return np.array([self.ranks[t] for t in BYTE_TOKENS], dtype=np.int64)

    @cached_property
    def pair_table(self) -> PairTable:
        """For every two tokens whose bytes joined are a token: (left, right) -> the joined
        token's rank, in a table numpy can look up many pairs in at once. Every cut of every
        token of up to 15 bytes is looked up with numpy; longer tokens in Python."""
        ranks = self.ranks
        base = max(ranks.values()) + 1
        tokens = list(ranks)
        data, starts, sizes, values = self.token_arrays
        short = np.flatnonzero(sizes <= PACKED_BYTES)
        known = self.short_tokens

        def rank_of(span_starts, span_sizes):
            low, high = pack_spans(data, span_starts, span_sizes)
            slots = known.find(low, high, piece_hash(low, high))
            return np.where(slots >= 0, known.value[slots], -1)

        cut_tokens = short[sizes[short] >= 2]
        token = np.repeat(cut_tokens, sizes[cut_tokens] - 1)  # one row per cut of each token
        cut = spans(np.ones_like(cut_tokens), sizes[cut_tokens] - 1)  # 1, 2, ..., size - 1
        left = rank_of(starts[token], cut)
        token, cut, left = token[left >= 0], cut[left >= 0], left[left >= 0]  # the right part only where the left is a token
        right = rank_of(starts[token] + cut, sizes[token] - cut)
        both = right >= 0
        keys = [left[both] * base + right[both]]
        found = [values[token[both]]]
        extra: dict[int, int] = {}
        for i in np.flatnonzero(sizes > PACKED_BYTES).tolist():  # the few long tokens
            whole, rank = tokens[i], int(values[i])
            for k in range(1, len(whole)):
                a = ranks.get(whole[:k])
                if a is not None and (b := ranks.get(whole[k:])) is not None:
                    extra[a * base + b] = rank
        keys.append(np.fromiter(extra, dtype=np.int64, count=len(extra)))
        found.append(np.fromiter(extra.values(), dtype=np.int64, count=len(extra)))
        return PairTable(np.concatenate(keys), np.concatenate(found), base)


    def arrays(self) -> dict[str, np.ndarray]:
        """The tables bulk encoding reads (those BulkEncoder.prepare builds), as named arrays a
        cache can keep: adopt() takes them back for the same ranks."""
        pairs, short = self.pair_table, self.short_tokens
        small_ids, small_counts = self.small_piece_ids
        return {"pair_keys": pairs.keys, "pair_ranks": pairs.ranks, "pair_sorted_keys": pairs.sorted_keys,
                "pair_sorted_ranks": pairs.sorted_ranks, "pair_crowded": pairs.crowded, "short_low": short.low, "short_high": short.high,
                "short_value": short.value, "small_ids": small_ids, "small_counts": small_counts,
                "inner_byte_pairs": self.inner_byte_pairs, "three_byte_runs": self.three_byte_runs,
                "byte_ids": self.byte_ids, "byte_pair_ranks": self.byte_pair_ranks}

    def adopt(self, arrays: dict[str, np.ndarray]) -> None:
        """Take the tables arrays() gave for these ranks, instead of building them; a ValueError
        (nothing taken) where they are not of the shapes and types it gives."""
        expected = {"pair_keys": np.int64, "pair_ranks": np.int32, "pair_sorted_keys": np.int64,
                    "pair_sorted_ranks": np.int32, "pair_crowded": np.bool_, "short_low": np.uint64, "short_high": np.uint64,
                    "short_value": np.int64, "small_ids": np.int64, "small_counts": np.int64,
                    "inner_byte_pairs": np.bool_, "three_byte_runs": np.uint8,
                    "byte_ids": np.int64, "byte_pair_ranks": np.int32}
        if set(arrays) != set(expected) or any(arrays[k].dtype != t or arrays[k].ndim != 1 for k, t in expected.items()):
            raise ValueError("not the arrays of VocabTables.arrays()")
        sizes = {k: len(a) for k, a in arrays.items()}
        if not (sizes["pair_keys"] == sizes["pair_ranks"] == sizes["pair_crowded"] and sizes["pair_sorted_keys"] == sizes["pair_sorted_ranks"]
                and sizes["short_low"] == sizes["short_high"] == sizes["short_value"]
                and sizes["small_ids"] == 2 * sizes["small_counts"] == 2 * SMALL_CODES
                and sizes["inner_byte_pairs"] == sizes["byte_pair_ranks"] == 1 << 16
                and sizes["three_byte_runs"] == 1 << 21 and sizes["byte_ids"] == 256
                and all(_power_of_two(sizes[k]) for k in ("pair_keys", "short_low"))):
            raise ValueError("not the arrays of VocabTables.arrays()")
        base = max(self.ranks.values()) + 1
        self.__dict__.update(
            pair_table=PairTable.of_arrays(arrays["pair_keys"], arrays["pair_ranks"], arrays["pair_sorted_keys"],
                                           arrays["pair_sorted_ranks"], arrays["pair_crowded"], base),
            short_tokens=PieceTable.of_arrays(arrays["short_low"], arrays["short_high"], arrays["short_value"]),
            small_piece_ids=(arrays["small_ids"], arrays["small_counts"]),
            inner_byte_pairs=arrays["inner_byte_pairs"],
            three_byte_runs=arrays["three_byte_runs"],
            byte_ids=arrays["byte_ids"],
            byte_pair_ranks=arrays["byte_pair_ranks"],
        )


def _power_of_two(n: int) -> bool:
    return n >= 16 and n & (n - 1) == 0


def packed_bits(values, size: int):
    """Flags 0 to size - 1 (a multiple of 8), those in values set, packed 8 to a byte, low bit
    first: an eighth of the memory of numpy's bools, for flags over every three bytes."""
    bits = np.zeros(size >> 3, dtype=np.uint8)
    np.bitwise_or.at(bits, values >> 3, np.left_shift(1, values & 7).astype(np.uint8))
    return bits


def has_bits(bits, values):
    """Whether each value's flag is set in bits (see packed_bits)."""
    return ((bits[values >> 3] >> (values & 7)) & 1).astype(bool)


class PairTable:
    """Pair keys (left * base + right) -> the rank of the joined token, for numpy to look up many
    keys at once: each key in the slot its hash picks, if it won that slot, and every key sorted,
    for the few that lost theirs (their slots marked crowded). A key's slot is the top bits of the key times an odd constant
    (the keys are no adversary's: they are the vocabulary's own pairs and the pairs BPE meets). A
    lookup reads each key's slot and binary-searches only where another key holds a crowded one: a fixed few
    numpy calls, where probing on would take as many rounds as the longest run of taken slots it
    met (ten or more in cl100k_base's table), however few its keys."""

    def __init__(self, keys, values, base: int):
        self.base = base
        bits = max(4, (4 * len(keys)).bit_length())  # a quarter of the slots or fewer taken: most keys win theirs
        self.shift = np.uint64(64 - bits)
        self.keys = np.full(1 << bits, -1, dtype=np.int64)  # -1: an empty slot
        self.ranks = np.full(1 << bits, NO_RANK, dtype=np.int32)
        # each slot to the key of the lowest rank that picks it: BPE's commonest pairs need no
        # search (two keys of one rank in a slot: the last written stays, and both are right)
        slots = self._slots(keys)
        np.minimum.at(self.ranks, slots, np.asarray(values, dtype=np.int32))
        won = self.ranks[slots] == values
        self.keys[slots[won]] = keys[won]
        self.crowded = np.bincount(slots, minlength=1 << bits) > 1  # a key lost this slot: search on
        order = np.argsort(keys)
        # the keys in order and their ranks, ending in a key larger than any (no search runs off the end)
        self.sorted_keys = np.append(keys[order], np.iinfo(np.int64).max)
        self.sorted_ranks = np.append(np.asarray(values, dtype=np.int32)[order], NO_RANK)

    @classmethod
    def of_arrays(cls, keys, ranks, sorted_keys, sorted_ranks, crowded, base: int) -> PairTable:
        """The table whose arrays (keys, ranks, crowded by slot; sorted_keys, sorted_ranks) were kept."""
        table = cls.__new__(cls)
        table.base, table.shift = base, np.uint64(64 - (len(keys).bit_length() - 1))
        table.keys, table.ranks, table.sorted_keys, table.sorted_ranks = keys, ranks, sorted_keys, sorted_ranks
        table.crowded = crowded
        return table

    def _slots(self, keys):
        return ((np.asarray(keys, dtype=np.int64).view(np.uint64) * GOLDEN) >> self.shift).view(np.int64)

    def lookup(self, wanted):
        """The rank of each key in wanted; NO_RANK for a key that is not in the table (-1 among them:
        a pair that is none, e.g. beside a hole, finds an empty slot's -1 or no key)."""
        if len(wanted) > LOOKUP_BLOCK:
            return np.concatenate([self.lookup(wanted[at : at + LOOKUP_BLOCK]) for at in range(0, len(wanted), LOOKUP_BLOCK)])
        slots = self._slots(wanted)
        found = self.keys[slots]
        hit = found == wanted
        ranks = np.where(hit, self.ranks[slots], NO_RANK)
        todo = (~hit & self.crowded[slots]).nonzero()[0]  # another key holds the slot, and not alone
        if len(todo):
            at = self.sorted_keys.searchsorted(wanted[todo])
            found_at = self.sorted_keys[at] == wanted[todo]
            ranks[todo[found_at]] = self.sorted_ranks[at[found_at]]
        return ranks


class PieceTable:
    """Pieces of up to 15 bytes (packed as packing.pack_spans does: low, high; mixed, their
    piece_hash) -> an int64 value each, in an open-addressing table that numpy looks up and fills
    whole arrays of pieces at a time."""

    def __init__(self, bits: int = 16):
        self._allocate(bits)

    def _allocate(self, bits: int) -> None:
        size = 1 << bits
        self.shift, self.mask = np.uint64(64 - bits), size - 1
        self.low = np.zeros(size, dtype=np.uint64)
        self.high = np.zeros(size, dtype=np.uint64)  # 0: an empty slot (a piece's high holds its length)
        self.value = np.zeros(size, dtype=np.int64)
        self.count = 0

    @classmethod
    def of_arrays(cls, low, high, value) -> PieceTable:
        """The table whose slots (low, high, value: a power of two of each) were kept."""
        table = cls.__new__(cls)
        bits = len(low).bit_length() - 1
        table.shift, table.mask = np.uint64(64 - bits), len(low) - 1
        table.low, table.high, table.value = low, high, value
        table.count = int(np.count_nonzero(high))
        return table

    def copy(self) -> PieceTable:
        """A table of the same pieces and values that can grow apart from this one."""
        return PieceTable.of_arrays(self.low.copy(), self.high.copy(), self.value.copy())

    @classmethod
    def of(cls, low, high, values) -> PieceTable:
        """A table of distinct pieces whose values are values."""
        table = cls(max(16, (4 * len(low)).bit_length()))
        table._place(low, high, piece_hash(low, high), values)
        return table

    def find(self, low, high, mixed):
        """The slot of each piece, or -1 where the table does not have it. Most pieces are found
        (or found missing) in their first slot: that round is over all of them, the others over few."""
        slots = (mixed >> self.shift).astype(np.intp)
        found = self.high[slots]  # 0 in an empty slot only (a piece's high word holds its length)
        hit = (found == high) & (self.low[slots] == low)
        out = np.where(hit, slots, -1)
        todo = np.flatnonzero(~hit & (found != 0))
        slots = (slots[todo] + 1) & self.mask
        while len(todo):
            found = self.high[slots]
            hit = (found == high[todo]) & (self.low[slots] == low[todo])
            out[todo[hit]] = slots[hit]
            go_on = ~hit & (found != 0)
            todo, slots = todo[go_on], (slots[go_on] + 1) & self.mask
        return out

    def values(self, low, high, mixed, make):
        """The value of every piece. The distinct pieces the table lacks are added first, their
        values make(their indices in low), e.g. their ids found by BPE, or new numbers."""
        slots = self.find(low, high, mixed)
        values = self.value[slots]  # where slots is -1 (missing), a stand-in, written over below
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            first, codes = distinct_packed(low[missing], high[missing], mixed[missing])
            new = missing[first]
            made = make(new)
            values[missing] = made[codes]  # each missing piece the value of its distinct one
            self.insert(low[new], high[new], mixed[new], made)
        return values

    def insert(self, low, high, mixed, values) -> None:
        """Add distinct pieces the table does not have, with their values (the table may grow:
        slots found before are stale then)."""
        if 2 * (self.count + len(low)) > len(self.high):  # keep the load under one half
            kept = np.flatnonzero(self.high)
            old = self.low[kept], self.high[kept], self.value[kept]
            # twice the pieces, rounded up to a power of two: a load of a quarter to a half after
            # growing (more slots cost memory for few probes less: see docs/performance.md)
            self._allocate((2 * (self.count + len(low)) - 1).bit_length())
            self._place(old[0], old[1], piece_hash(old[0], old[1]), old[2])
        self._place(low, high, mixed, values)

    def _place(self, low, high, mixed, values) -> None:
        todo = np.arange(len(low))
        slots = (mixed >> self.shift).astype(np.intp)
        while len(todo):  # each round, every free slot takes one of the pieces that want it
            wanting = np.flatnonzero(self.high[slots] == 0)
            self.value[slots[wanting]] = wanting  # of several writes to one free slot, one stays
            chosen = wanting[self.value[slots[wanting]] == wanting]
            claimed, piece = slots[chosen], todo[chosen]
            self.low[claimed], self.high[claimed], self.value[claimed] = low[piece], high[piece], values[piece]
            rest = np.ones(len(todo), dtype=bool)
            rest[chosen] = False
            todo, slots = todo[rest], (slots[rest] + 1) & self.mask
        self.count += len(low)
