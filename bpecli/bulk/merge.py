"""BPE of many pre-tokens at once in numpy rounds (bpe_rounds), and of long ones in rounds whose
work follows the pairs they change (bpe_long); one piece at a time is encoding.reference's."""

from __future__ import annotations

import heapq
from itertools import repeat

import numpy as np

from ..arrays import sorted_distinct, spans, without_overlaps
from ..encoding.reference import NUMPY_PIECE, piece_ids
from .packing import LENGTH_SHIFT, PACKED_ROW_BYTES, piece_hash
from .tables import LOOKUP_BLOCK, NO_RANK, VocabTables

# bpe_rounds puts pieces (by size) in one table, as wide as the longest, while its padding is no
# more than 1/PADDING of its symbols or PADDING_CELLS, and it has no more than TABLE_CELLS cells
# (4 MB in its four arrays, so that a round's scattered reads and writes stay within the caches).
PADDING = 8
PADDING_CELLS = 1 << 16
TABLE_CELLS = 1 << 18
# A table's last rows go to Python once no more than this many are still merging: a round's numpy
# calls cost more than a few pieces' merges in Python.
FEW_PIECES = 4
# A cell of bpe_rounds' tables that holds no symbol: padding, or a symbol merged into the one before.
HOLE = -1
# Pieces up to this long merge in bpe_rounds (rows of tables), longer ones in bpe_long, and so do
# runs of one byte longer than RUN_PIECE.
ROUNDS_PIECE = 1024
RUN_PIECE = 256


