"""Text to ids with tiktoken's semantics: special tokens allowed or refused, normalization, the
regex's pre-tokens each encoded once per thread (reference.py's BPE), and long texts and many
documents handed to the bulk engine where the pattern has a vectorised splitter."""

from __future__ import annotations

from collections.abc import Collection, Set as AbstractSet
from functools import cached_property
from itertools import chain
from typing import TYPE_CHECKING, Literal, cast

import regex

from ..errors import BpecliError, DisallowedSpecialError
from ..normalize import normalizer
from ..perthread import PerThread
from ..pretokenize import is_preset, safe_blocks, special_splitter, splitter, uncovered_error, vectorised_splitter
from .reference import NUMPY_PIECE, piece_ids

if TYPE_CHECKING:
    from ..bulk import BulkEncoder, VocabTables
    from ..vocab import Vocab

# numpy and the bulk engine are imported where first used, not here: a one-line encode never
# loads them, and the CLI blocks SIGTERM and SIGINT before numpy starts its threads (a thread
# started earlier would take those signals where no one waits for them).

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

Allowed = Literal["all"] | AbstractSet[str]
Disallowed = Literal["all"] | Collection[str]


class TextEncoder:
    """A vocabulary's encoder. What it learns as it goes (pre-token -> ids) is kept per thread:
    threads that share it each have their own, as tiktoken's Rust core does; the derived tables
    (cached properties) are built once and only read."""

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self._caches: PerThread[dict[str, tuple[int, ...]]] = PerThread(dict)
        self._special_finders: dict[frozenset[str], regex.Pattern] = {}
        self._tables_kept = False  # the bulk tables came from the cache, or went into it

    @cached_property
    def _normalized(self):
        """The text as the tokenizer splits it: normalized, if it normalizes (else None)."""
        return normalizer(self.vocab.normalize) if self.vocab.normalize else None

    @cached_property
    def _covers(self) -> bool:
        """The presets keep every character; a custom pattern's pieces are checked to."""
        return is_preset(self.vocab.pattern)

    @cached_property
    def _findall(self):
        return splitter(self.vocab.pattern)

    @cached_property
    def _findall_ascii(self):
        return splitter(self.vocab.pattern, plain=True)

    @cached_property
    def tables(self) -> VocabTables:
        """The bulk encoder's tables: those kept in the cache for this vocabulary, if any (see
        formats.cache), else built as they are first used."""
        from ..bulk import VocabTables
        from ..formats import cache

        tables = VocabTables(self.vocab.ranks)
        kept = cache.load_tables(self.vocab)
        if kept is not None:
            try:
                tables.adopt(kept)
                self._tables_kept = True
            except ValueError:  # not what this bpecli keeps: built as they are used
                pass
        return tables

    @cached_property
    def bulk(self) -> BulkEncoder | None:
        """The bulk encoder, if the pattern has a vectorised splitter (the presets)."""
        from ..bulk import BulkEncoder

        split = vectorised_splitter(self.vocab.pattern)
        return BulkEncoder(self.tables, split) if split is not None else None

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of text with special tokens treated as plain text."""
        if self._normalized is not None:
            text = self._normalized(text)
        return self._encode_normalized(self._prefixed(text))

    def _prefixed(self, text: str) -> str:
        """text with the space add_prefix_space puts before it, as Hugging Face's ByteLevel does:
        before a text that is not empty and does not start with one."""
        return " " + text if self.vocab.add_prefix_space and text and text[0] != " " else text

    def _encode_normalized(self, text: str) -> list[int]:
        if len(text) >= _BULK_TEXT and self.bulk is not None:
            ids = self._encode_long_text([text], [])
            if ids is not None:
                return ids
        # ASCII text splits alike under every Unicode version: the plain pattern compiles faster
        pieces = self._findall_ascii(text) if text.isascii() else self._findall(text)
        if not self._covers and sum(map(len, pieces)) != len(text):
            raise uncovered_error(self.vocab.pattern, text)
        cache = self._caches.get()
        try:  # a warm cache knows every piece: no need to find the new ones first
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))
        except KeyError:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            try:
                for piece in set(pieces).difference(cache):
                    cache[piece] = self.encode_piece(piece.encode("utf-8"))
            except UnicodeEncodeError:  # as tiktoken does: a surrogate pair joins, a lone one is U+FFFD
                return self._encode_normalized(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
            return list(chain.from_iterable(map(cache.__getitem__, pieces)))

    def encode(self, text: str, *, allowed_special: Allowed = frozenset(), disallowed_special: Disallowed = "all") -> list[int]:
        """Ids of text, as tiktoken's Encoding.encode: special tokens in allowed_special become their
        ids, those in disallowed_special (by default every one not allowed) raise
        DisallowedSpecialError, any other is encoded as text."""
        specials = self.vocab.special_tokens
        allowed = set(specials) if allowed_special == "all" else set(allowed_special)
        disallowed = set(specials) - allowed if disallowed_special == "all" else set(disallowed_special)
        if disallowed and (found := self._special_finder(frozenset(disallowed)).search(text)):
            raise DisallowedSpecialError(
                f"the text holds the special token {found.group()!r}: pass allowed_special to encode it as "
                "its id, or disallowed_special=() to encode it as text"
            )
        allowed &= set(specials)
        if not allowed:
            return self.encode_ordinary(text)
        parts = self._special_finder(frozenset(allowed)).split(text)
        if self.vocab.strips:
            _strip_beside(parts, self.vocab.strips)
        if self._normalized is not None:  # the text between special tokens, as Hugging Face does
            parts[::2] = map(self._normalized, parts[::2])
        parts[::2] = map(self._prefixed, parts[::2])  # each text between special tokens, as Hugging Face does
        if len(text) >= _BULK_TEXT and self.bulk is not None:
            found = self._encode_long_text(parts[::2], [specials[p] for p in parts[1::2]])
            if found is not None:
                return found
        ids: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(specials[part])
            elif part:
                ids.extend(self._encode_normalized(part))
        return ids

    def encode_bytes(self, text: bytes) -> list[int]:
        """Ids of raw bytes, as tiktoken's Encoding._encode_bytes: valid UTF-8 is encoded as text;
        otherwise the valid part is, and its last piece (with the whitespace tokens before it) is
        encoded again together with the bytes that follow, as one piece."""
        if self.vocab.normalize:
            raise BpecliError("this tokenizer normalizes text, and bytes that are not UTF-8 are no text to normalize; "
                              "decode them first")
        if self.vocab.add_prefix_space and text[:1] not in (b"", b" "):
            text = b" " + text
        try:
            return self._encode_normalized(text.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid_up_to = e.start
        valid = text[:valid_up_to].decode("utf-8")
        pieces = self._findall(valid)
        ids = self._encode_normalized(valid)
        decoder = self.vocab.decoder
        last = len(self.encode_piece(pieces[-1].encode("utf-8"))) if pieces else 0
        while 0 < last < len(ids) and _all_space(decoder[ids[-1]]) and _all_space(decoder[ids[-last - 1]]):
            last += 1
        unstable = b"".join(map(decoder.__getitem__, ids[len(ids) - last :])) + text[valid_up_to:]
        return ids[: len(ids) - last] + list(self.encode_piece(unstable))

    def encode_piece(self, piece: bytes) -> tuple[int, ...]:
        """The ids of one pre-token: in Python, or, for a long one, in the bulk engine's linked list."""
        if len(piece) > NUMPY_PIECE:  # (only then numpy: a one-liner's pieces never load it)
            from ..bulk.merge import encode_piece

            return encode_piece(self.tables, piece)
        return piece_ids(piece, self.vocab.ranks)

    def _special_finder(self, tokens: frozenset[str]) -> regex.Pattern:
        """A regex that captures any of tokens (longest first), made once per set."""
        finder = self._special_finders.get(tokens)
        if finder is None:
            finder = self._special_finders.setdefault(tokens, cast(regex.Pattern, special_splitter(tokens)))
        return finder

    def encode_documents(self, documents: list[str] | list[bytes], *, eot: int | None = None, dtype="uint32"):
        """Ids of many documents as one numpy array, each followed by eot (if given), and the
        position where each document's ids end. Special tokens in them count as text. Documents
        may be valid UTF-8 bytes."""
        import numpy as np

        if documents and isinstance(documents[0], bytes):
            try:
                if self._normalized is None and self.bulk is not None:
                    data = cast("list[bytes]", documents)
                    if self.vocab.add_prefix_space:
                        data = [b" " + d if d[:1] not in (b"", b" ") else d for d in data]
                    return self._bulk_encode(data, eot, dtype)
                documents = [cast(bytes, d).decode("utf-8") for d in documents]
            except ValueError:  # the splitters' NotUTF8 or the decoder's error, if a document is not UTF-8
                _check_utf8(cast("list[bytes]", documents))
                raise
        texts = cast("list[str]", documents)
        if self._normalized is not None:
            texts = list(map(self._normalized, texts))
        if self.vocab.add_prefix_space:
            texts = list(map(self._prefixed, texts))
        if self.bulk is not None:
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
        """The bulk engine's encode, with a document longer than a batch cut at safe cuts first:
        the engine's arrays take some 40 bytes per byte of a batch, and a batch is never smaller
        than its longest document."""
        import numpy as np

        bulk = cast("BulkEncoder", self.bulk)
        if all(len(d) <= _BLOCK_BYTES for d in documents):
            return bulk.encode(documents, eot=eot, dtype=dtype)
        blocks: list[bytes] = []
        last = []  # the index of each document's last block
        for document in documents:
            blocks += safe_blocks(document, _BLOCK_BYTES) if len(document) > _BLOCK_BYTES else [document]
            last.append(len(blocks) - 1)
        ids, ends = bulk.encode(blocks, eot=None, dtype=dtype)
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

        if self.bulk is None:
            return None
        blocks: list[bytes] = []
        last_blocks = []
        try:
            for text in texts:
                blocks += [block.encode("utf-8") for block in safe_blocks(text, _BLOCK_CHARS)]
                last_blocks.append(len(blocks) - 1)
        except UnicodeEncodeError:
            return None
        ids, ends = self.bulk.encode(blocks, eot=None, dtype=np.int64)
        return np.insert(ids, ends[last_blocks[:-1]], special_ids).tolist()

    def clear_cache(self) -> None:
        """Forget the ids of every piece encoded so far (the dict and the bulk encoder's, in
        every thread), so that the next encode is cold, as a fresh process's would be."""
        self._caches.reset()
        if self.bulk is not None:
            self.bulk.clear_cache()

    def prepare_bulk(self) -> None:
        """Build the tables bulk encoding uses now, e.g. before forking workers that then share
        them, and keep them in the cache for the next run (see formats.cache)."""
        if self.bulk is not None:
            self.bulk.prepare()
            if not self._tables_kept:
                from ..formats import cache

                cache.store_tables(self.vocab, self.tables.arrays())
                self._tables_kept = True


