"""The Tokenizer: ranks, special tokens and a pattern; encode and decode with tiktoken's semantics.
Short texts go through the regex and BPE of one piece (encoding/reference.py); long texts and many documents
through the bulk engine (bulk/), which the Tokenizer holds as a handle."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Set as AbstractSet
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import regex

from .encoding.reference import NUMPY_PIECE, merge_parts, piece_ids
from .errors import BpecliError, DisallowedSpecialError, UnknownIdError
from .normalize import check as normalize_steps, normalizer
from .perthread import PerThread
from .pretokenize import SAFE_CUT, is_preset, safe_blocks, special_splitter, splitter, uncovered_error, vectorised_splitter

if TYPE_CHECKING:
    from .bulk import BulkEncoder, VocabTables

# numpy and the bulk engine are imported where first used, not here: `import bpecli` stays light
# for shell one-liners, and the CLI blocks SIGTERM and SIGINT before numpy starts its threads
# (a thread started earlier would take those signals where no one waits for them).

# The largest id a token may have: ids and ranks are int32 in the bulk engine, which keeps
# 2**31 - 1 for "no rank".
MAX_ID = 2**31 - 2
# The piece -> ids cache is cleared when it grows past this many entries.
_CACHE_LIMIT = 1 << 20
# Texts at least this long are encoded by the vectorised path (when the pattern has one); shorter
# ones by the regex, which starts faster. The vectorised path takes them in blocks of about
# _BLOCK_CHARS characters.
_BULK_TEXT = 1 << 16
_BLOCK_CHARS = 1 << 22
# encode_documents cuts a document longer than this at safe cuts: the bulk engine's batch size
# (bulk.engine.BULK_BATCH, not imported here: it brings numpy into a one-line encode).
_BLOCK_BYTES = 1 << 22
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
        object.__setattr__(self, "_caches", PerThread(dict))

    def __getstate__(self) -> dict:
        """Only the fields travel to another process; it derives its tables itself."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_caches", PerThread(dict))

    @classmethod
    def load(cls, path: str | Path, **options) -> Tokenizer:
        """Read any tokenizer format bpecli knows (see formats.load)."""
        from .formats import load

        return load(path, **options)

    def save(self, out_dir: str | Path, *, force: bool = False) -> Path:
        """Write every file format into out_dir, atomically (see formats.save)."""
        from .formats import save

        return save(self, out_dir, force=force)

    @property
    def vocab_size(self) -> int:
        return len(self.ranks) + len(self.special_tokens)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the files it was read from (or its ranks), its pattern and special tokens."""
        import hashlib
        import json
        import os

        from .folders import identity

        digest = hashlib.sha256()
        if self.files:
            read = getattr(self, "_read_files", None)  # set by formats.load: the files it read, told apart
            for index, name in enumerate(self.files):
                with open(name, "rb") as file:
                    if read is not None and identity(os.fstat(file.fileno())) != read[index]:
                        raise BpecliError(f"{name} was replaced after bpecli read it (by a train --force?); run again")
                    digest.update(hashlib.sha256(file.read()).digest())
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
                parts = merge_parts(token, self.ranks, max_rank=rank)
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
        return splitter(self.pattern)

    @cached_property
    def _findall_ascii(self):
        return splitter(self.pattern, plain=True)

    @property
    def _cache(self) -> dict[str, tuple[int, ...]]:
        """This thread's piece -> ids dict (pieces of every length on the regex path, long ones in bulk)."""
        return self._caches.get()  # type: ignore[attr-defined]  # set in __post_init__

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text with special tokens treated as plain text.

        Example (GPT-2): "hello world" -> [31373, 995]
        """
        if self._normalized is not None:
            text = self._normalized(text)
        return self._encode_normalized(text)

    def _encode_normalized(self, text: str) -> list[int]:
        if len(text) >= _BULK_TEXT and self._bulk is not None:
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
        if len(text) >= _BULK_TEXT and self._bulk is not None:
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

    def encode_documents(self, documents: list[str] | list[bytes], *, eot: int | None = None, dtype="uint32"):
        """Ids of many documents as one numpy array, each followed by eot (if given), and the
        position where each document's ids end. Special tokens in them count as text. Documents
        may be valid UTF-8 bytes (as corpus.read_document_bytes gives them).

        Example (GPT-2): ["hello", "world"], eot=50256 -> ([31373, 50256, 6894, 50256], [2, 4])
        """
        import numpy as np

        if documents and isinstance(documents[0], bytes):
            if self._normalized is None and self._bulk is not None:
                return self._bulk_encode(cast("list[bytes]", documents), eot, dtype)
            documents = [cast(bytes, d).decode("utf-8") for d in documents]
        texts = cast("list[str]", documents)
        if self._normalized is not None:
            texts = list(map(self._normalized, texts))
        if self._bulk is not None:
            try:
                data = [d.encode("utf-8") for d in texts]
            except UnicodeEncodeError:  # surrogates: the regex path deals with those
                pass
            else:
                return self._bulk_encode(data, eot, dtype)
        ids: list[int] = []
        ends: list[int] = []
        for document in texts:
            ids += self._encode_normalized(document)
            if eot is not None:
                ids.append(eot)
            ends.append(len(ids))
        return np.array(ids, dtype=dtype), np.array(ends, dtype=np.int64)

    def _bulk_encode(self, documents: list[bytes], eot: int | None, dtype):
        """The bulk engine's encode_documents, with a document longer than a batch cut at safe cuts
        first: the engine's arrays take some 40 bytes per byte of a batch, and a batch is never
        smaller than its longest document (a 20 MB JSONL line took 900 MB)."""
        import numpy as np

        if all(len(d) <= _BLOCK_BYTES for d in documents):
            return self._bulk.encode(documents, eot=eot, dtype=dtype)  # type: ignore[union-attr]
        blocks: list[bytes] = []
        last = []  # the index of each document's last block
        for document in documents:
            blocks += safe_blocks(document, _BLOCK_BYTES) if len(document) > _BLOCK_BYTES else [document]
            last.append(len(blocks) - 1)
        ids, ends = self._bulk.encode(blocks, eot=None, dtype=dtype)  # type: ignore[union-attr]
        ends = ends[last]
        if eot is not None:
            ids = np.insert(ids, ends, eot).astype(dtype, copy=False)
            ends = ends + np.arange(1, len(ends) + 1)
        return ids, ends

    def _encode_long_text(self, texts: list[str], special_ids: list[int]) -> list[int] | None:
        """The ids of texts with special_ids[i] between texts[i] and texts[i + 1], by the
        vectorised path; None if a text holds a lone surrogate (UTF-8 cannot carry it) or the
        pattern has no vectorised splitter."""
        import numpy as np

        if self._bulk is None:
            return None
        blocks: list[bytes] = []
        last_blocks = []
        try:
            for text in texts:
                blocks += [block.encode("utf-8") for block in _blocks(text)]
                last_blocks.append(len(blocks) - 1)
        except UnicodeEncodeError:
            return None
        ids, ends = self._bulk.encode(blocks, eot=None, dtype=np.int64)
        return np.insert(ids, ends[last_blocks[:-1]], special_ids).tolist()

    @cached_property
    def _vocabulary(self) -> VocabTables:
        from .bulk import VocabTables

        return VocabTables(self.ranks)

    @cached_property
    def _bulk(self) -> BulkEncoder | None:
        """The bulk encoder, if the pattern has a vectorised splitter (the presets)."""
        from .bulk import BulkEncoder

        split = vectorised_splitter(self.pattern)
        return BulkEncoder(self._vocabulary, split) if split is not None else None

    def _encode_piece(self, piece: bytes) -> tuple[int, ...]:
        if len(piece) > NUMPY_PIECE:  # (only then numpy: a one-liner's pieces never load it)
            from .bulk.merge import encode_piece

            return encode_piece(self._vocabulary, piece)
        return piece_ids(piece, self.ranks)

    def clear_cache(self) -> None:
        """Forget the ids of every piece encoded so far (the dict and the bulk encoder's, in
        every thread), so that the next encode is cold, as a fresh process's would be."""
        self._caches.reset()  # type: ignore[attr-defined]
        if self._bulk is not None:
            self._bulk.clear_cache()

    def prepare_bulk(self) -> None:
        """Build the tables bulk encoding uses now, e.g. before forking workers that then share them."""
        if self._bulk is not None:
            self._bulk.prepare()

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
        from .arrays import spans

        data, starts, lengths, sparse = self._byte_table
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise BpecliError(f"token ids must be integers, not {ids.dtype}")
        blocks = []
        for at in range(0, len(ids), 1 << 16):  # blocks whose index arrays fit the caches: 2x faster
            # (a uint64 id past int64 turns negative here: outside the vocabulary, and named as it was)
            block = ids[at : at + (1 << 16)].astype(np.int64)
            if sparse is not None:
                where = np.minimum(np.searchsorted(sparse, block), len(sparse) - 1)
                bad = sparse[where] != block
            else:
                where = np.clip(block, 0, len(lengths) - 1)
                bad = (block < 0) | (block >= len(lengths)) | (lengths[where] == 0)
            if bad.any():
                raise UnknownIdError(f"id {ids[at + int(np.argmax(bad))]} is not in the vocabulary")
            blocks.append(data[spans(starts[where], lengths[where])].tobytes())
        return b"".join(blocks)

