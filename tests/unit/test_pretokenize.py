"""The vectorised pre-tokenizers (gpt2, cl100k, o200k) return exactly the regex's pieces, and the
bulk encoder built on them exactly tiktoken's ids."""

import numpy as np
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


@pytest.mark.parametrize("name", sorted(SPLITTERS))
@settings(max_examples=300, deadline=None)
@given(documents=st.lists(MIXES, min_size=1, max_size=4), picks=st.lists(st.integers(0, 1 << 16), max_size=8))
def test_cuts_start_pieces_where_the_pattern_does_not(name, documents, picks):
    """Cuts given to a splitter (characters' first bytes, as the bulk encoder's) join the
    pattern's starts, once each."""
    data = [d.encode("utf-8") for d in documents]
    joined, doc_starts = b"".join(data), [sum(map(len, data[:i])) for i in range(len(data))]
    firsts = [i for i in range(1, len(joined)) if joined[i] & 0xC0 != 0x80]
    cuts = sorted({firsts[p % len(firsts)] for p in picks}) if firsts else []
    split = SPLITTERS[name]
    plain = split(joined, doc_starts).tolist()
    assert split(joined, doc_starts, cuts=np.array(cuts, dtype=np.int64)).tolist() == sorted(set(plain) | set(cuts))


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


# Bytes near the edges of UTF-8: lead bytes of every size, continuation bytes, surrogates' and
# overlong forms' first bytes, the bytes past U+10FFFF.
EDGY_BYTES = st.lists(st.sampled_from([b"a", b" ", b"'", b"1", b"\x80", b"\xbf", b"\xc0", b"\xc2", b"\xdf", b"\xe0",
                                       b"\xed", b"\xef", b"\xf0", b"\xf4", b"\xf5", b"\xf8", b"\xff", b"\xa0", b"\x9f",
                                       b"\x90", "é".encode(), "字".encode(), "😀".encode()]), max_size=12).map(b"".join)


@pytest.mark.parametrize("name", sorted(SPLITTERS))
@settings(max_examples=500, deadline=None)
@given(st.lists(EDGY_BYTES, min_size=1, max_size=3))
def test_bytes_python_refuses_as_utf8_are_refused_where_it_says(name, documents):
    """The splitters read UTF-8 bytes: what is not (from callers that give bytes unchecked) stops
    with the offset of the first bad byte, as Python's decoder finds it."""
    from bpecli.pretokenize.characters import NotUTF8

    data = b"".join(documents)
    starts = [sum(map(len, documents[:k])) for k in range(len(documents))]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        with pytest.raises(NotUTF8) as refused:
            SPLITTERS[name](data, starts)
        assert refused.value.at == e.start
    else:
        assert SPLITTERS[name](data, starts)[-1] == len(data)


def test_encode_documents_names_the_document_that_is_not_utf8(gpt2):
    """Whichever way the documents go: in batches, a long one cut into blocks, with a space put
    before each, through the regex for a pattern with no vectorised splitter."""
    from bpecli import Tokenizer

    documents = [b"fine", "caf\u00e9".encode(), b"caf\xe9 au lait"]
    said = r"^document 2: not valid UTF-8 at byte 3; give documents as str, or as bytes of valid UTF-8$"
    for tokenizer in (gpt2, Tokenizer(ranks=gpt2.ranks, pattern=PATTERNS["gpt2"], add_prefix_space=True),
                      Tokenizer(ranks=gpt2.ranks, pattern=r"\S+|\s+")):
        with pytest.raises(ValueError, match=said):
            tokenizer.encode_documents(documents)
    long = b"a line of text\n" * 350_000  # 5,250,000 bytes: more than a block
    with pytest.raises(ValueError, match=r"^document 1: not valid UTF-8 at byte 5250003;"):
        gpt2.encode_documents([b"short", long + b"abc\xff"])


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
    assert ours._text.bulk.split is o200k_piece_starts
    assert ids.tolist() == [i for d in theirs.encode_ordinary_batch(documents) for i in d]


def test_long_texts_take_the_vectorised_path_and_agree(gpt2, tiktoken_gpt2, kernel_docs_sample):
    text = kernel_docs_sample[:300_000] + "<|endoftext|>" + "x'll \u00a0 " * 10_000
    assert gpt2._text.bulk is not None
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)


# ---- custom patterns: bounded in time, whole matches ------------------------------------------

CATASTROPHIC = r"(?:a|aa)+$|[\s\S]"  # on 41 characters it runs for minutes without a bound
TRAP = "a" * 40 + "b"


@pytest.fixture
def short_bound(monkeypatch):
    from bpecli.pretokenize import patterns

    monkeypatch.setattr(patterns, "TIMEOUT_SECONDS", 0.2)


