"""The Tokenizer: a vocabulary (vocab.Vocab) with its encoder and decoder, speaking tiktoken's
Encoding API with its semantics. Short texts go through the regex and BPE of one pre-token, long
texts and many documents through the bulk engine (see encoding/text.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path

from . import formats
from .encoding.decoder import Decoder, DecodeStream
from .encoding.text import Allowed, Disallowed, TextEncoder
from .pretokenize import resolve_pattern
from .vocab import Template, Vocab

# numpy and the thread pool are imported where first used: a one-line encode never needs them.


class Tokenizer:
    """A byte-level BPE tokenizer, with the methods of tiktoken's Encoding (encode, decode,
    encode_batch, decode_bytes, n_vocab...) and their behaviour, so code written for tiktoken runs
    on it. Get one from load (files, or an encoding's name) or train; or make one from ranks
    (each ordinary token's bytes -> its id, a lower id an earlier merge), special_tokens (text ->
    id), the pre-tokenizer pattern (a preset's name, "gpt2" by default, "cl100k" or "o200k", or a
    regex) and normalize (steps applied to text first: "nfc", "nfkc", "lowercase"...).

    Example: Tokenizer.load("gpt2_vocab.json").encode("hello world") -> [31373, 995]
    """

    def __init__(self, ranks: dict[bytes, int] | None = None, special_tokens: dict[str, int] | None = None,
                 pattern: str | None = None, *, normalize: Sequence[str] = (),
                 trained_merges: tuple[tuple[bytes, bytes], ...] = (), add_prefix_space: bool = False,
                 template: Template | None = None, vocab: Vocab | None = None):
        if vocab is None:
            if ranks is None:
                raise TypeError("Tokenizer() needs ranks (or a vocab)")
            specials = special_tokens if special_tokens is not None else {}
            vocab = Vocab(ranks, specials, resolve_pattern("gpt2" if pattern is None else pattern, source="pattern"),
                          normalize=tuple(normalize), trained_merges=trained_merges, add_prefix_space=add_prefix_space,
                          template=template)
        elif (ranks is not None or special_tokens is not None or pattern is not None or normalize or trained_merges
              or add_prefix_space or template):
            raise TypeError("Tokenizer() takes a vocab, or ranks and the rest, not both")
        self.vocab = vocab
        self._text = TextEncoder(vocab)
        self._decoder = Decoder(vocab)

    def __reduce__(self):
        """Only the vocabulary travels to another process; it derives its tables itself."""
        return _of, (self.vocab,)

    def __repr__(self) -> str:
        """Short, as tiktoken's <Encoding 'cl100k_base'>: its name and size, never its tokens.

        Example: repr(load("cl100k_base")) -> "<Tokenizer 'cl100k_base' vocab_size=100261>"
        """
        if self.name:
            return f"<Tokenizer {self.name!r} vocab_size={self.vocab_size}>"
        return f"<Tokenizer vocab_size={self.vocab_size}>"

    @classmethod
    def load(cls, path: str | Path, *, pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Tokenizer:
        """The tokenizer in a folder, a file or of a name: the same as bpecli.load."""
        return cls(vocab=formats.load(path, pattern=pattern, special_tokens=special_tokens))

    def save(self, out_dir: str | Path, *, force: bool = False) -> Path:
        """Write the tokenizer into the folder out_dir in every format bpecli knows (vocab.json and
        merges.txt, tokenizer.json with transformers' config, tokenizer.tiktoken, bpecli.json),
        all at once: a reader sees the old folder or the new one, never a mix. An existing out_dir
        is replaced only with force, and only if it holds nothing but these files.

        Example: tok.save("my-tokenizer") -> Path("my-tokenizer")
        """
        return formats.save(self.vocab, out_dir, force=force)

    # ---- the vocabulary ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """What it was loaded as: the folder or file given, or the encoding's name ("cl100k_base");
        empty for a tokenizer made in Python (by train, or from ranks)."""
        return self.vocab.name

    @property
    def ranks(self) -> dict[bytes, int]:
        """Each ordinary token's bytes -> its id (a lower id is an earlier merge)."""
        return self.vocab.ranks

    @property
    def special_tokens(self) -> dict[str, int]:
        """Each special token's text -> its id.

        Example (GPT-2): {"<|endoftext|>": 50256}
        """
        return self.vocab.special_tokens

    @property
    def pattern(self) -> str:
        """The regex that splits text into pre-tokens before BPE (PATTERNS["gpt2"] and the like)."""
        return self.vocab.pattern

    @property
    def normalize(self) -> tuple[str, ...]:
        """The steps applied to text before it is split ("nfc", "lowercase"...); empty for none."""
        return self.vocab.normalize

    @property
    def add_prefix_space(self) -> bool:
        """Whether a space is put before each text that does not start with one, as Hugging Face's
        ByteLevel(add_prefix_space=True) does."""
        return self.vocab.add_prefix_space

    @property
    def template(self) -> Template | None:
        """The special tokens encode puts around a text (a Hugging Face post-processor, or
        `bpecli train --bos/--eos`); None for none."""
        return self.vocab.template

    @property
    def files(self) -> tuple[str, ...]:
        """The files it was read from; empty for a tokenizer made in Python or loaded by name."""
        return self.vocab.files

    @property
    def trained_merges(self) -> tuple[tuple[bytes, bytes], ...]:
        """The merges in the order training made them; empty when it was read from ranks alone."""
        return self.vocab.trained_merges

    @property
    def fingerprint(self) -> str:
        """A sha256 (hex) of the files it was read from (or its ranks), its pattern, special tokens
        and normalization: shard folders record it to know their tokenizer again."""
        return self.vocab.fingerprint

    @property
    def decoder(self) -> dict[int, bytes]:
        """Each id -> its bytes, special tokens included."""
        return self.vocab.decoder

    @property
    def special_ids(self) -> dict[int, str]:
        """Each special token's id -> its text."""
        return self.vocab.special_ids

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges, earliest first: as trained, else recovered from the ranks.

        Example (GPT-2): merges[0] -> (b" ", b"t")
        """
        return self.vocab.merges

    @property
    def vocab_size(self) -> int:
        """How many tokens it has: the ordinary ones and the special ones."""
        return self.vocab.vocab_size

    # ---- encoding: tiktoken.Encoding's API, with its semantics -----------------------------------

    def encode(self, text: str, *, allowed_special: Allowed = frozenset(), disallowed_special: Disallowed = "all",
               add_special_tokens: bool = True) -> list[int]:
        """The ids of text. Special tokens written in the text become their ids if allowed_special
        names them ("all", or a set of them); any other raises DisallowedSpecialError (a
        ValueError) if disallowed_special names it (by default: "all", every one not allowed), or
        is encoded as plain text if not (disallowed_special=()). A tokenizer with a template (a
        Hugging Face post-processor, or `bpecli train --bos/--eos`) puts its special tokens around
        the ids unless add_special_tokens is False, as Hugging Face's encode does.

        The defaults, side by side: here, as in tiktoken, special-token text is refused unless
        allowed; the command `bpecli encode` turns it into the special tokens' ids by default
        (and reads it as plain text when told to). encode_ordinary always reads it as plain text.

        Example (GPT-2): encode("hi<|endoftext|>", allowed_special="all") -> [5303, 50256]
        """
        ids = self._text.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return self._with_template(ids, add_special_tokens)

    def encode_ordinary(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The ids of text, special-token text read as plain text (the template's special tokens
        are added as encode adds them).

        Example (GPT-2): "hello world" -> [31373, 995]
        """
        return self._with_template(self._text.encode_ordinary(text), add_special_tokens)

    def encode_pair(self, text: str, pair: str, *, allowed_special: Allowed = frozenset(),
                    disallowed_special: Disallowed = "all", add_special_tokens: bool = True) -> list[int]:
        """Ids of two texts as one sequence, as Hugging Face's encode(text, pair): each encoded on
        its own, then put in the template's pair form (or one after the other, without a template
        or with add_special_tokens=False).

        Example (RoBERTa): encode_pair("a", "b") -> [0, 10, 2, 2, 741, 2]
        """
        first, second = (self._text.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special)
                         for t in (text, pair))
        if self.vocab.template is None or not add_special_tokens:
            return first + second
        return self.vocab.template.around(first, second)

    def _with_template(self, ids: list[int], add_special_tokens: bool) -> list[int]:
        if self.vocab.template is None or not add_special_tokens:
            return ids
        return self.vocab.template.around(ids)

    def encode_batch(self, text: list[str], *, num_threads: int = 8, allowed_special: Allowed = frozenset(),
                     disallowed_special: Disallowed = "all", add_special_tokens: bool = True) -> list[list[int]]:
        """encode of each text, on num_threads threads.

        Example (GPT-2): encode_batch(["hello", "world"]) -> [[31373], [6894]]
        """
        encode = partial(self.encode, allowed_special=allowed_special, disallowed_special=disallowed_special,
                         add_special_tokens=add_special_tokens)
        return _on_threads(encode, text, num_threads)

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8, add_special_tokens: bool = True) -> list[list[int]]:
        """encode_ordinary of each text, on num_threads threads."""
        return _on_threads(partial(self.encode_ordinary, add_special_tokens=add_special_tokens), text, num_threads)

    def encode_to_numpy(self, text: str, *, allowed_special: Allowed = frozenset(), disallowed_special: Disallowed = "all",
                        add_special_tokens: bool = True):
        """encode's ids as a numpy uint32 array."""
        import numpy as np

        ids = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special,
                          add_special_tokens=add_special_tokens)
        return np.array(ids, dtype=np.uint32)

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Ids of raw bytes, as tiktoken's Encoding._encode_bytes: valid UTF-8 as text, the rest byte by byte.

        Example (GPT-2): b"hello \\xff" -> [31373, 220, 187]
        """
        return self._text.encode_bytes(text)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text or bytes that is one token, ordinary or special; KeyError otherwise.
        As tiktoken, an ordinary token wins over a special token of the same bytes.

        Example (GPT-2): b"<|endoftext|>" -> 50256; "hello" -> 31373
        """
        data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        rank = self.ranks.get(data)
        if rank is not None:
            return rank
        try:
            return self.special_tokens[data.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(text_or_bytes) from None

    def encode_documents(self, documents: list[str] | list[bytes], *, eot: int | None = None, dtype="uint32"):
        """The ids of many documents as one numpy array, each followed by eot (an id, if given), and
        the position where each document's ids end: the fast way to encode a corpus in memory.
        Special-token text in them is plain text, and no template is added (a shard run takes its
        bos and eot instead). Documents may be str, or bytes of valid UTF-8.

        Example (GPT-2): ["hello", "world"], eot=50256 -> ([31373, 50256, 6894, 50256], [2, 4])
        """
        return self._text.encode_documents(documents, eot=eot, dtype=dtype)

    def clear_cache(self) -> None:
        """Forget the ids of every pre-token encoded so far, in every thread, so that the next
        encode is cold, as a fresh process's would be."""
        self._text.clear_cache()

    def prepare_bulk(self) -> None:
        """Build the tables encode_documents uses now rather than on first use, e.g. before
        forking worker processes, which then share them."""
        self._text.prepare_bulk()

    # ---- decoding ------------------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of ids (a list, or a numpy array such as a shard); an id outside the
        vocabulary is an UnknownIdError naming it."""
        return self._decoder.decode_bytes(ids)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text of ids; bytes that are not valid UTF-8 become U+FFFD, or an error if strict."""
        return self._decoder.decode(ids, errors=errors)

    def decode_stream(self, *, errors: str = "replace", skip_special_tokens: bool = False) -> DecodeStream:
        """A decoder for ids that arrive one at a time: stream.step(id) gives the text as soon as
        it is whole UTF-8 (None while a character is split across tokens), stream.flush() what is
        left at the end. Joined, the pieces are decode(ids) (without the special tokens' text if
        skip_special_tokens).

        Example (GPT-2): [stream.step(i) for i in [64, 47249, 222]] -> ["a", None, "😀"]
        """
        return DecodeStream(self, errors=errors, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, batch, *, errors: str = "replace", num_threads: int = 8) -> list[str]:
        """decode of each list of ids, on num_threads threads."""
        return _on_threads(partial(self.decode, errors=errors), batch, num_threads)

    def decode_bytes_batch(self, batch, *, num_threads: int = 8) -> list[bytes]:
        """decode_bytes of each list of ids, on num_threads threads."""
        return _on_threads(self.decode_bytes, batch, num_threads)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id; KeyError for an id outside the vocabulary."""
        return self.decoder[token]

    def decode_tokens_bytes(self, tokens) -> list[bytes]:
        """The bytes of each id, one item per id.

        Example (GPT-2): [31373, 995] -> [b"hello", b" world"]
        """
        return self._decoder.decode_tokens_bytes(tokens)

    def decode_with_offsets(self, tokens) -> tuple[str, list[int]]:
        """(text, where each token starts in it, in characters), as tiktoken gives them.

        Example (GPT-2): [31373, 995] -> ("hello world", [0, 5])
        """
        return self._decoder.decode_with_offsets(tokens)

    # ---- the rest of tiktoken's API ------------------------------------------------------------

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token, in id order."""
        return list(self.ranks)

    def is_special_token(self, token: int) -> bool:
        """Whether an id is a special token's."""
        return token in self.special_ids

    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' texts."""
        return set(self.special_tokens)

    @property
    def eot_token(self) -> int:
        """The id of <|endoftext|>; KeyError if the tokenizer has none."""
        return self.special_tokens["<|endoftext|>"]

    @property
    def max_token_value(self) -> int:
        """The largest id, special tokens included."""
        return max(self.decoder)

    @property
    def n_vocab(self) -> int:
        """max_token_value + 1, as tiktoken counts it (ids may have gaps: see vocab_size)."""
        return self.max_token_value + 1


def load(path: str | Path, *, pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Tokenizer:
    """A tokenizer read from files in any format bpecli knows, or by name.

    path may be a folder written by `bpecli train` or `Tokenizer.save`, a vocab.json with
    merges.txt beside it, a Hugging Face tokenizer.json, a .tiktoken ranks file (pattern defaults
    to cl100k there), or the name of an encoding tiktoken knows: "gpt2", "r50k_base",
    "p50k_base", "cl100k_base", "o200k_base", or one of a tiktoken plugin. A name is read through
    tiktoken (pip install tiktoken: bpecli's tiktoken extra), its cache (TIKTOKEN_CACHE_DIR) and its checks;
    offline, the error says which file to fetch and where to put it. A file or folder of the same
    name as an encoding wins. pattern and special_tokens, when given, replace the tokenizer's own.

    Example: load("cl100k_base") -> <Tokenizer 'cl100k_base' vocab_size=100261>
    """
    return Tokenizer.load(path, pattern=pattern, special_tokens=special_tokens)


def _of(vocab: Vocab) -> Tokenizer:
    return Tokenizer(vocab=vocab)


def _on_threads(function, items, num_threads: int) -> list:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, num_threads)) as pool:
        return list(pool.map(function, items))