def check_special_tokens(special_tokens: dict[str, int]) -> None:
    """Special tokens are non-empty text with ids from 0 on: an empty one would match between
    every two characters of every text."""
    for token, rank in special_tokens.items():
        if not isinstance(token, str) or not token:
            raise BpecliError(f"a special token must be non-empty text, not {token!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise BpecliError(f"special token {token!r}: its id {rank!r} is not a whole number from 0 on")


def _blocks(text: str, size: int = _BLOCK_CHARS) -> list[str]:
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


def _all_space(token: bytes) -> bool:
    return all(byte in b" \n\t" for byte in token)


# How a space shows in a rendered token: visible, so that " the" and "the " differ on screen.
VISIBLE_SPACE = "\u2423"  # ␣
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def token_parts(token: bytes) -> list[tuple[str, bool]]:
    """A token as people can read it, in runs of (text, is_marker): a marker stands for what
    would not show, a space (␣), a control or other invisible character (\\n, \\u200b), or a
    byte that is not valid UTF-8 on its own (\\xe2). A page or a terminal may dim the markers.

    Example: b" a\\n\\xe2" -> [("␣", True), ("a", False), ("\\\\n\\\\xe2", True)]
    """
    import unicodedata

    parts: list[tuple[str, bool]] = []
    for char in token.decode("utf-8", errors="surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept aside: not UTF-8 on its own
            shown, marker = f"\\x{code - 0xDC00:02x}", True
        elif char == " ":
            shown, marker = VISIBLE_SPACE, True
        elif unicodedata.category(char)[0] in "CZ":  # controls, format characters, other spaces
            shown, marker = _SHORT_ESCAPES.get(char) or _escape(code), True
        else:
            shown, marker = char, False
        if parts and parts[-1][1] == marker:
            parts[-1] = (parts[-1][0] + shown, marker)
        else:
            parts.append((shown, marker))
    return parts


def _escape(code: int) -> str:
    """An invisible character's escape: \\xNN for ASCII only, so it never reads as a stray byte."""
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def render_token(token: bytes) -> str:
    """A token as people can read it (see token_parts), the one way bpecli shows a token.

    Example: b" hi\\n" -> "␣hi\\\\n"; b"\\xe2\\x82" -> "\\\\xe2\\\\x82"
    """
    return "".join(text for text, _ in token_parts(token))


def describe(tok: Tokenizer, top: int = 10) -> dict:
    """What a tokenizer is, for `bpecli inspect TOK` and its report: sizes, special tokens,
    pattern, the longest tokens, how many tokens have each byte length, and the first and last
    merges (each as the id it makes and the two tokens it joins)."""
    from collections import Counter

    from .pretokenize import PATTERNS

    longest = sorted(tok.ranks.items(), key=lambda item: (-len(item[0]), item[1]))[:top]
    # every token longer than a byte is one merge; only the first and last few are recovered (all
    # of them take seconds for a 100k vocabulary read from ranks alone)
    if tok.trained_merges:
        n_merges, first, last = len(tok.trained_merges), tok.trained_merges[:top], tok.trained_merges[len(tok.trained_merges) - top :]
    else:
        longer = sorted((rank, token) for token, rank in tok.ranks.items() if len(token) > 1)
        n_merges = len(longer)
        first, last = (tuple(_merge_of(tok, token, rank) for rank, token in part)
                       for part in (longer[:top], longer[len(longer) - top :] if top else []))

    def merge(a: bytes, b: bytes) -> dict:
        return {"id": tok.ranks[a + b], "left": render_token(a), "right": render_token(b),
                "left_id": tok.ranks[a], "right_id": tok.ranks[b]}

    return {
        "vocab_size": tok.vocab_size,
        "ordinary_tokens": len(tok.ranks),
        "merges": n_merges,
        "special_tokens": dict(sorted(tok.special_tokens.items(), key=lambda item: item[1])),
        "pattern": next((name for name, p in PATTERNS.items() if p == tok.pattern), tok.pattern),
        "normalize": list(tok.normalize),
        "longest_tokens": [{"id": rank, "token": render_token(token), "bytes": len(token)} for token, rank in longest],
        "byte_lengths": dict(sorted(Counter(len(token) for token in tok.ranks).items())),
        "first_merges": [merge(a, b) for a, b in first],
        "last_merges": [merge(a, b) for a, b in last],
    }


def _merge_of(tok: Tokenizer, token: bytes, rank: int) -> tuple[bytes, bytes]:
    """The two tokens a merge joined: BPE of the token's bytes with the ranks below its own."""
    parts = merge_parts(token, tok.ranks, max_rank=rank)
    if len(parts) != 2:
        raise BpecliError(f"token {token!r} (id {rank}) is not the merge of two tokens")
    return parts[0], parts[1]
