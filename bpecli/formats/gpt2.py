"""GPT-2's files, as Hugging Face reads them too: vocab.json ({token: id}, each token spelled in the
byte alphabet) and merges.txt (one merge a line, "left right"); and the listing of tokens and
merges that they and tokenizer.json spell alike."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, compress, islice, repeat
from operator import add, gt, itemgetter, le, lt
from pathlib import Path
from typing import cast

from .. import folders
from ..errors import TokenizerFileError
from ..vocab import Vocab
from .alphabet import str_to_token, strs_to_tokens, token_to_str
from .common import checked, pattern_of


@dataclass
class Listing:
    """The tokens as vocab.json, merges.txt and tokenizer.json spell them, made once for all three."""

    ordered: list[tuple[int, str]]  # (id, token in the byte alphabet) by id, specials as themselves
    merges: list[str]  # "left right", in the byte alphabet
    specials: list[int]  # the ids of the special tokens

    @classmethod
    def of(cls, vocab: Vocab) -> Listing:
        """The listing of vocab: no sort where the tokens come by id (as trained and loaded ones
        do), and the merges checked by maps in C, as a save spends its time here."""
        tokens, ids = list(vocab.ranks), list(vocab.ranks.values())
        # every token spelled at once (one decode, one translate, in C), then cut apart
        spelled = token_to_str(b"".join(tokens))
        ends = list(accumulate(map(len, tokens)))
        names = list(map(spelled.__getitem__, map(slice, [0, *ends[:-1]], ends)))
        ordinary = list(zip(ids, names))
        if not all(map(lt, ids, islice(ids, 1, None))):  # not listed by id, as trained or loaded ones are
            ordinary.sort()
            names = list(map(itemgetter(1), ordinary))
        merged = list(compress(names, map(gt, map(len, names), repeat(1))))  # one character per byte
        lefts = list(map(len, map(itemgetter(0), vocab.merges)))
        if list(map(len, merged)) == list(map(add, lefts, map(len, map(itemgetter(1), vocab.merges)))):
            # merge i made the i-th of them: cut it where its left part ends
            merges = [f"{name[:cut]} {name[cut:]}" for name, cut in zip(merged, lefts)]
        else:
            by_id, ranks = dict(ordinary), vocab.ranks
            merges = [f"{by_id[ranks[a]]} {by_id[ranks[b]]}" for a, b in vocab.merges]
        specials = sorted((rank, token) for token, rank in vocab.special_tokens.items())
        if specials and ordinary and specials[0][0] < ordinary[-1][0]:  # specials among the ordinary ids
            ordered = sorted(ordinary + specials)
        else:
            ordered = ordinary + specials
        return cls(ordered, merges, [rank for rank, _ in specials])

    @cached_property
    def ordinary_json(self) -> str:
        """{token: id} of the ordinary tokens (specials left out, as tokenizer.json's model has
        them), as indented_json writes it at depth 0."""
        specials = set(self.specials)
        return indented_json({token: rank for rank, token in self.ordered if rank not in specials})

    def vocab_json(self) -> str:
        """vocab.json: every token, specials too, by id."""
        if self.specials and min(self.specials) > self.ordered[-len(self.specials) - 1][0]:  # specials come last
            tail = ",\n ".join(f"{json.dumps(token, ensure_ascii=False)}: {rank}" for rank, token in self.ordered[-len(self.specials):])
            return self.ordinary_json[:-2] + ",\n " + tail + "\n}"
        return indented_json({token: rank for rank, token in self.ordered})


def indented_json(value: dict | list, depth: int = 0) -> str:
    """json.dumps(value, ensure_ascii=False, indent=1) for a flat dict or list, as it reads at depth
    in an indented document, by json's C encoder (the indenting encoder is Python, and slow)."""
    pad = "\n" + " " * (depth + 1)
    inner = json.dumps(value, ensure_ascii=False, separators=("," + pad, ": "))[1:-1]
    brackets = "{}" if isinstance(value, dict) else "[]"
    return brackets[0] + (pad + inner + "\n" + " " * depth if inner else "") + brackets[1]


def write_vocab_and_merges(vocab: Vocab, folder: Path, listing: Listing | None = None) -> None:
    """GPT-2 / Hugging Face byte-level vocab.json and merges.txt."""
    listing = listing or Listing.of(vocab)
    (folder / "vocab.json").write_text(listing.vocab_json() + "\n", encoding="utf-8")
    lines = "".join(map(add, listing.merges, repeat("\n")))
    (folder / "merges.txt").write_text("#version: 0.2\n" + lines, encoding="utf-8")


def load_gpt2(generation: folders.Generation, name: str, entries: dict, pattern: str | None,
              specials: dict | None) -> Vocab:
    """vocab.json + merges.txt: a multi-byte entry that no merge makes is a special token (see split_vocab)."""
    path = generation.path / name
    # merges.txt beside it, or gpt2_merges.txt beside gpt2_vocab.json
    candidates = [name.replace("vocab.json", "merges.txt"), "merges.txt"]
    merges_name = next((c for c in candidates if c != name and generation.has(c)), None)
    if merges_name is None:
        raise TokenizerFileError(f"{path}: expected merges.txt beside this vocab.json")
    merges_path = generation.path / merges_name
    text = _text(generation.read(merges_name), merges_path)
    quote = not generation.linked(merges_name)
    lines = text.splitlines()
    header = 1 if lines and lines[0].startswith("#version") else 0
    if "" in lines or "#version" in text[len(lines[0]) if header else 0 :]:
        merges = [line for line in lines if line and not line.startswith("#version")]
    else:  # as merges.txt files are written: one #version line first, no empty lines
        merges = lines[header:]
    if list(map(str.count, merges, repeat(" "))).count(1) != len(merges):  # each line: exactly one space
        number, line = next((n, line) for n, line in enumerate(lines, 1) if line and not line.startswith("#version") and line.count(" ") != 1)
        shown = f" {line[:60]!r}" if quote else ""
        raise TokenizerFileError(f"{merges_path}:{number}: error parsing line{shown} (expected 'left right')")
    made = list(map(str.replace, merges, repeat(" "), repeat(""), repeat(1)))
    check_merges(merges_path, merges, made, " ".join(merges).split(" "), entries, quote=quote, vocab_path=path)
    ranks, found_specials = split_vocab(path, entries, set(made), specials or ())
    pattern = pattern_of(pattern, "gpt2", "the default for vocab.json")
    return checked(path, ranks, specials if specials is not None else found_specials, pattern, [path, merges_path])


