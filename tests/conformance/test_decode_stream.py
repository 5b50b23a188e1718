"""The streaming decoder: ids fed one at a time give text as soon as it is whole UTF-8. Checked
against tiktoken's decode_bytes (what the ids so far hold, up to the last whole character) and
against Hugging Face tokenizers' DecodeStream over the same GPT-2 files (it never gives text out
earlier than bpecli does, and the whole text is the same)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpecli

TEXTS = ["a😀中文b", "👩‍👩‍👧 family", "日本語のテキスト、そして한국어", "naïve café ☕ 🇫🇷 flags", "plain ascii", "<|endoftext|>x😀"]


def whole_part(data: bytes) -> str:
    """data decoded up to its last whole character (an incomplete one at the end left out)."""
    for cut in range(0, 4):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise AssertionError("the test texts are valid UTF-8")


@pytest.fixture(scope="module")
def hf_gpt2(gpt2_vocab, fixtures):
    tokenizers = pytest.importorskip("tokenizers")
    model = tokenizers.models.BPE.from_file(str(gpt2_vocab), str(fixtures / "gpt2_merges.txt"))
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    return tokenizer


@pytest.mark.parametrize("text", TEXTS)
def test_text_comes_out_as_soon_as_it_is_whole_as_tiktokens_bytes_say(gpt2, tiktoken_gpt2, text):
    ids = tiktoken_gpt2.encode(text, allowed_special="all")
    stream, so_far = gpt2.decode_stream(), ""
    for k, token in enumerate(ids, 1):
        piece = stream.step(token)
        assert piece is None or piece  # None, never ""
        so_far += piece or ""
        assert so_far == whole_part(tiktoken_gpt2.decode_bytes(ids[:k]))
    assert stream.flush() == ""
    assert so_far == text


@pytest.mark.parametrize("skip", [False, True])
def test_special_tokens_kept_or_skipped_as_hugging_face_does(gpt2, hf_gpt2, tiktoken_gpt2, skip):
    from tokenizers import AddedToken
    from tokenizers.decoders import DecodeStream

    hf_gpt2.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    ids = tiktoken_gpt2.encode("a😀<|endoftext|>中文<|endoftext|>", allowed_special="all")
    theirs, ours = DecodeStream(skip_special_tokens=skip), gpt2.decode_stream(skip_special_tokens=skip)
    their_text = "".join(theirs.step(hf_gpt2, token) or "" for token in ids)
    our_text = "".join(ours.step(token) or "" for token in ids) + ours.flush()
    assert our_text == their_text == ("a😀中文" if skip else "a😀<|endoftext|>中文<|endoftext|>")


def test_the_texts_split_characters_across_tokens(tiktoken_gpt2):
    def splits(text):
        ids = tiktoken_gpt2.encode(text, allowed_special="all")
        return any(whole_part(tiktoken_gpt2.decode_bytes(ids[:k])).encode() != tiktoken_gpt2.decode_bytes(ids[:k])
                   for k in range(1, len(ids)))

    assert sum(map(splits, TEXTS)) >= 4


@pytest.mark.parametrize("text", TEXTS[:-1])
def test_never_later_than_hugging_faces_decode_stream(gpt2, hf_gpt2, text):
    from tokenizers.decoders import DecodeStream

    ids = hf_gpt2.encode(text).ids
    theirs, ours = DecodeStream(skip_special_tokens=False), gpt2.decode_stream()
    their_text, our_text = "", ""
    for token in ids:
        their_text += theirs.step(hf_gpt2, token) or ""
        our_text += ours.step(token) or ""
        assert our_text.startswith(their_text)
    assert our_text == their_text == text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50256), max_size=12))
def test_the_pieces_and_the_rest_are_tiktokens_decode_of_any_ids(gpt2, tiktoken_gpt2, ids):
    stream = gpt2.decode_stream()
    pieces = [stream.step(token) for token in ids]
    assert "".join(piece or "" for piece in pieces) + stream.flush() == tiktoken_gpt2.decode(ids)


def test_several_ids_at_once_and_a_reused_stream(gpt2, tiktoken_gpt2):
    ids = tiktoken_gpt2.encode("😀 and 中文")
    stream = bpecli.DecodeStream(gpt2)
    assert stream.step(ids[:2]) + stream.step(ids[2:]) == "😀 and 中文"
    assert stream.step(ids[:1]) is None  # the first bytes of 😀 only
    assert stream.flush() == tiktoken_gpt2.decode(ids[:1]) == "\ufffd"
    assert stream.step(ids) == "😀 and 中文"
    assert [stream.step(token) for token in np.array(ids[:2])] == [None, "😀"]  # ids from a shard, as numpy ints


def test_strict_refuses_invalid_utf8_and_an_incomplete_end(gpt2, tiktoken_gpt2):
    ids = tiktoken_gpt2.encode("😀")
    stream = gpt2.decode_stream(errors="strict")
    assert stream.step(ids[0]) is None
    with pytest.raises(bpecli.BpecliError, match="incomplete character; use errors='replace'"):
        stream.flush()
    lone = gpt2.encode_single_token(b"\xff")
    with pytest.raises(bpecli.BpecliError, match="invalid UTF-8"):
        gpt2.decode_stream(errors="strict").step(lone)


def test_an_unknown_id_is_named(gpt2):
    with pytest.raises(KeyError, match="id 99999999 is not in the vocabulary"):
        gpt2.decode_stream().step(99_999_999)
