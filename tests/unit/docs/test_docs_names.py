"""Every bpecli name the docs spell as a dotted path (`training.pairs.tie_break_key`,
`inputs.parts._Cuts`) and every bpecli file they name (`encoding/reference.py`) exists, so that the
docs follow the code when modules move."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import bpecli

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MODULES = {m.name for m in pkgutil.iter_modules(bpecli.__path__)}
FILE_SUFFIXES = {"json", "tiktoken", "txt", "py", "md", "npy", "bin", "idx", "jsonl", "parquet"}


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):  # the longest module prefix, then attributes
        try:
            target = importlib.import_module("bpecli." + ".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_dotted_names_in_the_docs_exist():
    missing = []
    for document in DOCS:
        for dotted in re.findall(r"`([a-z_]+(?:\.[A-Za-z_][A-Za-z_0-9]*)+)`", document.read_text(encoding="utf-8")):
            if dotted.split(".")[-1] in FILE_SUFFIXES:  # tokenizer.json is a file, not the module tokenizer
                continue
            if dotted.split(".")[0] in MODULES and not _resolves(dotted):
                missing.append(f"{document.name}: {dotted}")
    assert not missing, missing


def test_files_of_bpecli_named_in_the_docs_exist():
    missing = []
    for document in DOCS:
        for path in re.findall(r"`((?:bpecli/)?[a-z_]+/[a-z_/]+\.py)`", document.read_text(encoding="utf-8")):
            relative = path if path.startswith("bpecli/") else f"bpecli/{path}"
            if path.split("/")[0] in MODULES | {"bpecli"} and not (ROOT / relative).exists():
                missing.append(f"{document.name}: {path}")
    assert not missing
