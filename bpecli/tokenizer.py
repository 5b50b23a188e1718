"""The Tokenizer: ranks, special tokens and a pattern; encode and decode with tiktoken's semantics."""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, islice, repeat
from operator import add
from pathlib import Path

import regex

from .errors import BpecliError
from .pretokenize import special_splitter

# Pieces longer than this are merged with a heap over a linked list instead of rescans.
_LONG_PIECE = 64
_BYTE_TOKENS = [bytes([b]) for b in range(256)]
# The piece -> ids cache is cleared when it grows past this many entries.
_CACHE_LIMIT = 1 << 20


@dataclass(frozen=True, eq=False)
class Tokenizer:
    """A byte-level BPE tokenizer.

    ranks maps each ordinary token's bytes to its id; a lower id is an earlier merge. Special
    tokens map to their own ids. Everything else (the decoder, merges, caches) is derived.
    """

    ranks: dict[bytes, int]
    special_tokens: dict[str, int] = field(default_factory=dict)
    pattern: str = ""
    files: tuple[str, ...] = ()  # the files it was read from, if any


    @classmethod
    def load(cls, path: str | Path, **options) -> Tokenizer:
        """Read any tokenizer format bpecli knows (see files.load)."""
        from .files import load

        return load(path, **options)

    def save(self, out_dir: str | Path, *, force: bool = False) -> Path:
        """Write every file format into out_dir, atomically (see files.save)."""
        from .files import save

        return save(self, out_dir, force=force)

    @property
    def vocab_size(self) -> int:
        return len(self.ranks) + len(self.special_tokens)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the files it was read from (or its ranks), its pattern and special tokens."""
        import hashlib
        import json

        digest = hashlib.sha256()
        if self.files:
            for name in self.files:
                digest.update(hashlib.sha256(Path(name).read_bytes()).digest())
        else:
            for token, rank in sorted(self.ranks.items(), key=lambda item: item[1]):
                digest.update(b"%d %s\n" % (rank, token.hex().encode()))
        digest.update(json.dumps([self.pattern, sorted(self.special_tokens.items())]).encode())
        return digest.hexdigest()

    @cached_property
    def decoder(self) -> dict[int, bytes]:
        """id -> bytes for every token, special ones included."""
        table = {rank: token for token, rank in self.ranks.items()}
        table.update((rank, token.encode("utf-8")) for token, rank in self.special_tokens.items())
        return table

    @cached_property
    def special_ids(self) -> dict[int, str]:
        return {rank: token for token, rank in self.special_tokens.items()}

    @cached_property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in rank order, recovered from the ranks: each multi-byte token is what BPE
        makes of its own bytes using only the ranks below its own, in exactly two parts."""
        out = []
        for token, rank in sorted(self.ranks.items(), key=lambda item: item[1]):
            if len(token) > 1:
                parts = _merge_parts(token, self.ranks, max_rank=rank)
                if len(parts) != 2:
                    raise BpecliError(f"token {token!r} (id {rank}) is not the merge of two tokens")
                out.append((parts[0], parts[1]))
        return out

    @cached_property
    def _findall(self):
        return regex.compile(self.pattern).findall

    @cached_property
    def _special_split(self):
        splitter = special_splitter(self.special_tokens)
        return splitter.split if splitter else None

    @cached_property
    def _cache(self) -> dict[str, tuple[int, ...]]:
        return {}

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text with special tokens treated as plain text.

        Example (GPT-2): "hello world" -> [31373, 995]
        """
        pieces = self._findall(text)
        cache = self._cache
        try:  # a warm cache knows every piece: no need to find the new ones first
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))
        except KeyError:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            for piece in set(pieces).difference(cache):
                cache[piece] = self._encode_piece(piece.encode("utf-8"))
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))

    def encode(self, text: str, *, special: bool = True) -> list[int]:
        """Ids of text; registered special tokens in it become their ids unless special=False.

        Example (GPT-2): "hi<|endoftext|>" -> [5303, 50256]
        """
        if not special or self._special_split is None:
            return self.encode_ordinary(text)
        ids: list[int] = []
        for i, part in enumerate(self._special_split(text)):
            if i % 2:
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self.encode_ordinary(part))
        return ids

    def encode_batch(self, texts: Iterable[str], *, special: bool = True) -> list[list[int]]:
        return [self.encode(text, special=special) for text in texts]

    def encode_documents(self, documents: Iterable[str], *, eot: int | None = None, dtype="uint32"):
        """Ids of many documents as one numpy array, each followed by eot (if given), and the
        position where each document's ids end.

        Example (GPT-2): ["hi", "yo"], eot=50256 -> ([5303, 50256, 8226, 50256], [2, 4])
        """
        import numpy as np

        ids: list[int] = []
        ends: list[int] = []
        encode = self.encode_ordinary
        for document in documents:
            ids += encode(document)
            if eot is not None:
                ids.append(eot)
            ends.append(len(ids))
        return np.array(ids, dtype=dtype), np.array(ends, dtype=np.int64)

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ids; an id outside the vocabulary is an error naming it."""
        decoder = self.decoder
        try:
            return b"".join(map(decoder.__getitem__, ids))
        except (KeyError, TypeError):
            bad = next(i for i in ids if i not in decoder)
            raise BpecliError(f"id {bad} is not in the vocabulary (0..{max(decoder)})") from None

    def decode(self, ids: Iterable[int], *, errors: str = "replace") -> str:
        """The text of ids; bytes that are not valid UTF-8 become U+FFFD, or an error if strict."""
        ids = list(ids)
        data = self.decode_bytes(ids)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as e:
            raise BpecliError(
                f"the ids decode to invalid UTF-8 at byte {e.start}; use --errors replace to see U+FFFD instead"
            ) from None

    def _encode_piece(self, piece: bytes) -> tuple[int, ...]:
        ranks = self.ranks
        rank = ranks.get(piece)
        if rank is not None:  # a piece that is itself a token is one token
            return (rank,)
        return tuple(ranks[part] for part in _merge_parts(piece, ranks))


