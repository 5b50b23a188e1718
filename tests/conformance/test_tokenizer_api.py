"""The Tokenizer as a Python user meets it: a short repr, as tiktoken's <Encoding 'cl100k_base'>,
and encode_single_token of a special token's bytes, as tiktoken gives it."""

import pytest

import bpecli

EOT = "<|endoftext|>"


def test_repr_is_the_name_and_the_size_never_the_tokens(gpt2, gpt2_vocab, tiktoken_gpt2):
    shown = repr(gpt2)
    assert shown == f"<Tokenizer {str(gpt2_vocab)!r} vocab_size={tiktoken_gpt2.n_vocab}>"
    assert repr(gpt2.vocab) == f"<Vocab {str(gpt2_vocab)!r} vocab_size={tiktoken_gpt2.n_vocab}>"


def test_repr_of_a_folder_names_the_folder(tmp_path, gpt2):
    gpt2.save(tmp_path / "gpt2-copy")
    assert repr(bpecli.load(tmp_path / "gpt2-copy")) == f"<Tokenizer {str(tmp_path / 'gpt2-copy')!r} vocab_size=50257>"


def test_repr_of_a_tokenizer_made_in_python_is_its_size():
    tok = bpecli.Tokenizer({bytes([b]): b for b in range(256)}, {EOT: 256}, bpecli.PATTERNS["gpt2"])
    assert repr(tok) == "<Tokenizer vocab_size=257>"


@pytest.mark.parametrize("token", [EOT.encode(), EOT, b"hello", "hello", b" world"])
def test_encode_single_token_of_a_special_tokens_bytes_is_its_id_as_in_tiktoken(gpt2, tiktoken_gpt2, token):
    assert gpt2.encode_single_token(token) == tiktoken_gpt2.encode_single_token(token)


@pytest.mark.parametrize("token", [b"<|endoftext|>x", b"\xff\xfe", "hello world", b""])
def test_encode_single_token_of_no_token_is_a_key_error_as_in_tiktoken(gpt2, tiktoken_gpt2, token):
    with pytest.raises(KeyError):
        tiktoken_gpt2.encode_single_token(token)
    with pytest.raises(KeyError):
        gpt2.encode_single_token(token)


def test_a_tokenizer_made_from_ranks_splits_as_gpt2_unless_told_and_its_pattern_is_checked_at_once(gpt2, tiktoken_gpt2):
    text = "Hello world, it's 2026!\n\n  indented"
    assert bpecli.Tokenizer(gpt2.ranks).encode(text) == tiktoken_gpt2.encode(text)
    assert bpecli.Tokenizer(gpt2.ranks, pattern="cl100k").pattern == bpecli.PATTERNS["cl100k"]
    for name, preset in (("cl100k_base", "cl100k"), ("o200k_harmony", "o200k"), ("r50k_base", "gpt2")):
        with pytest.raises(bpecli.BpecliError, match=f"did you mean {preset}"):
            bpecli.Tokenizer(gpt2.ranks, pattern=name)
    with pytest.raises(bpecli.BpecliError, match=r"leaves ' ' \(character 6\) out of every piece"):
        bpecli.Tokenizer(gpt2.ranks, pattern=r"\w+|[^\w\s]")
