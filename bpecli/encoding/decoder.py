"""Ids back to bytes and text: lists one id at a time, numpy arrays (a shard) through one table of
every token's bytes, where each token starts in the text, and a stream of ids as they come."""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING

from ..errors import BpecliError, UnknownIdError, arg

if TYPE_CHECKING:
    from ..vocab import Vocab

# numpy is imported where an array is decoded: a one-line decode of a few ids never loads it.

# Arrays are decoded in blocks of this many ids, whose index arrays fit the processor's caches.
_BLOCK_IDS = 1 << 16


class Decoder:
    """A vocabulary's decoder: an id outside it is an error that names the id."""

    def __init__(self, vocab: Vocab):
        self.vocab = vocab

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ids (a list, or a numpy array such as a shard)."""
        if hasattr(ids, "dtype"):
            return self._decode_array(ids)
        decoder = self.vocab.decoder
        if not isinstance(ids, (list, tuple)):
            ids = list(ids)  # an iterator would be used up before the error path looks for the bad id
        try:
            return b"".join(map(decoder.__getitem__, ids))
        except (KeyError, TypeError):
            position = next(k for k, i in enumerate(ids) if not isinstance(i, Hashable) or i not in decoder)
            raise self._unknown(ids[position], position) from None

    def _unknown(self, bad, position: int) -> UnknownIdError:
        """The one error for an id outside the vocabulary, from a list or an array alike."""
        import numpy as np  # (the error path only: a one-line decode imports no numpy)

        if isinstance(bad, bool) or not isinstance(bad, (int, np.integer)):
            return UnknownIdError(f"{bad!r} is no token id (ids are integers)", position)
        top = max(self.vocab.decoder)
        gap = ", where no token has that id" if 0 <= bad <= top else ""
        return UnknownIdError(f"id {bad} is not in the vocabulary (0..{top}{gap})", position)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ids; bytes that are not valid UTF-8 become U+FFFD, or an error if strict."""
        data = self.decode_bytes(ids)
        try:
            return data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as e:
            raise BpecliError(
                f"the ids decode to invalid UTF-8 at byte {e.start}; use {arg('errors', 'replace')} to see U+FFFD instead"
            ) from None

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        decoder = self.vocab.decoder
        return [decoder[token] for token in tokens]

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
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

    @cached_property
    def byte_table(self):
        """(all tokens' bytes end to end, where each one's bytes start, how many, and the ids in
        order or None): indexed by id, or, when the ids are sparse (a special token at 4e9), by
        an id's place among the sorted ids, so the table never outgrows the vocabulary."""
        import numpy as np

        ordered = sorted(self.vocab.decoder.items())
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

        from ..arrays import spans

        data, starts, lengths, sparse = self.byte_table
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise BpecliError(f"token ids must be integers, not {ids.dtype}")
        blocks = []
        for at in range(0, len(ids), _BLOCK_IDS):
            # (a uint64 id past int64 turns negative here: outside the vocabulary, and named as it was)
            block = ids[at : at + _BLOCK_IDS].astype(np.int64)
            if sparse is not None:
                where = np.minimum(np.searchsorted(sparse, block), len(sparse) - 1)
                bad = sparse[where] != block
            else:
                where = np.clip(block, 0, len(lengths) - 1)
                bad = (block < 0) | (block >= len(lengths)) | (lengths[where] == 0)
            if bad.any():
                position = at + int(np.argmax(bad))
                raise self._unknown(ids[position], position)
            blocks.append(data[spans(starts[where], lengths[where])].tobytes())
        return b"".join(blocks)


class DecodeStream:
    """Text from ids that arrive one at a time (as a model generates them), given out as soon as it
    is whole UTF-8: a character whose bytes are split across tokens (an emoji, CJK) comes out
    with the token that completes it, never as U+FFFD halves. Hugging Face tokenizers'
    DecodeStream does the same job; this one gives text out as early as it can, so it may split
    the same text at other places. skip_special_tokens leaves special tokens out of the text, as
    Hugging Face's option of that name. Made by Tokenizer.decode_stream().

    Example (GPT-2): step(64) -> "a"; step(47249) -> None (the first bytes of 😀); step(222) -> "😀"
    """

    def __init__(self, tokenizer, *, errors: str = "replace", skip_special_tokens: bool = False):
        import codecs

        vocab = getattr(tokenizer, "vocab", tokenizer)  # a Tokenizer, or its Vocab
        self._decoder = Decoder(vocab)
        self._skipped = vocab.special_ids if skip_special_tokens else {}
        self._text = codecs.getincrementaldecoder("utf-8")(errors=errors)
        self._fed = 0  # ids fed so far, to say where invalid UTF-8 came

    def step(self, ids: int | Iterable[int]) -> str | None:
        """The text that one id (or several) completes, or None while a character is still
        incomplete; an id outside the vocabulary is an UnknownIdError naming it."""
        batch: list[int] = [operator.index(ids)] if hasattr(ids, "__index__") else list(ids)  # type: ignore[arg-type]
        self._fed += len(batch)
        data = self._decoder.decode_bytes([token for token in batch if token not in self._skipped])
        return self._decode(data, final=False) or None

    def flush(self) -> str:
        """What is left at the end: the bytes of an incomplete character become U+FFFD (with
        errors="replace", as decode makes them), or an error with errors="strict". The stream is
        then empty, ready for more ids."""
        text = self._decode(b"", final=True)
        self._text.reset()
        return text

    def _decode(self, data: bytes, final: bool) -> str:
        try:
            return self._text.decode(data, final=final)
        except UnicodeDecodeError:
            self._text.reset()
            where = "end in an incomplete character" if final else "hold invalid UTF-8"
            raise BpecliError(f"the {self._fed} ids fed so far {where}; use {arg('errors', 'replace')} to see U+FFFD "
                              "instead") from None
