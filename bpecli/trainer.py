"""Pre-token counts -> merges: linked symbols, pair counts, token -> positions index, lazy max-heap."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .corpus import PART_BYTES, document_parts, input_bytes
from .errors import BpecliError, InputError
from .counting import PieceCounts, count_pretokens
from .executor import parallelism, progress_bar
from .normalize import check as check_normalize
from .pretokenize import SAFE_CUT, is_preset, resolve_pattern
from .tokenizer import Tokenizer, check_special_tokens


def tie_break_key(left: bytes, right: bytes) -> tuple[bytes, bytes]:
    """Of pairs of equal count, the one whose key is greatest merges first: the pair as byte strings,
    compared left token first (a token sorts after every token it is a prefix of).
    Example: tie_break_key(b"a", b"b") < tie_break_key(b"a", b"bc") < tie_break_key(b"b", b"a")
    """
    return left, right


_MAX_VOCAB = 2**31 - 1
# A training part of the corpus is at most this big: a worker holds its text, documents and counts.
MAX_PART_BYTES = 16 << 20
NO_PAIR = 0  # the pair id of a position no pair starts at (a word's last symbol, a merged-away one)
BLOCK = 256  # pair ids per block of the blocked maximum: a block's largest count is kept apart


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
    256 bytes, the merges and the special tokens. Ties go to the greatest tie_break_key.
    Example: {"aaabdaaabac": 1} with vocab_size 259 -> [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    """
    n_merges = merges_wanted(vocab_size, special_tokens)
    if not isinstance(counts, PieceCounts):
        counts = PieceCounts.of_mapping(counts)
    words = _Words.of(counts)
    token_bytes = [bytes([i]) for i in range(256)]
    pairs = _Pairs(token_bytes)
    words.number_byte_pairs(pairs)
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < n_merges:
        best = pairs.best()
        if best is None or pairs.count[best] < max(min_frequency, 1):
            break
        a, b = int(pairs.left[best]), int(pairs.right[best])
        merges.append((token_bytes[a], token_bytes[b]))
        token_bytes.append(token_bytes[a] + token_bytes[b])
        words.merge(best, a, b, pairs)
        if progress is not None:
            progress.update(1)
    return merges


