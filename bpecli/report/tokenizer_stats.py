"""The figures of a tokenizer, alone or beside others on a corpus: what `bpecli inspect TOK`
prints, its --json, and its --report page all read these."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from ..inputs.documents import Splitters, read_documents
from ..inputs.parts import Part, document_parts
from ..inputs.sources import input_kind, input_stat, label_of
from ..inputs.utf8 import ERRORS_HINT
from ..errors import InputError, arg
from ..pretokenize import PATTERNS, SAFE_CUT, document_separators
from ..tokenizer import Tokenizer
from ..vocab import render_token
from .kinds import kinds

# Of the --corpus inputs together, about this many bytes are read (evenly spaced parts of a large
# file, the first ones of a compressed stream; at least INPUT_BYTES of each input) and encoded by
# every tokenizer, at its full size and cut to each size of the growth curve.
SAMPLE_BYTES = 1 << 20
INPUT_BYTES = 1 << 17
SAMPLE_PARTS = 16
# The most common words of the sample that the tokenizers' splits are compared on, and how many
# of those they split differently are listed.
WORDS, WORDS_SHOWN = 1000, 12
_WORD = regex.compile(r" ?\p{L}+(?:['’]\p{L}+)?")
# The characters of the sample shown coloured token by token.
COLOURED_CHARACTERS = 1200


@dataclass(frozen=True)
class CorpusSample:
    """Documents read from one corpus input: all of it, or evenly spaced parts of it."""

    input: str
    documents: list[bytes]
    input_bytes: int | None  # the input's size (on disk, for a compressed one; None for stdin)

    @property
    def sample_bytes(self) -> int:
        return sum(map(len, self.documents))


def describe(tok: Tokenizer, top: int = 10) -> dict:
    """What a tokenizer is, for `bpecli inspect TOK` and its report: sizes, special tokens,
    pattern, the longest tokens, how many tokens have each byte length, and the first and last
    merges (each as the id it makes and the two tokens it joins)."""
    longest = sorted(tok.ranks.items(), key=lambda item: (-len(item[0]), item[1]))[:top]
    # every token longer than a byte is one merge; only the first and last few are recovered (all
    # of them take seconds for a 100k vocabulary read from ranks alone)
    if tok.trained_merges:
        n_merges, first, last = len(tok.trained_merges), tok.trained_merges[:top], tok.trained_merges[len(tok.trained_merges) - top :]
    else:
        longer = sorted((rank, token) for token, rank in tok.ranks.items() if len(token) > 1)
        n_merges = len(longer)
        first, last = (tuple(tok.vocab.merge_of(token) for _, token in part)
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
        "add_prefix_space": tok.add_prefix_space,
        # what encode puts around a text, e.g. "<s> TEXT </s>" (None without a template)
        "template": tok.template.shown(tok.special_ids) if tok.template else None,
        "longest_tokens": [{"id": rank, "token": render_token(token), "bytes": len(token)} for token, rank in longest],
        "byte_lengths": dict(sorted(Counter(len(token) for token in tok.ranks).items())),
        "first_merges": [merge(a, b) for a, b in first],
        "last_merges": [merge(a, b) for a, b in last],
    }


def tokenizer_figures(tok: Tokenizer, *, name: str, corpora: Sequence[str] = (), compare: dict[str, Tokenizer] | None = None,
                      top: int = 10) -> dict:
    """Every figure of a tokenizer (describe's, and its kinds of tokens), and with corpora, of it
    and each tokenizer in compare on them: bytes per token on each input, its growth with the
    vocabulary, the common words they split differently, and a sample split into tokens.

    Example: tokenizer_figures(gpt2, name="gpt2")["kinds"][0] -> {"kind": "ASCII letters", "tokens": 46893, ...}
    """
    figures = {"kind": "tokenizer", "name": name, **describe(tok, top)}
    found = kinds(tok.ranks)
    figures["kinds"] = [{**kind, "examples": [{"id": e["id"], "token": render_token(e["bytes"])} for e in kind["examples"]]}
                        for kind in found]
    sides = {name: tok, **(compare or {})}
    figures["tokenizers"] = {side: _facts(t, found if t is tok else None) for side, t in sides.items()}
    if not corpora:
        return figures
    separators = sorted(set().union(*(document_separators(t.special_tokens) for t in sides.values())))
    budget = max(INPUT_BYTES, SAMPLE_BYTES // len(corpora))
    samples = [read_sample(path, separators, budget) for path in corpora]
    figures["corpus"] = [{"input": s.input, "input_bytes": s.input_bytes, "sample_bytes": s.sample_bytes,
                          "documents": len(s.documents)} for s in samples]
    # documents are encoded one by one: the tokens of all inputs are the sum of each one's
    tokens = {side: [count_tokens(t, s.documents) for s in samples] for side, t in sides.items()}
    n_bytes = sum(s.sample_bytes for s in samples)
    figures["bytes_per_token"] = {side: n_bytes / max(1, sum(found)) for side, found in tokens.items()}
    figures["bytes_per_token_by_input"] = {side: {s.input: s.sample_bytes / max(1, n) for s, n in zip(samples, found)}
                                           for side, found in tokens.items()}
    every = [d for s in samples for d in s.documents]
    figures["growth"] = {side: growth_curve(t, every, known=sum(tokens[side])) for side, t in sides.items()}
    figures["words"] = split_differently(sides, every)
    text = _opening(samples)
    figures["sample"] = {"text": text, "ids": {side: t.encode_ordinary(text, add_special_tokens=False) for side, t in sides.items()}}
    return figures


def _facts(tok: Tokenizer, found_kinds: list[dict] | None = None) -> dict:
    """What the report sets side by side for each tokenizer: sizes, pattern, kinds and lengths of tokens."""
    info = describe(tok, top=0)
    return {**{k: info[k] for k in ("vocab_size", "ordinary_tokens", "merges", "special_tokens", "pattern", "normalize",
                                    "byte_lengths")},
            "kinds": {k["kind"]: k["tokens"] for k in found_kinds or kinds(tok.ranks, examples=0)}}


def read_sample(path: str, separators: list[str], budget: int = SAMPLE_BYTES) -> CorpusSample:
    """The documents of a corpus input (text, JSONL, Parquet, compressed or not), split at the
    separators; of an input larger than budget, SAMPLE_PARTS evenly spaced parts that hold about
    that much."""
    size = input_stat(path, path)[0] if path != "-" else None  # stdin: its first budget of bytes
    part_bytes = max(1 << 12, budget // SAMPLE_PARTS) if size is not None and size > budget else None
    parts: Iterable[Part] = document_parts([(path, label_of(path))], separators=[], safe_cut=SAFE_CUT, part_bytes=part_bytes)
    splitters = Splitters.of(separators)
    if part_bytes is not None and not _is_stream(path):
        every = list(parts)
        step = max(1, len(every) // SAMPLE_PARTS)
        parts = every[step // 2 :: step]
    documents: list[bytes] = []
    taken = 0
    for part in parts:
        try:
            texts, _, _ = read_documents(part, splitters=splitters, checksum=False)
        except InputError as e:  # inspect has no --errors to offer: measure on text that is UTF-8
            message = e.args[0]  # as raised: its arguments not yet spelled for Python or the shell
            if not message.endswith(f"; {ERRORS_HINT}"):
                raise
            raise InputError(message.removesuffix(f"; {ERRORS_HINT}") + f"; give a {arg('corpus')} of valid UTF-8") from None
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
        documents += encoded
        taken += sum(map(len, encoded))
        if taken >= budget:
            break
    if not documents:
        raise InputError(f"{path}: no text to measure tokens on; give a {arg('corpus')} that holds some")
    return CorpusSample(path, documents, size)


def _is_stream(path: str) -> bool:
    return input_kind(path)[1] is not None


def count_tokens(tok: Tokenizer, documents: list[bytes]) -> int:
    """The tokens of the documents, each encoded on its own. Example (GPT-2): [b"hello world"] -> 2"""
    ids, _ = tok.encode_documents(documents, eot=None)
    return len(ids)


def vocabulary_sizes(n_tokens: int) -> list[int]:
    """The sizes of the growth curve: the bytes alone, then doubling from 512 up to the whole.

    Example: 3000 -> [256, 512, 1024, 2048, 3000]
    """
    sizes = [256]
    while sizes[-1] * 2 < n_tokens:
        sizes.append(sizes[-1] * 2)
    return sizes + [n_tokens] if n_tokens > 256 else sizes


def growth_curve(tok: Tokenizer, documents: list[bytes], known: int | None = None) -> list[dict]:
    """Bytes per token of the documents as the vocabulary grows: the tokenizer cut to its first
    merges (its single bytes and the lowest-ranked longer tokens) at each of vocabulary_sizes.
    known is the documents' token count at the full size, if counted already."""
    singles = {t: r for t, r in tok.ranks.items() if len(t) == 1}
    longer = sorted((r, t) for t, r in tok.ranks.items() if len(t) > 1)
    n_bytes = sum(map(len, documents))
    curve = []
    for size in vocabulary_sizes(len(tok.ranks)):
        kept = size - len(singles)
        if kept < 0:
            continue
        if kept == len(longer):
            n_tokens = known if known is not None else count_tokens(tok, documents)
        else:
            ranks = {**singles, **{t: r for r, t in longer[:kept]}}
            n_tokens = count_tokens(Tokenizer(ranks, pattern=tok.pattern, normalize=tok.normalize), documents)
        curve.append({"vocab_size": size, "bytes_per_token": n_bytes / max(1, n_tokens)})
    return curve


def split_differently(sides: dict[str, Tokenizer], documents: list[bytes]) -> dict:
    """The WORDS most common words of the documents (a letter run and the space before it), how
    many each tokenizer keeps whole, and the most common ones they split differently."""
    counts: Counter[str] = Counter()
    for document in documents:
        counts.update(_WORD.findall(document.decode("utf-8", "surrogatepass")))
    common = counts.most_common(WORDS)
    splits = {side: [t.encode_ordinary(word, add_special_tokens=False) for word, _ in common] for side, t in sides.items()}
    differ = [i for i in range(len(common)) if len({tuple(_bytes(sides[s], splits[s][i])) for s in sides}) > 1]
    return {
        "words": len(common),
        "whole": {side: sum(len(ids) == 1 for ids in found) for side, found in splits.items()},
        "tokens_per_word": {side: sum(map(len, found)) / max(1, len(found)) for side, found in splits.items()},
        "split_differently": len(differ),
        "examples": [{"word": render_token(common[i][0].encode("utf-8")), "count": common[i][1],
                      "ids": {side: splits[side][i] for side in sides},
                      "tokens": {side: [render_token(sides[side].decoder[j]) for j in splits[side][i]] for side in sides}}
                     for i in differ[:WORDS_SHOWN]] if len(sides) > 1 else [],
    }


def _bytes(tok: Tokenizer, ids: list[int]) -> list[bytes]:
    return [tok.decoder[i] for i in ids]


def _opening(samples: list[CorpusSample]) -> str:
    """The first COLOURED_CHARACTERS or so of the first input's sample, ending at a space."""
    text = ""
    for document in samples[0].documents:
        text += document.decode("utf-8", "surrogatepass")
        if len(text) >= COLOURED_CHARACTERS:
            break
    if len(text) > COLOURED_CHARACTERS:
        cut = text.rfind(" ", 0, COLOURED_CHARACTERS)
        text = text[: cut if cut > COLOURED_CHARACTERS // 2 else COLOURED_CHARACTERS]
    return text
