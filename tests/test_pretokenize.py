"""The vectorised pre-tokenizers (gpt2, cl100k, o200k) return exactly the regex's pieces, and the
bulk encoder built on them exactly tiktoken's ids."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli.pretokenize import PATTERNS, compiled
from bpecli.pretokenize.cl100k import cl100k_piece_starts
from bpecli.pretokenize.gpt2 import gpt2_piece_starts
from bpecli.pretokenize.o200k import o200k_piece_starts

SPLITTERS = {"gpt2": gpt2_piece_starts, "cl100k": cl100k_piece_starts, "o200k": o200k_piece_starts}

# Adversarial mixes: spaces of every kind, apostrophes and contraction letters in any case, digits
# and other numbers, both letter cases, slashes, combining marks, CJK, emoji, control characters.
PLAIN = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "\u00a0", "\u3000", "\u2028", "\x00", "\x1c", "\x85",
         "'", "s", "ll", "ve", "re", "t", "d", "m", "L", "S", "LL", "lL", "Ve", "rE", "ſ", "K", "ß", "é", "É", "Ω",
         "Ab", "aB", "ABc", "5", "123", "4567", "²", "½", "Ⅻ", "😀", ".", "-", "#", "(", "/", "\n/", "/\n",
         "字", "字A", "a字", "A字b", "ǅ", "ʰ"]  # the last ones: letters of neither case, titlecase, modifier
TRICKY = st.sampled_from(PLAIN + ["\u0301", "e\u0301"])  # combining marks
MIXES = st.lists(st.one_of(TRICKY, st.text(max_size=3)), max_size=30).map("".join)
# No combining marks: o200k's vectorised rules, not its regex fallback, split every line.
PLAIN_MIXES = st.lists(st.sampled_from(PLAIN), max_size=40).map("".join)


def vectorised(documents: list[str], split=gpt2_piece_starts) -> list[str]:
    data = [d.encode("utf-8") for d in documents]
    joined = b"".join(data)
    starts, offset = [], 0
    for d in data:
        starts.append(offset)
        offset += len(d)
    bounds = split(joined, starts).tolist()
    return [joined[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])]


def by_regex(documents: list[str], name: str) -> list[str]:
    """The pieces of the preset's regex, with the Unicode classes the presets mean (tiktoken's)."""
    return [piece for d in documents for piece in compiled(PATTERNS[name]).findall(d)]


def test_gpt2_examples():
    assert vectorised(["I'm  here"]) == ["I", "'m", " ", " here"]
    assert vectorised(["don't\n\n\n'", "ll x'LL 'sa  "]) == ["don", "'t", "\n\n", "\n", "'", "ll", " x", "'", "LL", " '", "sa", "  "]
    assert vectorised([""]) == [] and vectorised(["", "a", ""]) == ["a"]


def test_cl100k_examples():
    split = cl100k_piece_starts
    assert vectorised(["it's  (x)\n"], split) == ["it", "'s", " ", " (", "x", ")\n"]
    assert vectorised(["IT'S 'tis x'ſ don'T'LL", ".\n hello  \n\t\tx", "12345 a1b  "], split) == [
        "IT", "'S", " '", "tis", " x", "'ſ", " don", "'T", "'LL", ".\n", " hello", "  \n", "\t", "\tx", "123", "45", " a",
        "1", "b", "  "]


def test_o200k_examples():
    split = o200k_piece_starts
    assert vectorised(["don't HTMLParser iPhone"], split) == ["don't", " HTMLParser", " i", "Phone"]
    assert vectorised(["x's's it'sX we'lla", ".\n/abc\n  ", "字AB ok 字Ve 'lLa"], split) == [
        "x's", "'s", " it's", "X", " we'll", "a", ".\n/", "abc", "\n", "  ", "字", "AB", " ok", " 字Ve", " '", "l", "La"]


@pytest.mark.parametrize("name", sorted(SPLITTERS))
@settings(max_examples=1000, deadline=None)
@given(documents=st.lists(MIXES, min_size=1, max_size=4))
def test_the_same_pieces_as_the_regex(name, documents):
    """Documents are edges: each is split as if it were the whole text."""
    assert vectorised(documents, SPLITTERS[name]) == by_regex(documents, name)


@settings(max_examples=1000, deadline=None)
@given(st.lists(PLAIN_MIXES, min_size=1, max_size=4))
def test_o200k_rules_alone_give_the_regex_pieces(documents):
    assert vectorised(documents, o200k_piece_starts) == by_regex(documents, "o200k")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=("Cn", "Cs"))) | MIXES, min_size=1, max_size=4))
def test_bulk_encoding_equals_tiktoken(gpt2, tiktoken_gpt2, documents):
    ids, ends = gpt2.encode_documents(documents, eot=50256)
    expected = []
    for ids_of_one in tiktoken_gpt2.encode_ordinary_batch(documents):
        expected += ids_of_one + [50256]
    assert ids.tolist() == expected
    assert ends.tolist() == [i + 1 for i, token in enumerate(expected) if token == 50256]


@pytest.fixture(scope="module")
def o200k_over_gpt2(gpt2):
    """o200k's pattern over GPT-2's ranks (the o200k ranks are not among the fixtures): bpecli's
    and tiktoken's."""
    tiktoken = pytest.importorskip("tiktoken")
    from bpecli import Tokenizer

    theirs = tiktoken.Encoding("o200k-over-gpt2", pat_str=PATTERNS["o200k"], mergeable_ranks=gpt2.ranks, special_tokens={})
    return Tokenizer(ranks=gpt2.ranks, pattern=PATTERNS["o200k"]), theirs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=("Cn", "Cs"))) | MIXES | PLAIN_MIXES, min_size=1, max_size=4))
def test_bulk_encoding_with_the_o200k_pattern_equals_tiktoken(o200k_over_gpt2, documents):
    ours, theirs = o200k_over_gpt2
    ids, _ = ours.encode_documents(documents)
    assert ours._bulk.split is o200k_piece_starts
    assert ids.tolist() == [i for d in theirs.encode_ordinary_batch(documents) for i in d]


def test_long_texts_take_the_vectorised_path_and_agree(gpt2, tiktoken_gpt2, kernel_docs_sample):
    text = kernel_docs_sample[:300_000] + "<|endoftext|>" + "x'll \u00a0 " * 10_000
    assert gpt2._bulk is not None
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)