def test_a_pattern_that_backtracks_catastrophically_stops_with_one_error(short_bound, tmp_path):
    """Everywhere a custom pattern runs: its check, the regex path of encode, training's count."""
    import time

    from bpecli import Tokenizer
    from bpecli.inputs.parts import document_parts
    from bpecli.training.counting import count_pretokens
    from bpecli.errors import BpecliError
    from bpecli.pretokenize import resolve_pattern, splitter

    tok = Tokenizer(ranks={bytes([b]): b for b in range(256)}, pattern=resolve_pattern(CATASTROPHIC))
    corpus = tmp_path / "docs.txt"
    corpus.write_text(f"hello\n{TRAP}\n", encoding="utf-8")
    runs = {
        "splitter": lambda: splitter(CATASTROPHIC)(TRAP),
        "encode": lambda: tok.encode(TRAP),
        "encode_documents": lambda: tok.encode_documents(["ok", TRAP]),
        "count": lambda: count_pretokens(document_parts([(str(corpus), "docs.txt")], separators=[]), pattern=CATASTROPHIC, separators=[]),
    }
    for name, call in runs.items():
        started = time.process_time()
        with pytest.raises(BpecliError, match=r"the pattern '\(\?:a\|aa\)\+\$\|\[\\\\s\\\\S\]' .* backtracks catastrophically"):
            call()
        assert time.process_time() - started < 5, name


def test_the_bound_grows_with_the_text_far_beyond_a_linear_patterns_time():
    """The slowest linear pattern takes about 10 us a character (a preset with its classes spelled
    out, on text that is all short pieces): the bound is many times that (20 on a quiet machine)."""
    import time

    from bpecli.pretokenize import patterns

    text = "a'" * 50_000
    started = time.process_time()
    compiled(PATTERNS["o200k"]).findall(text)
    taken = time.process_time() - started
    assert patterns.time_bound(len(text)) > 5 * taken
    assert patterns.time_bound(0) >= 1


@pytest.mark.parametrize("pattern", [r"(\w+)|(\s+)|([^\w\s]+)", r"(?P<word>\w+)|\s+|[^\w\s]+", r"(a)(?:\1)+|[\s\S]"])
def test_a_pattern_with_capturing_groups_splits_into_its_whole_matches(pattern):
    """As tiktoken takes them: findall would give the groups (and '' for a group that did not take
    part), which the check called a character left out."""
    import regex

    from bpecli.pretokenize import resolve_pattern, splitter

    assert resolve_pattern(pattern) == pattern
    text = "Hello, world aaa  42!"
    assert splitter(pattern)(text) == [m.group() for m in regex.finditer(pattern, text)]
    assert "".join(splitter(pattern)(text)) == text


def test_a_pattern_with_capturing_groups_encodes_as_tiktoken_and_trains_as_without_them(gpt2, tiktoken_gpt2, tmp_path):
    import tiktoken

    from bpecli import Tokenizer
    from bpecli.training import train

    grouped, plain = r"""('(?:s|t|re))| ?(\p{L}+)| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s""", \
        r"""'(?:s|t|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s"""
    ours = Tokenizer(ranks=gpt2.ranks, pattern=grouped)
    theirs = tiktoken.Encoding("grouped", pat_str=grouped, mergeable_ranks=gpt2.ranks, special_tokens={})
    text = "It's a test of 123 numbers,   spaces\n\nand caf\u00e9 \u4e2d\u6587 \U0001F600 words."
    assert ours.encode(text) == theirs.encode_ordinary(text)
    corpus = tmp_path / "docs.txt"
    corpus.write_text(text * 50, encoding="utf-8")
    assert train([str(corpus)], vocab_size=300, pattern=grouped).merges == train([str(corpus)], vocab_size=300, pattern=plain).merges


def test_a_pattern_nested_too_deep_to_compile_is_refused_in_one_error():
    """The regex module raises RecursionError on a thousand nested groups, which no one caught."""
    from bpecli.errors import BpecliError
    from bpecli.pretokenize import resolve_pattern

    with pytest.raises(BpecliError, match=r"^invalid regex '\(\(\(.{50,}' \(bpecli.json\): ") as raised:
        resolve_pattern("(" * 1000 + "a" + ")" * 1000 + r"|[\s\S]", source="bpecli.json")
    assert len(str(raised.value)) < 300


def test_a_pattern_given_by_the_caller_is_named_as_each_caller_spells_it():
    from bpecli.errors import BpecliError
    from bpecli.pretokenize import resolve_pattern

    with pytest.raises(BpecliError, match=r"^the pattern .* \(pattern\) leaves ','") as raised:
        resolve_pattern(r"\w+")
    assert " (--pattern) leaves ','" in raised.value.for_cli()
