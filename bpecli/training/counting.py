"""Pre-token counting for training: parts -> counts as arrays, added up in one table.

Counts never become a Python object per distinct pre-token while they are counted, sent between
processes or added up: pieces of up to 15 bytes are two uint64 each (bulk.packing.pack_spans:
bytes 0-7 in `low`, bytes 8-14 and the length in `high`), longer ones one byte buffer with the
end of each piece. That keeps a worker's result a few arrays however many distinct pieces it saw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..arrays import with_room
from ..bulk.packing import (LENGTH_SHIFT, PACKED_ROW_BYTES, SMALL_CODES, distinct_packed, document_batches, pack_by_size,
                            pack_pieces, piece_hash, small_pieces)
from ..bulk.tables import PieceTable
from ..errors import arg
from ..inputs.documents import Splitters, read_documents
from ..inputs.parts import Part
from ..normalize import normalizer
from ..parallel import map_in_order
from ..perthread import PerThread
from ..pretokenize import safe_blocks, splitter, uncovered_error, vectorised_splitter

# Documents are counted in batches of about this many bytes (small arrays, small worker peaks);
# a longer document is cut at safe cuts first.
COUNT_BATCH = 1 << 20


@dataclass(frozen=True)
class PieceCounts:
    """How often each distinct pre-token occurs: packed pieces (low, high, counts) and long
    pieces (long_bytes cut at long_ends, long_counts). Each piece appears once."""

    low: np.ndarray
    high: np.ndarray
    counts: np.ndarray
    long_bytes: bytes
    long_ends: np.ndarray
    long_counts: np.ndarray

    def __len__(self) -> int:
        return len(self.counts) + len(self.long_counts)

    def total(self) -> int:
        return int(self.counts.sum()) + int(self.long_counts.sum())

    def packed_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """(the bytes of every packed piece end to end, their lengths), in order."""
        shift = np.uint64(LENGTH_SHIFT)
        lengths = (self.high >> shift).astype(np.int64)
        rows = np.stack([self.low, self.high & ~(np.uint64(0xFF) << shift)], axis=1).astype("<u8")
        rows = rows.view(np.uint8).reshape(-1, PACKED_ROW_BYTES)
        return rows[np.arange(PACKED_ROW_BYTES) < lengths[:, None]], lengths

    def long_pieces(self) -> list[bytes]:
        starts = np.concatenate(([0], self.long_ends[:-1])).tolist()
        return list(map(self.long_bytes.__getitem__, map(slice, starts, self.long_ends.tolist())))

    def to_dict(self) -> dict[bytes, int]:
        """{piece: count}: for tests and small corpora (a Python object per piece)."""
        packed, lengths = self.packed_bytes()
        data, ends = packed.tobytes(), np.cumsum(lengths).tolist()
        pieces = [data[a:b] for a, b in zip([0, *ends[:-1]], ends)] + self.long_pieces()
        return dict(zip(pieces, self.counts.tolist() + self.long_counts.tolist()))

    @staticmethod
    def of_spans(data: bytes, bounds, weights=None) -> PieceCounts:
        """The counts of the pieces data[bounds[i]:bounds[i + 1]], each counted weights[i] times
        (once if no weights)."""
        short, low, high, mixed, long_at, long_codes, long_pieces = pack_pieces(data, bounds)
        first, short_codes = distinct_packed(low, high, mixed)
        n = np.bincount(short_codes, weights=None if weights is None else weights[short], minlength=len(first))
        long_n = np.bincount(long_codes, weights=None if weights is None else weights[long_at], minlength=len(long_pieces))
        return PieceCounts(low[first], high[first], n.astype(np.int64), *_long(long_pieces, long_n))

    @staticmethod
    def of_pieces(pieces: list[bytes], weights=None) -> PieceCounts:
        """The counts of a list of pieces, each counted weights[i] times (once if no weights)."""
        sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        return PieceCounts.of_spans(b"".join(pieces), np.concatenate(([0], np.cumsum(sizes))), weights)

    @staticmethod
    def of_mapping(counts: Mapping[str, int] | Mapping[bytes, int]) -> PieceCounts:
        """From {piece: count} (pieces as str or bytes)."""
        pieces = [p.encode("utf-8") if isinstance(p, str) else p for p in counts]
        if not pieces:
            return EMPTY
        return PieceCounts.of_pieces(pieces, np.fromiter(counts.values(), dtype=np.float64, count=len(pieces)))


EMPTY = PieceCounts(np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.int64), b"",
                    np.zeros(0, np.int64), np.zeros(0, np.int64))


def _long(pieces: list[bytes], counts) -> tuple[bytes, np.ndarray, np.ndarray]:
    ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    return b"".join(pieces), ends, np.asarray(counts, dtype=np.int64)


class Numbered:
    """The distinct packed pieces counted so far, numbered 0, 1... as first seen, in a PieceTable:
    counting a batch is one lookup of its pieces, the hash table of distinct pieces only for the
    new ones. Kept from part to part by a worker's thread (see _Counter.numbered)."""

    LIMIT = 1 << 20  # pieces kept before starting afresh: the table stays under about 200 MB

    def __init__(self):
        self.table = PieceTable()
        self.low = np.zeros(1 << 16, dtype=np.uint64)
        self.high = np.zeros(1 << 16, dtype=np.uint64)
        self.size = 0

    def numbers(self, low, high, mixed):
        """The number of each piece, new pieces numbered next."""

        def number(new):
            start, end = self.size, self.size + len(new)
            self.low, self.high = with_room(self.low, end), with_room(self.high, end)
            self.low[start:end], self.high[start:end] = low[new], high[new]
            self.size = end
            return np.arange(start, end)

        return self.table.values(low, high, mixed, number)