def encode_piece(tables: VocabTables, piece: bytes) -> tuple[int, ...]:
    """reference.piece_ids, but a piece longer than NUMPY_PIECE that is no token merges in numpy rounds."""
    if len(piece) > NUMPY_PIECE and piece not in tables.ranks:
        ids, _ = bpe_long(tables, np.frombuffer(piece, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.array([len(piece)]))
        return tuple(ids.tolist())
    return piece_ids(piece, tables.ranks)


def bpe_pieces(tables: VocabTables, pieces: list[bytes]):
    """(ids, counts): the ids of many pieces, one after another, as encode_piece gives them, and
    how many each has: a piece that is a token is one; the others merge with numpy (bpe_spans).

    Example (GPT-2): [b" tokenizer", b"ingly"] -> ([11241, 7509, 4420], [2, 1])
    """
    token = np.fromiter(map(tables.ranks.get, pieces, repeat(-1)), dtype=np.int64, count=len(pieces))
    sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    text = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    return _tokens_or_merged(tables, token, text, np.cumsum(sizes) - sizes, sizes)


def bpe_packed(tables: VocabTables, low, high):
    """(ids, counts): the ids of packed pieces of up to 15 bytes (see packing.pack_spans),
    one after another, and how many each piece has; all in numpy, the pieces never becoming
    bytes objects. A piece that is a token is that token."""
    tokens = tables.short_tokens
    slots = tokens.find(low, high, piece_hash(low, high))
    token = np.where(slots >= 0, tokens.value[slots], -1)
    sizes = (high >> np.uint64(LENGTH_SHIFT)).astype(np.int64)
    text = np.stack([low, high], axis=1).astype("<u8", copy=False).view(np.uint8).ravel()  # row i: piece i's bytes
    return _tokens_or_merged(tables, token, text, np.arange(len(low)) * PACKED_ROW_BYTES, sizes)


def _tokens_or_merged(tables: VocabTables, token, text, starts, sizes):
    """(ids, counts) of the pieces text[start : start + size]: a piece's token where it is one
    (token: its id, -1 where it is none), the others merged with numpy (bpe_spans)."""
    whole = token >= 0
    merged = np.flatnonzero(~whole)
    merged_ids, merged_counts = bpe_spans(tables, text, starts[merged], sizes[merged])
    counts = np.ones(len(token), dtype=np.int64)
    counts[merged] = merged_counts
    ids = np.empty(int(counts.sum()), dtype=np.int64)
    out = np.cumsum(counts) - counts
    ids[out[whole]] = token[whole]
    ids[spans(out[merged], merged_counts)] = merged_ids
    return ids, counts


def bpe_spans(tables: VocabTables, text, starts, sizes):
    """(ids, counts) of the pieces text[start : start + size] (none of them a token, so each
    at least 2 bytes) merged as merge_parts does. They merge in numpy rounds (bpe_rounds), all
    in one call: a piece that is done leaves the rounds, so the long ones that go on cost the
    short ones nothing, and the rounds' fixed cost is paid once. Pieces longer than ROUNDS_PIECE
    go to bpe_long, all in one call."""
    counts = np.zeros(len(sizes), dtype=np.int64)
    found = []
    linked = sizes > ROUNDS_PIECE
    # a run of one byte ("=" * 80) merges a pair per round in bpe_rounds, in bpe_long half of it
    maybe = np.flatnonzero(~linked & (sizes > RUN_PIECE))
    if len(maybe):
        run = text[spans(starts[maybe], sizes[maybe])] == np.repeat(text[starts[maybe]], sizes[maybe])
        linked[maybe] = np.logical_and.reduceat(run, np.cumsum(sizes[maybe]) - sizes[maybe])
    members = np.flatnonzero(~linked)
    if len(members):
        ids, counts[members] = bpe_rounds(tables, text[spans(starts[members], sizes[members])], sizes[members])
        found.append((members, ids))
    members = np.flatnonzero(linked)
    if len(members):
        ids, counts[members] = bpe_long(tables, text, starts[members], sizes[members])
        found.append((members, ids))
    return _in_order(counts, found), counts


def _in_order(counts, found):
    """The ids of pieces found in parts, piece by piece: found holds (which pieces, their ids one
    after another) for each part; counts, how many ids each piece has."""
    out = np.empty(int(counts.sum()), dtype=np.int64)
    out_starts = np.cumsum(counts) - counts
    for members, ids in found:
        out[spans(out_starts[members], counts[members])] = ids
    return out


def bpe_rounds(tables: VocabTables, text, sizes):
    """(ids, counts): many pieces (text: their bytes, one piece after another; sizes: how many
    each has) merged at once with merge_parts's result. Pieces of about one size share
    a table, a row each; a round merges, in every row, the leftmost pair of the lowest rank, as
    one-at-a-time BPE does (see docs/design.md, "BPE rounds in numpy").
    """
    order = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[order]
    piece_starts = np.cumsum(sizes) - sizes
    count = np.zeros(len(sizes), dtype=np.int64)
    found = []
    total = np.concatenate(([0], np.cumsum(sorted_sizes)))
    begin = 0
    while begin < len(order):
        # the table: pieces begin..end-1 (by size), as many as keep its padding within bounds and
        # its cells, a row as wide as the widest piece, within TABLE_CELLS
        window = min(len(order), begin + TABLE_CELLS // (int(sorted_sizes[begin]) + 2) + 1)
        rows = np.arange(1, window - begin + 1)
        symbols = total[begin + 1 : window + 1] - total[begin]
        widest = sorted_sizes[begin:window]
        fits = (rows * widest - symbols <= np.maximum(symbols // PADDING, PADDING_CELLS)) & (rows * (widest + 2) <= TABLE_CELLS)
        misfits = np.flatnonzero(~fits)
        end = begin + max(1, int(misfits[0]) if len(misfits) else len(fits))
        group = order[begin:end]
        for finished, row_counts, row_ids in _merge_rows(tables, text[spans(piece_starts[group], sizes[group])], sizes[group]):
            count[group[finished]] = row_counts
            found.append((group[finished], row_ids))
        begin = end
    return _in_order(count, found), count


def _merge_rows(tables: VocabTables, text, sizes):
    """Yield (rows, counts, ids) of the pieces (text: their bytes end to end; sizes) as they finish: one
    row of a table each, with a column of padding before and at least one after. A merged-away
    symbol leaves a hole (-1), so each cell links to the live ones beside it (next_col, prev_col);
    rank holds the rank of the pair a live symbol starts (NO_RANK where there is none), and the
    leftmost lowest one of a row, its argmin, is the pair BPE merges next."""
    pairs = tables.pair_table
    base = pairs.base
    rows, width = len(sizes), int(sizes.max(initial=0)) + 2
    owner = np.arange(rows)
    row_start = owner * width
    cells = spans(row_start + 1, sizes)
    symbol = np.full(rows * width, HOLE, dtype=np.int32)
    symbol[cells] = tables.byte_ids[text]
    columns = np.tile(np.arange(width, dtype=np.int32), rows)
    next_col, prev_col = columns + 1, columns - 1
    rank = np.full(rows * width, NO_RANK, dtype=np.int32)
    if len(text):  # each byte's pair with the next, but at each piece's end: bytes, so no hashing
        first = tables.byte_pair_ranks[text[:-1].astype(np.int32) << 8 | text[1:]]
        ends = np.cumsum(sizes) - 1
        first[ends[(ends >= 0) & (ends < len(first))]] = NO_RANK
        rank[cells[:-1]] = first
    while True:
        column = rank.reshape(rows, width).argmin(axis=1)
        merged = rank[row_start + column]
        going = merged != NO_RANK
        merging = int(np.count_nonzero(going))
        if merging * 4 < rows * 3 or merging <= FEW_PIECES:  # hand the finished rows over, keep the others
            done = ~going
            table = symbol.reshape(rows, width)[done]
            live = table != HOLE
            yield owner[done], np.count_nonzero(live, axis=1), table[live].astype(np.int64)
            if merging <= FEW_PIECES:  # the last few pieces: BPE of their bytes in Python
                decoder = tables.decoder
                last = [encode_piece(tables, b"".join(map(decoder.__getitem__, row[row != HOLE].tolist())))
                        for row in symbol.reshape(rows, width)[going]]
                yield owner[going], np.array([len(ids) for ids in last], dtype=np.int64), np.array(
                    [i for ids in last for i in ids], dtype=np.int64)
                return
            owner = owner[going]
            symbol, rank, next_col, prev_col = (a.reshape(rows, width)[going].ravel() for a in (symbol, rank, next_col, prev_col))
            rows = merging
            row_start = start = np.arange(rows) * width
            column, merged = column[going], merged[going]
        elif merging < rows:
            start, column, merged = row_start[going], column[going], merged[going]
        else:
            start = row_start
        # the symbol at `at` becomes the merged token (its id is its rank); the next one leaves a hole
        at = start + column
        gone = start + next_col[at]
        after_col = next_col[gone]
        after, before = start + after_col, start + prev_col[at]
        symbol[at] = merged
        symbol[gone] = HOLE
        rank[gone] = NO_RANK
        next_col[at] = after_col
        prev_col[after] = column
        # the pairs the merged token now makes with its live neighbours (key -1, no pair, beside a hole)
        right, left_symbol, merged64 = symbol[after], symbol[before], merged.astype(np.int64)
        keys = np.concatenate([np.where(right != HOLE, merged64 * base + right, -1),
                               np.where(left_symbol != HOLE, left_symbol.astype(np.int64) * base + merged64, -1)])
        found = pairs.lookup(keys)
        rank[at] = found[: len(at)]
        rank[before] = found[len(at) :]


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
            if waits.any():  # with the pair after each, if of rank r: the second of "a a a", left out above
                waiting = at[waits]
                behind = nxt[waiting]
                behind = behind[behind < n]
                put(r, np.concatenate([waiting, behind[rank[behind] == r]]))
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