class _Words:
    """Every distinct pre-token's symbols end to end, linked within its word (next/prev positions),
    each position weighted by its word's count and holding the id of the pair starting there.

    Position n (one past the last) is a sentinel: -1, "no neighbour", indexes it, so it reads as
    symbol -1, weight 0 and NO_PAIR, and lookups through next/prev need no masks. Each pair keeps
    the positions it was made at (found[found_from[p]:found_from[p + 1]], ascending): a merge reads
    them, skipping those the pair has left since. Every position made is kept once, so there are at
    most three times as many as symbols (each merge removes a symbol and makes two).
    """

    def __init__(self, symbols, nxt, prv, weight):
        self.symbols, self.nxt, self.prv, self.weight = symbols, nxt, prv, weight
        self.pair_at = np.zeros(len(symbols), dtype=np.int32)
        self.found = np.zeros(len(symbols), dtype=np.int32)
        self.found_from = np.zeros(BLOCK, dtype=np.int64)
        self.n_tokens = 256

    @classmethod
    def of(cls, counts: PieceCounts) -> _Words:
        data, lengths, freqs = _pieces_of_two_bytes_or_more(counts)
        n = len(data)
        symbols = np.concatenate([data, [-1]]).astype(np.int32)
        weight = np.concatenate([np.repeat(freqs, lengths), [0]]).astype(np.int64)
        ends = np.cumsum(lengths)
        nxt = np.arange(1, n + 2, dtype=np.int32)  # int32: half the memory of int64
        nxt[ends - 1] = -1
        nxt[n] = -1
        prv = np.arange(-1, n, dtype=np.int32)
        prv[ends - lengths] = -1
        return cls(symbols, nxt, prv, weight)

    def number_byte_pairs(self, pairs: _Pairs) -> None:
        """Give every pair of bytes in the words an id and its count."""
        made = np.flatnonzero(self.nxt[:-1] >= 0).astype(np.int32)
        keys = (self.symbols[made] << 8 | self.symbols[made + 1]).astype(np.uint16)  # next byte: at + 1
        self._number(pairs, made, keys, lambda key: (key >> 8, key & 255))

    def merge(self, best: int, a: int, b: int, pairs: _Pairs) -> None:
        """Merge pair best, (a, b), everywhere into the next token: the pairs beside each occurrence
        lose its count, the pairs the new token makes are numbered and counted."""
        symbols, nxt, prv, pair_at = self.symbols, self.nxt, self.prv, self.pair_at
        new = self.n_tokens
        self.n_tokens += 1
        at = self._occurrences(best, a == b)
        w = self.weight[at]
        before, right = prv[at], nxt[at]
        after = nxt[right]
        # 1. The pair before each occurrence, (x, a), and the one after it, (b, y), are lost. Side by
        #    side ("ab ab") the pair after one is the pair before the next: it goes once.
        side_by_side = np.zeros(len(at), dtype=bool)
        side_by_side[1:] = before[1:] == right[:-1]
        before[side_by_side] = -1
        pairs.subtract(np.concatenate([pair_at[before], pair_at[right]]), np.concatenate([w, w]))
        pairs.count[best] = 0
        # 2. Relink: a's position takes the new token, b's dies.
        symbols[at] = new
        symbols[right] = -1
        pair_at[at] = NO_PAIR
        pair_at[right] = NO_PAIR
        nxt[at] = after
        prv[after] = at
        prv[-1] = -1
        # 3. The pairs the new token makes, all new: (new, y) at each occurrence and (x, new) before it
        #    (side by side, (new, new) is the first occurrence's (new, y)). Keys: y, or new + 1 + x.
        follow, lead = symbols[after], symbols[before]
        made = np.concatenate([at[follow >= 0], before[lead >= 0]])
        keys = np.concatenate([follow[follow >= 0], lead[lead >= 0] + (new + 1)])
        if new < (1 << 15) - 1:  # keys fit 16 bits, which numpy's stable sort sorts by radix
            keys = keys.astype(np.uint16)
        self._number(pairs, made, keys,
                     lambda key: (np.where(key <= new, new, key - (new + 1)), np.where(key <= new, key, new)))

    def _number(self, pairs: _Pairs, made, keys, left_right) -> None:
        """Number the pairs starting at positions made, one id per distinct key (left_right(keys) ->
        their tokens), with their counts, and keep their positions."""
        if not len(made):
            return
        order = np.argsort(keys, kind="stable")  # positions stay ascending within a key
        keys, made = keys[order], made[order]
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        left, right = left_right(keys[first].astype(np.int64))
        ids = pairs.add(left, right, np.add.reduceat(self.weight[made], first))
        self.pair_at[made] = np.repeat(ids, np.diff(np.append(first, len(made))))
        used = self.found_from[ids[0]]
        self.found = _room(self.found, used + len(made))
        self.found[used : used + len(made)] = made
        self.found_from = _room(self.found_from, int(ids[-1]) + 2)
        self.found_from[ids] = used + first
        self.found_from[ids[-1] + 1] = used + len(made)

    def _occurrences(self, best: int, overlapping: bool):
        """The positions where pair best starts, left to right without overlaps (as str.replace
        would merge them).

        Example: symbols "aaaa" (overlapping: the pair is (a, a)) -> [0, 2]
        """
        found = self.found[self.found_from[best] : self.found_from[best + 1]]
        at = found[self.pair_at[found] == best]
        if overlapping and len(at) > 1:  # "aaa": the occurrences at 0 and 1 overlap; 0 goes first
            chained = np.zeros(len(at), dtype=bool)
            chained[1:] = at[1:] == self.nxt[at[:-1]]
            run_start = np.maximum.accumulate(np.where(chained, 0, np.arange(len(at))))
            at = at[(np.arange(len(at)) - run_start) % 2 == 0]
        return at