class Total:
    """Adds PieceCounts as they come: every distinct piece is numbered once in one table (a
    Numbered), its count added up in an array by that number. Adding a part is a lookup of its
    pieces, however many were added before: the last part, which the merge loop waits for, adds
    as fast as the first."""

    def __init__(self):
        self.numbered = Numbered()
        self.counts = np.zeros(1 << 16, dtype=np.int64)
        # long pieces (few) by their bytes: each new one takes the number of its place among all
        # long pieces added, by C loops (map over dict.setdefault), never a Python step per piece
        self.long_numbers: dict[bytes, int] = {}
        self.long_added: list[tuple[np.ndarray, np.ndarray]] = []  # (numbers, counts) of each part
        self.long_seen = 0

    def add(self, counts: PieceCounts) -> None:
        if len(counts.counts):
            numbers = self.numbered.numbers(counts.low, counts.high, piece_hash(counts.low, counts.high))
            self.counts = with_room(self.counts, self.numbered.size)
            self.counts[numbers] += counts.counts  # a piece appears once in counts: no number twice
        if len(counts.long_counts):
            n = len(counts.long_counts)
            found = map(self.long_numbers.setdefault, counts.long_pieces(), range(self.long_seen, self.long_seen + n))
            self.long_added.append((np.fromiter(found, dtype=np.int64, count=n), counts.long_counts))
            self.long_seen += n

    def result(self) -> PieceCounts:
        size = self.numbered.size
        by_number = np.zeros(self.long_seen, dtype=np.int64)
        for numbers, counts in self.long_added:
            by_number[numbers] += counts  # a part holds each piece once: no number twice
        long_counts = by_number[np.fromiter(self.long_numbers.values(), dtype=np.int64, count=len(self.long_numbers))]
        return PieceCounts(self.numbered.low[:size], self.numbered.high[:size], self.counts[:size],
                           *_long(list(self.long_numbers), long_counts))


# ---- counting parts in workers ----------------------------------------------------------------

@dataclass(frozen=True)
class _Counter:
    """What each worker needs to count a part: made once per worker (see parallel.map_in_order)."""

    pattern: str
    split: object  # the vectorised splitter, or None for the regex
    splitters: Splitters  # what ends a document in text
    text_column: str
    errors: str
    normalized: Callable[[str], str] | None  # the text as the tokenizer will split it (see normalize.py)
    add_prefix_space: bool  # a space before each document, as encode puts one (parts are whole documents then)
    # each thread's pieces counted so far (a worker's threads on Dask share one _Counter), made
    # afresh once it grows past its limit
    threads: PerThread[Numbered] = field(default_factory=lambda: PerThread(Numbered, lambda n: n.size > Numbered.LIMIT))

    @property
    def numbered(self) -> Numbered:
        return self.threads.get()


def _setup(pattern: str, separators: list[str], text_column: str, errors: str, steps: tuple[str, ...],
           add_prefix_space: bool = False) -> _Counter:
    return _Counter(pattern, vectorised_splitter(pattern), Splitters.of(separators), text_column, errors,
                    normalizer(steps) if steps else None, add_prefix_space)


