"""Tokenizers by name (`-t cl100k_base`, bpecli.load("gpt2")) come through tiktoken's own registry
and cache: a cache this file seeds with the published files, under the names tiktoken gives them,
serves bpecli as it serves tiktoken, and the ids are tiktoken's. Nothing here reaches the network:
sockets are refused in this process, and bpecli's processes get a proxy that refuses them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# the fixtures of the in-process tests, which pytest finds by name here too
from conformance.test_named_tokenizers import TEXTS, cache, no_network, seeded  # noqa: F401

tiktoken = pytest.importorskip("tiktoken")

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
