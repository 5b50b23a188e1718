"""The layout of a shard folder: the names of its files (shard_00000.npy, its document index
shard_00000.idx, train_/val_ splits, nanoGPT's train.bin), manifest.json and the journal; the
settings a run is identified by; and reading and checking a manifest or journal.

A shard folder holds shard_00000.npy, shard_00001.npy, ... (every one exactly shard_tokens long
but the last), each with its document index (where each document starts in it; a .npy file by
another name) and, once everything is written, manifest.json. With a validation split the shards
are train_00000.npy, ... and val_00000.npy, ...; nanoGPT's format is one train.bin (and val.bin).
While a run is under way a journal (.bpecli-progress.json) lists the finished shards with their
checksums and where in the inputs each one ends (see journal.py).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .. import folders
from ..errors import InputError, OutputError, arg
from ..inputs.sources import input_stat

MANIFEST = "manifest.json"
JOURNAL = ".bpecli-progress.json"
# A run's records while it removes its files (journal.clear): the folder no longer looks finished,
# and what it names is still known to be bpecli's if the removal is cut short.
CLEARING = ".bpecli-clearing.json"

# The suffix of each shard format's files (see formats.py); nanoGPT's is one file per split.
SHARD_SUFFIX = {"npy": ".npy", "llmc": ".bin", "nanogpt": ".bin"}
UNBOUNDED = 2**62  # shard_tokens of a format with one file per split
# A shard's document index: int64 positions where its documents start, in .npy format (np.load
# reads it) but not named .npy, so that a loader's glob("shard_*.npy") finds only shards.
INDEX_SUFFIX = ".idx"


def shard_name(index: int, shard_format: str = "npy", split: str = "shard") -> str:
    if shard_format == "nanogpt":
        return f"{split}.bin"
    return f"{split}_{index:05d}{SHARD_SUFFIX[shard_format]}"


def index_name(shard: str) -> str:
    """The document index beside a shard. Example: "shard_00000.npy" -> "shard_00000.idx"
    """
    return shard.rsplit(".", 1)[0] + INDEX_SUFFIX


def splits_of(val_fraction: float | None, shard_format: str = "npy") -> list[str]:
    """The streams of shards a run writes: "shard" alone, or "train" and "val"."""
    if val_fraction:
        return ["train", "val"]
    return ["train"] if shard_format == "nanogpt" else ["shard"]


def split_of(file: str) -> str:
    """The split a shard file belongs to. Example: "val_00003.npy" -> "val"; "train.bin" -> "train"
    """
    return re.split(r"[_.]", file, maxsplit=1)[0]


# The files of a shard folder that are bpecli's: shards and document indexes, and a run's temporaries.
SHARD_NAME = re.compile(r"(shard|train|val)(_[0-9]{5,})?\.(npy|bin|idx)")
PARTIAL = re.compile(r"(\.(shard|train|val)\S*|manifest\.json|\.bpecli-progress\.json)\.partial")
SHA256 = re.compile(r"[0-9a-f]{64}")


def input_identity(path: str, label: str) -> dict:
    """What says an input is the same file as before: its size and, for a real file, the time it
    was last modified (a spooled stream has none; the checksums of its parts stand for it)."""
    size, mtime_ns = input_stat(path, label)
    spooled = label == "<stdin>" or os.path.basename(path).startswith("bpecli-stdin-")
    return {"path": label, "size": size, "mtime_ns": None if spooled else mtime_ns}


def check_unchanged(pairs, settings) -> None:
    """Every input still has the size and time it had when the run began."""
    for (path, label), before in zip(pairs, settings["inputs"]):
        if input_identity(path, label) != before:
            raise InputError(f"{label} changed while bpecli read it; the shards written so far are kept "
                             f"unfinished: rerun once it no longer changes ({arg('force', True)} starts afresh)")


def settings_of(tokenizer, inputs, shard_tokens, eot, text_column, dtype, shard_format) -> dict:
    """Everything a shard folder's content depends on; a rerun resumes only if these are equal.
    (shard_format is said only when not npy: folders of .npy shards read as before.)"""
    identities = [input_identity(path, label) for path, label in inputs]
    return {
        **({"shard_format": shard_format} if shard_format != "npy" else {}),
        "format_version": folders.FORMAT_VERSION,
        "tokenizer": {
            "files": [Path(name).name for name in tokenizer.files],
            "fingerprint": tokenizer.fingerprint,
            "vocab_size": tokenizer.vocab_size,
        },
        "eot": None if eot is None else {"id": eot, "token": tokenizer.special_ids.get(eot)},
        "dtype": dtype,
        "shard_tokens": shard_tokens,
        "text_column": text_column,
        "inputs": identities,
    }


def differences(document: dict, settings: dict) -> list[str]:
    """What differs between a folder's run and this one, in words; empty if they are the same run.

    Example: ["shard_tokens 1000 there, 2000 now", "input a.txt: modified since"]
    """
    settings = json.loads(json.dumps(settings))
    found = []
    there, here = document.get("shard_format", "npy"), settings.pop("shard_format", "npy")
    if there != here:
        found.append(f"shard_format {json.dumps(there)} there, {json.dumps(here)} now")
    for key, value in settings.items():
        there = document.get(key)
        if there == value:
            continue
        if key == "inputs" and isinstance(there, list):
            names = [item.get("path") if isinstance(item, dict) else item for item in there]
            if names != [item["path"] for item in value]:
                found.append(f"inputs {', '.join(map(str, names))} there, {', '.join(i['path'] for i in value)} now")
            for old, new in zip(there, value):
                if old != new and isinstance(old, dict):
                    size = old.get("size")
                    size = f"{size:,}" if is_count(size) else json.dumps(size)
                    what = f"{size} -> {new['size']:,} bytes" if old.get("size") != new["size"] else "modified since"
                    found.append(f"input {new['path']}: {what}")
        elif key == "tokenizer":
            found.append("another tokenizer (its files, pattern or special tokens differ)")
        else:
            found.append(f"{key} {json.dumps(there)} there, {json.dumps(value)} now")
    return found


# A manifest or journal larger than this is none of bpecli's (one listing a million shards, or
# the parts of 10 TB of inputs, is about 300 MB).
STATE_LIMIT = 1 << 30


def load_state(path: Path):
    """The JSON value in a manifest or journal. It must be a file of its own, of at most
    STATE_LIMIT bytes: a link, a FIFO or a device such as /dev/zero could lead out of the folder,
    or be read forever. ValueError (folders.Unreadable) says what is wrong with it."""
    data, _ = folders.read_regular(path, STATE_LIMIT, follow_links=False)
    return folders.parse_json(data)


def read_json(path: Path, garbled: str = f"use {arg('force', True)} to rebuild") -> dict:
    """A JSON object from a state file; garbled says what to do when it is not one."""
    try:
        document = load_state(path)
    except OSError as e:
        raise OutputError(f"{path}: unreadable ({e.strerror or e}); {garbled}") from None
    except folders.Unreadable as e:
        raise OutputError(f"{path}{'' if e.line is None else f':{e.line}'}: {e}; {garbled}") from None
    if not isinstance(document, dict):
        raise OutputError(f"{path}: not a bpecli file; {garbled}")
    return document


REBUILD = f"encode again with {arg('force', True)} to rebuild the folder"
# what inspect says of a manifest that is no JSON object: force would not replace it (bpecli
# cannot tell it wrote it), so a new folder is the way that works
UNREADABLE = f"inspect shows only folders bpecli encode finished: encode the corpus again into a new {arg('out_dir')} folder"


def damaged(path: Path, what: str) -> OutputError:
    return OutputError(f"{path}: damaged ({what}); {REBUILD}")


def is_count(value) -> bool:
    """A whole number from 0 on (JSON's true and false are not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_manifest(path: Path, garbled: str = f"use {arg('force', True)} to rebuild") -> dict:
    """A manifest.json, checked to be one this bpecli can read and to be whole: its settings,
    its shards (see checked_shards) and its totals; garbled says what to do when it is no
    JSON object."""
    manifest = read_json(path, garbled)
    if manifest.get("format_version") != folders.FORMAT_VERSION:
        raise OutputError(f"{path}: format_version {manifest.get('format_version')!r} is not {folders.FORMAT_VERSION}; "
                          f"use the bpecli that wrote it, or encode again with {arg('force', True)}")
    checks = {
        "total_tokens": is_count, "total_documents": is_count, "text_column": lambda v: isinstance(v, str),
        "shard_tokens": lambda v: is_count(v) and v >= 1, "dtype": lambda v: v in ("uint16", "uint32"),
        "shard_format": lambda v: v in SHARD_SUFFIX, "val_fraction": lambda v: v is None or _is_fraction(v),
        "eot": _is_token, "bos": _is_token, "max_id": is_count,
        "tokenizer": lambda v: isinstance(v, dict) and is_count(v.get("vocab_size")),
        "inputs": _lists_paths, "read": _lists_paths,
        "decoder_sha256": lambda v: isinstance(v, str) and SHA256.fullmatch(v) is not None,
    }
    optional = {"shard_format", "val_fraction", "bos", "max_id", "read", "decoder_sha256"}  # not written by every bpecli of this format
    for key, check in checks.items():
        if not (key in optional and key not in manifest) and not check(manifest.get(key)):
            raise damaged(path, f"{key!r} is missing or malformed")
    if "max_id" in manifest:  # the tokenizer's largest id: its eot and bos, and its vocabulary, go no further
        top = max([manifest["tokenizer"]["vocab_size"] - 1, *(manifest[k]["id"] for k in ("eot", "bos") if manifest.get(k))])
        if top > manifest["max_id"]:
            raise damaged(path, f"max_id {manifest['max_id']:,} is below an id it names ({top:,})")
    shards = checked_shards(path, manifest, manifest)
    for key, field in (("total_tokens", "tokens"), ("total_documents", "documents")):
        if manifest[key] != sum(shard[field] for shard in shards):
            raise damaged(path, f"{key} {manifest[key]:,} is not the sum over its shards")
    if "splits" in manifest and manifest["splits"] != split_totals(shards, splits_of(manifest.get("val_fraction"))):
        raise damaged(path, "'splits' does not add up to its shards")
    return manifest


def _lists_paths(value) -> bool:
    """A list of objects, each naming an input by its path (a manifest's inputs, and what was read of each)."""
    return isinstance(value, list) and all(isinstance(i, dict) and isinstance(i.get("path"), str) for i in value)


def checked_shards(path: Path, document: dict, settings: dict, parts: int | None = None) -> list[dict]:
    """The shards a manifest or journal lists, checked to be as bpecli writes them: each split's
    named in order from 0, every one but its last holding shard_tokens, each document index
    named after its shard. For a journal (parts: how many parts it lists read), also where in
    the inputs each shard ends: within those parts, and following on from the shard before.

    Example: a journal whose shard_00003.npy ends 5,000 ids into part 7 while shard_00002.npy
    ends 4,000 ids into part 7 is damaged unless shard_00003.npy holds exactly 1,000 tokens.
    """
    shards = document.get("shards")
    if not isinstance(shards, list):
        raise damaged(path, "its list of shards is missing or malformed")
    shard_format, full = settings.get("shard_format", "npy"), settings["shard_tokens"]
    splits = splits_of(settings.get("val_fraction"), shard_format)
    written: dict[str, list[dict]] = {split: [] for split in splits}
    ends = {split: (0, 0) for split in splits}  # (part, ids into it) where each split's last shard ends
    for shard in shards:
        if not isinstance(shard, dict):
            raise damaged(path, "its list of shards holds something other than shards")
        file, due = shard.get("file"), [shard_name(len(written[split]), shard_format, split) for split in splits]
        if file not in due:
            raise damaged(path, f"it lists {file!r} where {' or '.join(due)} comes next")
        split = split_of(file)
        tokens: Any = shard.get("tokens")
        if not is_count(tokens) or not 1 <= tokens <= full:
            raise damaged(path, f"{file} holds {tokens!r} tokens, not 1 to shard_tokens ({full:,})")
        if written[split] and written[split][-1]["tokens"] != full:
            raise damaged(path, f"{written[split][-1]['file']} holds fewer than shard_tokens, yet {file} follows it")
        if not is_count(shard.get("documents")):
            raise damaged(path, f"{file}: 'documents' is missing or not a whole number")
        for key in ("sha256", "index_sha256") if "index" in shard else ("sha256",):
            if not (isinstance(shard.get(key), str) and SHA256.fullmatch(shard[key])):
                raise damaged(path, f"{file}: {key!r} is missing or not a sha256")
        if "index" in shard and shard["index"] != index_name(file):
            raise damaged(path, f"{file}: its document index is {shard['index']!r}, not {index_name(file)}")
        if parts is not None:
            ends[split] = _checked_end(path, shard, ends[split], parts, full)
        written[split].append(shard)
    return shards


def _checked_end(path: Path, shard: dict, before: tuple[int, int], parts: int, full: int) -> tuple[int, int]:
    """Where in the inputs a journal's shard ends (next_part, skip: its last id is skip ids into
    part next_part, or the end of part next_part - 1 if skip is 0; next_part None: the inputs'
    end), checked against the shard before it in its split (which ends at `before`)."""
    file, tokens = shard["file"], shard["tokens"]
    part: Any = shard.get("next_part")
    skip: Any = shard.get("skip")
    if "next_part" not in shard or not (part is None or is_count(part)) or not is_count(skip):
        raise damaged(path, f"{file}: 'next_part' and 'skip' must be whole numbers from 0 on")
    if part is None:  # its split's last shard, closed as the inputs ended: shorter than the rest
        if tokens == full or skip:
            raise damaged(path, f"{file} is marked as its split's last, yet holds shard_tokens or a skip")
        return before
    if tokens != full:
        raise damaged(path, f"{file} holds {tokens:,} tokens, fewer than shard_tokens, yet is not marked as its split's last")
    if part > parts or (skip and part >= parts):
        raise damaged(path, f"{file} ends in part {part:,}, past the {parts:,} parts read")
    # within one part, the shard holds exactly the ids from where the one before ended; across
    # parts, it holds at least the skip ids of the last (and one of the first, if it began inside it)
    if part < before[0] or (part == before[0] and skip != before[1] + tokens) \
            or (part > before[0] and skip > tokens - (1 if before[1] else 0)):
        raise damaged(path, f"{file} ends {skip:,} ids into part {part:,}, which does not follow on from "
                             f"the shard before it ({before[1]:,} ids into part {before[0]:,})")
    return part, skip


def split_totals(shards: list[dict], splits: list[str]) -> dict:
    """What the manifest says of each split. Example: {"train": {"tokens": 9, "documents": 2, "shards": [...]}, "val": ...}"""
    of = {split: [s for s in shards if split_of(s["file"]) == split] for split in splits}
    return {split: {"tokens": sum(s["tokens"] for s in of[split]), "documents": sum(s["documents"] for s in of[split]),
                    "shards": [s["file"] for s in of[split]]} for split in splits}


def _is_fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1


def _is_token(value) -> bool:
    """None, or an eot or bos as the manifest records it: {"id": 50256, "token": "<|endoftext|>"}."""
    return value is None or (isinstance(value, dict) and is_count(value.get("id")))


def is_file_here(path: Path) -> bool:
    """A regular file itself, not a link (bpecli writes none): what a shard folder names stays in it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
