"""Encode and decode, id for id against tiktoken built from the same ranks."""


import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli import BpecliError, Tokenizer
from conftest import texts

TEXTS = {
    "empty": "",
    "emoji": "I 💚 tokenizers 👩‍👩‍👧‍👦!!",
    "cjk": "日本語のテキストと中文文本。",
    "spaces": "a  b   c\n\n\n  \t x   \n",
    "contractions": "I'm sure you'll see it's what they'd've done, DON'T",
    "numbers": "1234567 3.14159 0x1f 1,000,000",
    "long run": "=" * 500 + " " * 300 + "ab" * 200,
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_gpt2_ids_equal_tiktoken(gpt2, tiktoken_gpt2, name):
    text = TEXTS[name]
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")


@pytest.mark.parametrize("name", ["address.txt", "german.txt", "tinystories_sample.txt", "corpus.en"])
def test_gpt2_ids_equal_tiktoken_on_fixture_files(gpt2, tiktoken_gpt2, fixtures, name):
    text = (fixtures / name).read_text(encoding="utf-8")
    ids = gpt2.encode(text, allowed_special="all")
    assert ids == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text


def test_gpt2_ids_equal_tiktoken_on_a_real_corpus(gpt2, tiktoken_gpt2, kernel_docs_sample):
    assert gpt2.encode(kernel_docs_sample, allowed_special="all") == tiktoken_gpt2.encode(kernel_docs_sample, allowed_special="all")


def test_special_tokens_both_ways(gpt2, tiktoken_gpt2):
    text = "one<|endoftext|>two <|endoftext|>"
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")
    assert 50256 in gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)
    assert 50256 not in gpt2.encode_ordinary(text)


def test_hello_world(gpt2):
    assert gpt2.encode("hello world", allowed_special="all") == [31373, 995]
    assert gpt2.decode([31373, 995]) == "hello world"


# Code points that Python's Unicode (14.0 in 3.11) leaves unassigned are left out: the regex
# module and tiktoken's Rust regex know newer, different Unicode versions, so they classify some
# of those differently (U+3D000 is a letter to one and unassigned to the other).
ASSIGNED_TEXT = st.text(st.characters(exclude_categories=("Cn", "Cs")))


@settings(max_examples=300, deadline=None)
@given(ASSIGNED_TEXT)
def test_gpt2_property_any_unicode(gpt2, tiktoken_gpt2, text):
    ids = gpt2.encode(text, allowed_special="all")
    assert ids == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["<|endoftext|>", "<|endo", "text", " ", "\n", "é", "'s"]), max_size=12))
def test_gpt2_property_special_token_mixes(gpt2, tiktoken_gpt2, parts):
    text = "".join(parts)
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode_ordinary(text) == tiktoken_gpt2.encode_ordinary(text)


@pytest.fixture(scope="module")
def cl100k(cl100k_file):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ours = Tokenizer.load(cl100k_file, pattern="cl100k")
    theirs = tiktoken.Encoding(
        "cl100k_base", pat_str=ours.pattern, mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)),
        special_tokens=ours.special_tokens,
    )
    return ours, theirs


def test_cl100k_specials_come_from_the_preset(cl100k):
    ours, _ = cl100k
    assert ours.special_tokens["<|endoftext|>"] == 100257
    assert ours.vocab_size == 100256 + 5


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_cl100k_ids_equal_tiktoken(cl100k, name):
    ours, theirs = cl100k
    assert ours.encode(TEXTS[name], allowed_special="all") == theirs.encode(TEXTS[name], allowed_special="all")


def test_cl100k_ids_equal_tiktoken_on_files(cl100k, fixtures, kernel_docs_sample):
    ours, theirs = cl100k
    for text in [kernel_docs_sample[:500_000]] + [(fixtures / n).read_text(encoding="utf-8") for n in ("german.txt", "corpus.en")]:
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


@settings(max_examples=200, deadline=None)
@given(ASSIGNED_TEXT)
def test_cl100k_property_any_unicode(cl100k, text):
    ours, theirs = cl100k
    ids = ours.encode(text, allowed_special="all")
    assert ids == theirs.encode(text, allowed_special="all")
    assert ours.decode(ids) == text


def test_decode_errors(gpt2):
    from bpecli import BpecliError

    with pytest.raises(BpecliError, match="id 60000 is not in the vocabulary"):
        gpt2.decode([1, 60000])
    broken = gpt2.encode("é", allowed_special="all")[:1] if len(gpt2.encode("é", allowed_special="all")) > 1 else [gpt2.ranks[b"\xc3"]]
    assert gpt2.decode(broken) == "\ufffd"
    with pytest.raises(BpecliError, match="invalid UTF-8") as raised:
        gpt2.decode(broken, errors="strict")
    # the library names its own argument; the command line, its flag
    assert str(raised.value).endswith("use errors='replace' to see U+FFFD instead")
    assert raised.value.for_cli().endswith("use --errors replace to see U+FFFD instead")


