"""The Tokenizer: ranks, special tokens and a pattern; encode and decode with tiktoken's semantics."""

from __future__ import annotations

import heapq
import sys
import threading
from collections.abc import Collection, Iterable, Set as AbstractSet
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from itertools import chain, islice, repeat
from operator import add
from pathlib import Path
from typing import Literal

import regex

from .errors import BpecliError, DisallowedSpecialError, UnknownIdError
from .normalize import check as normalize_steps, normalizer
from .pretokenize import SAFE_CUT, compiled, is_preset, sorted_distinct, spans, special_splitter, uncovered_error

# Pieces longer than this are merged with a heap over a linked list instead of rescans...
_LONG_PIECE = 64
# ...and longer than this in numpy rounds (Tokenizer._bpe_long): no Python object per byte.
_NUMPY_PIECE = 4096
_BYTE_TOKENS = [bytes([b]) for b in range(256)]
# The piece -> ids cache is cleared when it grows past this many entries.
_CACHE_LIMIT = 1 << 20
# Texts at least this long are encoded by the vectorised path (when the pattern has one); shorter
# ones by the regex, which starts faster.
_BULK_TEXT = 1 << 16
_BULK_BATCH = 1 << 22
_SAFE_CUT = regex.compile(SAFE_CUT)


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
    trained_merges: tuple[tuple[bytes, bytes], ...] = field(default=(), repr=False)  # as train() made them
    normalize: tuple[str, ...] = ()  # steps applied to text before it is split (see normalize.py)

    def __post_init__(self):
        check_special_tokens(self.special_tokens)
        object.__setattr__(self, "normalize", normalize_steps(self.normalize))
        # What encoding learns as it goes (piece -> ids) is kept per thread: a Tokenizer shared by
        # threads gives each its own, as tiktoken's Rust core does. The derived tables (cached
        # properties) are built once and only read.
        object.__setattr__(self, "_local", threading.local())

    def __getstate__(self) -> dict:
        """Only the fields travel to another process; it derives its tables itself."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_local", threading.local())

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
        if self.normalize:  # (tokenizers without it keep the fingerprint they had)
            digest.update(json.dumps(self.normalize).encode())
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
        """The merges in rank order: as trained, else recovered from the ranks (each multi-byte
        token is what BPE makes of its own bytes using only the ranks below its own, in two parts)."""
        if self.trained_merges:
            return list(self.trained_merges)
        out = []
        for token, rank in sorted(self.ranks.items(), key=lambda item: item[1]):
            if len(token) > 1:
                parts = _merge_parts(token, self.ranks, max_rank=rank)
                if len(parts) != 2:
                    raise BpecliError(f"token {token!r} (id {rank}) is not the merge of two tokens")
                out.append((parts[0], parts[1]))
        return out

    @cached_property
    def _normalized(self):
        """The text as the tokenizer splits it: normalized, if it normalizes (else None)."""
        return normalizer(self.normalize) if self.normalize else None

    @cached_property
    def _covers(self) -> bool:
        """The presets keep every character; a custom pattern's pieces are checked to."""
        return is_preset(self.pattern)

    @cached_property
    def _findall(self):
        return compiled(self.pattern).findall

    @cached_property
    def _findall_ascii(self):
        return regex.compile(self.pattern).findall

    @property
    def _cache(self) -> dict[str, tuple[int, ...]]:
        """This thread's piece -> ids dict (pieces of every length on the regex path, long ones in bulk)."""
        local = self._local  # type: ignore[attr-defined]  # set in __post_init__
        if not hasattr(local, "cache"):
            local.cache = {}
        return local.cache

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text with special tokens treated as plain text.

        Example (GPT-2): "hello world" -> [31373, 995]
        """
        if self._normalized is not None:
            text = self._normalized(text)
        return self._encode_normalized(text)

    def _encode_normalized(self, text: str) -> list[int]:
        if len(text) >= _BULK_TEXT and self._bulk_split is not None:
            ids = self._encode_long_text([text], [])
            if ids is not None:
                return ids
        # ASCII text splits alike under every Unicode version: the plain pattern compiles faster
        pieces = self._findall_ascii(text) if text.isascii() else self._findall(text)
        if not self._covers and sum(map(len, pieces)) != len(text):
            raise uncovered_error(self.pattern, text)
        cache = self._cache
        try:  # a warm cache knows every piece: no need to find the new ones first
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))
        except KeyError:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            try:
                for piece in set(pieces).difference(cache):
                    cache[piece] = self._encode_piece(piece.encode("utf-8"))
            except UnicodeEncodeError:  # as tiktoken does: a surrogate pair joins, a lone one is U+FFFD
                return self._encode_normalized(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))

    # ---- tiktoken.Encoding's API, with its semantics ------------------------------------------

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        """Ids of text, as tiktoken's Encoding.encode: special tokens in allowed_special become their
        ids, those in disallowed_special (by default every one not allowed) raise
        DisallowedSpecialError, any other is encoded as text.

        Example (GPT-2): encode("hi<|endoftext|>", allowed_special="all") -> [5303, 50256]
        """
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        disallowed = self.special_tokens_set - allowed if disallowed_special == "all" else set(disallowed_special)
        if disallowed and (found := self._special_finder(frozenset(disallowed)).search(text)):
            raise DisallowedSpecialError(
                f"the text holds the special token {found.group()!r}: pass allowed_special to encode it as "
                "its id, or disallowed_special=() to encode it as text"
            )
        allowed &= self.special_tokens_set
        if not allowed:
            return self.encode_ordinary(text)
        parts = self._special_finder(frozenset(allowed)).split(text)
        if self._normalized is not None:  # the text between special tokens, as Hugging Face does
            parts[::2] = map(self._normalized, parts[::2])
        if len(text) >= _BULK_TEXT and self._bulk_split is not None:
            found = self._encode_long_text(parts[::2], [self.special_tokens[p] for p in parts[1::2]])
            if found is not None:
                return found
        ids: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self._encode_normalized(part))
        return ids

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                     disallowed_special: Literal["all"] | Collection[str] = "all") -> list[list[int]]:
        """encode of each text, on num_threads threads (each thread keeps its own caches)."""
        encode = partial(self.encode, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return self._on_threads(encode, text, num_threads)

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        return self._on_threads(self.encode_ordinary, text, num_threads)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                        disallowed_special: Literal["all"] | Collection[str] = "all"):
        """encode's ids as a numpy uint32 array."""
        import numpy as np

        return np.array(self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special), dtype=np.uint32)

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Ids of raw bytes, as tiktoken's Encoding._encode_bytes: valid UTF-8 is encoded as text;
        otherwise the valid part is, and its last piece (with the whitespace tokens before it) is
        encoded again together with the bytes that follow, as one piece.

        Example (GPT-2): b"hello \\xff" -> [31373, 220, 187]
        """
        if self.normalize:
            raise BpecliError("this tokenizer normalizes text, and bytes that are not UTF-8 are no text to normalize; "
                              "decode them first")
        try:
            return self.encode_ordinary(text.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid_up_to = e.start
        valid = text[:valid_up_to].decode("utf-8")
        pieces = self._findall(valid)
        ids = self.encode_ordinary(valid)
        last = len(self._encode_piece(pieces[-1].encode("utf-8"))) if pieces else 0
        while 0 < last < len(ids) and _all_space(self.decoder[ids[-1]]) and _all_space(self.decoder[ids[-last - 1]]):
            last += 1
        unstable = self.decode_bytes(ids[len(ids) - last :]) + text[valid_up_to:]
        return ids[: len(ids) - last] + list(self._encode_piece(unstable))

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text or bytes that is one token; KeyError otherwise."""
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self.special_tokens:
                return self.special_tokens[text_or_bytes]
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self.ranks[text_or_bytes]

    def decode_batch(self, batch, *, errors: str = "replace", num_threads: int = 8) -> list[str]:
        return self._on_threads(partial(self.decode, errors=errors), batch, num_threads)

    def decode_bytes_batch(self, batch, *, num_threads: int = 8) -> list[bytes]:
        return self._on_threads(self.decode_bytes, batch, num_threads)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id; KeyError for an id outside the vocabulary."""
        return self.decoder[token]

    def decode_tokens_bytes(self, tokens) -> list[bytes]:
        return [self.decoder[token] for token in tokens]

    def decode_with_offsets(self, tokens) -> tuple[str, list[int]]:
        """(text, where each token starts in it, in characters), as tiktoken gives them: a token
        that starts inside a character counts from that character.

        Example (GPT-2): [31373, 995] -> ("hello world", [0, 5])
        """
        pieces = self.decode_tokens_bytes(tokens)
        offsets, characters = [], 0
        for piece in pieces:
            starts_inside = bool(piece) and 0x80 <= piece[0] < 0xC0  # a continuation byte
            offsets.append(max(0, characters - starts_inside))
            characters += sum(not 0x80 <= byte < 0xC0 for byte in piece)
        return b"".join(pieces).decode("utf-8", errors="strict"), offsets

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token."""
        return list(self.ranks)

    def is_special_token(self, token: int) -> bool:
        return token in self.special_ids

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.special_tokens)

    @property
    def eot_token(self) -> int:
        """The id of <|endoftext|>; KeyError if the tokenizer has none."""
        return self.special_tokens["<|endoftext|>"]

    @property
    def max_token_value(self) -> int:
        return max(self.decoder)

    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    @staticmethod
    def _on_threads(function, items, num_threads: int) -> list:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max(1, num_threads)) as pool:
            return list(pool.map(function, items))

    @cached_property
    def _special_finders(self) -> dict:
        return {}

    def _special_finder(self, tokens: frozenset[str]):
        """A regex that captures any of tokens (longest first), made once per set."""
        finder = self._special_finders.get(tokens)
        if finder is None:
            finder = self._special_finders.setdefault(tokens, special_splitter(tokens))
        return finder

    def encode_documents(self, documents: list[str], *, eot: int | None = None, dtype="uint32"):
        """Ids of many documents as one numpy array, each followed by eot (if given), and the
        position where each document's ids end. Special tokens in them count as text.

        Example (GPT-2): ["hello", "world"], eot=50256 -> ([31373, 50256, 6894, 50256], [2, 4])
        """
        import numpy as np

        if self._normalized is not None:
            documents = list(map(self._normalized, documents))
        if self._bulk_split is not None:
            try:
                data = [d.encode("utf-8") for d in documents]
            except UnicodeEncodeError:  # surrogates: the regex path deals with those
                pass
            else:
                return self._encode_bytes_bulk(data, eot=eot, dtype=dtype)
        ids: list[int] = []
        ends: list[int] = []
        for document in documents:
            ids += self._encode_normalized(document)
            if eot is not None:
                ids.append(eot)
            ends.append(len(ids))
        return np.array(ids, dtype=dtype), np.array(ends, dtype=np.int64)

    def _encode_long_text(self, texts: list[str], special_ids: list[int]) -> list[int] | None:
        """The ids of texts with special_ids[i] between texts[i] and texts[i + 1], by the
        vectorised path; None if a text holds a lone surrogate (UTF-8 cannot carry it)."""
        import numpy as np

        blocks: list[bytes] = []
        last_blocks = []
        try:
            for text in texts:
                blocks += [block.encode("utf-8") for block in _blocks(text)]
                last_blocks.append(len(blocks) - 1)
        except UnicodeEncodeError:
            return None
        ids, ends = self._encode_bytes_bulk(blocks, eot=None, dtype=np.int64)
        return np.insert(ids, ends[last_blocks[:-1]], special_ids).tolist()

    @cached_property
    def _bulk_split(self):
        """The vectorised pre-tokenizer for this pattern, if there is one (gpt2 and cl100k)."""
        from .pretokenize import vectorised_splitter

        return vectorised_splitter(self.pattern)

    def _encode_bytes_bulk(self, documents: list[bytes], *, eot: int | None, dtype):
        """encode_documents for the vectorised pre-tokenizer, a batch of about 4 MB at a time
        (arrays that fit the caches are several times faster than one huge batch)."""
        from .pretokenize import document_batches

        batches = list(document_batches(documents, _BULK_BATCH)) or [[]]
        if len(batches) == 1:
            return self._encode_batch_bulk(batches[0], eot=eot, dtype=dtype)
        return join_encoded([self._encode_batch_bulk(b, eot=eot, dtype=dtype) for b in batches])

    def _encode_batch_bulk(self, documents: list[bytes], *, eot: int | None, dtype):
        """BPE once per distinct piece, the ids put together with numpy. Pieces of up to 15
        bytes are found in the numpy piece table; longer ones in the dict cache, by their bytes."""
        import numpy as np

        from .pretokenize import pack_pieces

        data = b"".join(documents)
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        doc_starts = np.cumsum(lengths) - lengths
        bounds = self._split_apart(data, self._bulk_split(data, doc_starts))
        starts = bounds[:-1]
        # 1. a code for every piece, the same for equal pieces
        codes, low, high, mixed, long_pieces = pack_pieces(data, bounds)
        # 2. where the ids of every distinct piece are: short pieces in the piece table (BPE for
        #    those it lacks), long ones in the dict cache, written after the table's ids for now
        table = self._piece_table
        table.make_room(len(low))
        slots = table.find(low, high, mixed)
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            table.insert(low[missing], high[missing], mixed[missing], *self._bpe_packed(low[missing], high[missing]))
            slots = table.find(low, high, mixed)  # all again: inserting may have moved them
        cache = self._cache
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        long_ids: list = list(map(cache.get, long_pieces))
        cold = [i for i, found in enumerate(long_ids) if found is None]
        for i, found in zip(cold, self._bpe_batch([long_pieces[i] for i in cold])):
            long_ids[i] = cache[long_pieces[i]] = found
        long_sizes = np.fromiter(map(len, long_ids), dtype=np.int64, count=len(long_ids))
        long_at = table.scratch(np.fromiter(chain.from_iterable(long_ids), dtype=np.int64, count=int(long_sizes.sum())))
        table_sizes = np.concatenate([table.length[slots], long_sizes])
        table_starts = np.concatenate([table.start[slots], long_at + np.cumsum(long_sizes) - long_sizes])
        table_ids = table.ids
        # 3. put the ids of every piece in order, then eot after every document
        piece_sizes = table_sizes[codes]
        ids = table_ids[spans(table_starts[codes], piece_sizes)]
        # documents end where pieces do: a document's ids end where its last piece's ids end
        pieces_before = np.searchsorted(starts, doc_starts + lengths, "left")
        ends = np.concatenate(([0], np.cumsum(piece_sizes)))[pieces_before]
        if eot is not None:
            ids = np.insert(ids, ends, eot)
            ends = ends + np.arange(1, len(ends) + 1)
        return ids.astype(dtype), ends

    @cached_property
    def _token_arrays(self):
        """(every ordinary token's bytes end to end, where each starts, its length, its rank),
        the tokens in the order of ranks; the bulk tables are built from these."""
        import numpy as np

        sizes = np.fromiter(map(len, self.ranks), dtype=np.int64, count=len(self.ranks))
        values = np.fromiter(self.ranks.values(), dtype=np.int64, count=len(self.ranks))
        return b"".join(self.ranks), np.cumsum(sizes) - sizes, sizes, values

    @cached_property
    def _inner_byte_pairs(self):
        """For every two bytes a, b: whether some token holds b right after a (65,536 flags)."""
        import numpy as np

        joined, starts, _, _ = self._token_arrays
        data = np.frombuffer(joined, dtype=np.uint8).astype(np.int64)
        inner = np.ones(len(data) - 1, dtype=bool)
        inner[starts[1:] - 1] = False  # a token's last byte and the next token's first
        flags = np.zeros(1 << 16, dtype=bool)
        flags[(data[:-1] << 8 | data[1:])[inner]] = True
        return flags

    def _split_apart(self, data: bytes, bounds):
        """bounds with a cut added wherever no token holds the two bytes on either side: BPE never
        merges across such a cut, so the two sides encode alone to the same ids as together, and
        the short parts repeat far more often than whole pieces (a run of CJK characters is one
        GPT-2 piece; most of its character edges are such cuts). Only edges next to non-ASCII
        bytes are looked at: between ASCII bytes the cut is rare and looking costs time."""
        import numpy as np

        text = np.frombuffer(data, dtype=np.uint8)
        if len(text) < 2:
            return bounds
        after, before = text[1:], text[:-1]
        at = np.flatnonzero((after >= 0xC0) | ((after < 0x80) & (before >= 0x80))) + 1
        at = at[~self._inner_byte_pairs[text[at - 1].astype(np.int64) << 8 | text[at]]]
        if not len(at):
            return bounds
        is_bound = np.zeros(len(text) + 1, dtype=bool)
        is_bound[bounds] = True
        is_bound[at] = True
        return np.flatnonzero(is_bound)

    @property
    def _piece_table(self) -> _PieceTable:
        """This thread's numpy table of short pieces -> ids."""
        local = self._local  # type: ignore[attr-defined]
        if not hasattr(local, "piece_table"):
            local.piece_table = _PieceTable()
        return local.piece_table

    def clear_cache(self) -> None:
        """Forget the ids of every piece encoded so far (the dict and the numpy piece table, in
        every thread), so that the next encode is cold, as a fresh process's would be."""
        object.__setattr__(self, "_local", threading.local())

    def prepare_bulk(self) -> None:
        """Build the tables bulk encoding uses now, e.g. before forking workers that then share them."""
        if self._bulk_split is not None:
            self._pair_table, self._inner_byte_pairs, self._byte_ids

    @cached_property
    def _short_tokens(self) -> _PieceTable:
        """Every token of up to 15 bytes, packed as pretokenize.pack_spans does -> its rank (in start)."""
        import numpy as np

        from .pretokenize import PACKED_BYTES, pack_spans

        data, starts, sizes, values = self._token_arrays
        short = np.flatnonzero(sizes <= PACKED_BYTES)
        low, high = pack_spans(data, starts[short], sizes[short])
        return _PieceTable.of(low, high, values[short])

    @cached_property
    def _longest_token(self) -> int:
        return max(map(len, self.ranks))

    @cached_property
    def _byte_ids(self):
        """The id of each of the 256 one-byte tokens, by byte."""
        import numpy as np

        return np.array([self.ranks[t] for t in _BYTE_TOKENS], dtype=np.int64)

    @cached_property
    def _pair_table(self) -> _PairTable:
        """For every two tokens whose bytes joined are a token: (left, right) -> the joined
        token's rank, in a table numpy can look up many pairs in at once. Every cut of every
        token of up to 15 bytes is looked up with numpy; longer tokens in Python."""
        import numpy as np

        from .pretokenize import PACKED_BYTES, pack_spans, piece_hash

        ranks = self.ranks
        base = max(ranks.values()) + 1
        tokens = list(ranks)
        data, starts, sizes, values = self._token_arrays
        short = np.flatnonzero(sizes <= PACKED_BYTES)
        known = self._short_tokens

        def rank_of(span_starts, span_sizes):
            low, high = pack_spans(data, span_starts, span_sizes)
            slots = known.find(low, high, piece_hash(low, high))
            return np.where(slots >= 0, known.start[slots], -1)

        cut_tokens = short[sizes[short] >= 2]
        token = np.repeat(cut_tokens, sizes[cut_tokens] - 1)  # one row per cut of each token
        cut = spans(np.ones_like(cut_tokens), sizes[cut_tokens] - 1)  # 1, 2, ..., size - 1
        left = rank_of(starts[token], cut)
        right = rank_of(starts[token] + cut, sizes[token] - cut)
        both = (left >= 0) & (right >= 0)
        keys = [left[both] * base + right[both]]
        found = [values[token[both]]]
        extra: dict[int, int] = {}
        for i in np.flatnonzero(sizes > PACKED_BYTES).tolist():  # the few long tokens
            whole = tokens[i]
            for k in range(1, len(whole)):
                a, b = ranks.get(whole[:k]), ranks.get(whole[k:])
                if a is not None and b is not None:
                    extra[a * base + b] = int(values[i])
        keys.append(np.fromiter(extra, dtype=np.int64, count=len(extra)))
        found.append(np.fromiter(extra.values(), dtype=np.int64, count=len(extra)))
        return _PairTable(np.concatenate(keys), np.concatenate(found), base)

    def _bpe_batch(self, pieces: list[bytes]) -> list[tuple[int, ...]]:
        """The ids of many pieces, as _encode_piece gives them: a piece that is a token is one;
        the others merge with numpy (_bpe_spans).

        Example (GPT-2): [b" tokenizer", b"ingly"] -> [(11241, 7509), (4420,)]
        """
        import numpy as np

        results: list = [(rank,) if rank is not None else None for rank in map(self.ranks.get, pieces)]
        todo = [i for i, found in enumerate(results) if found is None]
        sizes = np.fromiter((len(pieces[i]) for i in todo), dtype=np.int64, count=len(todo))
        text = np.frombuffer(b"".join(pieces[i] for i in todo), dtype=np.uint8)
        ids, counts = self._bpe_spans(text, np.cumsum(sizes) - sizes, sizes)
        flat, at = ids.tolist(), 0
        for i, count in zip(todo, counts.tolist()):
            results[i] = tuple(flat[at : at + count])
            at += count
        return results

    def _bpe_packed(self, low, high):
        """(ids, counts): the ids of packed pieces of up to 15 bytes (see pretokenize.pack_spans),
        one after another, and how many each piece has; all in numpy, the pieces never becoming
        bytes objects. A piece that is a token is that token."""
        import numpy as np

        from .pretokenize import LENGTH_SHIFT, PACKED_ROW_BYTES, piece_hash

        tokens = self._short_tokens
        slots = tokens.find(low, high, piece_hash(low, high))
        is_token = slots >= 0
        sizes = (high >> np.uint64(LENGTH_SHIFT)).astype(np.int64)
        text = np.stack([low, high], axis=1).astype("<u8", copy=False).view(np.uint8).ravel()  # row i: piece i's bytes
        merged = np.flatnonzero(~is_token)
        merged_ids, merged_counts = self._bpe_spans(text, merged * PACKED_ROW_BYTES, sizes[merged])
        counts = np.ones(len(low), dtype=np.int64)
        counts[merged] = merged_counts
        ids = np.empty(int(counts.sum()), dtype=np.int64)
        starts = np.cumsum(counts) - counts
        ids[starts[is_token]] = tokens.start[slots[is_token]]
        ids[spans(starts[merged], merged_counts)] = merged_ids
        return ids, counts

    def _bpe_spans(self, text, starts, sizes):
        """(ids, counts) of the pieces text[start : start + size] (none of them a token, so each
        at least 2 bytes) merged as _merge_parts does. They merge in numpy rounds (_bpe_rounds),
        grouped by length so that a few long pieces do not keep all the short ones' rounds going;
        the longest go to _bpe_long, all in one call."""
        import numpy as np

        counts = np.zeros(len(sizes), dtype=np.int64)
        found = []
        for low, high in ((2, 16), (17, 31), (32, 63), (64, 127), (128, 255), (256, 511), (512, 1024)):
            members = np.flatnonzero((sizes >= low) & (sizes <= high))
            if len(members):
                symbols = self._byte_ids[text[spans(starts[members], sizes[members])]]
                ids, counts[members] = self._bpe_rounds(symbols, sizes[members])
                found.append((members, ids))
        members = np.flatnonzero(sizes > 1024)
        if len(members):
            ids, counts[members] = self._bpe_long(text, starts[members], sizes[members])
            found.append((members, ids))
        out = np.empty(int(counts.sum()), dtype=np.int64)
        out_starts = np.cumsum(counts) - counts
        for members, ids in found:
            out[spans(out_starts[members], counts[members])] = ids
        return out, counts

    def _bpe_rounds(self, symbols, sizes):
        """(ids, counts): many pieces (symbols: their bytes' ids, one piece after another; sizes:
        how many each has) merged at once with _merge_parts's result. Each round merges, in every
        piece still merging, its lowest-rank pair (the leftmost of equals), all with numpy; there
        are as many rounds as the longest piece needs merges.
        """
        import numpy as np

        pairs = self._pair_table
        base, none = pairs.base, np.int64(_NO_RANK)
        owner = np.repeat(np.arange(len(sizes)), sizes)  # the piece of each symbol, ascending
        first = np.ones(len(symbols), dtype=bool)  # the symbol starts its piece
        first[1:] = owner[1:] != owner[:-1]
        # the rank of each symbol's pair with the next one in its piece (none at a piece's end);
        # looked up once here, then only beside each merge
        pair_rank = np.full(len(symbols), none, dtype=np.int64)
        inner = np.flatnonzero(~first[1:])
        pair_rank[inner] = pairs.lookup(symbols[inner] * base + symbols[inner + 1])
        done_symbols, done_owners = [], []
        while len(symbols):
            best = np.minimum.reduceat(pair_rank, np.flatnonzero(first))
            finished = best == none
            if finished.any():  # pieces with nothing left to merge are done
                finished_symbols = finished[np.cumsum(first) - 1]
                done_symbols.append(symbols[finished_symbols])
                done_owners.append(owner[finished_symbols])
                keep = ~finished_symbols
                symbols, owner, pair_rank, first = symbols[keep], owner[keep], pair_rank[keep], first[keep]
                best = best[~finished]
            if len(best) <= _FEW_PIECES:  # a round's numpy calls cost more than a few pieces in Python
                decoder = self.decoder
                for piece in np.unique(owner).tolist():
                    ids = self._encode_piece(b"".join(map(decoder.__getitem__, symbols[owner == piece].tolist())))
                    done_symbols.append(np.array(ids, dtype=np.int64))
                    done_owners.append(np.full(len(ids), piece))
                break
            # merge the leftmost lowest-rank pair of every piece: the left symbol becomes the
            # joined token (its id is its rank), the right one goes
            segment = np.cumsum(first) - 1
            candidates = np.flatnonzero(pair_rank == best[segment])
            leftmost = np.ones(len(candidates), dtype=bool)
            leftmost[1:] = segment[candidates[1:]] != segment[candidates[:-1]]
            at = candidates[leftmost]
            symbols[at] = pair_rank[at]
            keep = np.ones(len(symbols), dtype=bool)
            keep[at + 1] = False
            symbols, owner, pair_rank, first = symbols[keep], owner[keep], pair_rank[keep], first[keep]
            # only the pairs beside each merged symbol change; it moved left by one per merge before it
            at -= np.arange(len(at))
            n = len(symbols)
            has_next = at + 1 < n
            has_next[has_next] = ~first[at[has_next] + 1]
            has_prev = ~first[at]
            pair_rank[at] = none
            touched = np.concatenate([at[has_next], at[has_prev] - 1])
            pair_rank[touched] = pairs.lookup(symbols[touched] * base + symbols[touched + 1])
        owners = np.concatenate([np.zeros(0, dtype=np.int64), *done_owners])
        order = np.argsort(owners, kind="stable")  # piece by piece, each in its own order
        return np.concatenate([np.zeros(0, dtype=np.int64), *done_symbols])[order], np.bincount(owners, minlength=len(sizes))

    def _bpe_long(self, text, starts, sizes):
        """(ids, counts) of long pieces text[start : start + size], exactly as _merge_parts gives
        them, in numpy rounds whose work is proportional to the pairs they change (a 20 MB run of
        one letter, a file without spaces). Each piece's symbols form a linked list over byte
        positions; the pairs of all pieces wait in buckets by rank.

        Each round takes the lowest rank r present and merges its pairs left to right, every other
        one in a run of overlapping pairs, as one-at-a-time BPE does while every pair a merge makes
        ranks above r. A merge that makes a pair ranked below r is followed (in BPE's order) by
        merges that only grow the token holding it; the pairs within the longest token's reach of
        it wait for a later round.
        """
        import numpy as np

        pairs = self._pair_table
        base, none = pairs.base, np.int32(np.iinfo(np.int32).max)
        n = int(sizes.sum())
        reach = self._longest_token  # bytes: no merge BPE makes spans more
        # one int32 per byte for each array: the symbols, the links, and the rank of the pair
        # that starts at each symbol (none at a piece's end); positions are bytes of the pieces
        symbols = self._byte_ids[text[spans(starts, sizes)]].astype(np.int32)
        piece_end = np.cumsum(sizes)  # where each piece's symbols end
        nxt = np.arange(1, n + 1, dtype=np.int32)
        nxt[piece_end - 1] = n  # n: no next symbol
        prv = np.arange(-1, n - 1, dtype=np.int32)
        prv[piece_end - sizes] = -1  # -1: no previous symbol
        rank = np.full(n, none, dtype=np.int32)
        alive = np.ones(n, dtype=bool)
        buckets: dict[int, list] = {}
        heap: list[int] = []

        def lookup(left, right):  # the rank of each pair (left, right), none where it is no token
            found = pairs.lookup(left.astype(np.int64) * base + right)
            return np.where(found == _NO_RANK, none, found).astype(np.int32)

        def put(r: int, group) -> None:  # pairs of rank r, waiting in its bucket
            if r not in buckets:
                buckets[r] = []
                heapq.heappush(heap, r)
            buckets[r].append(group)

        def wait(at):  # put the pairs starting at `at` into the buckets of their ranks
            at = at[rank[at] != none]
            if not len(at):
                return
            order = np.argsort(rank[at], kind="stable")
            at, ranks = at[order], rank[at[order]]
            edges = np.flatnonzero(ranks[1:] != ranks[:-1]) + 1
            for group, r in zip(np.split(at, edges), ranks[np.concatenate(([0], edges))].tolist()):
                put(r, group)

        for block in range(0, n, _LOOKUP_BLOCK):  # in blocks: no n-long temporaries
            at = np.arange(block, min(block + _LOOKUP_BLOCK, n), dtype=np.int32)
            at = at[nxt[at] < n]
            rank[at] = lookup(symbols[at], symbols[at + 1])
            wait(at)
        while heap:
            r = heapq.heappop(heap)
            at = sorted_distinct(np.concatenate(buckets.pop(r)))  # one wait() fills a bucket in order
            at = at[rank[at] == r]  # stale entries: merged away, or their pair changed
            if not len(at):
                continue
            # in a run of overlapping pairs (a a a), the first, third, ... merge
            overlapped = np.zeros(len(at), dtype=bool)
            overlapped[1:] = nxt[at[:-1]] == at[1:]
            run_start = np.maximum.accumulate(np.where(overlapped, 0, np.arange(len(at))))
            at = at[(np.arange(len(at)) - run_start) % 2 == 0]
            # the pairs each merge makes, as BPE makes them one merge after another: with the
            # merged token before it (if the one before merged too) and the symbol after it
            after = nxt[nxt[at]]
            right = np.where(after < n, lookup(np.full(len(at), r), symbols[np.minimum(after, n - 1)]), none)
            before = prv[at]
            merged_before = np.zeros(len(at), dtype=bool)
            merged_before[1:] = after[:-1] == at[1:]
            left_symbol = np.where(merged_before, r, symbols[np.maximum(before, 0)])
            left = np.where(before >= 0, lookup(left_symbol, np.full(len(at), r)), none)
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
            rank[gone] = none
            alive[gone] = False
            nxt[at] = after
            prv[after[after < n]] = at[after < n]
            # the pairs that changed: each merged token's own, and the one before it
            changed = sorted_distinct(np.concatenate([at, prv[at][prv[at] >= 0]]))
            following = nxt[changed]
            rank[changed] = np.where(following < n, lookup(symbols[changed], symbols[np.minimum(following, n - 1)]), none)
            wait(changed)
        left = np.flatnonzero(alive)  # the symbols left, in order
        return symbols[left].astype(np.int64), np.bincount(np.searchsorted(piece_end, left, "right"), minlength=len(sizes))

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ids (a list, or a numpy array such as a shard); an id outside the
        vocabulary is an error naming it."""
        if hasattr(ids, "dtype"):
            return self._decode_array(ids)
        decoder = self.decoder
        try:
            return b"".join(map(decoder.__getitem__, ids))
        except (KeyError, TypeError):
            bad = next(i for i in ids if i not in decoder)
            raise UnknownIdError(f"id {bad} is not in the vocabulary (0..{max(decoder)})") from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ids; bytes that are not valid UTF-8 become U+FFFD, or an error if strict."""
        if not hasattr(ids, "dtype"):
            ids = list(ids)  # an iterator would be used up by the error path
        data = self.decode_bytes(ids)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as e:
            raise BpecliError(
                f"the ids decode to invalid UTF-8 at byte {e.start}; use --errors replace to see U+FFFD instead"
            ) from None

    @cached_property
    def _byte_table(self):
        """(all tokens' bytes end to end, where each one's bytes start, how many, and the ids in
        order or None): indexed by id, or, when the ids are sparse (a special token at 4e9), by
        an id's place among the sorted ids, so the table never outgrows the vocabulary."""
        import numpy as np

        ordered = sorted(self.decoder.items())
        ids = np.array([i for i, _ in ordered], dtype=np.int64)
        sizes = np.array([len(t) for _, t in ordered], dtype=np.int64)
        data = np.frombuffer(b"".join(t for _, t in ordered), dtype=np.uint8)
        starts = np.cumsum(sizes) - sizes
        if ids[-1] >= 2 * len(ids) + 1024:
            return data, starts, sizes, ids
        lengths = np.zeros(ids[-1] + 1, dtype=np.int64)
        by_id = np.zeros(ids[-1] + 1, dtype=np.int64)
        lengths[ids], by_id[ids] = sizes, starts
        return data, by_id, lengths, None

    def _decode_array(self, ids) -> bytes:
        import numpy as np

        data, starts, lengths, sparse = self._byte_table
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise BpecliError(f"token ids must be integers, not {ids.dtype}")
        blocks = []
        for at in range(0, len(ids), 1 << 16):  # blocks whose index arrays fit the caches: 2x faster
            block = ids[at : at + (1 << 16)].astype(np.int64)
            if sparse is not None:
                where = np.minimum(np.searchsorted(sparse, block), len(sparse) - 1)
                bad = sparse[where] != block
            else:
                where = np.clip(block, 0, len(lengths) - 1)
                bad = (block < 0) | (block >= len(lengths)) | (lengths[where] == 0)
            if bad.any():
                raise UnknownIdError(f"id {block[bad][0]} is not in the vocabulary")
            blocks.append(data[spans(starts[where], lengths[where])].tobytes())
        return b"".join(blocks)

    def _encode_piece(self, piece: bytes) -> tuple[int, ...]:
        ranks = self.ranks
        rank = ranks.get(piece)
        if rank is not None:  # a piece that is itself a token is one token
            return (rank,)
        if len(piece) > _NUMPY_PIECE:
            import numpy as np

            ids, _ = self._bpe_long(np.frombuffer(piece, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.array([len(piece)]))
            return tuple(ids.tolist())
        return tuple(ranks[part] for part in _merge_parts(piece, ranks))


def check_special_tokens(special_tokens: dict[str, int]) -> None:
    """Special tokens are non-empty text with ids from 0 on: an empty one would match between
    every two characters of every text."""
    for token, rank in special_tokens.items():
        if not isinstance(token, str) or not token:
            raise BpecliError(f"a special token must be non-empty text, not {token!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise BpecliError(f"special token {token!r}: its id {rank!r} is not a whole number from 0 on")


_NO_RANK = 1 << 62
# Lookups of more pairs than this go in blocks, so their temporaries stay small.
_LOOKUP_BLOCK = 1 << 20
# _bpe_rounds hands the last pieces still merging to Python when no more than this many are left.
_FEW_PIECES = 64


class _PairTable:
    """Pair keys (left * base + right) -> the rank of the joined token, kept in a _PieceTable
    (the key as a piece's low word, a high word of 1) so that numpy looks up many at once."""

    def __init__(self, keys, values, base: int):
        import numpy as np

        self.base = base
        self.table = _PieceTable.of(keys.astype(np.uint64), np.ones(len(keys), dtype=np.uint64), values)

    def lookup(self, wanted):
        """The value of each key in wanted; _NO_RANK for a key that is not in the table."""
        import numpy as np

        from .pretokenize import piece_hash

        if len(wanted) > _LOOKUP_BLOCK:
            return np.concatenate([self.lookup(wanted[at : at + _LOOKUP_BLOCK]) for at in range(0, len(wanted), _LOOKUP_BLOCK)])
        low, high = wanted.astype(np.uint64), np.ones(len(wanted), dtype=np.uint64)
        slots = self.table.find(low, high, piece_hash(low, high))
        return np.where(slots >= 0, self.table.start[slots], _NO_RANK)


class _PieceTable:
    """Pieces of up to 15 bytes (as pretokenize.pack_pieces gives them: low, high, mixed) ->
    their ids, for numpy: an open-addressing table whose values are (start, length) in one
    growing array of ids. Lookups and inserts take whole arrays of pieces."""

    LIMIT = 1 << 21  # pieces kept before the table starts afresh (memory stays bounded)

    def __init__(self):
        import numpy as np

        self.ids = np.empty(1 << 16, dtype=np.int64)
        self.used = 0
        self._allocate(16)

    def _allocate(self, bits: int) -> None:
        import numpy as np

        size = 1 << bits
        self.shift, self.mask = np.uint64(64 - bits), size - 1
        self.low = np.zeros(size, dtype=np.uint64)
        self.high = np.zeros(size, dtype=np.uint64)  # 0: an empty slot (a piece's high holds its length)
        self.start = np.zeros(size, dtype=np.int64)
        self.length = np.zeros(size, dtype=np.int64)
        self.count = 0

    @classmethod
    def of(cls, low, high, values) -> _PieceTable:
        """A table of distinct pieces whose value (in start) is values[i]."""
        import numpy as np

        from .pretokenize import piece_hash

        table = cls()
        table._allocate(max(16, (4 * len(low)).bit_length()))
        table._place(low, high, piece_hash(low, high), values, np.ones(len(low), dtype=np.int64))
        return table

    def make_room(self, n: int) -> None:
        """Start afresh if n more pieces could take the table past LIMIT (call before find)."""
        if self.count + n > self.LIMIT:
            self.used = 0
            self._allocate(16)

    def find(self, low, high, mixed):
        """The slot of each piece, or -1 where the table does not have it."""
        import numpy as np

        out = np.full(len(low), -1, dtype=np.int64)
        todo = np.arange(len(low))
        slots = (mixed >> self.shift).astype(np.int64)
        while len(todo):
            found = self.high[slots]
            hit = (found == high[todo]) & (self.low[slots] == low[todo])
            out[todo[hit]] = slots[hit]
            go_on = ~hit & (found != 0)
            todo, slots = todo[go_on], (slots[go_on] + 1) & self.mask
        return out

    def insert(self, low, high, mixed, ids, counts) -> None:
        """Add pieces the table does not have, with their ids (one piece's after another's;
        counts: how many each has)."""
        import numpy as np

        from .pretokenize import piece_hash

        if 2 * (self.count + len(low)) > len(self.high):  # keep the load under one half
            kept = np.flatnonzero(self.high)
            old = self.low[kept], self.high[kept], self.start[kept], self.length[kept]
            self._allocate((4 * (self.count + len(low))).bit_length())
            self._place(old[0], old[1], piece_hash(old[0], old[1]), old[2], old[3])
        at = self.scratch(ids)
        self.used += len(ids)
        self._place(low, high, mixed, at + np.cumsum(counts) - counts, counts)

    def scratch(self, flat) -> int:
        """Write ids after the table's own and return where they start; the next call or insert
        writes over them."""
        import numpy as np

        if self.used + len(flat) > len(self.ids):
            grown = np.empty(2 * (self.used + len(flat)), dtype=np.int64)
            grown[: self.used] = self.ids[: self.used]
            self.ids = grown
        self.ids[self.used : self.used + len(flat)] = flat
        return self.used

    def _place(self, low, high, mixed, start, length) -> None:
        import numpy as np

        todo = np.arange(len(low))
        slots = (mixed >> self.shift).astype(np.int64)
        while len(todo):  # each round, every free slot takes the first piece that wants it
            free = self.high[slots] == 0
            claimed, first = np.unique(slots[free], return_index=True)
            chosen = np.flatnonzero(free)[first]
            piece = todo[chosen]
            self.low[claimed], self.high[claimed] = low[piece], high[piece]
            self.start[claimed], self.length[claimed] = start[piece], length[piece]
            rest = np.ones(len(todo), dtype=bool)
            rest[chosen] = False
            todo, slots = todo[rest], (slots[rest] + 1) & self.mask
        self.count += len(low)


def join_encoded(results: list[tuple]):
    """encode_documents results of consecutive batches as one (ids, document ends).

    Example: [([1, 2], [2]), ([3], [1])] -> ([1, 2, 3], [2, 3])
    """
    import numpy as np

    shifts = np.cumsum([0] + [len(ids) for ids, _ in results[:-1]])
    return (
        np.concatenate([ids for ids, _ in results]),
        np.concatenate([ends + shift for (_, ends), shift in zip(results, shifts)]),
    )


def _blocks(text: str, size: int = _BULK_BATCH) -> list[str]:
    """text cut into blocks of about `size` characters where a piece surely starts (SAFE_CUT),
    so each block encodes as a document."""
    blocks, start = [], 0
    while len(text) - start > size:
        found = _SAFE_CUT.search(text, start + size)
        if found is None:
            break
        blocks.append(text[start : found.start()])
        start = found.start()
    blocks.append(text[start:])
    return blocks


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
        rank_of = lambda pair, default: min(ranks.get(pair, default), default)  # type: ignore[assignment]  # noqa: E731

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


def _all_space(token: bytes) -> bool:
    return all(byte in b" \n\t" for byte in token)


def render_token(token: bytes) -> str:
    """A token as people can read it: control characters escaped, bytes that are not valid
    UTF-8 shown as \\xNN.

    Example: b"\\n\\xe2\\x82" -> "\\\\n\\\\xe2\\\\x82"
    """
    import unicodedata

    text = token.decode("utf-8", errors="backslashreplace")
    return "".join(
        char.encode("unicode_escape").decode("ascii") if unicodedata.category(char)[0] == "C" else char for char in text
    )


def describe(tok: Tokenizer, top: int = 10) -> dict:
    """What `bpecli inspect TOK` shows: sizes, special tokens, pattern, the longest tokens, how
    many tokens have each byte length, and the first and last merges."""
    from collections import Counter

    from .pretokenize import PATTERNS

    longest = sorted(tok.ranks.items(), key=lambda item: (-len(item[0]), item[1]))[:top]
    merges = tok.merges
    return {
        "vocab_size": tok.vocab_size,
        "ordinary_tokens": len(tok.ranks),
        "merges": len(merges),
        "special_tokens": dict(sorted(tok.special_tokens.items(), key=lambda item: item[1])),
        "pattern": next((name for name, p in PATTERNS.items() if p == tok.pattern), tok.pattern),
        "normalize": list(tok.normalize),
        "longest_tokens": [{"id": rank, "token": render_token(token), "bytes": len(token)} for token, rank in longest],
        "byte_lengths": dict(sorted(Counter(len(token) for token in tok.ranks).items())),
        "first_merges": [[render_token(a), render_token(b)] for a, b in merges[:top]],
        "last_merges": [[render_token(a), render_token(b)] for a, b in merges[-top:]],
    }