def _count_part(counter: _Counter, part: Part) -> tuple[PieceCounts, int]:
    """(the pre-token counts of a part, its weight for progress)."""
    # the vectorised splitter reads UTF-8 bytes; normalization and the regex read str
    as_bytes = counter.split is not None and counter.normalized is None
    found, _, _ = read_documents(part, splitters=counter.splitters, text_column=counter.text_column,
                                 errors=counter.errors, as_bytes=as_bytes, checksum=False)
    if found and isinstance(found[0], bytes):
        data = cast("list[bytes]", found)
        if counter.add_prefix_space:
            data = [b" " + d if d[:1] not in (b"", b" ") else d for d in data]
        return count_pieces(data, counter.split, counter.numbered), part.weight
    documents = cast("list[str]", found)
    if counter.normalized is not None:
        documents = list(map(counter.normalized, documents))
    if counter.add_prefix_space:
        documents = [" " + d if d[:1] not in ("", " ") else d for d in documents]
    if counter.split is not None:
        return count_pieces([d.encode("utf-8") for d in documents], counter.split, counter.numbered), part.weight
    findall = splitter(counter.pattern, source=arg("pattern"))
    total = Total()
    for batch in document_batches(documents, 1 << 20):
        pieces = []
        for document in batch:
            found = findall(document)
            if sum(map(len, found)) != len(document):
                raise uncovered_error(counter.pattern, document, arg("pattern"))
            pieces += found
        total.add(PieceCounts.of_pieces([p.encode("utf-8") for p in pieces]))
    return total.result(), part.weight


# A part's piece numbers are added into its counts by one bincount every this many pieces: what
# a worker holds per occurrence stays this small however large the part.
FLUSH_PIECES = 1 << 20


def count_pieces(documents: list[bytes], split, numbered: Numbered | None = None) -> PieceCounts:
    """Pre-token counts by a vectorised pre-tokenizer (split: e.g. pretokenize.gpt2.gpt2_piece_starts);
    numbered: the pieces counted before, if kept (a fresh Numbered if not). Only per-distinct
    state grows with the documents: their numbers are counted every FLUSH_PIECES pieces."""
    if numbered is None:
        numbered = Numbered()
    counts = np.zeros(0, dtype=np.int64)  # by number
    small = np.zeros(SMALL_CODES, dtype=np.int64)  # pieces of one or two bytes, by code (see packing.SMALL_CODES)
    pending: list[np.ndarray] = []  # numbers not yet counted
    waiting = 0
    long_counts: Counter[bytes] = Counter()  # long pieces are few: a Counter adds them
    if any(len(d) > COUNT_BATCH for d in documents):  # a batch is never smaller than its longest document
        documents = [block for d in documents for block in (safe_blocks(d, COUNT_BATCH) if len(d) > COUNT_BATCH else [d])]
    for batch in document_batches(documents, COUNT_BATCH):
        data = b"".join(batch)
        sizes = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
        bounds = split(data, np.cumsum(sizes) - sizes)
        _, codes, _, low, high, mixed, long_at = pack_by_size(data, bounds)
        small += np.bincount(codes, minlength=SMALL_CODES)
        # the long pieces' bytes, sliced and counted by C loops (map, Counter), not a Python loop
        long_counts.update(map(data.__getitem__, map(slice, bounds[long_at].tolist(), bounds[long_at + 1].tolist())))
        pending.append(numbered.numbers(low, high, mixed))
        waiting += len(low)
        if waiting >= FLUSH_PIECES:
            counts = _counted(counts, pending, numbered.size)
            pending, waiting = [], 0
    counts = _counted(counts, pending, numbered.size)
    seen = np.flatnonzero(counts)
    code = np.flatnonzero(small)
    small_low, small_high = small_pieces(code)
    return PieceCounts(np.concatenate([small_low, numbered.low[seen]]), np.concatenate([small_high, numbered.high[seen]]),
                       np.concatenate([small[code], counts[seen]]),
                       *_long(list(long_counts), list(long_counts.values())))


def _counted(counts, numbers: list[np.ndarray], size: int):
    """counts (by number) with the numbers added, one each."""
    if not numbers:
        return counts
    found = np.bincount(np.concatenate(numbers), minlength=size)
    found[: len(counts)] += counts
    return found


def count_pretokens(
    parts: Iterable[Part],
    *,
    pattern: str,
    separators: list[str],
    text_column: str = "text",
    workers: int = 1,
    scheduler: str | None = None,
    errors: str = "strict",
    normalize: tuple[str, ...] = (),
    add_prefix_space: bool = False,
    progress=None,
) -> PieceCounts:
    """Pre-token frequencies over the documents of all parts, counted by `workers` processes
    (or a Dask cluster's, given its scheduler); separators end documents in text
    (pretokenize.document_separators). add_prefix_space puts a space before each document (parts
    must then hold whole documents).

    Example: one part "low low<|endoftext|>lower" -> {b"low": 1, b" low": 1, b"lower": 1} (to_dict)
    """
    total = Total()
    args = (pattern, separators, text_column, errors, tuple(normalize), add_prefix_space)
    for counts, weight in map_in_order(_count_part, parts, workers=workers, setup=_setup, args=args, scheduler=scheduler):
        total.add(counts)
        if progress is not None:
            progress.update(weight)
    return total.result()

