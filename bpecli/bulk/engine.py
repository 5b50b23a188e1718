"""The bulk encoder: many documents (UTF-8 bytes) -> one array of ids, BPE once per distinct
piece, every other step an array operation."""

from __future__ import annotations

import threading
from itertools import chain

import numpy as np

from ..arrays import spans
from .merge import bpe_batch, bpe_packed
from .packing import document_batches, pack_pieces
from .tables import PieceTable, Vocabulary

# Documents go through in batches of about this many bytes: arrays that fit the caches are several
# times faster than one huge batch.
BULK_BATCH = 1 << 22
# The long piece -> ids dict is cleared when it grows past this many entries.
CACHE_LIMIT = 1 << 20


class BulkEncoder:
    """A vocabulary with a vectorised splitter (split(data, doc_starts) -> piece bounds).

    What it learns as it goes (the table of short pieces, the dict of long ones) is kept per
    thread: an encoder shared by threads gives each its own; the vocabulary's tables are read only.
    """

    def __init__(self, vocab: Vocabulary, split):
        self.vocab = vocab
        self.split = split
        self._local = threading.local()

    def prepare(self) -> None:
        """Build the tables encoding reads now, e.g. before forking workers that then share them."""
        self.vocab.pair_table, self.vocab.inner_byte_pairs, self.vocab.byte_ids

    def clear_cache(self) -> None:
        """Forget every piece encoded so far, in every thread."""
        self._local = threading.local()

    @property
    def _piece_table(self) -> PieceTable:
        """This thread's numpy table of short pieces -> ids."""
        local = self._local
        if not hasattr(local, "piece_table"):
            local.piece_table = PieceTable()
        return local.piece_table

    @property
    def _long_pieces(self) -> dict[bytes, tuple[int, ...]]:
        """This thread's dict of long pieces -> ids."""
        local = self._local
        if not hasattr(local, "long_pieces"):
            local.long_pieces = {}
        return local.long_pieces

    def encode(self, documents: list[bytes], *, eot: int | None, dtype):
        """(ids of the documents one after another, each followed by eot if given; where each
        document's ids end), a batch of about BULK_BATCH bytes at a time."""
        batches = list(document_batches(documents, BULK_BATCH)) or [[]]
        if len(batches) == 1:
            return self._encode_batch(batches[0], eot=eot, dtype=dtype)
        return join_encoded([self._encode_batch(b, eot=eot, dtype=dtype) for b in batches])

    def _encode_batch(self, documents: list[bytes], *, eot: int | None, dtype):
        """BPE once per distinct piece, the ids put together with numpy. Pieces of up to 15
        bytes are found in the numpy piece table; longer ones in the dict, by their bytes."""
        data = b"".join(documents)
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        doc_starts = np.cumsum(lengths) - lengths
        bounds = self.split_apart(data, self.split(data, doc_starts))
        starts = bounds[:-1]
        # 1. a code for every piece, the same for equal pieces
        codes, low, high, mixed, long_pieces = pack_pieces(data, bounds)
        # 2. where the ids of every distinct piece are: short pieces in the piece table (BPE for
        #    those it lacks), long ones in the dict, written after the table's ids for now
        table = self._piece_table
        table.make_room(len(low))
        slots = table.find(low, high, mixed)
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            table.insert(low[missing], high[missing], mixed[missing], *bpe_packed(self.vocab, low[missing], high[missing]))
            slots = table.find(low, high, mixed)  # all again: inserting may have moved them
        cache = self._long_pieces
        if len(cache) > CACHE_LIMIT:
            cache.clear()
        long_ids: list = list(map(cache.get, long_pieces))
        cold = [i for i, found in enumerate(long_ids) if found is None]
        for i, found in zip(cold, bpe_batch(self.vocab, [long_pieces[i] for i in cold])):
            long_ids[i] = cache[long_pieces[i]] = found
        long_sizes = np.fromiter(map(len, long_ids), dtype=np.int64, count=len(long_ids))
        long_at = table.scratch(np.fromiter(chain.from_iterable(long_ids), dtype=np.int64, count=int(long_sizes.sum())))
        table_sizes = np.concatenate([table.length[slots], long_sizes])
        table_starts = np.concatenate([table.start[slots], long_at + np.cumsum(long_sizes) - long_sizes])
        # 3. put the ids of every piece in order, then eot after every document
        piece_sizes = table_sizes[codes]
        ids = table.ids[spans(table_starts[codes], piece_sizes)]
        # documents end where pieces do: a document's ids end where its last piece's ids end
        pieces_before = np.searchsorted(starts, doc_starts + lengths, "left")
        ends = np.concatenate(([0], np.cumsum(piece_sizes)))[pieces_before]
        if eot is not None:
            ids = np.insert(ids, ends, eot)
            ends = ends + np.arange(1, len(ends) + 1)
        return ids.astype(dtype), ends

    def split_apart(self, data: bytes, bounds):
        """bounds with a cut added wherever no token holds the two bytes on either side: BPE never
        merges across such a cut, so the two sides encode alone to the same ids as together, and
        the short parts repeat far more often than whole pieces (a run of CJK characters is one
        GPT-2 piece; most of its character edges are such cuts). Only edges next to non-ASCII
        bytes are looked at: between ASCII bytes the cut is rare and looking costs time."""
        text = np.frombuffer(data, dtype=np.uint8)
        if len(text) < 2:
            return bounds
        after, before = text[1:], text[:-1]
        at = np.flatnonzero((after >= 0xC0) | ((after < 0x80) & (before >= 0x80))) + 1
        at = at[~self.vocab.inner_byte_pairs[text[at - 1].astype(np.int64) << 8 | text[at]]]
        if not len(at):
            return bounds
        is_bound = np.zeros(len(text) + 1, dtype=bool)
        is_bound[bounds] = True
        is_bound[at] = True
        return np.flatnonzero(is_bound)


def join_encoded(results: list[tuple]):
    """encode results of consecutive batches as one (ids, document ends).

    Example: [([1, 2], [2]), ([3], [1])] -> ([1, 2, 3], [2, 3])
    """
    shifts = np.cumsum([0] + [len(ids) for ids, _ in results[:-1]])
    return (
        np.concatenate([ids for ids, _ in results]),
        np.concatenate([ends + shift for (_, ends), shift in zip(results, shifts)]),
    )