def _room(array, size: int, fill: int = 0):
    """array, or a copy with room for size items (at least twice as long), the new ones fill."""
    if size <= len(array):
        return array
    grown = np.full(max(size, 2 * len(array)), fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class _Pairs:
    """Pair id -> left token, right token, count, with the best pair found by a blocked maximum.

    A pair's count is set when the pair is made (every pair the new token makes is new) and then
    only falls, so the best count never rises: the pairs of the best count are listed once, in
    tie-break order, and later pairs of that count join the list. block_max[i] bounds the counts of
    pair ids i*BLOCK... from above (a fall leaves it stale; it is mended when it is the largest).
    """

    def __init__(self, token_bytes: list[bytes]):
        self.token_bytes = token_bytes
        self.left = np.zeros(BLOCK, dtype=np.int32)
        self.right = np.zeros(BLOCK, dtype=np.int32)
        self.count = np.full(BLOCK, -1, dtype=np.int64)  # -1: no pair yet
        self.count[NO_PAIR] = 0
        self.block_max = np.zeros(1, dtype=np.int64)
        self.size = NO_PAIR + 1
        self.level = 0  # the count of the pairs in ties
        self.ties: list[int] = []  # pairs of count level, the greatest tie_break_key last

    def key(self, pair: int) -> tuple[bytes, bytes]:
        return tie_break_key(self.token_bytes[self.left[pair]], self.token_bytes[self.right[pair]])

    def add(self, left, right, count):
        """Number new pairs; their ids."""
        start, end = self.size, self.size + len(count)
        if end > len(self.count):
            capacity = -(-max(end, 2 * len(self.count)) // BLOCK) * BLOCK
            self.left, self.right = _room(self.left, capacity), _room(self.right, capacity)
            self.count = _room(self.count, capacity, fill=-1)
            self.block_max = _room(self.block_max, capacity // BLOCK, fill=-1)
        self.left[start:end], self.right[start:end], self.count[start:end] = left, right, count
        self.size = end
        lo, hi = start // BLOCK, -(-end // BLOCK)
        self.block_max[lo:hi] = self.count[lo * BLOCK : hi * BLOCK].reshape(-1, BLOCK).max(axis=1)
        ids = np.arange(start, end, dtype=np.int32)
        if self.level and (count == self.level).any():  # a tie with the pairs listed
            for pair in ids[count == self.level].tolist():
                bisect.insort(self.ties, pair, key=self.key)
        return ids

    def subtract(self, ids, counts) -> None:
        np.subtract.at(self.count, ids, counts)

    def best(self) -> int | None:
        """The pair of the highest count, ties to the greatest tie_break_key; None if no pair is left."""
        while self.ties:
            if self.count[self.ties[-1]] == self.level:
                return self.ties[-1]
            self.ties.pop()  # it fell
        while True:  # the largest block maximum, mended until it is true
            block = int(self.block_max.argmax())
            top = int(self.block_max[block])
            if top <= 0:
                return None
            true = int(self.count[block * BLOCK : (block + 1) * BLOCK].max())
            if true == top:
                break
            self.block_max[block] = true
        blocks = np.flatnonzero(self.block_max == top)
        ids = (blocks[:, None] * BLOCK + np.arange(BLOCK)).ravel()
        counts = self.count[ids]
        self.block_max[blocks] = counts.reshape(-1, BLOCK).max(axis=1)
        self.level = top
        self.ties = sorted(ids[counts == top].tolist(), key=self.key)
        return self.ties[-1]


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
    pairs = [(str(item), str(item)) if isinstance(item, (str, Path)) else item for item in inputs]
    # text without special tokens is cut where the preset patterns surely start a piece
    safe_cut = SAFE_CUT if is_preset(pattern) else None
    total_bytes = input_bytes(pairs)
    part_bytes = counting_part_bytes(total_bytes, parallelism(workers, scheduler))
    parts = document_parts(pairs, separators=special_tokens, text_column=text_column, safe_cut=safe_cut,
                           part_bytes=part_bytes)
    with progress_bar(progress, "counting", total_bytes, "B") as bar:
        counts = count_pretokens(parts, pattern=pattern, special_tokens=special_tokens, text_column=text_column,
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