def _merge_parts(piece: bytes, ranks: dict[bytes, int], max_rank: int | None = None) -> list[bytes]:
    """Merge adjacent parts of piece, the pair whose bytes have the lowest rank first (leftmost on
    ties), until no pair is a token; ranks at or above max_rank are left out.

    Example (GPT-2 ranks): b"hello" -> [b"hello"]; b" tokenizer" -> [b" token", b"izer"]
    """
    if len(piece) > _LONG_PIECE:
        return _merge_parts_heap(piece, ranks, max_rank)
    return _merge_parts_scan(piece, ranks, max_rank)


def _merge_parts_scan(piece: bytes, ranks: dict[bytes, int], max_rank: int | None = None) -> list[bytes]:
    """_merge_parts for short pieces: the pair ranks in a list whose minimum min() finds in C;
    after a merge only the two pairs beside it are looked up again."""
    limit = sys.maxsize if max_rank is None else max_rank
    if max_rank is None:
        rank_of = ranks.get
    else:  # ranks at or above max_rank count as no rank at all
        rank_of = lambda pair, default: min(ranks.get(pair, default), default)  # noqa: E731

    parts = list(map(_BYTE_TOKENS.__getitem__, piece))
    pair_ranks = list(map(rank_of, map(add, parts, islice(parts, 1, None)), repeat(limit, len(piece) - 1)))
    while pair_ranks:
        best = min(pair_ranks)
        if best == limit:
            break
        i = pair_ranks.index(best)  # the leftmost of equal ranks, as tiktoken does
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        del pair_ranks[i]
        if i > 0:
            pair_ranks[i - 1] = rank_of(parts[i - 1] + parts[i], limit)
        if i < len(pair_ranks):
            pair_ranks[i] = rank_of(parts[i] + parts[i + 1], limit)
    return parts


def _merge_parts_heap(piece: bytes, ranks: dict[bytes, int], max_rank: int | None = None) -> list[bytes]:
    """_merge_parts for long pieces: a heap of (rank, start) over a linked list of parts, so each
    merge costs O(log n) instead of a rescan."""
    limit = float("inf") if max_rank is None else max_rank
    n = len(piece)
    end = list(range(1, n + 1))  # end[i]: where the part starting at byte i ends
    prev = list(range(-1, n - 1))  # prev[i]: the start of the part before, -1 if none
    alive = [True] * n

    def pair_rank(start: int) -> int | None:
        stop = end[start]
        if stop >= n:
            return None
        rank = ranks.get(piece[start : end[stop]])
        return rank if rank is not None and rank < limit else None

    heap = [(rank, i) for i in range(n - 1) if (rank := pair_rank(i)) is not None]
    heapq.heapify(heap)
    while heap:
        rank, start = heapq.heappop(heap)
        if not alive[start] or pair_rank(start) != rank:
            continue  # stale: this part merged away or its right neighbour changed
        right = end[start]
        end[start] = end[right]
        alive[right] = False
        if end[start] < n:
            prev[end[start]] = start
        for i in (prev[start], start):
            if i >= 0 and (r := pair_rank(i)) is not None:
                heapq.heappush(heap, (r, i))
    parts = []
    i = 0
    while i < n:
        parts.append(piece[i : end[i]])
        i = end[i]
    return parts
