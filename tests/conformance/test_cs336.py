"""Training reproduces the merges and vocabulary of the CS336 reference implementation."""

import json

from bpecli import train
from conftest import gpt2_byte_decoder


def test_reproduces_the_cs336_reference(fixtures, tmp_path):
    tokenizer = train([fixtures / "corpus.en"], vocab_size=500, special_tokens=["<|endoftext|>"])
    decoder = gpt2_byte_decoder()
    as_bytes = lambda s: bytes(decoder[c] for c in s)
    lines = (fixtures / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    reference = [tuple(as_bytes(part) for part in line.split(" ")) for line in lines]
    assert tokenizer.merges == reference
    reference_vocab = json.loads((fixtures / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    expected_values = {as_bytes(t) if t != "<|endoftext|>" else t.encode() for t in reference_vocab}
    assert set(tokenizer.decoder.values()) == expected_values
    assert tokenizer.vocab_size == 500
    assert tokenizer.special_tokens == {"<|endoftext|>": 499}
