"""The Python API's documentation (docs/python-api.md is made from it) is written for users: every
name bpecli exports, and every public method and property of them, says what it is for, without
naming the modules inside bpecli; and the defaults for special-token text are stated beside each
other, in the API and in the command's help."""

import inspect
import re

import pytest
from typer.testing import CliRunner

import bpecli

# A module of the package named in a docstring: "encoding/text.py", "see formats.load", "parallel.map_in_order".
_MODULES = ("formats", "shards", "training", "encoding", "pretokenize", "inputs", "parallel", "bulk", "progress", "run",
            "journal", "layout", "counting", "merges", "normalize", "folders", "errors", "vocab", "text", "decoder",
            "registry", "pipeline", "writer", "sources", "parts", "documents", "tokenizer", "cli", "render")
_FILES = r"(?:json|txt|tiktoken|npy|bin|jsonl|parquet|idx)\b"  # vocab.json, merges.txt: files users have
INTERNAL = re.compile(r"\b\w+\.py\b|\b(?:%s)\.(?!%s)[A-Za-z_]\w*" % ("|".join(_MODULES), _FILES))


def documented():
    """(name, object) for each exported name and each public member of an exported class."""
    for name in bpecli.__all__:
        value = getattr(bpecli, name)
        if name == "PATTERNS":
            continue  # a dict: described where it is exported, below
        yield name, value
        if inspect.isclass(value):
            for member, attribute in vars(value).items():
                if member.startswith("_") or member in getattr(value, "__dataclass_fields__", {}):
                    continue
                yield f"{name}.{member}", attribute


@pytest.mark.parametrize("name, value", list(documented()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_export_says_what_it_is_for_in_users_words(name, value):
    target = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
    doc = inspect.getdoc(target) or ""
    assert doc.strip(), f"{name} has no docstring"
    assert not INTERNAL.search(doc), f"{name} names a module inside bpecli: {INTERNAL.search(doc).group(0)!r}"


def test_the_package_says_what_it_exports():
    doc = bpecli.__doc__
    for name in bpecli.__all__:
        assert name in doc, f"the package docstring does not mention {name}"
    assert not INTERNAL.search(doc)


def test_special_token_defaults_are_stated_side_by_side():
    api = inspect.getdoc(bpecli.Tokenizer.encode)
    assert "DisallowedSpecialError" in api and "bpecli encode" in api  # the API's default, and the command's
    from bpecli.cli import app

    help_text = " ".join(CliRunner().invoke(app, ["encode", "--help"], terminal_width=400).output.split())
    assert "allowed_special" in help_text  # the command's help names the API's default beside its own