# What Hugging Face's lstrip and rstrip take: Unicode's White_Space (Rust's char::is_whitespace),
# not str.isspace(), which takes the separators U+001C to U+001F too.
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def _strip_beside(parts: list[str], strips: dict[str, tuple[bool, bool]]) -> None:
    """The texts between special tokens (parts[::2]) without the whitespace that a special token
    beside them takes (lstrip: before it; rstrip: after it), as Hugging Face matches them.

    Example: ["a ", "<mask>", " b"] with <mask> lstrip -> ["a", "<mask>", " b"]
    """
    for i in range(1, len(parts), 2):
        left, right = strips.get(parts[i], (False, False))
        if left:
            parts[i - 1] = parts[i - 1].rstrip(_WHITE_SPACE)
        if right:
            parts[i + 1] = parts[i + 1].lstrip(_WHITE_SPACE)


def _all_space(token: bytes) -> bool:
    return all(byte in b" \n\t" for byte in token)


class NotUTF8Document(ValueError):
    """A document given as bytes that are not valid UTF-8: which one, and the offset of the first
    bad byte in it."""

    def __init__(self, document: int, at: int):
        super().__init__(f"document {document}: not valid UTF-8 at byte {at}; give documents as str, or as bytes of valid UTF-8")
        self.document, self.at = document, at


def _check_utf8(documents: list[bytes]) -> None:
    """NotUTF8Document for the first of documents that is not valid UTF-8, if one is (the error
    path of encode_documents: the engine read them in batches and blocks, some with a space added)."""
    for number, document in enumerate(documents):
        try:
            document.decode("utf-8")
        except UnicodeDecodeError as e:
            raise NotUTF8Document(number, e.start) from None
