"""Normalization: trained in, written into tokenizer.json as Hugging Face normalizers, applied by
every encode path, and read back from a Hugging Face tokenizer.json, with Hugging Face's ids."""

import json
import unicodedata

import numpy as np
import pytest

from bpecli import Tokenizer
from bpecli.errors import BpecliError, TokenizerFileError
from bpecli.normalize import check, normalizer
from bpecli.shards import write_shards
from bpecli.training import train

tokenizers = pytest.importorskip("tokenizers")

TRICKY = ("ΟΔΟΣ ΣΑΣ σ Straße ﬁle Ⅻ ½ HELLO İstanbul Café Cafe\u0301 ＡＢＣ ㍻ Å Ω K ǅ ẞ "
          "ﬀ x² e\u0301\u0327 한국어 \u1100\u1161\u11a8 Ǆ ϒ\u0301 ᾼ")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, kernel_docs_sample):
    path = tmp_path_factory.mktemp("corpus") / "docs.txt"
    path.write_text(kernel_docs_sample[:400_000] + "<|endoftext|>" + TRICKY * 50, encoding="utf-8")
    return path


@pytest.mark.parametrize("steps", [["nfc"], ["nfd"], ["nfkc"], ["nfkd"], ["lowercase"], ["nfkc", "lowercase"],
                                   ["lowercase", "nfd"]])
def test_hugging_face_gives_our_ids_for_each_normalization(steps, corpus, tmp_path, kernel_docs_sample):
    tok = train([corpus], vocab_size=700, special_tokens=["<|endoftext|>"], normalize=steps)
    tok.save(tmp_path / "tok")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    text = kernel_docs_sample[:20_000] + "<|endoftext|>" + TRICKY
    assert tok.encode(text, allowed_special="all") == hf.encode(text).ids
    for line in TRICKY.split():  # each on its own, as well
        assert tok.encode_ordinary(line) == hf.encode(line).ids, line
    assert Tokenizer.load(tmp_path / "tok").encode_ordinary(TRICKY) == hf.encode(TRICKY).ids


def test_training_normalized_equals_training_on_normalized_text(corpus, tmp_path):
    normalized = tmp_path / "normalized.txt"
    text = corpus.read_text(encoding="utf-8")
    # each character lowercased on its own, as Hugging Face does (str.lower() treats a final sigma apart)
    normalized.write_text("".join(c.lower() for c in unicodedata.normalize("NFKC", text)), encoding="utf-8")
    by_option = train([corpus], vocab_size=600, special_tokens=["<|endoftext|>"], normalize=["nfkc", "lowercase"])
    # "<|endoftext|>" is unchanged by NFKC and lowercasing, so documents split alike
    by_hand = train([normalized], vocab_size=600, special_tokens=["<|endoftext|>"])
    assert by_option.merges == by_hand.merges


def test_every_encode_path_normalizes(corpus, kernel_docs_sample, tmp_path):
    tok = train([corpus], vocab_size=600, special_tokens=["<|endoftext|>"], normalize=["nfkd", "lowercase"])
    plain = Tokenizer(ranks=tok.ranks, special_tokens=tok.special_tokens, pattern=tok.pattern)
    long_text = (kernel_docs_sample[:100_000] + TRICKY) * 2  # long enough for the vectorised path
    expected = plain.encode_ordinary(normalizer(tok.normalize)(long_text))
    assert tok.encode_ordinary(long_text) == expected
    assert tok.encode(long_text, disallowed_special=()) == expected
    assert tok.encode_batch([long_text, TRICKY], disallowed_special=()) == [expected, plain.encode_ordinary(normalizer(tok.normalize)(TRICKY))]
    ids, ends = tok.encode_documents([long_text, TRICKY], eot=599)
    assert ids[: ends[0] - 1].tolist() == expected
    write_shards(tok, [str(corpus)], tmp_path / "shards", eot=599)
    documents = corpus.read_text(encoding="utf-8").split("<|endoftext|>")
    shard = np.load(tmp_path / "shards" / "shard_00000.npy").tolist()
    assert shard == [i for d in documents for i in plain.encode_ordinary(normalizer(tok.normalize)(d)) + [599]]
    with pytest.raises(BpecliError, match="normalizes text"):
        tok._encode_bytes(b"abc")


def test_a_hugging_face_tokenizer_json_with_a_normalizer_loads_with_its_ids(corpus, tmp_path):
    train([corpus], vocab_size=600, special_tokens=["<|endoftext|>"]).save(tmp_path / "tok")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    hf.normalizer = tokenizers.normalizers.Sequence([tokenizers.normalizers.NFKD(), tokenizers.normalizers.Lowercase()])
    hf.save(str(tmp_path / "foreign.json"))
    ours = Tokenizer.load(tmp_path / "foreign.json")
    assert ours.normalize == ("nfkd", "lowercase")
    assert ours.encode_ordinary(TRICKY) == hf.encode(TRICKY).ids

    hf.normalizer = tokenizers.normalizers.Sequence([tokenizers.normalizers.NFC(), tokenizers.normalizers.Strip()])
    hf.save(str(tmp_path / "strip.json"))
    with pytest.raises(TokenizerFileError, match=r"its normalizer \(Strip\) is one bpecli does not apply"):
        Tokenizer.load(tmp_path / "strip.json")


def test_the_steps_are_stored_and_named(corpus, tmp_path):
    tok = train([corpus], vocab_size=300, normalize=["NFKC, lowercase"])
    tok.save(tmp_path / "tok")
    assert json.loads((tmp_path / "tok" / "bpecli.json").read_text())["normalize"] == ["nfkc", "lowercase"]
    assert Tokenizer.load(tmp_path / "tok" / "vocab.json").normalize == ("nfkc", "lowercase")  # a file of the folder
    assert check(["nfc", "lowercase,nfd"]) == ("nfc", "lowercase", "nfd")
    with pytest.raises(BpecliError, match="normalize 'upper': expected nfc, nfd, nfkc, nfkd, lowercase") as raised:
        check(["upper"])
    assert str(raised.value).startswith("normalize 'upper'") and raised.value.for_cli().startswith("--normalize 'upper'")
    other = train([corpus], vocab_size=300)
    assert other.fingerprint != tok.fingerprint
