"""The trained tokenizer as a value: its ranks, special tokens, pattern and normalization, the
merges as trained, and the files it was read from; what every tokenizer must be, the tables
derived from it, and how a token shows to people. No I/O: reading and writing files is formats/'s
job, encoding and decoding encoding/'s."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import unicodedata
from array import array
from dataclasses import dataclass, field, fields
from functools import cached_property

from .encoding.reference import merge_parts
from .errors import BpecliError
from .normalize import check as check_normalize

# The largest id a token may have: ids and ranks are int32 in the bulk engine, which keeps
# 2**31 - 1 for "no rank".
MAX_ID = 2**31 - 2


@dataclass(frozen=True, eq=False)
class Vocab:
    """A byte-level BPE tokenizer as data: ranks maps each ordinary token's bytes to its id (a lower
    id is an earlier merge), special_tokens each special token to its own id. Everything else (the
    decoder, the merges, the fingerprint) is derived, once, when first asked for.

    Example: Vocab({bytes([b]): b for b in range(256)} | {b"ab": 256}, pattern=PATTERNS["gpt2"])
    """

    ranks: dict[bytes, int]
    special_tokens: dict[str, int] = field(default_factory=dict)
    pattern: str = ""
    normalize: tuple[str, ...] = ()  # steps applied to text before it is split (see normalize.py)
    # Hugging Face's ByteLevel add_prefix_space: a space before a text (each text between special
    # tokens) that does not start with one, so its first word encodes as every other word does
    add_prefix_space: bool = False
    template: Template | None = None  # the special tokens encode adds around a text (see Template)
    # special tokens that take the whitespace beside them when they are found in a text, as Hugging
    # Face's lstrip and rstrip do (RoBERTa's <mask>): token -> (left, right)
    strips: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    trained_merges: tuple[tuple[bytes, bytes], ...] = field(default=(), repr=False)  # as train() made them
    files: tuple[str, ...] = ()  # the files it was read from, if any...
    file_digests: tuple[bytes, ...] = field(default=(), repr=False)  # ...and the sha256 of each, as read
    name: str = ""  # what it was loaded as: the folder or file given, or an encoding's name ("cl100k_base")

    def __post_init__(self):
        check_special_tokens(self.special_tokens)
        if self.template is not None:
            self.template.check(self.special_ids)
        unknown = [token for token in self.strips if token not in self.special_tokens]
        if unknown:
            raise BpecliError(f"{unknown[0]!r} takes the whitespace beside it, but is no special token")
        object.__setattr__(self, "normalize", check_normalize(self.normalize))
        if self.file_digests and len(self.file_digests) != len(self.files):
            raise ValueError(f"{len(self.file_digests)} digests for {len(self.files)} files")

    def __repr__(self) -> str:
        """Short, as tiktoken's <Encoding 'cl100k_base'>: the name and the size, never the tokens."""
        return f"<Vocab {self.name!r} vocab_size={self.vocab_size}>" if self.name else f"<Vocab vocab_size={self.vocab_size}>"

    def __getstate__(self) -> dict:
        """Only the fields travel to another process; it derives its tables itself."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    @property
    def adds(self) -> bool:
        """Whether encode does more to a text than split and merge it (a space before it, a template,
        special tokens that take whitespace): what GPT-2's and tiktoken's files cannot say."""
        return self.add_prefix_space or self.template is not None or bool(self.strips)

    @property
    def vocab_size(self) -> int:
        return len(self.ranks) + len(self.special_tokens)

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
        """The merges in rank order: as trained, else recovered from the ranks (see merge_of)."""
        if self.trained_merges:
            return list(self.trained_merges)
        ordered = sorted(self.ranks.items(), key=lambda item: item[1])
        return [self.merge_of(token) for token, _ in ordered if len(token) > 1]

    def merge_of(self, token: bytes) -> tuple[bytes, bytes]:
        """The two tokens whose merge made a token of more than one byte: what BPE makes of its
        bytes with only the ranks below its own, which must be two parts (see docs/design.md,
        "Merges recovered from the ranks").

        Example (GPT-2): b"hello" -> (b"hell", b"o")
        """
        rank = self.ranks[token]
        parts = merge_parts(token, self.ranks, max_rank=rank)
        if len(parts) != 2:
            raise BpecliError(f"token {token!r} (id {rank}) is not the merge of two tokens")
        return parts[0], parts[1]

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the files it was read from (or its ranks), its pattern and special tokens,
        and its normalization: what a shard run records to know its tokenizer again."""
        digest = hashlib.sha256()
        if self.file_digests:
            for file_digest in self.file_digests:
                digest.update(file_digest)
        else:
            for token, rank in sorted(self.ranks.items(), key=lambda item: item[1]):
                digest.update(b"%d %s\n" % (rank, token.hex().encode()))
        digest.update(json.dumps([self.pattern, sorted(self.special_tokens.items())]).encode())
        if self.normalize:  # (tokenizers without it keep the fingerprint they had)
            digest.update(json.dumps(self.normalize).encode())
        if self.add_prefix_space or self.template or self.strips:  # (likewise)
            digest.update(json.dumps([self.add_prefix_space, self.template and self.template.as_json(),
                                      sorted(self.strips.items())]).encode())
        return digest.hexdigest()

    @cached_property
    def decoder_sha256(self) -> str:
        """sha256 of what each id decodes to, however the tokenizer was read (its files, their
        format): a shard folder records it, and a tokenizer given to read the folder must match it
        (see docs/formats.md, manifest.json)."""
        ids = sorted(self.decoder)
        tokens = [self.decoder[i] for i in ids]
        numbers = array("q", ids + list(map(len, tokens)))  # the ids, then the tokens' sizes: int64, little-endian
        if sys.byteorder == "big":
            numbers.byteswap()
        return hashlib.sha256(numbers.tobytes() + b"".join(tokens)).hexdigest()