def _text(data: bytes, path: Path) -> str:
    """data as UTF-8 text (a byte-order mark left out)."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{path}: {folders.not_utf8(data, e)}") from None


def check_merges(path: Path, merges: list, made: list[str], parts: list[str], entries: dict, *, quote: bool = True,
                 vocab_path: Path | None = None) -> None:
    """Each merge joins two tokens of the vocabulary (entries) into a third (Hugging Face refuses
    any other: a vocabulary and merges of two tokenizers are refused here too), and the merges
    follow the order of the ids they make, or Hugging Face's ids would differ from bpecli's (see
    docs/design.md, "tokenizer.json's merge order")."""
    _check_ids(vocab_path or path, entries)  # vocab_path: the vocabulary's own file, where it is not path
    ids: list = list(map(entries.get, made))
    if None in ids or not all(map(entries.__contains__, parts)):
        for number, (merge, token) in enumerate(zip(merges, made), 1):
            pair = merge.split(" ") if isinstance(merge, str) else merge
            lacking = next((part for part in (*pair, token) if part not in entries), None)
            if lacking is not None:
                shown = f" ({str(merge)[:60]!r}) names {lacking[:60]!r}," if quote else " names a token"
                raise TokenizerFileError(f"{path}: merge {number}{shown} which the vocabulary lacks; the merges and the "
                                         "vocabulary are not of one tokenizer")
    if all(map(le, ids, islice(ids, 1, None))):
        return
    last, before = -1, (0, "")
    for number, (merge, rank) in enumerate(zip(merges, ids), 1):
        if rank < last:
            this, that = (f" ({str(merge)[:60]!r})", f" ({str(before[1])[:60]!r})") if quote else ("", "")
            raise TokenizerFileError(
                f"{path}: merge {number}{this} makes id {rank}, but merge {before[0]} before it{that} makes id {last}; "
                "bpecli merges in the order of ids, as tiktoken does, so its ids would differ from Hugging Face's. "
                "Number the merged tokens in the order of the merges")
        last, before = rank, (number, merge)


def _check_ids(path: Path, entries: dict) -> None:
    """Every id is a whole number (not true or false, which Python counts as 1 and 0)."""
    if set(map(type, entries.values())) - {int}:
        text, rank = next((text, rank) for text, rank in entries.items() if type(rank) is not int)
        raise TokenizerFileError(f"{path}: the id of {text[:60]!r} is {json.dumps(rank)[:20]}, not a whole number")


def _lost_merge(text: str, entries: dict) -> bool:
    """Whether a token no merge makes looks like the work of a merge missing from the list: in
    the byte-level alphabet, not spelled as special tokens are (<|endoftext|>, <s>, [CLS]), and
    made of two tokens of lower ids, as every merge's token is (the last merges of a merges.txt cut
    short leave exactly such tokens)."""
    if text[:1] + text[-1:] in ("<>", "[]") or str_to_token(text) is None:
        return False
    rank = entries[text]
    return any(entries.get(text[:i], rank) < rank and entries.get(text[i:], rank) < rank for i in range(1, len(text)))


def split_vocab(path: Path, entries: dict, made: set[str], named: Iterable[str] = ()) -> tuple[dict[bytes, int], dict[str, int]]:
    """Ordinary tokens (single bytes and what merges make) as bytes, and the rest as specials;
    but a token that looks like a lost merge's (see _lost_merge) is an error, unless the caller
    names it a special token (named). Sets and maps sort them, not a loop over the vocabulary: a
    one-liner loads it every time."""
    named = set(named)
    texts, ids = list(entries), list(entries.values())
    tokens = strs_to_tokens(texts)
    specials = {text for text in entries.keys() - made if len(text) != 1}  # a character is a byte
    lost = sorted(text for text in specials - named if _lost_merge(text, entries))
    if lost:  # what a merge would make: taken as special tokens, they would be matched in text
        shown = ", ".join(repr(text[:30]) for text in lost[:3])
        raise TokenizerFileError(f"{path}: no merge makes {len(lost):,} of its tokens ({shown}{', ...' if len(lost) > 3 else ''}), "
                                 "though two tokens of lower ids join into each; are the merges cut short, or of another "
                                 "tokenizer? (Name a special token of that shape with --special-ids.)")
    if None in tokens:  # a character outside the alphabet: no byte-level token
        specials.update(text for text, token in zip(texts, tokens) if token is None)
        ranks = {token: rank for text, token, rank in zip(texts, tokens, ids) if text not in specials and token is not None}
    else:
        ranks = dict(zip(cast("list[bytes]", tokens), ids))
        for text in specials:  # few
            del ranks[cast(bytes, str_to_token(text))]
    return ranks, {text: entries[text] for text in texts if text in specials}
