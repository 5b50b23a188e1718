"""The bulk encoder: many documents (UTF-8 bytes) -> one array of ids, BPE once per distinct
piece, every other step an array operation."""

from __future__ import annotations

from functools import cached_property
from itertools import repeat

import numpy as np

from ..arrays import spans, with_room
from ..perthread import PerThread
from .merge import bpe_packed, bpe_pieces
from .packing import document_batches, pack_by_size
from .tables import PieceTable, VocabTables, has_bits

# Documents go through in batches of about this many bytes: arrays that fit the caches are several
# times faster than one huge batch.
BULK_BATCH = 1 << 22
# What Learned keeps of long pieces is forgotten when it holds more than this many pieces, or
# more than LONG_IDS_LIMIT of their ids (32 MB; the array holding them, which doubles as it grows,
# at most twice that and one batch's).
CACHE_LIMIT = 1 << 20
LONG_IDS_LIMIT = 1 << 22
# A learned long piece's value in Learned.long_pieces: where its ids start in Learned.long_ids,
# shifted left by LONG_COUNT_BITS, or'd with how many ids it has.
LONG_COUNT_BITS = 32
# A piece's value (a learned short piece's in its PieceTable, a one- or two-byte piece's in
# BulkEncoder.small_values): its first id, shifted left by FIRST_ID_SHIFT, or'd with where its ids
# start in Learned.ids, shifted left by COUNT_BITS, or'd with how many ids it has (a piece of up
# to 15 bytes has at most 15). Most pieces are one token: their ids are written from the values
# alone. (Ids are below 2**31: vocab.MAX_ID.)
COUNT_BITS = 4
FIRST_ID_SHIFT = 32
START_MASK = (1 << (FIRST_ID_SHIFT - COUNT_BITS)) - 1  # where the ids start: Learned.ids stays far below 2**28
COUNT_MASK = (1 << COUNT_BITS) - 1


class Learned:
    """What one thread has encoded so far: short pieces in a PieceTable whose values hold their
    first id and point into one growing array of ids; long pieces in a dict, by their bytes, whose
    values point into another. It starts from a seed (see BulkEncoder.seed): the ids of every
    piece of one or two bytes, two slots each by code (VocabTables.small_piece_ids), then of every
    token of up to 15 bytes, which its table holds from the start (a piece that is a token is that
    token, and most pieces are one)."""

    LIMIT = 1 << 21  # short pieces kept before starting afresh (memory stays bounded)
    long_pieces: dict[bytes, int]
    long_ids: np.ndarray
    long_used: int

    def __init__(self, seed_ids, seed_table: PieceTable):
        self.seed_table = seed_table
        self.table = seed_table.copy()
        self.seeded = len(seed_ids)
        self.ids = np.empty(max(1 << 16, 2 * self.seeded), dtype=np.int64)
        self.ids[: self.seeded] = seed_ids
        self.used = self.seeded
        self._forget_long_pieces()

    def short_values(self, tables: VocabTables, low, high, mixed):
        """The value of each packed piece (see FIRST_ID_SHIFT); BPE for the distinct pieces the
        table lacks, which it keeps."""
        if self.table.count > self.LIMIT:  # start afresh (the seed stays): memory stays bounded
            self.table, self.used = self.seed_table.copy(), self.seeded

        def bpe(new):
            ids, counts = bpe_packed(tables, low[new], high[new])
            at = np.cumsum(counts) - counts
            return ids[at] << FIRST_ID_SHIFT | (self.keep(ids) + at) << COUNT_BITS | counts

        return self.table.values(low, high, mixed, bpe)

    def long_values(self, tables: VocabTables, pieces: list[bytes]):
        """Where the ids of each long piece are in self.long_ids (start << LONG_COUNT_BITS | count);
        BPE for the distinct pieces the dict lacks, which it keeps."""
        if len(self.long_pieces) > CACHE_LIMIT or self.long_used > LONG_IDS_LIMIT:  # start afresh
            self._forget_long_pieces()
        value = np.fromiter(map(self.long_pieces.get, pieces, repeat(-1)), dtype=np.int64, count=len(pieces))
        cold = np.flatnonzero(value < 0)
        if len(cold):
            new = [pieces[i] for i in cold.tolist()]
            ids, counts = bpe_pieces(tables, new)
            self.long_ids = with_room(self.long_ids, self.long_used + len(ids))
            self.long_ids[self.long_used : self.long_used + len(ids)] = ids
            value[cold] = (self.long_used + np.cumsum(counts) - counts) << LONG_COUNT_BITS | counts
            self.long_used += len(ids)
            self.long_pieces.update(zip(new, value[cold].tolist()))
        return value

    def _forget_long_pieces(self) -> None:
        self.long_pieces, self.long_ids, self.long_used = {}, np.empty(1 << 16, dtype=np.int64), 0

    def keep(self, flat) -> int:
        """Append ids to self.ids; where they start."""
        at = self.scratch(flat)
        self.used += len(flat)
        return at

    def scratch(self, flat) -> int:
        """Write ids after the kept ones; where they start. The next keep or scratch writes over them."""
        self.ids = with_room(self.ids, self.used + len(flat))
        self.ids[self.used : self.used + len(flat)] = flat
        return self.used


