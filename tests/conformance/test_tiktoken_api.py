"""Code written for tiktoken.Encoding runs on a bpecli Tokenizer: the same calls, made on both
(tiktoken built from the same GPT-2 ranks), give the same results and raise the same kinds of error."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

TEXTS = ["hello world", "", "héllo wörld 😀 中文", "it's  2010\n\n\tx", "a<|endoftext|>b", "<|endoftext|>", "x" * 70_000]
EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def both(gpt2, tiktoken_gpt2):
    return gpt2, tiktoken_gpt2


def same(both, call):
    """call(encoding) on bpecli's and on tiktoken's: equal results, or errors of the same kind."""
    results = []
    for encoding in both:
        try:
            result = call(encoding)
            results.append(result.tolist() if isinstance(result, np.ndarray) else result)
        except (ValueError, KeyError) as error:
            results.append(KeyError if isinstance(error, KeyError) else ValueError)
    assert results[0] == results[1]
    return results[0]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize(
    "options",
    [{}, {"allowed_special": "all"}, {"allowed_special": {EOT}}, {"disallowed_special": ()},
     {"allowed_special": set(), "disallowed_special": {EOT}}, {"allowed_special": "all", "disallowed_special": "all"}],
)
def test_encode_with_every_special_token_option(both, text, options):
    same(both, lambda e: e.encode(text, **options))
    same(both, lambda e: e.encode_to_numpy(text, **options))


def test_special_text_is_refused_by_default_with_a_value_error(both):
    assert same(both, lambda e: e.encode("a<|endoftext|>b")) is ValueError


def test_batches(both):
    texts = [t for t in TEXTS if EOT not in t]
    ids = same(both, lambda e: e.encode_ordinary_batch(texts, num_threads=4))
    same(both, lambda e: e.encode_batch(TEXTS, allowed_special="all"))
    same(both, lambda e: e.decode_batch(ids))
    same(both, lambda e: e.decode_bytes_batch(ids, num_threads=2))


@pytest.mark.parametrize("text", TEXTS[:5] + ["é", "😀x", "日本"])
def test_decodes(both, text):
    ids = both[1].encode(text, allowed_special="all")
    same(both, lambda e: e.decode(ids))
    same(both, lambda e: e.decode_bytes(ids))
    same(both, lambda e: e.decode_tokens_bytes(ids))
    same(both, lambda e: e.decode_with_offsets(ids))
    same(both, lambda e: [e.decode_single_token_bytes(i) for i in ids])
    same(both, lambda e: e.decode(ids[:-1] if len(ids) > 1 else ids, errors="replace"))


def test_offsets_inside_characters(both):
    ids = both[1].encode("a😀b")  # the emoji is split across tokens
    assert len(ids) > 3
    same(both, lambda e: e.decode_with_offsets(ids))


@pytest.mark.parametrize("token", ["hello", b" world", EOT, "hello world", b"\xff", "é"])
def test_single_tokens(both, token):
    same(both, lambda e: e.encode_single_token(token))


def test_unknown_ids_are_key_errors(both):
    assert same(both, lambda e: e.decode([99_999_999])) is KeyError
    assert same(both, lambda e: e.decode_single_token_bytes(99_999_999)) is KeyError


def test_properties(both):
    same(both, lambda e: (e.n_vocab, e.eot_token, e.max_token_value, e.special_tokens_set))
    same(both, lambda e: (e.is_special_token(50256), e.is_special_token(50255)))
    same(both, lambda e: sorted(e.token_byte_values()))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"hello", b" ", b"  ", b"\n", b"\t", b"\xff", b"\xe4\xb8", b"\xe4\xb8\xad", b"\xf0\x9f",
                                 b"abc", b"'s", b"123", b"\xc3", b"!", b"\n\n", b" \n"]), max_size=12).map(b"".join))
def test_raw_bytes_encode_as_tiktoken_encodes_them(both, data):
    same(both, lambda e: e._encode_bytes(data))
