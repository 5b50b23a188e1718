"""docs/python-api.md names every public name of the API: what bpecli exports, every public
method and property of Tokenizer, the error classes a caller may catch, and the shard writer."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import bpecli
from bpecli import errors
from bpecli.shards import write_shards

DOC = (Path(__file__).resolve().parents[3] / "docs" / "python-api.md").read_text(encoding="utf-8")
NAMED = set(re.findall(r"`(?:[\w.]+\.)?(\w+)(?:\(|`|\s|\[)", DOC)) | set(re.findall(r"\b(\w+)\(", DOC))


def test_every_export_of_bpecli_is_documented():
    assert not {name for name in bpecli.__all__} - NAMED


def test_every_public_method_and_property_of_tokenizer_is_documented():
    public = {name for name, _ in inspect.getmembers(bpecli.Tokenizer) if not name.startswith("_")} | {"_encode_bytes"}
    assert not public - NAMED, sorted(public - NAMED)


def test_every_error_class_is_documented():
    classes = {name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, errors.BpecliError)}
    assert not classes - NAMED, sorted(classes - NAMED)


def test_the_shard_writer_and_its_arguments_are_documented():
    section = DOC.split("write_shards(", 1)[1].split("\n", 1)[0]
    assert set(inspect.signature(write_shards).parameters) <= set(re.findall(r"\w+", section))


def test_documented_signatures_are_the_real_ones():
    for function in (bpecli.train, bpecli.train_bpe, bpecli.load):
        heading = re.search(rf"^### `bpecli\.{function.__name__}\((.*)\)", DOC, re.M)
        assert heading, function.__name__
        names = [arg.split("=")[0] for arg in heading.group(1).split(", ") if arg != "*"]
        assert names == list(inspect.signature(function).parameters)