class BulkEncoder:
    """A vocabulary's tables with a vectorised splitter (split(data, doc_starts, cuts=) -> piece
    bounds, where cuts are more places a piece starts: see cuts).

    What it learns as it goes (Learned) is kept per thread: an encoder shared by threads gives
    each its own; the vocabulary's tables are read only.
    """

    def __init__(self, tables: VocabTables, split):
        self.tables = tables
        self.split = split
        self._learned = PerThread(self._new_learned)

    def prepare(self) -> None:
        """Build the tables encoding reads now, e.g. before forking workers that then share them."""
        tables = self.tables
        tables.pair_table, tables.inner_byte_pairs, tables.edge_tokens, tables.byte_ids, tables.byte_pair_ranks
        self.seed, self.small_values

    @cached_property
    def seed(self) -> tuple[np.ndarray, PieceTable]:
        """(ids, table) each thread's Learned starts from: after the ids of the pieces of one or
        two bytes (small_piece_ids), the id of every token of up to 15 bytes, in a copy of the
        table of those tokens whose values (see FIRST_ID_SHIFT) point at them."""
        small_ids, _ = self.tables.small_piece_ids
        tokens = self.tables.short_tokens
        slots = np.flatnonzero(tokens.high)
        value = np.zeros_like(tokens.value)
        value[slots] = tokens.value[slots] << FIRST_ID_SHIFT | (len(small_ids) + np.arange(len(slots))) << COUNT_BITS | 1
        return np.concatenate([small_ids, tokens.value[slots]]), PieceTable.of_arrays(tokens.low, tokens.high, value)

    @cached_property
    def small_values(self):
        """The value (see FIRST_ID_SHIFT) of every piece of one or two bytes, by its code: its ids
        are the seed's first."""
        ids, counts = self.tables.small_piece_ids
        return ids[0::2] << FIRST_ID_SHIFT | np.arange(0, len(ids), 2) << COUNT_BITS | counts

    def clear_cache(self) -> None:
        """Forget every piece encoded so far, in every thread."""
        self._learned.reset()

    def _new_learned(self) -> Learned:
        return Learned(*self.seed)

    @property
    def learned(self) -> Learned:
        """This thread's pieces encoded so far."""
        return self._learned.get()

    def encode(self, documents: list[bytes], *, eot: int | None, dtype):
        """(ids of the documents one after another, each followed by eot if given; where each
        document's ids end), a batch of about BULK_BATCH bytes at a time."""
        batches = list(document_batches(documents, BULK_BATCH)) or [[]]
        if len(batches) == 1:
            return self._encode_batch(batches[0], eot=eot, dtype=dtype)
        return join_encoded([self._encode_batch(b, eot=eot, dtype=dtype) for b in batches])

    def _encode_batch(self, documents: list[bytes], *, eot: int | None, dtype):
        """BPE once per distinct piece, the ids put together with numpy. Pieces of up to 15
        bytes are found in the learned piece table; longer ones in the dict, by their bytes."""
        data = b"".join(documents)
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        doc_starts = np.cumsum(lengths) - lengths
        bounds = self.split(data, doc_starts, cuts=self.cuts(data))
        starts = bounds[:-1]
        small, codes, short, low, high, mixed, long_at = pack_by_size(data, bounds)
        # where the ids of every piece are, and how many: pieces of one or two bytes' in the
        # seed, by code; short pieces' in the learned table (BPE for those it lacks); long ones'
        # from the dict, written after the learned ids for now
        learned = self.learned
        value = np.empty(len(starts), dtype=np.int64)  # see FIRST_ID_SHIFT
        value[small] = self.small_values[codes]
        value[short] = learned.short_values(self.tables, low, high, mixed)
        piece_sizes, first = value & COUNT_MASK, value >> FIRST_ID_SHIFT
        if len(long_at):  # (they may have more ids than COUNT_MASK: their sizes and first ids apart)
            index: dict[bytes, int] = {}
            long_codes = np.array([index.setdefault(data[a:b], len(index)) for a, b in
                                   zip(starts[long_at].tolist(), bounds[long_at + 1].tolist())], dtype=np.int64)
            long_value = learned.long_values(self.tables, list(index))
            long_sizes = long_value & ((1 << LONG_COUNT_BITS) - 1)
            at = learned.scratch(learned.long_ids[spans(long_value >> LONG_COUNT_BITS, long_sizes)])
            long_starts = (at + np.cumsum(long_sizes) - long_sizes)[long_codes]
            value[long_at], piece_sizes[long_at] = long_starts << COUNT_BITS, long_sizes[long_codes]
            first[long_at] = learned.ids[long_starts]
        # where each piece's ids go: after those of the pieces before it and, with eot, one more
        # for each document ended before it; then every piece's first id, the other ids of the
        # pieces that have more (a few), and eot after every document, each written in place
        pieces_before = np.searchsorted(starts, doc_starts + lengths, "left")  # documents end where pieces do
        place = np.cumsum(piece_sizes)
        ends = np.zeros(len(pieces_before), dtype=np.int64)  # (documents before the first piece end at 0)
        ended = pieces_before > 0
        ends[ended] = place[pieces_before[ended] - 1]
        place -= piece_sizes
        if eot is not None:
            ends = ends + np.arange(1, len(ends) + 1)
            place += np.repeat(np.arange(len(pieces_before)), np.diff(np.concatenate(([0], pieces_before))))
        out = np.empty(int(ends[-1]) if len(ends) else 0, dtype=dtype)
        out[place] = first
        more = np.flatnonzero(piece_sizes > 1)  # their second ids, then the rest of those with three or more
        more_starts = (value[more] >> COUNT_BITS) & START_MASK
        out[place[more] + 1] = learned.ids[more_starts + 1]
        rest = np.flatnonzero(piece_sizes[more] > 2)
        more, more_starts = more[rest], more_starts[rest]
        out[spans(place[more] + 2, piece_sizes[more] - 2)] = learned.ids[spans(more_starts + 2, piece_sizes[more] - 2)]
        if eot is not None:
            out[ends - 1] = eot
        return out, ends

    def cuts(self, data: bytes):
        """Where to cut pieces (sorted byte offsets) besides where the pattern does: wherever no
        token can hold the two bytes on either side, the two sides encode alone to the same ids as
        together, and the short parts repeat far more often than whole pieces. Only edges next to
        non-ASCII bytes are looked at (see docs/design.md, "Cuts BPE never crosses")."""
        text = np.frombuffer(data, dtype=np.uint8)
        beyond_ascii = np.flatnonzero(text >= 0x80)  # a few in a hundred bytes, in one pass
        after = beyond_ascii + 1
        after = after[after < len(text)]
        # characters' first bytes: two sorted runs that share no position (lead bytes are 0xC0 or
        # more, the others ASCII); a stable sort merges them in one pass (np.union1d hashes: a
        # hundred times slower)
        leads, ascii_after = beyond_ascii[text[beyond_ascii] >= 0xC0], after[text[after] < 0x80]
        at = np.sort(np.concatenate([leads, ascii_after]), kind="stable")
        at = at[at > 0]
        a, b = text[at - 1].astype(np.int64), text[at].astype(np.int64)
        held = self.tables.inner_byte_pairs[a << 8 | b]  # a token holds a, b in a row
        inside = np.flatnonzero(held & (at >= 2) & (at + 1 < len(text)))  # each side has a byte beyond
        if len(inside):
            two_byte, runs = self.tables.edge_tokens
            a, b, p = a[inside], b[inside], at[inside]
            before_a, after_b = text[p - 2].astype(np.int64) << 16 | a << 8 | b, a << 16 | b << 8 | text[p + 1]
            held[inside] = two_byte[a << 8 | b] | has_bits(runs, before_a) | has_bits(runs, after_b)
        return at[~held]


def join_encoded(results: list[tuple]):
    """encode results of consecutive batches as one (ids, document ends).

    Example: [([1, 2], [2]), ([3], [1])] -> ([1, 2, 3], [2, 3])
    """
    shifts = np.cumsum([0] + [len(ids) for ids, _ in results[:-1]])
    return (
        np.concatenate([ids for ids, _ in results]),
        np.concatenate([ends + shift for (_, ends), shift in zip(results, shifts)]),
    )