def test_surrogates_are_fixed_up_as_tiktoken_does(gpt2, tiktoken_gpt2):
    for text in ["a\ud800b", "\ud83d\ude00 ok", "x" * 70_000 + "\udfff"]:
        assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")


def test_decode_takes_a_numpy_array_like_a_list(gpt2):
    import numpy as np

    from bpecli import BpecliError

    ids = gpt2.encode("héllo wörld 😀<|endoftext|>", allowed_special="all")
    assert gpt2.decode(np.array(ids, dtype=np.uint16)) == gpt2.decode(ids) == "héllo wörld 😀<|endoftext|>"
    with pytest.raises(BpecliError, match="id 60000 is not in the vocabulary"):
        gpt2.decode(np.array([31373, 60000]))


# ---- long pieces, threads, odd ids: exact and safe whatever comes ----

@pytest.mark.parametrize("text", ["a" * 300_000, "ab" * 150_000, "thequickbrownfox" * 20_000, "é" * 100_000])
def test_very_long_pieces_equal_tiktoken(gpt2, tiktoken_gpt2, text):
    assert gpt2.encode(text, allowed_special="all") == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode(text[:20_000], allowed_special="all") == tiktoken_gpt2.encode(text[:20_000], allowed_special="all")  # the regex path's length


def test_a_tokenizer_shared_by_threads_gives_each_the_ids_of_one_thread(gpt2, kernel_docs_sample):
    """Long texts take the bulk path, whose piece tables grow as they go: each thread has its own."""
    texts = [kernel_docs_sample[i * 150_000 : (i + 1) * 150_000] for i in range(8)] + ["x" * 100_000, "hello " * 20_000]
    fresh = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    expected = [gpt2.encode(t, allowed_special="all") for t in texts]
    for _ in range(2):
        assert fresh.encode_batch(texts, num_threads=8, allowed_special="all") == expected
        fresh.clear_cache()


def test_sparse_ids_decode_without_a_table_as_long_as_the_highest_id(gpt2):
    huge = 4_000_000_000
    tok = Tokenizer(ranks=gpt2.ranks, special_tokens={"<|end|>": huge}, pattern=gpt2.pattern)
    import numpy as np

    ids = np.array(tok.encode("hello<|end|>world", allowed_special="all") , dtype=np.int64)
    assert tok.decode(ids) == "hello<|end|>world" and tok.decode(ids.tolist()) == "hello<|end|>world"
    assert sum(a.nbytes for a in tok._decoder.byte_table if a is not None) < 10_000_000
    with pytest.raises(BpecliError, match="id 3999999999 is not in the vocabulary"):
        tok.decode(np.array([huge - 1]))


@pytest.mark.parametrize("specials, message", [({"": 300}, "non-empty"), ({"<|x|>": -1}, "whole number"),
                                                ({"<|x|>": "7"}, "whole number")])
def test_bad_special_tokens_are_refused(gpt2, specials, message):
    with pytest.raises(BpecliError, match=message):
        Tokenizer(ranks=gpt2.ranks, special_tokens=specials, pattern=gpt2.pattern)


def test_a_pattern_that_drops_characters_is_refused_not_obeyed(gpt2):
    """Custom patterns are checked on a probe text when given and on every text encoded."""
    from bpecli.pretokenize import resolve_pattern

    with pytest.raises(BpecliError, match=r"leaves ',' \(character 5\) out of every piece"):
        resolve_pattern(r"[^,]+|,(?=\S)", source="--pattern")  # drops the comma of the probe's 'Hello, '
    sneaky = Tokenizer(ranks=gpt2.ranks, pattern=r"[^~]+")  # covers the probe, not "~"
    assert sneaky.decode(sneaky.encode("fine text", allowed_special="all")) == "fine text"
    with pytest.raises(BpecliError, match=r"leaves '~' \(character 2\) out"):
        sneaky.encode("ab~c", allowed_special="all")


def test_a_tokenizer_pickles_without_its_tables_or_caches(gpt2):
    import pickle

    gpt2.encode("warm the caches " * 10, allowed_special="all")
    copy = pickle.loads(pickle.dumps(gpt2))
    assert copy.encode("hello world", allowed_special="all") == [31373, 995]
    assert len(pickle.dumps(gpt2)) < 3 * len(pickle.dumps(gpt2.ranks))



def test_tiktoken_reads_the_ranks_file(trained, fixtures):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    tok, out = trained
    meta = json.loads((out / "bpecli.json").read_text())
    theirs = tiktoken.Encoding("trained", pat_str=meta["pattern"], special_tokens=meta["special_tokens"],
                               mergeable_ranks=load_tiktoken_bpe(str(out / "tokenizer.tiktoken")))
    for text in texts(fixtures):
        assert theirs.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
