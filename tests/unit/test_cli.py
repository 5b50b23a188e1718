"""The commands as a user runs them: exit codes, stdout, one-line errors, nothing half-written."""

import json
import os

import pytest
from typer.testing import CliRunner

from bpecli.cli import app
from bpecli.formats import TOKENIZER_FILES

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.mark.parametrize("command", ["train", "encode", "decode", "inspect", "bench"])
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage" in result.output


@pytest.mark.parametrize("command", ["train", "encode", "decode", "inspect", "bench"])
def test_a_command_run_alone_parses_as_in_the_whole_app(command, gpt2_vocab):
    """The command line builds only the command it runs (cli._app_for): the same help, the same
    errors for a bad option, and the whole app for anything else."""
    from bpecli.cli.app import _app_for

    alone = _app_for([command, "--help"])
    assert alone is not app and [c.callback for c in alone.registered_commands] == [
        c.callback for c in app.registered_commands if (c.name or c.callback.__name__).replace("_", "-") == command]
    for args in ([command, "--help"], [command, "--no-such-option"]):
        assert runner.invoke(alone, args).output == run(*args).output
    assert runner.invoke(_app_for(["encode"]), ["encode", "-t", gpt2_vocab], input="hello world").output == "31373 995\n"
    assert _app_for(["--help"]) is app and _app_for([]) is app and _app_for(["nosuch"]) is app


def test_train_writes_every_file(fixtures, tmp_path):
    out = tmp_path / "tok"
    result = run("train", fixtures / "tinystories_sample.txt", "--vocab-size", 300, "--special", "<|endoftext|>",
                 "--out", out, "--workers", 2, "--quiet")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "bpecli.json", "merges.txt", "special_tokens_map.json", "tokenizer.json", "tokenizer.tiktoken",
        "tokenizer_config.json", "vocab.json"]
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
        (b"text", ["--pattern", "cl100k_base"], "'cl100k_base' (--pattern) names no preset pattern (gpt2, cl100k, o200k): did you mean cl100k?"),
        (b"text", ["--special", ""], "a special token must be non-empty text"),
        (b"text", ["--special", "\udcff"], "special token '\\udcff' is not text"),  # argv's byte 0xff, as Python reads it
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


def test_a_text_on_the_command_line_that_is_not_utf8_is_a_usage_error(gpt2_vocab):
    result = run("inspect", gpt2_vocab, "--text", "a\udcffb")  # argv's bytes a, 0xff, b as Python reads them
    assert result.exit_code == 2 and "byte 0xff (character 1) is not UTF-8" in result.output


def test_inspect_measures_a_corpus_on_stdin(gpt2_vocab, tmp_path):
    (tmp_path / "c.txt").write_text("hello world, how are you? " * 200)
    from_file = json.loads(run("inspect", gpt2_vocab, "--corpus", tmp_path / "c.txt", "--json").output)["corpus"][0]
    result = run("inspect", gpt2_vocab, "--corpus", "-", "--json", input="hello world, how are you? " * 200)
    from_stdin = json.loads(result.output)["corpus"][0]
    assert from_stdin["input"] == "-" and from_stdin["input_bytes"] is None
    assert {k: v for k, v in from_stdin.items() if k not in ("input", "input_bytes")} == {
        k: v for k, v in from_file.items() if k not in ("input", "input_bytes")}


