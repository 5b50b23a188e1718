"""BPE of many pre-tokens at once in numpy rounds (bpe_rounds), and of long ones in rounds whose
work follows the pairs they change (bpe_long); one piece at a time is encoding.reference's."""

from __future__ import annotations

import heapq

import numpy as np

from ..arrays import sorted_distinct, spans, without_overlaps
from ..encoding.reference import NUMPY_PIECE, piece_ids
from .packing import LENGTH_SHIFT, PACKED_ROW_BYTES, piece_hash
from .tables import LOOKUP_BLOCK, NO_RANK, VocabTables

# bpe_rounds hands the last pieces still merging to Python when no more than this many are left.
FEW_PIECES = 4
# Pieces up to this long merge in bpe_rounds (one symbol array of them all), longer ones in bpe_long.
ROUNDS_PIECE = 1024


def encode_piece(tables: VocabTables, piece: bytes) -> tuple[int, ...]:
    """reference.piece_ids, but a piece longer than NUMPY_PIECE that is no token merges in numpy rounds."""
    if len(piece) > NUMPY_PIECE and piece not in tables.ranks:
        ids, _ = bpe_long(tables, np.frombuffer(piece, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.array([len(piece)]))
        return tuple(ids.tolist())
    return piece_ids(piece, tables.ranks)


def bpe_batch(tables: VocabTables, pieces: list[bytes]) -> list[tuple[int, ...]]:
    """The ids of many pieces, as encode_piece gives them: a piece that is a token is one;
    the others merge with numpy (bpe_spans).

    Example (GPT-2): [b" tokenizer", b"ingly"] -> [(11241, 7509), (4420,)]
    """
    results: list = [(rank,) if rank is not None else None for rank in map(tables.ranks.get, pieces)]
    todo = [i for i, found in enumerate(results) if found is None]
    sizes = np.fromiter((len(pieces[i]) for i in todo), dtype=np.int64, count=len(todo))
    text = np.frombuffer(b"".join(pieces[i] for i in todo), dtype=np.uint8)
    ids, counts = bpe_spans(tables, text, np.cumsum(sizes) - sizes, sizes)
    flat, at = ids.tolist(), 0
    for i, count in zip(todo, counts.tolist()):
        results[i] = tuple(flat[at : at + count])
        at += count
    return results

def bpe_packed(tables: VocabTables, low, high):
    """(ids, counts): the ids of packed pieces of up to 15 bytes (see packing.pack_spans),
    one after another, and how many each piece has; all in numpy, the pieces never becoming
    bytes objects. A piece that is a token is that token."""
    tokens = tables.short_tokens
    slots = tokens.find(low, high, piece_hash(low, high))
    is_token = slots >= 0
    sizes = (high >> np.uint64(LENGTH_SHIFT)).astype(np.int64)
    text = np.stack([low, high], axis=1).astype("<u8", copy=False).view(np.uint8).ravel()  # row i: piece i's bytes
    merged = np.flatnonzero(~is_token)
    merged_ids, merged_counts = bpe_spans(tables, text, merged * PACKED_ROW_BYTES, sizes[merged])
    counts = np.ones(len(low), dtype=np.int64)
    counts[merged] = merged_counts
    ids = np.empty(int(counts.sum()), dtype=np.int64)
    starts = np.cumsum(counts) - counts
    ids[starts[is_token]] = tokens.value[slots[is_token]]
    ids[spans(starts[merged], merged_counts)] = merged_ids
    return ids, counts

def bpe_spans(tables: VocabTables, text, starts, sizes):
    """(ids, counts) of the pieces text[start : start + size] (none of them a token, so each
    at least 2 bytes) merged as merge_parts does. They merge in numpy rounds (bpe_rounds), all
    in one call: a piece that is done leaves the rounds, so the long ones that go on cost the
    short ones nothing, and the rounds' fixed cost is paid once. Pieces longer than ROUNDS_PIECE
    go to bpe_long, all in one call."""
    counts = np.zeros(len(sizes), dtype=np.int64)
    found = []
    members = np.flatnonzero(sizes <= ROUNDS_PIECE)
    if len(members):
        symbols = tables.byte_ids[text[spans(starts[members], sizes[members])]]
        ids, counts[members] = bpe_rounds(tables, symbols, sizes[members])
        found.append((members, ids))
    members = np.flatnonzero(sizes > ROUNDS_PIECE)
    if len(members):
        ids, counts[members] = bpe_long(tables, text, starts[members], sizes[members])
        found.append((members, ids))
    out = np.empty(int(counts.sum()), dtype=np.int64)
    out_starts = np.cumsum(counts) - counts
    for members, ids in found:
        out[spans(out_starts[members], counts[members])] = ids
    return out, counts


def bpe_rounds(tables: VocabTables, symbols, sizes):
    """(ids, counts): many pieces (symbols: their bytes' ids, one piece after another; sizes:
    how many each has) merged at once with merge_parts's result. Each round merges, in every
    piece still merging, its pairs of the lowest rank, left to right, up to a merge that makes a
    lower pair (see docs/design.md, "BPE rounds in numpy").
    """
    pairs = tables.pair_table
    base = pairs.base
    piece = np.flatnonzero(sizes)  # the piece of each segment of symbols still merging
    first = np.zeros(len(symbols), dtype=bool)  # the symbol starts its segment
    first[(np.cumsum(sizes) - sizes)[piece]] = True
    # the rank of each symbol's pair with the next one in its piece (NO_RANK at a piece's end);
    # looked up once here, then only beside each merge
    pair_rank = np.full(len(symbols), NO_RANK, dtype=np.int32)
    inner = np.flatnonzero(~first[1:])
    pair_rank[inner] = pairs.lookup(symbols[inner] * base + symbols[inner + 1])
    done_symbols, done_owners = [], []
    while len(symbols):
        # (numpy's methods here, not its functions: their Python wrappers cost as much as a late round's work)
        starts = first.nonzero()[0]
        best = np.minimum.reduceat(pair_rank, starts)
        finished = best == NO_RANK
        if finished.any():  # pieces with nothing left to merge are done
            lengths = np.subtract(np.append(starts[1:], len(symbols)), starts)
            finished_symbols = np.repeat(finished, lengths)
            done_symbols.append(symbols[finished_symbols])
            done_owners.append(np.repeat(piece[finished], lengths[finished]))
            keep = ~finished_symbols
            symbols, pair_rank, first = symbols[keep], pair_rank[keep], first[keep]
            best, piece = best[~finished], piece[~finished]
        if len(best) <= FEW_PIECES:  # a round's numpy calls cost more than a few pieces in Python
            decoder = tables.decoder
            bounds = first.nonzero()[0].tolist() + [len(symbols)]
            for i, owner in enumerate(piece.tolist()):
                ids = encode_piece(tables, b"".join(map(decoder.__getitem__, symbols[bounds[i] : bounds[i + 1]].tolist())))
                done_symbols.append(np.array(ids, dtype=np.int64))
                done_owners.append(np.full(len(ids), owner))
            break
        # merge the lowest-rank pairs of every piece: the left symbol becomes the joined token
        # (its id is its rank), the right one goes
        segment = first.cumsum() - 1
        at = without_overlaps((pair_rank == best[segment]).nonzero()[0])
        if len(at) > len(best):  # some piece merges twice or more: see _first_merges
            at = _first_merges(pairs, symbols, first, pair_rank, at, segment[at])
        symbols[at] = pair_rank[at]
        keep = np.ones(len(symbols), dtype=bool)
        keep[at + 1] = False
        symbols, pair_rank, first = symbols[keep], pair_rank[keep], first[keep]
        # only the pairs beside each merged symbol change; it moved left by one per merge before it
        at -= np.arange(len(at))
        n = len(symbols)
        has_next = at + 1 < n
        has_next[has_next] = ~first[at[has_next] + 1]
        has_prev = ~first[at]
        pair_rank[at] = NO_RANK
        touched = np.concatenate([at[has_next], at[has_prev] - 1])
        pair_rank[touched] = pairs.lookup(symbols[touched] * base + symbols[touched + 1])
    owners = np.concatenate([np.zeros(0, dtype=np.int64), *done_owners])
    order = np.argsort(owners, kind="stable")  # piece by piece, each in its own order
    return np.concatenate([np.zeros(0, dtype=np.int64), *done_symbols])[order], np.bincount(owners, minlength=len(sizes))

def _first_merges(pairs, symbols, first, pair_rank, at, segment):
    """Of the merges at (pairs of rank r in each piece, left to right, none overlapping), those
    one-at-a-time BPE makes before any pair below r: in each piece, up to the first merge that
    makes a lower pair with a neighbour (see docs/design.md, "BPE rounds in numpy")."""
    same_piece = segment[1:] == segment[:-1]
    several = np.zeros(len(at), dtype=bool)
    several[1:] = same_piece
    several[:-1] |= same_piece
    looked = several.nonzero()[0]
    a, piece = at[looked], segment[looked]
    base, n = pairs.base, len(symbols)
    rank = pair_rank[a].astype(np.int64)  # (int32: times base it would overflow)
    lower = np.zeros(len(a), dtype=bool)
    after = a + 2
    has_after = after < n
    has_after[has_after] = ~first[after[has_after]]
    lower[has_after] = pairs.lookup(rank[has_after] * base + symbols[after[has_after]]) < rank[has_after]
    has_before = ~first[a]
    merged_before = np.zeros(len(a), dtype=bool)
    merged_before[1:] = a[:-1] + 2 == a[1:]
    before = np.where(merged_before, rank, symbols[a - 1])[has_before]
    lower[has_before] |= pairs.lookup(before * base + rank[has_before]) < rank[has_before]
    if not lower.any():
        return at
    starts_piece = np.concatenate(([True], piece[1:] != piece[:-1]))
    index = np.arange(len(a))
    first_lower = np.minimum.reduceat(np.where(lower, index, len(a)), np.flatnonzero(starts_piece))
    keep = np.ones(len(at), dtype=bool)
    keep[looked[index > first_lower[np.cumsum(starts_piece) - 1]]] = False
    return at[keep]


def bpe_long(tables: VocabTables, text, starts, sizes):
    """(ids, counts) of long pieces text[start : start + size], exactly as merge_parts gives
    them, in numpy rounds whose work is proportional to the pairs they change (a 20 MB run of
    one letter, a file without spaces): each piece's symbols form a linked list over byte
    positions, and the pairs of all pieces wait in buckets by rank; a round merges the pairs of
    the lowest rank but those within the longest token's reach of a merge that makes a lower
    pair (see docs/design.md, "Long pre-tokens").
    """
    pairs = tables.pair_table
    base = pairs.base
    n = int(sizes.sum())
    reach = tables.longest_token  # bytes: no merge BPE makes spans more
    # one int32 per byte for each array: the symbols, the links, and the rank of the pair
    # that starts at each symbol (NO_RANK at a piece's end); positions are bytes of the pieces
    symbols = tables.byte_ids[text[spans(starts, sizes)]].astype(np.int32)
    piece_end = np.cumsum(sizes)  # where each piece's symbols end
    nxt = np.arange(1, n + 1, dtype=np.int32)
    nxt[piece_end - 1] = n  # n: no next symbol
    prv = np.arange(-1, n - 1, dtype=np.int32)
    prv[piece_end - sizes] = -1  # -1: no previous symbol
    rank = np.full(n, NO_RANK, dtype=np.int32)
    alive = np.ones(n, dtype=bool)
    buckets: dict[int, list] = {}
    heap: list[int] = []

    def lookup(left, right):  # the rank of each pair (left, right), NO_RANK where it is no token
        return pairs.lookup(left.astype(np.int64) * base + right)

    def put(r: int, group) -> None:  # pairs of rank r, waiting in its bucket
        if r not in buckets:
            buckets[r] = []
            heapq.heappush(heap, r)
        buckets[r].append(group)

    def wait(at):  # put the pairs starting at `at` into the buckets of their ranks
        at = at[rank[at] != NO_RANK]
        if not len(at):
            return
        order = np.argsort(rank[at], kind="stable")
        at, ranks = at[order], rank[at[order]]
        edges = np.flatnonzero(ranks[1:] != ranks[:-1]) + 1
        for group, r in zip(np.split(at, edges), ranks[np.concatenate(([0], edges))].tolist()):
            put(r, group)

    for block in range(0, n, LOOKUP_BLOCK):  # in blocks: no n-long temporaries
        at = np.arange(block, min(block + LOOKUP_BLOCK, n), dtype=np.int32)
        at = at[nxt[at] < n]
        rank[at] = lookup(symbols[at], symbols[at + 1])
        wait(at)
    while heap:
        r = heapq.heappop(heap)
        at = sorted_distinct(np.concatenate(buckets.pop(r)))  # one wait() fills a bucket in order
        at = at[rank[at] == r]  # stale entries: merged away, or their pair changed
        if not len(at):
            continue
        at = without_overlaps(at, nxt)  # in a run of overlapping pairs (a a a), the first, third...
        # the pairs each merge makes, as BPE makes them one merge after another: with the
        # merged token before it (if the one before merged too) and the symbol after it
        after = nxt[nxt[at]]
        right = np.where(after < n, lookup(np.full(len(at), r), symbols[np.minimum(after, n - 1)]), NO_RANK)
        before = prv[at]
        merged_before = np.zeros(len(at), dtype=bool)
        merged_before[1:] = after[:-1] == at[1:]
        left_symbol = np.where(merged_before, r, symbols[np.maximum(before, 0)])
        left = np.where(before >= 0, lookup(left_symbol, np.full(len(at), r)), NO_RANK)
        lower = (right < r) | (left < r)
        if lower.any():
            # after such a merge BPE merges lower pairs, which only grow the token holding it:
            # no further than the longest token reaches. Merges beyond that reach go ahead now;
            # in a cluster of pairs closer than that, those after the first lower one wait
            index = np.arange(len(at))
            starts_cluster = np.concatenate(([True], np.diff(at) > reach))
            cluster = np.cumsum(starts_cluster) - 1
            first_lower = np.minimum.reduceat(np.where(lower, index, len(at)), np.flatnonzero(starts_cluster))
            waits = index > first_lower[cluster]
            if waits.any():
                put(r, at[waits])
                at, after = at[~waits], after[~waits]
        gone = nxt[at]
        symbols[at] = r
        rank[gone] = NO_RANK
        alive[gone] = False
        nxt[at] = after
        prv[after[after < n]] = at[after < n]
        # the pairs that changed: each merged token's own, and the one before it
        changed = sorted_distinct(np.concatenate([at, prv[at][prv[at] >= 0]]))
        following = nxt[changed]
        rank[changed] = np.where(following < n, lookup(symbols[changed], symbols[np.minimum(following, n - 1)]), NO_RANK)
        wait(changed)
    left = np.flatnonzero(alive)  # the symbols left, in order
    return symbols[left].astype(np.int64), np.bincount(np.searchsorted(piece_end, left, "right"), minlength=len(sizes))
