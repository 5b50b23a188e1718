"""Tokenizers by name (`-t cl100k_base`, bpecli.load("gpt2")) come through tiktoken's own registry
and cache: a cache this file seeds with the published files, under the names tiktoken gives them,
serves bpecli as it serves tiktoken, and the ids are tiktoken's. Nothing here reaches the network:
sockets are refused in this process, and bpecli's processes get a proxy that refuses them."""

import hashlib
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.system
def test_bpecli_offline_names_the_file_on_one_line_and_reads_a_seeded_cache(seeded, tmp_path):
    bpecli_command = Path(sys.executable).with_name("bpecli")
    closed = "http://127.0.0.1:9"  # a proxy that refuses: the process reaches no network
    env = {**os.environ, "HTTPS_PROXY": closed, "HTTP_PROXY": closed, "NO_PROXY": "", "TIKTOKEN_CACHE_DIR": str(seeded)}
    text = TEXTS[1]
    done = subprocess.run([bpecli_command, "encode", "-t", "cl100k_base"], input=text.encode(), env=env,
                          capture_output=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(i) for i in tiktoken.get_encoding("cl100k_base").encode(text)]

    empty = tmp_path / "empty-cache"
    env["TIKTOKEN_CACHE_DIR"] = str(empty)
    done = subprocess.run([bpecli_command, "encode", "-t", "o200k_base"], input=b"hi", env=env,
                          capture_output=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpecli: error: o200k_base: tiktoken could not fetch https://")
    assert str(empty) in lines[0]
