"""The presets mean tiktoken's Unicode classes, on every code point (bpecli.pretokenize.unicode_classes)."""

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli import PATTERNS, Tokenizer
from bpecli.pretokenize import unicode_classes
from bpecli.pretokenize.characters import LAST_WHITESPACE

# Every code point but the surrogates, which UTF-8 cannot carry.
EVERY = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


@pytest.fixture(scope="module")
def tiktoken_classes():
    """Each class as tiktoken's regex engine sees it: a pattern of that one class keeps the
    characters it matches and drops the rest."""
    tiktoken = pytest.importorskip("tiktoken")
    everything = "".join(map(chr, EVERY))
    ranks = {bytes([b]): b for b in range(256)}
    found = {}
    for name in ("L", "N", "M", "Lu", "Ll", "Lt", "Lm", "Lo"):
        probe = tiktoken.Encoding("probe", pat_str=rf"\p{{{name}}}", mergeable_ranks=ranks, special_tokens={})
        found[name] = {ord(c) for c in probe.decode_bytes(probe.encode_ordinary(everything)).decode("utf-8")}
    return found


@pytest.mark.parametrize("name", ["L", "N", "M", "Lu", "Ll", "Lt", "Lm", "Lo"])
def test_the_class_tables_are_tiktokens(tiktoken_classes, name):
    ours = {c for first, last in unicode_classes.ranges(name) for c in range(first, last + 1)}
    assert ours == tiktoken_classes[name]


def test_no_code_point_past_the_last_whitespace_is_whitespace():
    """characters.class_table looks for whitespace only up to LAST_WHITESPACE."""
    past = "".join(chr(c) for c in EVERY if c > LAST_WHITESPACE)
    assert regex.search(r"\s", past) is None


@pytest.fixture(scope="module", params=["gpt2", "cl100k", "o200k"])
def pair(request, gpt2, tiktoken_gpt2):
    """(bpecli, tiktoken) with the same ranks (GPT-2's) and one preset pattern."""
    tiktoken = pytest.importorskip("tiktoken")
    pattern = PATTERNS[request.param]
    ours = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=pattern)
    theirs = tiktoken.Encoding(request.param, pat_str=pattern, mergeable_ranks=tiktoken_gpt2._mergeable_ranks,
                               special_tokens={"<|endoftext|>": 50256})
    return ours, theirs


def test_every_code_point_splits_as_in_tiktoken(pair):
    """Each code point between letters, digits, spaces, a contraction and a newline, where its
    class decides where pieces start (the bulk path: long texts)."""
    ours, theirs = pair
    for start in range(0, len(EVERY), 1 << 16):
        text = "".join(f"a{c}'s {c}1\n{c}{c}" for c in map(chr, EVERY[start : start + (1 << 16)]))
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), hex(EVERY[start])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c < 0xE000).map(chr)
                | st.sampled_from(["a", "A", "1", " ", "\n", "'s", "'S", "x"]), min_size=1, max_size=12).map("".join))
def test_short_texts_split_as_in_tiktoken(pair, text):
    """The regex path (short texts) spells the classes out from the same tables."""
    ours, theirs = pair
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