def test_an_unknown_normalization_is_a_usage_error(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("text")
    result = run("train", corpus, "--vocab-size", 300, "--out", tmp_path / "out", "-q", "--normalize", "nfkc,nfx")
    assert result.exit_code == 2 and "'nfx': expected nfc, nfd, nfkc, nfkd, lowercase" in result.output


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
    assert run("encode", "-t", gpt2_vocab, text, "--lines", "-f", "tokens").output == "hello ␣world\nhi <|endoftext|>\n"
    plain = run("encode", "-t", gpt2_vocab, text, "--lines", "--allowed-special", "none").output.splitlines()[1]
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
    assert sorted(p.name for p in out.iterdir() if p.name != ".bpecli-lock") == [
        "manifest.json", "shard_00000.idx", "shard_00000.npy", "shard_00001.idx", "shard_00001.npy"]
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
    result = run("encode", "-t", gpt2_vocab, path, "--out", tmp_path / "out" / "shards", *args)
    assert message in one_line_error(result)
    assert not (tmp_path / "out").exists()  # no empty folder either, nor the parent made for it


def fits_80_columns(output: str) -> bool:
    return all(len(line) <= 80 for line in output.splitlines())


def test_inspect_a_tokenizer(gpt2_vocab):
    result = run("inspect", gpt2_vocab, "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["vocab_size"] == 50257 and info["special_tokens"] == {"<|endoftext|>": 50256}
    assert info["pattern"] == "gpt2" and info["byte_lengths"]["1"] == 256
    assert info["first_merges"][0] == {"id": 256, "left": "␣", "right": "t", "left_id": 220, "right_id": 83}  # merges.txt: "Ġ t"
    assert info["kinds"][0]["kind"] == "ASCII letters" and sum(k["tokens"] for k in info["kinds"]) == 50_256
    shown = run("inspect", gpt2_vocab)
    assert shown.exit_code == 0 and "vocab size 50,257" in shown.output and fits_80_columns(shown.output)
    assert "kinds of tokens" in shown.output and "46,893" in shown.output  # the ASCII letters, as a bar


def test_inspect_compares_bytes_per_token(gpt2_vocab, tiktoken_gpt2, cl100k_file, tmp_path):
    text = "Tokenizers compress text: the more bytes per token, the shorter the sequence. " * 50
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    result = run("inspect", gpt2_vocab, "--compare", cl100k_file, "--corpus", corpus, "--json")
    per_token = json.loads(result.stdout)["bytes_per_token"]
    assert per_token[str(gpt2_vocab)] == pytest.approx(len(text) / len(tiktoken_gpt2.encode(text)))
    assert set(per_token) == {str(gpt2_vocab), str(cl100k_file)}
    assert run("train", corpus, "--vocab-size", 300, "--out", tmp_path / "small", "-q").exit_code == 0
    shown = run("inspect", gpt2_vocab, "--compare", cl100k_file, "--compare", tmp_path / "small", "--compare", cl100k_file,
                "--corpus", corpus, "--corpus", gpt2_vocab.parent / "german.txt")
    assert shown.exit_code == 0, shown.output
    assert "bytes per token on 2 inputs" in shown.output and shown.output.count("cl100k_base.tiktoken  ") == 1
    assert fits_80_columns(shown.output)


def test_inspect_text_shows_each_token_and_the_count(gpt2_vocab):
    result = run("inspect", gpt2_vocab, "--text", "hello world\n")
    assert result.stdout == "31373\thello\n995\t␣world\n198\t\\n\n3 tokens\n"
    piped = run("inspect", gpt2_vocab, "--text", "-", "--json", input="hello world <|endoftext|>")
    assert json.loads(piped.stdout) == {"count": 4, "ids": [31373, 995, 220, 50256], "tokens": ["hello", "␣world", "␣", "<|endoftext|>"]}


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


def embedded_figures(page) -> dict:
    import re

    return json.loads(re.search(r'<script type="application/json" id="bpecli-figures">(.*?)</script>', page.read_text(), re.S).group(1))


def test_inspect_report_holds_the_numbers_of_json_and_the_manifest(gpt2_vocab, kernel_docs_sample, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    out = tmp_path / "shards"
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-tokens", 20_000, "--val-fraction", 0.1, "-q").exit_code == 0
    page = tmp_path / "shards.html"
    result = run("inspect", out, "-t", gpt2_vocab, "--report", page, "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert embedded_figures(page) == figures and "wrote" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert figures["total_tokens"] == manifest["total_tokens"] and figures["total_documents"] == manifest["total_documents"]
    assert {split: (s["tokens"], s["documents"]) for split, s in figures["splits"].items()} == {
        split: (s["tokens"], s["documents"]) for split, s in manifest["splits"].items()}
    assert f"{manifest['total_tokens']:,}" in page.read_text()
    shown = run("inspect", out, "-t", gpt2_vocab)
    assert shown.exit_code == 0 and f"{manifest['total_tokens']:,} tokens" in shown.output and fits_80_columns(shown.output)
    assert f"{figures['bytes_per_token']:.3f}" in shown.output and "␣the" in shown.output

    page = tmp_path / "tokenizer.html"
    result = run("inspect", gpt2_vocab, "--corpus", corpus, "--report", page, "--json")
    assert result.exit_code == 0, result.output
    assert embedded_figures(page) == json.loads(result.stdout)
    assert run("inspect", gpt2_vocab, "--report", page).exit_code == 0  # a report is replaced
    (tmp_path / "notes.html").write_text("mine")
    assert "is not a bpecli report" in one_line_error(run("inspect", gpt2_vocab, "--report", tmp_path / "notes.html"))
    assert (tmp_path / "notes.html").read_text() == "mine"


def test_inspect_options_for_the_other_kind_of_target_are_usage_errors(gpt2_vocab, tmp_path):
    (tmp_path / "c.txt").write_text("hello world<|endoftext|>" * 10, encoding="utf-8")
    out = tmp_path / "shards"
    assert run("encode", "-t", gpt2_vocab, tmp_path / "c.txt", "--out", out, "-q").exit_code == 0
    for args in ([out, "--corpus", tmp_path / "c.txt"], [out, "--compare", gpt2_vocab], [gpt2_vocab, "-t", gpt2_vocab],
                 [gpt2_vocab, "--verify"], [gpt2_vocab, "--text", "hi", "--report", tmp_path / "r.html"]):
        result = run("inspect", *args)
        assert result.exit_code == 2, (args, result.output)
    assert not (tmp_path / "r.html").exists()
    (out / "manifest.json").unlink()  # a shard folder that lost its manifest is not called a tokenizer
    result = run("inspect", out, "-t", gpt2_vocab)
    assert result.exit_code == 2 and "which holds a manifest.json; " in result.output and "a folder without one" in result.output


def test_bench_against_tiktoken(gpt2_vocab, kernel_docs_sample, tmp_path, tiktoken_gpt2):
    gpt2_tiktoken_ids = tiktoken_gpt2.encode_ordinary
    corpus = tmp_path / "c.txt"
    corpus.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    result = run("bench", "-t", gpt2_vocab, corpus, "--against", "tiktoken", "--repeat", 1, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["identical"] is True and report["peer"] == "tiktoken"
    assert report["ratio"] == pytest.approx(report["bpecli"]["encode_mb_per_s"] / report["tiktoken"]["encode_mb_per_s"])
    assert report["bpecli"]["tokens"] == report["tiktoken"]["tokens"] == len(
        [i for d in kernel_docs_sample[:300_000].split("<|endoftext|>") if d for i in gpt2_tiktoken_ids(d)])
    shown = run("bench", "-t", gpt2_vocab, corpus, "--against", "tiktoken", "--repeat", 1, "--workers", 2)
    assert "ids identical" in shown.output and fits_80_columns(shown.output)


def test_bench_against_tokenizers_finds_the_same_ids(gpt2_vocab, kernel_docs_sample, tmp_path):
    pytest.importorskip("tokenizers")
    corpus = tmp_path / "c.txt"
    corpus.write_text(kernel_docs_sample[:100_000], encoding="utf-8")
    result = run("bench", "-t", gpt2_vocab, corpus, "--against", "tokenizers", "--repeat", 1, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["identical"] is True and report["tokenizers"]["tokens"] == report["bpecli"]["tokens"] > 20_000


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


# ---- hostile situations, run as a shell runs them: one line on stderr, a documented exit code ----


def test_training_that_runs_out_of_pairs_says_so(tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("ab ab ab")
    result = run("train", corpus, "--vocab-size", 1_000_000, "--out", tmp_path / "tok", "-q")
    assert result.exit_code == 0
    assert "stopped after 2 merges: the corpus ran out of pairs; the vocabulary has 258 tokens, not 1,000,000" in result.output


def test_messages_offer_only_options_the_command_has(gpt2_vocab, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff")
    assert "--errors replace" in one_line_error(run("encode", "-t", gpt2_vocab, bad))
    assert "--errors" not in one_line_error(run("inspect", gpt2_vocab, "--corpus", bad))
    assert "--errors" not in one_line_error(run("bench", "-t", gpt2_vocab, bad))
    xz = tmp_path / "notes.txt.xz"
    xz.write_bytes(b"\xfd7zXZ\x00\x00\x04" + bytes(range(200)))
    error = one_line_error(run("encode", "-t", gpt2_vocab, xz))
    assert "holds xz data, not text" in error and "--errors" not in error


def test_plain_encode_reads_compressed_text(gpt2_vocab, tmp_path):
    import gzip

    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(b"hello world"))
    result = run("encode", "-t", gpt2_vocab, path)
    assert (result.exit_code, result.output) == (0, "31373 995\n")


def test_bench_on_an_empty_corpus_is_one_line(gpt2_vocab, tmp_path):
    pytest.importorskip("tiktoken")
    empty = tmp_path / "empty.txt"
    empty.write_text("<|endoftext|>")
    assert "holds no text to time" in one_line_error(run("bench", "-t", gpt2_vocab, empty, "--against", "tiktoken"))


def test_a_damaged_manifest_is_one_line_everywhere(gpt2_vocab, tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("hello world<|endoftext|>again")
    out = tmp_path / "out"
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", out, "-q").exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    for damage in ({"shards": None}, {"shards": [{"file": None}]}, {"total_tokens": "many"}, {"inputs": [1]}):
        (out / "manifest.json").write_text(json.dumps({**manifest, **damage}))
        for command in (["inspect", out], ["inspect", out, "--verify"], ["encode", "-t", gpt2_vocab, corpus, "--out", out]):
            assert "damaged" in one_line_error(run(*command)), (damage, command)
    (out / "manifest.json").write_text("null")
    assert "not a bpecli file" in one_line_error(run("inspect", out))


@pytest.mark.parametrize("content", ['{"text": "fine"}\nnot json\n', "<|endoftext|>"])
def test_train_on_bad_input_leaves_no_folder_either(tmp_path, content):
    """A guard beside encode's: train makes --out only when it saves, so bad input leaves nothing."""
    (tmp_path / "bad.jsonl").write_text(content)
    one_line_error(run("train", tmp_path / "bad.jsonl", "--vocab-size", 300, "--out", tmp_path / "out" / "tok", "-q"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_inspect_of_a_garbled_manifest_says_what_an_inspect_user_can_do(gpt2_vocab, tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("hello world<|endoftext|>again")
    out = tmp_path / "out"
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", out, "-q").exit_code == 0
    (out / "manifest.json").write_text('{"format_version": 1, "shards": [')
    for command in (["inspect", out], ["inspect", out, "--verify"]):
        line = one_line_error(run(*command))
        assert line.startswith(f"bpecli: error: {out / 'manifest.json'}:1: not valid JSON (")
        assert line.endswith("inspect shows only folders bpecli encode finished: encode the corpus again into a new --out folder")


@pytest.mark.parametrize("command", ["encode", "train"])
def test_json_of_an_out_folder_named_in_bytes_that_are_not_utf8(gpt2_vocab, tmp_path, command):
    corpus = tmp_path / "t.txt"
    corpus.write_text("hello world<|endoftext|>again")
    out = os.fsdecode(bytes(tmp_path / "caf") + b"\xe9")  # latin-1 "café"
    args = ["-t", gpt2_vocab, corpus] if command == "encode" else [corpus, "--vocab-size", 260]
    result = run(command, *args, "--out", out, "--json", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["out"] == out and os.path.isdir(os.fsencode(out))


def test_json_summaries_of_train_and_encode_out(gpt2_vocab, tmp_path, fixtures):
    corpus = fixtures / "tinystories_sample.txt"
    result = run("train", corpus, "--vocab-size", 300, "--special", "<|endoftext|>", "--out", tmp_path / "tok", "-q", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["vocab_size"] == 300 and summary["merges"] == 43 and summary["special_tokens"] == {"<|endoftext|>": 299}
    assert "tokenizer_config.json" in summary["files"] and summary["pattern"] == "gpt2"
    result = run("encode", "-t", tmp_path / "tok", corpus, "--out", tmp_path / "shards", "-q", "--json")
    summary = json.loads(result.stdout)
    assert summary["status"] == "written" and summary["total_tokens"] > 0 and summary["shards"] == 1
    again = json.loads(run("encode", "-t", tmp_path / "tok", corpus, "--out", tmp_path / "shards", "--json").stdout)
    assert again["status"] == "complete" and again["total_tokens"] == summary["total_tokens"]


def test_decode_reads_llm_c_shards(gpt2_vocab, tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("hello world<|endoftext|>again")
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", tmp_path / "o", "--shard-format", "llmc", "-q").exit_code == 0
    result = run("decode", "-t", gpt2_vocab, tmp_path / "o" / "shard_00000.bin")
    assert (result.exit_code, result.output) == (0, "hello world<|endoftext|>again<|endoftext|>")
    (tmp_path / "bad.bin").write_bytes(b"\x00" * 2000)
    assert "no llm.c header" in one_line_error(run("decode", "-t", gpt2_vocab, tmp_path / "bad.bin"))


def test_encode_out_never_runs_documents_together_unasked(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("alpha beta<|endoftext|>gamma delta", encoding="utf-8")
    assert run("train", corpus, "--vocab-size", "270", "--out", tmp_path / "tok", "-q").exit_code == 0  # no special token
    message = one_line_error(run("encode", "-t", tmp_path / "tok", corpus, "--out", tmp_path / "o", "-q"))
    assert "no <|endoftext|>" in message and "--eot none" in message
    assert not (tmp_path / "o").exists()
    assert run("encode", "-t", tmp_path / "tok", corpus, "--out", tmp_path / "o", "--eot", "none", "-q").exit_code == 0
    decoded = run("decode", "-t", tmp_path / "tok", tmp_path / "o" / "shard_00000.npy")
    assert decoded.stdout == "alpha betagamma delta"  # as asked: back to back


def test_what_a_newcomer_types_first_gets_a_line_that_says_what_to_do(gpt2_vocab, tmp_path):
    message = one_line_error(run("encode", "-t", gpt2_vocab, "hello world"))
    assert message.endswith(f"hello world: no such file; to encode the text itself, pipe it in: echo -n 'hello world' | bpecli encode -t {gpt2_vocab}")
    assert "pipe them in: echo '31373 995' | bpecli decode" in one_line_error(run("decode", "-t", gpt2_vocab, "31373 995"))
    assert one_line_error(run("encode", "-t", gpt2_vocab, "corpus.txt")).endswith("corpus.txt: no such file")  # a file's name
    (tmp_path / "notes.txt").write_text("some notes")
    assert "notes.txt: not a tokenizer file (expected a folder written by bpecli train" in one_line_error(run("inspect", tmp_path / "notes.txt"))
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "out")
    assert "dangling is a symbolic link that leads nowhere" in one_line_error(
        run("encode", "-t", gpt2_vocab, tmp_path / "notes.txt", "--out", tmp_path / "dangling"))
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("args", [
    ["encode", "-t", "", "c.txt"], ["encode", "-t", "{vocab}", "c.txt", "--out", ""], ["encode", "-t", "{vocab}", ""],
    ["train", "c.txt", "--out", "", "--vocab-size", "300"], ["train", "", "--out", "tok", "--vocab-size", "300"],
    ["decode", "-t", "{vocab}", ""], ["inspect", ""], ["inspect", "{vocab}", "--compare", ""],
    ["inspect", "{vocab}", "--corpus", ""], ["inspect", "{vocab}", "--report", ""], ["bench", "-t", "{vocab}", ""],
])
def test_an_empty_name_is_refused_not_taken_as_the_current_folder(args, gpt2_vocab, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("hello")
    result = run(*(arg.format(vocab=gpt2_vocab) for arg in args))
    assert result.exit_code == 2
    assert "is empty; name a file or folder" in result.output
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]


def test_an_empty_split_and_uint32_for_nanogpt_are_said(gpt2_vocab, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": f"other document {i}"}) + "\n" for i in range(40)), encoding="utf-8")
    result = run("encode", "-t", gpt2_vocab, corpus, "--out", tmp_path / "o", "--val-fraction", "0.001",
                 "--shard-format", "nanogpt", "-q")
    assert result.exit_code == 0 and sorted(p.name for p in (tmp_path / "o").iterdir()) == ["manifest.json", "train.bin", "train.idx"]
    assert "no document fell in the validation split (--val-fraction 0.001 of 40 documents)" in result.stderr
    result = run("encode", "-t", gpt2_vocab, corpus, "--out", tmp_path / "o2", "--val-fraction", "0.999", "--dtype", "uint32",
                 "--shard-format", "nanogpt", "-q")
    assert "no document fell in the training split" in result.stderr and "nanoGPT's train.py reads them as np.uint16" in result.stderr


def test_encode_out_for_nanogpt_with_a_validation_split_and_bos(gpt2_vocab, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"document {i}<|endoftext|>" for i in range(300)), encoding="utf-8")
    out = tmp_path / "data"
    result = run("encode", "-t", gpt2_vocab, corpus, "--out", out, "--shard-format", "nanogpt", "--val-fraction", "0.1",
                 "--bos", "<|endoftext|>", "--eot", "none", "--json", "-q")  # -q: no progress line (click < 8.2 mixes stderr into stdout)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["splits"]["val"]["documents"] + summary["splits"]["train"]["documents"] == 300
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "train.bin", "train.idx", "val.bin", "val.idx"]
    decoded = run("decode", "-t", gpt2_vocab, out / "val.bin")
    assert decoded.exit_code == 0 and decoded.stdout.startswith("<|endoftext|>document ")
    assert run("inspect", out, "--verify").exit_code == 0


def test_out_of_memory_without_a_limit_names_workers_only_where_they_run(gpt2_vocab, tmp_path, monkeypatch):
    from bpecli.cli.memory import memory_limit
    from bpecli.tokenizer import Tokenizer
    from bpecli.training import pipeline

    if memory_limit() is not None:
        pytest.skip("this process runs under a memory limit")

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(Tokenizer, "encode", no_memory)
    assert one_line_error(run("encode", "-t", gpt2_vocab, input="hello")) == "bpecli: error: out of memory; use smaller inputs"
    monkeypatch.setattr(pipeline, "count_pretokens", no_memory)
    corpus = tmp_path / "docs.txt"
    corpus.write_text("hello world")
    assert one_line_error(run("train", corpus, "--vocab-size", 300, "--out", tmp_path / "tok", "--workers", 2)) == \
        "bpecli: error: out of memory; use fewer --workers or smaller inputs"