@dataclass(frozen=True)
class Template:
    """The special tokens Hugging Face's post-processor (TemplateProcessing, RobertaProcessing,
    BertProcessing) puts around the ids of one text (single) or of two (pair): ids of special
    tokens, with "A" and "B" where the texts' own ids go. encode adds them unless told not to
    (add_special_tokens=False), as Hugging Face does.

    Example: Template(single=(1, "A"), pair=(1, "A", 1, "B")).around([5, 6]) -> [1, 5, 6]
    """

    single: tuple[int | str, ...]
    pair: tuple[int | str, ...] | None = None  # None: the two texts' ids, one after the other

    def around(self, first: list[int], second: list[int] | None = None) -> list[int]:
        """The ids of the text (or the two texts) with the template's special tokens around them."""
        # without a pair form, a pair is the two texts one after the other (TemplateProcessing's default)
        form = self.single if second is None else self.pair or ("A", "B")
        ids: list[int] = []
        for part in form:
            if part == "A":
                ids += first
            elif part == "B":
                ids += second or []
            else:
                ids.append(part)  # type: ignore[arg-type]
        return ids

    def check(self, special_ids: dict[int, str]) -> None:
        """Each id of the template is a special token's, and each form holds its texts once."""
        for name, form, texts in (("single", self.single, ["A"]), ("pair", self.pair, ["A", "B"])):
            if form is None:
                continue
            if sorted(part for part in form if isinstance(part, str)) != texts:
                raise BpecliError(f"the template's {name} form should hold {' and '.join(texts)} once"
                                  f"{' each' if len(texts) > 1 else ''}, not {list(form)}")
            unknown = [part for part in form if not isinstance(part, str) and part not in special_ids]
            if unknown:
                raise BpecliError(f"the template's {name} form adds id {unknown[0]!r}, which is no special token's; "
                                  "a template adds special tokens only")

    @property
    def prefix(self) -> tuple[int, ...]:
        """The ids single puts before the text."""
        return tuple(self.single[: self.single.index("A")])  # type: ignore[arg-type]

    @property
    def suffix(self) -> tuple[int, ...]:
        """The ids single puts after the text."""
        return tuple(self.single[self.single.index("A") + 1 :])  # type: ignore[arg-type]

    def shown(self, special_ids: dict[int, str]) -> str:
        """The single form as people read it: "<s> TEXT </s>"."""
        return " ".join(special_ids[part] if isinstance(part, int) else "TEXT" for part in self.single)

    def as_json(self) -> dict:
        """The template as bpecli.json stores it: {"single": [...], "pair": [...]}."""
        return {"single": list(self.single), **({"pair": list(self.pair)} if self.pair is not None else {})}


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_special_tokens(special_tokens: dict[str, int]) -> None:
    """Special tokens are non-empty text with ids from 0 on: an empty one would match between
    every two characters of every text."""
    for token, rank in special_tokens.items():
        if not isinstance(token, str) or not token:
            raise BpecliError(f"a special token must be non-empty text, not {token!r}")
        if not token.isascii() and (surrogate := _SURROGATE.search(token)):  # no UTF-8 for it: no bytes to match
            raise BpecliError(f"special token {token[:40]!r} is not text: {surrogate.group()!r} (character "
                              f"{surrogate.start()}) is a lone surrogate (no character; also how Python reads a byte "
                              "that is not UTF-8)")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
            raise BpecliError(f"special token {token!r}: its id {rank!r} is not a whole number from 0 on")


def check(ranks: dict[bytes, int], special_tokens: dict[str, int]) -> None:
    """What a tokenizer read from files must be, beyond what Vocab checks of any: byte-level (the
    256 one-byte tokens), every token with an id of its own, every id from 0 to MAX_ID."""
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise BpecliError(f"not a byte-level BPE: {len(missing)} of the 256 byte tokens are missing")
    check_special_tokens(special_tokens)
    ids = set(ranks.values()) | set(special_tokens.values())
    if len(ids) != len(ranks) + len(special_tokens):
        holders: dict[int, object] = {}
        for token, rank in [*ranks.items(), *special_tokens.items()]:
            if rank in holders:
                raise BpecliError(f"tokens {repr(holders[rank])[:40]} and {repr(token)[:40]} share id {rank}; "
                                  "each token has an id of its own")
            holders[rank] = token
    for extreme in (min(ids), max(ids)):
        if not 0 <= extreme <= MAX_ID:
            raise BpecliError(f"id {extreme} is out of range: bpecli's ids are 0 to {MAX_ID:,}")


# ---- how a token shows to people ----------------------------------------------------------------

# How a space shows in a rendered token: visible, so that " the" and "the " differ on screen.
VISIBLE_SPACE = "\u2423"  # ␣
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def token_parts(token: bytes) -> list[tuple[str, bool]]:
    """A token as people can read it, in runs of (text, is_marker): a marker stands for what
    would not show, a space (␣), a control or other invisible character (\\n, \\u200b), or a
    byte that is not valid UTF-8 on its own (\\xe2). A page or a terminal may dim the markers.

    Example: b" a\\n\\xe2" -> [("␣", True), ("a", False), ("\\\\n\\\\xe2", True)]
    """
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
