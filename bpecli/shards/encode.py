"""The worker side of write_shards: the documents of a part encoded to ids for each split, in
worker processes or on a Dask cluster, and handed back in the order of the parts."""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..inputs.documents import Splitters, read_documents
from ..inputs.parts import Part
from ..parallel import map_in_order
from ..tokenizer import Tokenizer


@dataclass(frozen=True)
class _Encoder:
    """What each worker needs to encode a part: made once per worker (see parallel.map_in_order)."""

    tokenizer: Tokenizer
    eot: int | None
    bos: int | None
    val_fraction: float | None
    dtype: str
    splitters: Splitters  # what ends a document in text
    text_column: str
    errors: str


def _setup(tokenizer: Tokenizer, eot, bos, val_fraction, dtype, separators, text_column, errors) -> _Encoder:
    return _Encoder(tokenizer, eot, bos, val_fraction, dtype, Splitters.of(separators), text_column, errors)


def _encode_part(encoder: _Encoder, part: Part) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, str]:
    """([(ids, where each document's ids end)] for each split, bytes read, their sha256) for one part."""
    # the bulk engine reads UTF-8 bytes; normalization reads str
    documents, n_bytes, digest = read_documents(part, splitters=encoder.splitters, text_column=encoder.text_column,
                                                errors=encoder.errors, as_bytes=not encoder.tokenizer.normalize)
    if not encoder.val_fraction:
        return [_encode(encoder, documents)], n_bytes, digest
    validation = in_validation(documents, encoder.val_fraction)
    train: list = [d for d, v in zip(documents, validation) if not v]
    val: list = [d for d, v in zip(documents, validation) if v]
    return [_encode(encoder, train), _encode(encoder, val)], n_bytes, digest


def _encode(encoder: _Encoder, documents: list[str] | list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    ids, doc_ends = encoder.tokenizer.encode_documents(documents, eot=encoder.eot, dtype=encoder.dtype)
    if encoder.bos is not None and len(doc_ends):  # bos before each document
        starts = np.concatenate(([0], doc_ends[:-1]))
        ids = np.insert(ids, starts, encoder.bos).astype(encoder.dtype, copy=False)
        doc_ends = doc_ends + np.arange(1, len(doc_ends) + 1)
    return ids, doc_ends


def in_validation(documents: list[str] | list[bytes], fraction: float) -> np.ndarray:
    """Which documents go to the validation split: those whose 64-bit BLAKE2b hash falls in the
    lowest `fraction` of the range. It depends on a document's text alone, never on where it is
    read or by which worker, and repeated documents land on the same side."""
    limit = int(fraction * 2**64)
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(_utf8(d), digest_size=8).digest(), "little") < limit for d in documents),
        dtype=bool, count=len(documents))


def _utf8(document: str | bytes) -> bytes:
    return document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")


def parts_from(parts: Iterator[Part], first: int, writer, separators, text_column, errors, progress) -> Iterator[tuple[int, Part]]:
    """(index, part) for the parts from number `first` on. Earlier ones were written by an
    interrupted run: they are read again (not encoded) to check that they are the same bytes."""
    splitters = Splitters.of(separators)
    for index, part in enumerate(parts):
        if index >= first:
            yield index, part
            continue
        _, _, digest = read_documents(part, splitters=splitters, text_column=text_column, errors=errors)
        writer.read(index, part.label, digest)
        if progress is not None:
            progress.update(part.weight)


# Parts a worker may encode past the oldest one not yet written: a part's ids are a few MB, and a
# slow part (cold pieces, a minified file) then holds up no other worker (see docs/performance.md).
PARTS_AHEAD = 12


def encode_in_order(numbered: Iterator[tuple[int, Part]], workers: int, scheduler: str | None, args: tuple):
    """(index, part, _encode_part(part)) in order, by `workers` processes or a Dask cluster (see
    parallel.map_in_order)."""
    taken: deque = deque()

    def parts():
        for index, part in numbered:
            taken.append((index, part))
            yield part

    for result in map_in_order(_encode_part, parts(), workers=workers, setup=_setup, args=args, scheduler=scheduler,
                               ahead=PARTS_AHEAD):
        index, part = taken.popleft()
        yield index, part, result
