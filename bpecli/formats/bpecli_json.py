"""bpecli.json: what a .tiktoken ranks file does not hold (the pattern, the special tokens, the
normalization), the format version, and the size and CRC-32 of each file written with it, so that
a folder whose files come from two tokenizers is refused."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import replace
from pathlib import Path
from typing import cast

from .. import folders
from ..errors import BpecliError, TokenizerFileError
from ..normalize import check as check_normalize
from ..vocab import Template, Vocab
from .common import checked, pattern_of
from .tiktoken import parse_tiktoken


# The format_version of a bpecli.json whose tokenizer adds to the text it encodes (add_prefix_space,
# a template): a bpecli that reads only version 1 refuses it, rather than give other ids.
ADDING_VERSION = folders.FORMAT_VERSION + 1


def write_bpecli_json(vocab: Vocab, path: Path, *, files: dict[str, dict] | None = None) -> None:
    """bpecli.json: the pattern, special tokens and normalization the ranks file does not hold, and
    (files) the size and CRC-32 of each file written with it."""
    adds = vocab.adds
    document = {
        "format_version": ADDING_VERSION if adds else folders.FORMAT_VERSION,
        "pattern": vocab.pattern,
        "special_tokens": vocab.special_tokens,
        **({"normalize": list(vocab.normalize)} if vocab.normalize else {}),
        **({"add_prefix_space": True} if vocab.add_prefix_space else {}),
        **({"template": vocab.template.as_json()} if vocab.template else {}),
        **({"strips": {token: list(sides) for token, sides in vocab.strips.items()}} if vocab.strips else {}),
        **({"ranks_file_lacks": ranks_file_lacks(vocab)} if adds else {}),
        "vocab_size": vocab.vocab_size,
        "ranks_file": "tokenizer.tiktoken",
        **({"files": files} if files else {}),
    }
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def load_bpecli(generation: folders.Generation, name: str, document: dict, pattern: str | None,
                specials: dict | None) -> Vocab:
    """The vocabulary of a bpecli.json (document) and the ranks file it names."""
    path = generation.path / name
    version = document.get("format_version")
    if type(version) is not int or version not in (folders.FORMAT_VERSION, ADDING_VERSION):
        raise TokenizerFileError(
            f"{path}: format_version {json.dumps(version)[:20]} is not {folders.FORMAT_VERSION} or {ADDING_VERSION}, the ones "
            "this bpecli reads; "
            "retrain it, or use a bpecli of that version"
        )
    ranks_file = document.get("ranks_file", "tokenizer.tiktoken")
    if not _plain_name(ranks_file):
        raise TokenizerFileError(f"{path}: ranks_file {str(ranks_file)[:60]!r} is not the name of a file in this folder "
                                 "(such as \"tokenizer.tiktoken\")")
    data = generation.read(ranks_file)
    _check_written(generation, path, document.get("files"), ranks_file, data)
    ranks_path = generation.path / ranks_file
    ranks = parse_tiktoken(data, ranks_path, quote=not generation.linked(ranks_file))
    found = document.get("special_tokens", {})
    if not isinstance(found, dict) or not all(type(rank) is int for rank in found.values()):
        raise TokenizerFileError(f"{path}: 'special_tokens' should map each special token to its id, "
                                 "e.g. {\"<|endoftext|>\": 50256}")
    size = document.get("vocab_size", len(ranks) + len(found))
    if size != len(ranks) + len(found) or type(size) is not int:
        raise TokenizerFileError(f"{path}: says {json.dumps(size)[:20]} tokens, but {ranks_file} and its special tokens "
                                 f"have {len(ranks) + len(found):,}; the folder mixes files of two tokenizers: "
                                 "train it again, or copy the whole folder")
    vocab = checked(
        path,
        ranks,
        specials if specials is not None else found,
        pattern_of(pattern, document.get("pattern") or "gpt2", f"from {path}"),
        [path, ranks_path],
        normalize=_normalize_of(path, document.get("normalize") or []),
    )
    prefix, template = _additions_of(path, document)
    strips = document.get("strips", {})
    if not isinstance(strips, dict) or not all(isinstance(v, list) and len(v) == 2 and all(isinstance(b, bool) for b in v)
                                               for v in strips.values()):
        raise TokenizerFileError(f"{path}: 'strips' should map special tokens to [left, right], e.g. {{\"<mask>\": [true, false]}}")
    try:
        return replace(vocab, add_prefix_space=prefix, template=template,
                       strips={token: (sides[0], sides[1]) for token, sides in strips.items()})
    except BpecliError as e:  # a template whose ids are no special tokens (of --special-ids, say)
        raise TokenizerFileError(f"{path}: {e.args[0]}") from None


def ranks_file_lacks(vocab: Vocab) -> str:
    """What tokenizer.tiktoken (ranks only) and vocab.json + merges.txt cannot carry of a tokenizer
    that adds to its text, and what a reader of those files must do instead."""
    said = []
    if vocab.add_prefix_space:
        said.append("a space before each text that does not start with one (encode ' ' + text)")
    if vocab.template:
        shown = " ".join(f"{vocab.special_ids[part]}={part}" if isinstance(part, int) else "TEXT"
                         for part in vocab.template.single)
        said.append(f"the special tokens around each text ({shown}: put those ids around the ids of the text)")
    if vocab.strips:
        said.append(f"the whitespace that {', '.join(vocab.strips)} take beside them (strip it from the text beside them)")
    return ("tokenizer.tiktoken and vocab.json + merges.txt hold the ranks only, not " + " nor ".join(said) +
            ". bpecli and Hugging Face (tokenizer.json) add them; tiktoken, and GPT-2 readers of vocab.json, do not: "
            "do it yourself around their encode.")


def _additions_of(path: Path, document: dict) -> tuple[bool, Template | None]:
    """add_prefix_space and the template a bpecli.json records."""
    prefix = document.get("add_prefix_space", False)
    if not isinstance(prefix, bool):
        raise TokenizerFileError(f"{path}: 'add_prefix_space' should be true or false")
    found = document.get("template")
    if found is None:
        return prefix, None
    forms = [found.get(name) if isinstance(found, dict) else None for name in ("single", "pair")]
    for form in forms[: 2 if forms[1] is not None else 1]:
        if not isinstance(form, list) or not all(part in ("A", "B") or type(part) is int for part in form):
            raise TokenizerFileError(f"{path}: 'template' should be {{\"single\": [...], \"pair\": [...]}} of special "
                                     "token ids and \"A\", \"B\" for the texts")
    single, pair = cast(list, forms[0]), forms[1]
    return prefix, Template(single=tuple(single), pair=tuple(pair) if pair is not None else None)


def _check_written(generation: folders.Generation, path: Path, files, ranks_file: str, data: bytes) -> None:
    """Every file bpecli.json recorded (size and CRC-32) that the folder holds is the one written
    with it: a folder whose files were replaced one by one, and not all of them, is refused
    whatever file it is loaded through."""
    if files is None:  # a bpecli.json written by hand, or by a bpecli that recorded no files
        return
    if not isinstance(files, dict) or not all(_plain_name(name) for name in files):
        raise TokenizerFileError(f"{path}: its record of the files written with it ('files') is damaged; "
                                 "train the tokenizer again")
    for name in (ranks_file, *sorted(set(files) - {ranks_file})):
        if name != ranks_file and not generation.has(name):
            continue  # a file left out when the folder was copied is read by no one
        entry = files.get(name)
        if not isinstance(entry, dict) or type(entry.get("bytes")) is not int or not isinstance(entry.get("crc32"), str):
            raise TokenizerFileError(f"{path}: its record of {name} (in 'files') is missing or damaged; "
                                     "train the tokenizer again")
        found = data if name == ranks_file else generation.read(name)
        if len(found) != entry["bytes"]:
            differs = f"{len(found):,} bytes, where it recorded {entry['bytes']:,}"
        elif f"{zlib.crc32(found):08x}" != entry["crc32"].lower():
            differs = "another CRC-32 than it recorded"
        else:
            continue
        raise TokenizerFileError(f"{path}: {name} is not the file written with it ({differs}); the folder mixes "
                                 "files of two tokenizers: train it again, or copy the whole folder")


def _plain_name(name) -> bool:
    """Whether name is a file name alone, which can only be a file of the folder it is read in."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
            and os.sep not in name and (os.altsep is None or os.altsep not in name))


def _normalize_of(path: Path, steps) -> tuple[str, ...]:
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise TokenizerFileError(f"{path}: 'normalize' should be a list of steps such as [\"nfkc\", \"lowercase\"]")
    try:
        return check_normalize(steps)
    except BpecliError as e:
        raise TokenizerFileError(f"{path}: {e.args[0]}") from None
