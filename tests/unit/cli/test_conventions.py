"""The conventions every command keeps: -h and --help, one metavar style, examples in the help,
out-of-range values as usage errors (exit 2, as the README's table says), one rendering of a
token, counts in words, one throughput, and bench's peer on --workers threads."""

import io
import re
import sys

import pytest
import typer
from typer.testing import CliRunner

from bpecli.cli import app

runner = CliRunner()

COMMANDS = ["train", "encode", "decode", "inspect", "bench"]


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def click_command(name):
    return typer.main.get_command(app).commands[name]


def out_of_range(tmp_path, vocab):
    text = tmp_path / "in.txt"
    text.write_text("hello world", encoding="utf-8")
    train = ["train", text, "--out", tmp_path / "tok"]
    encode = ["encode", "-t", vocab, text, "--out", tmp_path / "shards"]
    return {
        "vocab-size below 256": [*train, "--vocab-size", 255],
        "vocab-size past 32-bit ids": [*train, "--vocab-size", 2**31],
        "workers 0": [*train, "--vocab-size", 300, "--workers", 0],
        "min-frequency negative": [*train, "--vocab-size", 300, "--min-frequency", -1],
        "shard-tokens 0": [*encode, "--shard-tokens", 0],
        "val-fraction 1.5": [*encode, "--val-fraction", 1.5],
        "val-fraction 0": [*encode, "--val-fraction", 0],
        "val-fraction 1": [*encode, "--val-fraction", 1],
        "llmc shard past int32": [*encode, "--shard-format", "llmc", "--shard-tokens", 2**31],
        "bench repeat 0": ["bench", "-t", vocab, text, "--repeat", 0],
        "bench workers 0": ["bench", "-t", vocab, text, "--workers", 0],
    }

CASES = ["vocab-size below 256", "vocab-size past 32-bit ids", "workers 0", "min-frequency negative", "shard-tokens 0",
         "val-fraction 1.5", "val-fraction 0", "val-fraction 1", "llmc shard past int32", "bench repeat 0", "bench workers 0"]


def shown(token: bytes) -> str:
    """How the issue asks a token to show: a space as ␣, a newline and a tab as \\n and \\t, other
    characters as they are (written out here, not taken from bpecli)."""
    return token.decode("utf-8").replace(" ", "\u2423").replace("\n", "\\n").replace("\t", "\\t")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_h_and_help_with_examples_of_itself(command):
    long, short = run(command, "--help"), run(command, "-h")
    assert long.exit_code == 0 and short.exit_code == 0 and short.output == long.output
    text = long.stdout
    assert "Examples:" in text
    after = text[text.index("Examples:"):].splitlines()[1:]
    examples = after[:next(n for n, line in enumerate(after) if not line.strip())]
    assert len(examples) >= 2, text
    for line in examples:
        assert f"bpecli {command}" in line, line  # each example runs this command
    assert run("-h").exit_code == 0 and run("-h").stdout == run("--help").stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_one_metavar_style(command):
    """Arguments in capitals (INPUT..., [INPUT], TARGET); option values as typer writes a type,
    <kind> with its range or choices."""
    import click

    cmd = click_command(command)
    ctx = click.Context(cmd)
    for param in cmd.params:
        if param.param_type_name == "argument":
            assert re.fullmatch(r"\[?[A-Z]+(\.\.\.)?\]?", param.metavar or ""), (param.name, param.metavar)
        elif not param.is_flag and not param.hidden:
            shown = param.make_metavar(ctx)
            assert re.fullmatch(r"<[a-z0-9 |_]+>( \[[0-9x<=>]+\])?", shown), (param.name, shown)


@pytest.mark.parametrize("case", CASES)
def test_every_numeric_option_out_of_range_is_a_usage_error(case, gpt2_vocab, tmp_path):
    result = run(*out_of_range(tmp_path, gpt2_vocab)[case])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "tok").exists() and not (tmp_path / "shards").exists()


def test_allowed_special_as_tiktoken_and_the_old_spelling_with_a_note(gpt2_vocab, tiktoken_gpt2):
    text = "hi<|endoftext|> there"
    every = run("encode", "-t", gpt2_vocab, "--allowed-special", "all", input=text)
    assert every.stdout.split() == list(map(str, tiktoken_gpt2.encode(text, allowed_special="all")))
    plain = run("encode", "-t", gpt2_vocab, "--allowed-special", "none", input=text)
    assert plain.stdout.split() == list(map(str, tiktoken_gpt2.encode_ordinary(text)))
    assert plain.stderr == ""
    old = run("encode", "-t", gpt2_vocab, "--special", "none", input=text)
    assert old.exit_code == 0 and old.stdout == plain.stdout
    assert old.stderr.startswith("bpecli: note: encode --special is now --allowed-special") and old.stderr.count("\n") == 1
    assert "--special " not in run("encode", "--help").stdout  # the old name is hidden, not offered


def test_a_token_shows_the_same_in_encode_and_inspect(gpt2_vocab, tiktoken_gpt2):
    text = "hello world\n  x\tend"
    expected = [shown(tiktoken_gpt2.decode_single_token_bytes(i)) for i in tiktoken_gpt2.encode_ordinary(text)]
    assert run("encode", "-t", gpt2_vocab, "-f", "tokens", input=text).stdout == " ".join(expected) + "\n"
    split = run("inspect", gpt2_vocab, "--text", "-", input=text).stdout.splitlines()
    assert [line.split("\t")[1] for line in split[:-1]] == expected
    import json

    figures = json.loads(run("inspect", gpt2_vocab, "--text", "-", "--json", input=text).stdout)
    assert figures["tokens"] == expected


def test_counts_of_one_are_singular(gpt2_vocab, tmp_path):
    assert run("inspect", gpt2_vocab, "--text", "hello").stdout.endswith("\n1 token\n")
    (tmp_path / "one.txt").write_text("hello", encoding="utf-8")
    result = run("encode", "-t", gpt2_vocab, tmp_path / "one.txt", "--out", tmp_path / "s")
    assert result.exit_code == 0
    assert "2 tokens (1 document, uint16) in 1 shard to" in result.stderr, result.stderr


def test_progress_and_summary_give_the_same_rate(gpt2_vocab, tmp_path, monkeypatch):
    """encode's plain progress lines say the rate the summary says (bytes read, tokens): not a
    rate of their own beside it."""
    from bpecli.cli import render

    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    bar = render.PlainProgress("encoding", 3_000_000, "B")
    bar.update(1_000_000)
    bar.set_postfix_str("2.0 MB/s, 500,000 tokens/s")
    bar.close()
    line = stderr.getvalue().strip()
    assert line.endswith("2.0 MB/s, 500,000 tokens/s") and line.count("MB/s") == 1, line

    (tmp_path / "in.txt").write_text("hello world<|endoftext|>" * 2000, encoding="utf-8")
    result = run("encode", "-t", gpt2_vocab, tmp_path / "in.txt", "--out", tmp_path / "s")
    summary = result.stderr.strip().splitlines()[-1]
    assert re.search(r"; [0-9.,]+ MB/s, [0-9,]+ tokens/s$", summary), summary
