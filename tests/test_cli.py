"""The commands as a user runs them: exit codes, stdout, one-line errors, nothing half-written."""

import json
import os

import pytest
from typer.testing import CliRunner

from bpecli.cli import app
from bpecli.files import TOKENIZER_FILES

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.mark.parametrize("command", ["train", "encode", "decode", "inspect", "bench"])
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_train_writes_every_file(fixtures, tmp_path):
    out = tmp_path / "tok"
    result = run("train", fixtures / "tinystories_sample.txt", "--vocab-size", 300, "--special", "<|endoftext|>",
                 "--out", out, "--workers", 2, "--quiet")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "bpecli.json", "merges.txt", "tokenizer.json", "tokenizer.tiktoken", "vocab.json"]
    meta = json.loads((out / "bpecli.json").read_text())
    assert meta["special_tokens"] == {"<|endoftext|>": 299} and meta["vocab_size"] == 300


def test_train_reads_stdin(tmp_path):
    result = run("train", "-", "--vocab-size", 260, "--out", tmp_path / "tok", "-q", input="low lower lowest " * 20)
    assert result.exit_code == 0, result.output
    # (o, w) and (l, o) tie; the greater pair of byte strings goes first.
    merges = (tmp_path / "tok" / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert merges == ["#version: 0.2", "o w", "l ow", "Ġ low", "Ġlow e"]


def one_line_error(result) -> str:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize(
    "content, args, message",
    [
        (None, [], "no such file"),
        (b"", [], "the corpus is empty"),
        (b"<|endoftext|><|endoftext|>", ["--special", "<|endoftext|>"], "the corpus is empty"),
        (b"good line\nbad \xff byte\n", [], "t.txt:2: invalid UTF-8 at byte 14"),
        (b"text", ["--vocab-size", 256, "--special", "<|endoftext|>"], "too small"),
        (b"text", ["--pattern", "(unclosed"], "invalid regex '(unclosed' (--pattern)"),
        (b"text", ["--pattern", r"\w+"], "(--pattern) leaves ',' (character 5) out of every piece"),
        (b"a b", ["--pattern", "a*"], "(--pattern) leaves"),
        (b"text", ["--special", ""], "a special token must be non-empty text"),
    ],
)
def test_train_bad_input_is_one_line_and_leaves_nothing(tmp_path, content, args, message):
    corpus = tmp_path / "t.txt"
    if content is not None:
        corpus.write_bytes(content)
    out = tmp_path / "out"
    args = args if "--vocab-size" in args else ["--vocab-size", 300, *args]
    result = run("train", corpus, "--out", out, "-q", *args)
    assert message in one_line_error(result)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["t.txt"] if content is not None else [])


