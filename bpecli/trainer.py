"""Pre-token counts -> merges: linked symbols, pair counts, token -> positions index, lazy max-heap."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .corpus import PART_BYTES, document_parts, input_bytes
from .errors import BpecliError, InputError
from .counting import PieceCounts, count_pretokens
from .executor import parallelism, progress_bar
from .normalize import check as check_normalize
from .pretokenize import SAFE_CUT, is_preset, resolve_pattern, sorted_distinct
from .tokenizer import Tokenizer, check_special_tokens


def tie_break_key(left: bytes, right: bytes, descending=None) -> bytes:
    """A key whose ascending order is the descending order of (left, right) as byte strings.

    The heap is a min-heap, so among pairs of equal count the lexicographically greatest pair of
    byte strings must sort first. descending(token) may give _descending(token) from a cache.
    Example: tie_break_key(b"b", b"a") < tie_break_key(b"a", b"z") < tie_break_key(b"a", b"")
    """
    descending = descending or _descending
    return descending(left) + descending(right)


def _descending(token: bytes) -> bytes:
    """Each byte b becomes 255 - b, and 256 (which no byte takes) ends the token, so that a
    token sorts after every token it is a prefix of; each number as 2 bytes, big-endian (bytes
    compare like the tuple of those numbers, in a third of a tuple's memory)."""
    key = bytearray(2 * len(token) + 2)
    key[1:-2:2] = token.translate(_INVERTED)  # the high bytes stay 0
    key[-2] = 1  # 256 = 0x0100
    return bytes(key)


_INVERTED = bytes(range(255, -1, -1))


_MAX_VOCAB = 2**31 - 1
# A training part of the corpus is at most this big: a worker holds its text, documents and counts.
MAX_PART_BYTES = 16 << 20


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
    256 bytes, the merges and the special tokens. Ties go to the
    lexicographically greatest pair of byte strings.
    Example: {"aaabdaaabac": 1} with vocab_size 259 -> [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    """
    n_merges = merges_wanted(vocab_size, special_tokens)
    # 1. The word table: every distinct pre-token's bytes end to end in one array of symbols,
    #    linked within its word by next/prev positions, each position weighted by its word's count.
    if not isinstance(counts, PieceCounts):
        counts = PieceCounts.of_mapping(counts)
    symbols, lengths, freqs = _words(counts)
    weight = np.repeat(freqs, lengths)
    ends = np.cumsum(lengths)
    nxt = np.arange(1, len(symbols) + 1, dtype=np.int32)  # int32: half the memory of int64
    nxt[ends - 1] = -1
    prv = np.arange(-1, len(symbols) - 1, dtype=np.int32)
    prv[ends - lengths] = -1
    del freqs, lengths, ends
    base = 256 + n_merges  # a pair (left, right) is the key left * base + right

    # 2. Pair counts, and where each token is: a pair (x, y) can only start where x is (or end
    #    where y is), so the positions of its tokens index every pair, in far less memory than
    #    positions per pair. Byte tokens start with all their positions, ascending.
    pair_counts: dict[int, int] = {}
    for lo in range(0, len(symbols), 1 << 18):  # in slices, so that temporaries stay small
        starts = lo + np.flatnonzero(nxt[lo : lo + (1 << 18)] >= 0).astype(np.int32)
        _add_pairs(_pair_keys(starts, symbols, nxt, base), weight[starts], pair_counts)
    by_symbol = np.argsort(symbols.astype(np.uint8), kind="stable").astype(np.int32)
    cuts = np.searchsorted(symbols[by_symbol], np.arange(257))
    where = [by_symbol[cuts[t] : cuts[t + 1]] for t in range(256)]  # where[token]: positions

    # 3. A max-heap of (count, tie-break) as a min-heap of (-count, tie_break_key, key). Stale
    #    entries are re-checked against pair_counts when popped.
    token_bytes = [bytes([i]) for i in range(256)]
    descending = {t: _descending(t) for t in token_bytes}  # per token, made once
    tie_breaks: dict[int, bytes] = {}  # per pair: a pair is pushed again each time it gains

    def entry(count: int, key: int) -> tuple[int, bytes, int]:
        tie_break = tie_breaks.get(key)
        if tie_break is None:
            tie_break = tie_breaks[key] = tie_break_key(token_bytes[key // base], token_bytes[key % base], descending.__getitem__)
        return -count, tie_break, key

    heap = [entry(n, k) for k, n in pair_counts.items()]
    heapq.heapify(heap)

    # 4. Merge: each merge rewrites only its occurrences and the pairs beside them, with numpy.
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < n_merges:
        best = _pop_best(heap, pair_counts)
        if best is None or best[0] < max(min_frequency, 1):
            break
        key = best[1]
        a, b = divmod(key, base)
        new = len(token_bytes)
        merges.append((token_bytes[a], token_bytes[b]))
        token_bytes.append(token_bytes[a] + token_bytes[b])
        descending[token_bytes[-1]] = _descending(token_bytes[-1])
        at = _occurrences(_candidates(where, a, b, symbols, prv), a, b, symbols, nxt)
        where.append(at.astype(np.int32))
        right = nxt[at]
        # the pairs that change: the one before each occurrence, the occurrence, the one after
        changed = sorted_distinct(np.concatenate([prv[at], at, right]))
        changed = changed[(changed >= 0) & (nxt[changed] >= 0)]
        old_keys = _pair_keys(changed, symbols, nxt, base)
        symbols[at] = new
        symbols[right] = -1  # a dead position: no pair key can match it
        after = nxt[right]
        nxt[at] = after
        prv[after[after >= 0]] = at[after >= 0]
        gained = sorted_distinct(np.concatenate([prv[at], at]))
        gained = gained[(gained >= 0) & (nxt[gained] >= 0)]
        new_keys = _pair_keys(gained, symbols, nxt, base)
        _subtract_pairs(old_keys, weight[changed], pair_counts)
        for gained_key in _add_pairs(new_keys, weight[gained], pair_counts):
            heapq.heappush(heap, entry(pair_counts[gained_key], gained_key))
        pair_counts.pop(key, None)
        if progress is not None:
            progress.update(1)
    return merges


def _words(counts: PieceCounts):
    """(every piece of two or more bytes end to end as int32 symbols, each one's length, its count):
    a single byte holds no pair."""
    packed, packed_lengths = counts.packed_bytes()
    long_ends = counts.long_ends
    long_lengths = np.diff(np.concatenate(([0], long_ends)))
    data = np.concatenate([packed, np.frombuffer(counts.long_bytes, dtype=np.uint8)])
    lengths = np.concatenate([packed_lengths, long_lengths])
    freqs = np.concatenate([counts.counts, counts.long_counts])
    kept = lengths > 1
    symbols = data[np.repeat(kept, lengths)].astype(np.int32)
    return symbols, lengths[kept], freqs[kept]


def _pair_keys(positions, symbols, nxt, base: int):
    """The key of the pair that starts at each position (which must have a next symbol)."""
    return symbols[positions].astype(np.int64) * base + symbols[nxt[positions]]


def _occurrences(candidates, a: int, b: int, symbols, nxt):
    """The positions where pair (a, b) starts now, each once, left to right without overlaps
    (as str.replace would merge them): candidates may be stale or repeated.

    Example: symbols "aaaa" (a == b), candidates [0, 1, 2] -> [0, 2]
    """
    at = sorted_distinct(candidates)
    follow = nxt[at]
    at = at[(follow >= 0) & (symbols[at] == a) & (symbols[np.maximum(follow, 0)] == b)]
    if a == b and len(at) > 1:  # "aaa": the occurrences at 0 and 1 overlap; 0 goes first
        chained = np.zeros(len(at), dtype=bool)
        chained[1:] = at[1:] == nxt[at[:-1]]
        run_start = np.maximum.accumulate(np.where(chained, 0, np.arange(len(at))))
        at = at[(np.arange(len(at)) - run_start) % 2 == 0]
    return at


def _add_pairs(keys, weights, pair_counts: dict[int, int]) -> list[int]:
    """Add the pairs keys (with their words' weights) to the counts; the distinct keys."""
    if not len(keys):
        return []
    keys, totals = _sum_by_key(keys, weights)
    distinct = keys.tolist()
    for k, n in zip(distinct, totals.tolist()):
        pair_counts[k] = pair_counts.get(k, 0) + n
    return distinct


def _sum_by_key(keys, weights):
    """(the distinct keys, sorted; the sum of the weights of each).

    Example: keys [5, 3, 5], weights [1, 2, 3] -> ([3, 5], [2, 4])
    """
    if keys.max() < 1 << 31:  # key and index share one int64: a plain sort, faster than argsort
        packed = (keys << 32) | np.arange(len(keys), dtype=np.int64)
        packed.sort()
        order, keys = packed & 0xFFFFFFFF, packed >> 32
    else:  # vocabularies past about 46,000 tokens have larger keys
        order = np.argsort(keys)
        keys = keys[order]
    first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[first], np.add.reduceat(weights[order], first)


def _candidates(where: list, a: int, b: int, symbols, prv):
    """Positions where pair (a, b) may start: where a is, or just before where b is, whichever
    list is shorter. The list read is pruned of positions its token has left (merged away)."""
    left, right = where[a], where[b]
    if len(left) <= len(right):
        where[a] = left = left[symbols[left] == a]
        return left
    where[b] = right = right[symbols[right] == b]
    before = prv[right]
    return before[before >= 0]


def _subtract_pairs(keys, weights, pair_counts: dict[int, int]) -> None:
    if len(keys) > 32:  # many occurrences of few pairs: sum them per pair first
        keys, weights = _sum_by_key(keys, weights)
    for k, n in zip(keys.tolist(), weights.tolist()):
        pair_counts[k] -= n


def _pop_best(heap: list, pair_counts: dict[int, int]) -> tuple[int, int] | None:
    """The pair with the highest current count (ties broken by the key), or None if none is left."""
    while heap:
        neg, tie_break, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if current == -neg:
            return current, pair
        if 0 < current < -neg:  # the count fell since this entry was pushed; a rise pushes anew
            heapq.heappush(heap, (-current, tie_break, pair))
    return None


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