def test_train_errors_replace_carries_on(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_bytes(b"bad \xff byte " * 10)
    result = run("train", corpus, "--vocab-size", 300, "--out", tmp_path / "out", "-q", "--errors", "replace")
    assert result.exit_code == 0, result.output


def test_train_out_never_touches_what_bpecli_did_not_write(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("some text " * 10)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    for force in ([], ["--force"]):
        error = one_line_error(run("train", corpus, "--vocab-size", 300, "--out", tmp_path / "out", "-q", *force))
        assert "holds files bpecli did not write (keep.txt)" in error
        assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_train_force_replaces_only_its_own_files(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("some text " * 10)
    out = tmp_path / "tok"
    assert run("train", corpus, "--vocab-size", 262, "--out", out, "-q").exit_code == 0
    before = (out / "merges.txt").read_text()
    assert "use --force" in one_line_error(run("train", corpus, "--vocab-size", 260, "--out", out, "-q"))
    assert run("train", corpus, "--vocab-size", 260, "--out", out, "-q", "--force").exit_code == 0
    assert (out / "merges.txt").read_text() != before
    assert sorted(p.name for p in out.iterdir()) == sorted(TOKENIZER_FILES)
    # an empty folder is fine without --force
    (tmp_path / "empty").mkdir()
    assert run("train", corpus, "--vocab-size", 270, "--out", tmp_path / "empty", "-q").exit_code == 0


def test_train_out_is_never_an_input_nor_holds_one(tmp_path, monkeypatch):
    corpus = tmp_path / "t.txt"
    corpus.write_text("some text " * 10)
    assert "is the input" in one_line_error(run("train", corpus, "--vocab-size", 300, "--out", corpus, "-q", "--force"))
    assert "holds the input" in one_line_error(run("train", corpus, "--vocab-size", 300, "--out", tmp_path, "-q", "--force"))
    monkeypatch.chdir(tmp_path)
    assert "holds the input" in one_line_error(run("train", "t.txt", "--vocab-size", 300, "--out", ".", "-q", "--force"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"] and corpus.read_text() == "some text " * 10


def test_train_into_an_unwritable_parent_is_one_line(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("some text " * 10)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        assert "cannot write into" in one_line_error(run("train", corpus, "--vocab-size", 300, "--out", locked / "tok", "-q"))
        assert "cannot" in one_line_error(run("encode", "-t", corpus, corpus, "--out", locked / "shards", "-q"))
    finally:
        locked.chmod(0o700)


def test_encode_and_decode_one_liners(gpt2_vocab):
    result = run("encode", "-t", gpt2_vocab, input="hello world")
    assert result.exit_code == 0 and result.output == "31373 995\n"
    result = run("decode", "-t", gpt2_vocab, input="31373 995\n")
    assert result.exit_code == 0 and result.output == "hello world"


def test_encode_formats_and_lines(gpt2_vocab, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello world\nhi<|endoftext|>\n", encoding="utf-8")
    assert run("encode", "-t", gpt2_vocab, text).output == "31373 995 198 5303 50256 198\n"
    assert run("encode", "-t", gpt2_vocab, text, "--lines").output == "31373 995\n5303 50256\n"
    assert run("encode", "-t", gpt2_vocab, text, "--lines", "-f", "count").output == "2\n2\n"
    assert run("encode", "-t", gpt2_vocab, text, "--lines", "-f", "tokens").output == "hello Ġworld\nhi <|endoftext|>\n"
    plain = run("encode", "-t", gpt2_vocab, text, "--lines", "--special", "none").output.splitlines()[1]
    assert "50256" not in plain.split()
    record = json.loads(run("encode", "-t", gpt2_vocab, text, "-f", "json").output)
    assert record == {"input": str(text), "ids": [31373, 995, 198, 5303, 50256, 198], "count": 6}


def test_decode_a_npy_shard(gpt2_vocab, tmp_path):
    import numpy as np

    np.save(tmp_path / "s.npy", np.array([31373, 995], dtype=np.uint16))
    assert run("decode", "-t", gpt2_vocab, tmp_path / "s.npy").output == "hello world"


@pytest.mark.parametrize(
    "args, input, message",
    [
        (["decode"], "1 2 x3", "<stdin>:1: 'x3' is not a token id"),
        (["decode"], "31373 99999", "id 99999 is not in the vocabulary"),
        (["decode", "--errors", "strict"], "8582", "invalid UTF-8"),
        (["encode"], b"ok \xfe no", "<stdin>:1: invalid UTF-8 at byte 3"),
        (["encode", "missing.txt"], "", "missing.txt: no such file"),
    ],
)
def test_encode_decode_bad_input(gpt2_vocab, args, input, message):
    result = run(*args, "-t", gpt2_vocab, input=input)
    assert message in one_line_error(result)


def test_unknown_tokenizer_path_is_a_clear_error(tmp_path):
    assert "no such tokenizer" in one_line_error(run("encode", "-t", tmp_path / "nope", input="x"))
    (tmp_path / "junk.json").write_text("[]")
    assert "not a tokenizer file" in one_line_error(run("encode", "-t", tmp_path / "junk.json", input="x"))


def test_encode_out_writes_shards_and_reports_a_finished_folder(gpt2_vocab, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world<|endoftext|>hello<|endoftext|>", encoding="utf-8")
    out = tmp_path / "shards"
    result = run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-tokens", 3)
    assert result.exit_code == 0, result.output
    assert "wrote 5 tokens (2 documents, uint16) in 2 shards" in result.output
    assert sorted(p.name for p in out.iterdir() if p.name != ".bpecli-lock") == ["manifest.json", "shard_00000.npy", "shard_00001.npy"]
    decoded = run("decode", "-t", gpt2_vocab, out / "shard_00000.npy")
    assert decoded.stdout == "hello world<|endoftext|>"

    again = run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-tokens", 3)
    assert again.exit_code == 0 and "complete already" in again.output
    other = run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-tokens", 4)
    assert "another run" in one_line_error(other)


@pytest.mark.parametrize(
    "name, content, args, message",
    [
        ("a.jsonl", '{"text": 1}\n', [], "a.jsonl:1: field 'text' holds a JSON number, not a string"),
        ("a.jsonl", '{"body": "x"}\n', [], "a.jsonl:1: no field 'text' (fields: 'body'); name the text field"),
        ("a.jsonl", '["x"]\n', [], "a.jsonl:1: a JSON array, not an object"),
        ("a.jsonl", '{"body": "x"}\n', ["--text-column", "body", "--eot", "<|nope|>"], "--eot '<|nope|>' is neither"),
        ("a.txt", "x", ["--dtype", "uint16", "--special-ids", "<|endoftext|>=70000"], "uint16 cannot hold"),
        ("a.txt", b"ok\n\xff", [], "a.txt:2: invalid UTF-8"),
    ],
)
def test_encode_out_bad_input_is_one_line_and_leaves_no_shard(gpt2_vocab, tmp_path, name, content, args, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = run("encode", "-t", gpt2_vocab, path, "--out", tmp_path / "out", *args)
    assert message in one_line_error(result)
    assert not list(tmp_path.glob("out/*shard*")) and not (tmp_path / "out" / "manifest.json").exists()


def test_a_killed_encode_rerun_ends_byte_identical(gpt2_vocab, tmp_path):
    """The real thing: SIGKILL mid-run (no clean-up code runs), then the same command again."""
    import gzip
    import signal
    import subprocess
    import sys
    import time

    from conftest import CORPUS

    if not CORPUS.is_file():
        pytest.skip("the benchmark corpus is absent")
    corpus = tmp_path / "docs.txt"
    with gzip.open(CORPUS, "rb") as f:
        corpus.write_bytes(f.read(12_000_000))

    def command(out):
        return [sys.executable, "-m", "bpecli", "encode", "-t", str(gpt2_vocab), str(corpus), "--out", str(out),
                "--shard-tokens", "200000", "--workers", "1", "-q"]

    subprocess.run(command(tmp_path / "whole"), check=True)
    victim = subprocess.Popen(command(tmp_path / "cut"))
    journal = tmp_path / "cut" / ".bpecli-progress.json"
    while not journal.exists() and victim.poll() is None:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (tmp_path / "cut" / "manifest.json").exists(), "the run finished before it could be killed"
    subprocess.run(command(tmp_path / "cut"), check=True)
    whole = {p.name: p.read_bytes() for p in (tmp_path / "whole").iterdir()}
    assert {p.name: p.read_bytes() for p in (tmp_path / "cut").iterdir()} == whole


def fits_80_columns(output: str) -> bool:
    return all(len(line) <= 80 for line in output.splitlines())


def test_inspect_a_tokenizer(gpt2_vocab):
    result = run("inspect", gpt2_vocab, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["vocab_size"] == 50257 and info["special_tokens"] == {"<|endoftext|>": 50256}
    assert info["pattern"] == "gpt2" and info["byte_lengths"]["1"] == 256
    assert info["first_merges"][0] == [" ", "t"]  # merges.txt's first line: "Ġ t"
    shown = run("inspect", gpt2_vocab)
    assert shown.exit_code == 0 and "vocab size 50,257" in shown.output and fits_80_columns(shown.output)


def test_inspect_compares_bytes_per_token(gpt2_vocab, tiktoken_gpt2, cl100k_file, tmp_path):
    text = "Tokenizers compress text: the more bytes per token, the shorter the sequence. " * 50
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    result = run("inspect", gpt2_vocab, "--compare", cl100k_file, "--corpus", corpus, "--json")
    per_token = json.loads(result.stdout)["bytes_per_token"]
    assert per_token[str(gpt2_vocab)] == pytest.approx(len(text) / len(tiktoken_gpt2.encode(text)))
    assert set(per_token) == {str(gpt2_vocab), str(cl100k_file)}


def test_inspect_text_shows_each_token_and_the_count(gpt2_vocab):
    result = run("inspect", gpt2_vocab, "--text", "hello world\n")
    assert result.stdout == "31373\thello\n995\t world\n198\t\\n\n3 tokens\n"
    piped = run("inspect", gpt2_vocab, "--text", "-", "--json", input="hello world")
    assert json.loads(piped.stdout) == {"count": 2, "ids": [31373, 995], "tokens": ["hello", " world"]}


def test_inspect_verify_names_a_changed_shard(gpt2_vocab, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world<|endoftext|>" * 400, encoding="utf-8")
    out = tmp_path / "shards"
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-tokens", 500, "-q").exit_code == 0
    good = run("inspect", out, "--verify")
    assert good.exit_code == 0 and "verified" in good.output and fits_80_columns(good.output)
    info = json.loads(run("inspect", out, "--json").stdout)
    assert info["total_tokens"] == 1200 and info["most_frequent"][0]["count"] == 400
    shard = out / "shard_00001.npy"
    data = bytearray(shard.read_bytes())
    data[200] ^= 1
    shard.write_bytes(bytes(data))
    assert "shard_00001.npy: sha256 does not match" in one_line_error(run("inspect", out, "--verify"))


def test_bench_against_tiktoken(gpt2_vocab, kernel_docs_sample, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    result = run("bench", "-t", gpt2_vocab, corpus, "--against", "tiktoken", "--repeat", 1, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["identical"] is True and report["ratio"] > 0
    assert report["bpecli"]["encode_mb_per_s"] > 0 and report["tiktoken"]["encode_mb_per_s"] > 0
    shown = run("bench", "-t", gpt2_vocab, corpus, "--against", "tiktoken", "--repeat", 1, "--workers", 2)
    assert "ids identical" in shown.output and fits_80_columns(shown.output)


def test_bench_without_the_peer_installed_is_a_clear_error(gpt2_vocab, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tiktoken", None)
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello", encoding="utf-8")
    assert "tiktoken is not installed" in one_line_error(run("bench", "-t", gpt2_vocab, corpus, "--against", "tiktoken"))


def test_inspect_errors_are_one_line(tmp_path):
    assert "no such tokenizer" in one_line_error(run("inspect", tmp_path / "nothing"))
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / ".bpecli-progress.json").write_text("{}")
    assert "unfinished run" in one_line_error(run("inspect", tmp_path / "half"))


def test_a_worker_error_is_one_line_too(gpt2_vocab, tmp_path):
    lines = "".join(f'{{"text": "document {i}"}}\n' for i in range(50_000)) + "not json\n"
    (tmp_path / "big.jsonl").write_text(lines, encoding="utf-8")
    result = run("encode", "-t", gpt2_vocab, tmp_path / "big.jsonl", "--out", tmp_path / "out", "--workers", 2)
    assert "big.jsonl:50001: not valid JSON" in one_line_error(result)
    assert not list((tmp_path / "out").glob("*shard*"))


def test_encode_out_reads_stdin(gpt2_vocab, tmp_path):
    result = run("encode", "-t", gpt2_vocab, "-", "--out", tmp_path / "out", "-q", input="hello world<|endoftext|>hi")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["inputs"] == [{"path": "<stdin>", "size": 26, "mtime_ns": None}] and manifest["total_tokens"] == 5
