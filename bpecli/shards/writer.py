"""Documents -> token ids -> shards (.npy, llm.c's .bin or nanoGPT's raw .bin) and manifest.json,
atomically and resumably; verify them.

A shard folder holds shard_00000.npy, shard_00001.npy, ... (every one exactly shard_tokens long
but the last), each with its document index (shard_00000.idx: where each document starts in
it; a .npy file by another name) and, once everything is written, manifest.json. With a validation split the shards are
train_00000.npy, ... and val_00000.npy, ...; nanoGPT's format is one train.bin (and val.bin).
While a run is under way a journal (.bpecli-progress.json) lists the finished shards with their
checksums and where in the inputs each one ends, so that a rerun of the same command keeps them
and carries on from there.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .inputs.documents import Splitters, parse_id, read_documents, shown
from .inputs.parts import Part, document_parts
from .inputs.sources import check_apart, input_bytes, input_pairs, input_stat, is_uri
from .errors import BpecliError, InputError, OutputError
from .parallel import map_in_order
from .progress import progress_bar
from . import folders
from .folders import file_sha256, locked, write_file, write_json_atomically
from .pretokenize import DEFAULT_EOT, document_separators
from .tokenizer import Tokenizer

MANIFEST = "manifest.json"
JOURNAL = ".bpecli-progress.json"


# Shard files: standard .npy, or llm.c's .bin (a header of 256 int32: magic, version, token count;
# then the tokens), whose magic and version say the token dtype.
# nanoGPT's train.bin / val.bin are the tokens alone, one file per split.
SHARD_SUFFIX = {"npy": ".npy", "llmc": ".bin", "nanogpt": ".bin"}
LLMC_HEADER_INTS = 256
LLMC_MAGIC = {"uint16": (20240520, 1), "uint32": (20240801, 7)}  # dtype -> (magic, version)
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


def in_validation(documents: list[str] | list[bytes], fraction: float) -> np.ndarray:
    """Which documents go to the validation split: those whose 64-bit BLAKE2b hash falls in the
    lowest `fraction` of the range. It depends on a document's text alone, never on where it is
    read or by which worker, and repeated documents land on the same side."""
    limit = int(fraction * 2**64)
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(_utf8(d), digest_size=8).digest(), "little") < limit for d in documents),
        dtype=bool, count=len(documents))


def _utf8(document: str | bytes) -> bytes:
    return document if isinstance(document, bytes) else document.encode("utf-8", "surrogatepass")


def _header(shard_format: str, dtype: str, length: int) -> bytes:
    """The bytes before a shard's tokens."""
    if shard_format == "nanogpt":
        return b""
    if shard_format == "llmc":
        header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
        header[:3] = (*LLMC_MAGIC[dtype], length)
        return header.tobytes()
    return _npy_header(dtype, length)


def read_shard(path: str | Path) -> np.ndarray:
    """The tokens of a shard file (.npy, llm.c's .bin, or nanoGPT's raw .bin listed in the
    manifest.json beside it, which says its dtype), memory-mapped."""
    path = Path(path)
    try:
        if path.suffix == ".bin":
            return _read_bin(path)
        with open(path, "rb") as f:
            magic = f.read(6)
        if magic != b"\x93NUMPY":  # np.load would take it for a pickle and speak of allow_pickle
            raise InputError(f"{path}: not a .npy file (it does not start as one); to decode ids written as "
                             "text, give a file of another name, or pipe it in on stdin")
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as e:
        # numpy's own words may run over several lines (a header too long to be read safely)
        message = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{path}: not a readable shard ({message})") from None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InputError(f"{path}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
    return array


def _read_bin(path: Path) -> np.ndarray:
    """An llm.c .bin (its header's token count must be what the file holds) or a nanoGPT .bin."""
    header = np.fromfile(path, dtype="<i4", count=LLMC_HEADER_INTS)
    dtype = next((d for d, (magic, version) in LLMC_MAGIC.items()
                  if len(header) == LLMC_HEADER_INTS and (header[0], header[1]) == (magic, version)), None)
    if dtype is None:
        raw_dtype = _nanogpt_dtype(path)
        if raw_dtype is None:
            raise ValueError("no llm.c header (magic 20240520 version 1, or 20240801 version 7), and no "
                             "manifest.json beside it that lists it as a nanoGPT .bin")
        return np.memmap(path, dtype=np.dtype(raw_dtype).newbyteorder("<"), mode="r")
    itemsize, count = np.dtype(dtype).itemsize, int(header[2])
    held = (path.stat().st_size - 4 * LLMC_HEADER_INTS) / itemsize
    if count != held:
        raise ValueError(f"its llm.c header says {count:,} tokens, but it holds {held:,g}")
    if count == 0:  # numpy maps no empty file
        return np.zeros(0, dtype=np.dtype(dtype).newbyteorder("<"))
    return np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r", offset=4 * LLMC_HEADER_INTS, shape=(count,))


def _nanogpt_dtype(path: Path) -> str | None:
    """The dtype of a raw nanoGPT .bin, from the manifest of its folder (None if it lists no such file)."""
    manifest_path = path.parent / MANIFEST
    if not os.path.lexists(manifest_path):
        return None
    try:
        manifest = _load_state(manifest_path)
        listed = any(shard.get("file") == path.name for shard in manifest["shards"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if manifest.get("shard_format") == "nanogpt" and listed and manifest.get("dtype") in ("uint16", "uint32"):
        return manifest["dtype"]
    return None


@dataclass(frozen=True)
class ShardRun:
    """What a call of write_shards did: the manifest it wrote (or found), and how."""

    out_dir: Path
    manifest: dict
    status: str  # "written", "resumed" or "complete" (found finished, left alone)
    kept_shards: int = 0
    seconds: float = 0.0
    n_bytes: int = 0


def resolve_eot(tokenizer: Tokenizer, eot: str | None) -> int | None:
    """The id written after every document: None (the default) means the tokenizer's
    <|endoftext|> if it has one; "none" means nothing; else a special token or an id.

    Example (GPT-2): None -> 50256; "none" -> None; "50256" -> 50256
    """
    if eot is None:
        return tokenizer.special_tokens.get(DEFAULT_EOT)
    return resolve_token(tokenizer, eot, "--eot")


def resolve_token(tokenizer: Tokenizer, token: str | None, option: str = "--bos") -> int | None:
    """The id of a token written around every document: None or "none" is nothing; else a
    special token or an id of the tokenizer."""
    if token is None or token == "none":
        return None
    if token in tokenizer.special_tokens:
        return tokenizer.special_tokens[token]
    number = parse_id(token)  # ASCII digits only: "٣" is no id
    if number is not None and number in tokenizer.decoder:
        return number
    known = ", ".join(tokenizer.special_tokens) or "none"
    raise BpecliError(f"{option} {shown(token)} is neither a special token of this tokenizer ({known}) nor an id in it")


def resolve_dtype(tokenizer: Tokenizer, dtype: str = "auto") -> str:
    """uint16 when every id fits, else uint32; a dtype asked for must hold every id."""
    top = max(tokenizer.decoder)
    if dtype == "auto":
        if top > np.iinfo(np.uint32).max:
            raise BpecliError(f"the tokenizer's ids go up to {top:,}, past uint32 (the widest shard dtype); "
                              "renumber its special tokens below 2**32")
        return "uint16" if top <= np.iinfo(np.uint16).max else "uint32"
    if dtype not in ("uint16", "uint32"):
        raise BpecliError(f"--dtype {dtype!r}: expected auto, uint16 or uint32")
    if top > np.iinfo(dtype).max:
        raise BpecliError(f"the tokenizer's ids go up to {top}, which {dtype} cannot hold; use --dtype uint32 or auto")
    return dtype


def write_shards(
    tokenizer: Tokenizer,
    inputs: list[str | Path | tuple[str, str]],
    out_dir: str | Path,
    *,
    shard_tokens: int = 100_000_000,
    workers: int = 1,
    scheduler: str | None = None,
    eot: int | None = None,
    text_column: str = "text",
    dtype: str = "auto",
    errors: str = "strict",
    force: bool = False,
    shard_format: str = "npy",
    bos: int | None = None,
    val_fraction: float | None = None,
    progress=None,
) -> ShardRun:
    """Encode the documents of inputs (paths, or (path, label) pairs) into shards in out_dir:
    .npy files, llm.c's .bin with shard_format="llmc", or nanoGPT's raw train.bin with "nanogpt".

    Every document is encoded on its own (special tokens in it count as text), preceded by bos
    and followed by eot (either may be None). With val_fraction, about that fraction of the
    documents goes to val_* shards and the rest to train_* (see in_validation). The result depends only on the inputs, the tokenizer and these options, never on workers
    nor on where they run (a Dask cluster's, given its scheduler: see parallel.map_in_order).
    progress, if given, makes the bar: progress("encoding", total bytes, "B") (see progress.progress_bar).
    """
    if shard_tokens < 1:
        raise BpecliError("--shard-tokens must be at least 1")
    if shard_format not in SHARD_SUFFIX:
        raise BpecliError(f"--shard-format {shard_format!r}: expected npy, llmc or nanogpt")
    if val_fraction is not None and not 0 < val_fraction < 1:
        raise BpecliError(f"--val-fraction {val_fraction}: expected a fraction between 0 and 1, e.g. 0.005")
    if shard_format == "nanogpt":
        shard_tokens = UNBOUNDED
    if shard_format == "llmc" and shard_tokens > np.iinfo(np.int32).max:
        raise BpecliError("--shard-tokens: llm.c's header counts tokens in an int32, so at most 2,147,483,647")
    started = time.perf_counter()
    out = Path(out_dir)
    pairs = input_pairs(inputs)
    check_apart(out, [label for _, label in pairs])
    settings = _settings(tokenizer, pairs, shard_tokens, eot, text_column, resolve_dtype(tokenizer, dtype), shard_format)
    settings.update(bos=None if bos is None else {"id": bos, "token": tokenizer.special_ids.get(bos)},
                    val_fraction=val_fraction)
    made = _make_folder(out)
    with locked(out), _unmade_on_failure(out, made):
        found = _prepare(out, settings, force)
        if isinstance(found, dict):
            return ShardRun(out, found, "complete")
        kept = found
        separators = document_separators(tokenizer.special_tokens)
        parts = document_parts(pairs, separators=separators, text_column=text_column)
        setup_args = (tokenizer, eot, bos, val_fraction, settings["dtype"], separators, text_column, errors)
        tokenizer.prepare_bulk()
        writer = _ShardWriter(out, settings, kept, splits_of(val_fraction, shard_format))
        n_bytes = 0
        with progress_bar(progress, "encoding", input_bytes(pairs), "B") as bar:
            try:
                todo = _parts_from(parts, writer.resume_part(), writer, separators, text_column, errors, bar)
                for index, part, (encoded, part_bytes, digest) in _encode_in_order(todo, workers, scheduler, setup_args):
                    writer.read(index, part.label, digest)
                    for split, (ids, doc_ends) in zip(writer.splits, encoded):
                        writer.write(split, ids, doc_ends, index)
                        writer.tally(index, split, len(ids), len(doc_ends))
                    n_bytes += part_bytes
                    if bar is not None:
                        bar.update(part.weight)
                        bar.set_postfix_str(f"{writer.total_tokens / (time.perf_counter() - started):,.0f} tokens/s")
                _check_unchanged(pairs, settings)
                manifest = writer.finish(pairs, max(tokenizer.decoder))
            finally:
                writer.discard()
    return ShardRun(out, manifest, "resumed" if kept else "written", len(kept), time.perf_counter() - started, n_bytes)


def _make_folder(out: Path) -> Path | None:
    """Make the folder out (and its parents); the topmost folder made, or None if out was there."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a folder for shards; choose another --out")
    made = next((folder for folder, parent in zip([out, *out.parents], out.parents) if parent.exists()), None)
    made = None if out.exists() else made
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot make {out} ({e.strerror or e}); choose an --out you can write to") from None
    return made


@contextmanager
def _unmade_on_failure(out: Path, made: Path | None):
    """On a failure, remove the folders _make_folder made if they hold nothing but the lock: a
    run stopped by bad input leaves no empty --out behind (one that wrote shards keeps them for
    a rerun). It runs while the lock is held, so that no other run is writing there."""
    try:
        yield
    except BaseException:
        try:
            if made is not None and set(os.listdir(out)) <= {folders.LEGACY_LOCK}:
                (out / folders.LEGACY_LOCK).unlink(missing_ok=True)
                for folder in [out, *out.parents]:
                    folder.rmdir()
                    if folder == made:
                        break
        except OSError:  # something else appeared in it: it stays
            pass
        raise


def _input_identity(path: str, label: str) -> dict:
    """What says an input is the same file as before: its size and, for a real file, the time it
    was last modified (a spooled stream has none; the checksums of its parts stand for it)."""
    size, mtime_ns = input_stat(path, label)
    spooled = label == "<stdin>" or os.path.basename(path).startswith("bpecli-stdin-")
    return {"path": label, "size": size, "mtime_ns": None if spooled else mtime_ns}


def _check_unchanged(pairs, settings) -> None:
    """Every input still has the size and time it had when the run began."""
    for (path, label), before in zip(pairs, settings["inputs"]):
        if _input_identity(path, label) != before:
            raise InputError(f"{label} changed while bpecli read it; the shards written so far are kept "
                             "unfinished: rerun once it no longer changes (--force starts afresh)")


def _settings(tokenizer, inputs, shard_tokens, eot, text_column, dtype, shard_format) -> dict:
    """Everything a shard folder's content depends on; a rerun resumes only if these are equal.
    (shard_format is said only when not npy: folders of .npy shards read as before.)"""
    identities = [_input_identity(path, label) for path, label in inputs]
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


def _differences(document: dict, settings: dict) -> list[str]:
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
                    size = f"{size:,}" if _is_count(size) else json.dumps(size)
                    what = f"{size} -> {new['size']:,} bytes" if old.get("size") != new["size"] else "modified since"
                    found.append(f"input {new['path']}: {what}")
        elif key == "tokenizer":
            found.append("another tokenizer (its files, pattern or special tokens differ)")
        else:
            found.append(f"{key} {json.dumps(there)} there, {json.dumps(value)} now")
    return found


def _prepare(out: Path, settings: dict, force: bool) -> dict | list[dict]:
    """The finished manifest if out holds this very run complete; else the shards kept from an
    interrupted run of it (checksums verified), with everything else of ours cleared away."""
    manifest_path, journal_path = out / MANIFEST, out / JOURNAL
    records = [path for path in (manifest_path, journal_path) if path.exists()]
    if not any(map(_written_by_bpecli, records)):
        # shard names in a folder bpecli has no record in are someone else's (nanoGPT's own
        # train.bin, say), and so is a manifest.json it did not write: never replaced, --force or not
        foreign = sorted([p.name for p in out.iterdir() if _SHARD_NAME.fullmatch(p.name)] + [p.name for p in records])
        if foreign:
            named = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise OutputError(f"{out} holds {named}, which bpecli has no record of writing; move them away "
                              "or choose another --out")
    if force:
        _clear(out, keep=set())
        return []
    if manifest_path.exists():
        manifest = read_manifest(manifest_path)
        differs = _differences(manifest, settings)
        if not differs:
            return manifest
        raise OutputError(f"{out} holds shards of another run ({'; '.join(differs)}); use --force to rebuild")
    kept: list[dict] = []
    if journal_path.exists():
        journal = _read_json(journal_path)
        there = journal.get("settings")
        differs = _differences(there if isinstance(there, dict) else {}, settings)
        if differs:
            raise OutputError(f"{out} holds an unfinished run of other settings ({'; '.join(differs)}); use --force to restart")
        recorded = journal.get("parts")
        if not isinstance(recorded, list) or not all(isinstance(d, str) and _SHA256.fullmatch(d) for d in recorded):
            raise _damaged(journal_path, "its list of the parts read is missing or malformed")
        for shard in _checked_shards(journal_path, journal, settings, parts=len(recorded)):
            if not _intact(out, shard, settings):
                break
            kept.append(shard)
    _clear(out, keep={name for shard in kept for name in (shard["file"], shard.get("index"))})
    return [dict(shard, parts=recorded, written=_checked_written(journal.get("written"))) for shard in kept]


def _checked_written(value) -> list:
    """A journal's tallies of what each part gave each split ([None] where unknown): a list of
    {split: [tokens, documents]}; anything else is no tallies at all (the manifest then says none)."""
    def valid(entry) -> bool:
        return entry is None or isinstance(entry, dict) and all(
            isinstance(split, str) and isinstance(pair, list) and len(pair) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in pair) for split, pair in entry.items())

    return value if isinstance(value, list) and all(map(valid, value)) else []


def _intact(out: Path, shard: dict, settings: dict) -> bool:
    """Whether a shard the journal lists is in the folder as written: a file of its own (no link
    out of the folder), whose size and header say its number of tokens, with its sha256, and
    its document index beside it with its own."""
    path, dtype = out / shard["file"], settings["dtype"]
    header = _header(settings.get("shard_format", "npy"), dtype, shard["tokens"])
    if not _is_file_here(path) or path.stat().st_size != len(header) + shard["tokens"] * np.dtype(dtype).itemsize:
        return False
    with open(path, "rb") as f:
        if f.read(len(header)) != header:
            return False
    if file_sha256(path) != shard["sha256"]:
        return False
    index = shard.get("index")
    return index is None or (_is_file_here(out / index) and file_sha256(out / index) == shard["index_sha256"])


def _is_file_here(path: Path) -> bool:
    """A regular file itself, not a link (bpecli writes none): what a shard folder names stays in it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _written_by_bpecli(path: Path) -> bool:
    """Whether a manifest or journal is bpecli's, however damaged its other fields: a JSON object
    whose settings carry a format_version (bpecli writes it whole, by a rename, or not at all)."""
    try:
        document = _load_state(path)
    except (OSError, ValueError):
        return False
    settings = document.get("settings", document) if isinstance(document, dict) else None
    return isinstance(settings, dict) and "format_version" in settings


def _clear(out: Path, keep: set) -> None:
    """Remove our files from out, except the shards (and indexes) named in keep (manifest
    first: never a folder that looks finished but is not)."""
    (out / MANIFEST).unlink(missing_ok=True)
    if not keep:
        (out / JOURNAL).unlink(missing_ok=True)
    for path in out.iterdir():
        ours = _SHARD_NAME.fullmatch(path.name) or _PARTIAL.fullmatch(path.name)
        if ours and path.name not in keep:
            path.unlink()


def _read_json(path: Path, garbled: str = "use --force to rebuild") -> dict:
    """A JSON object from a state file; garbled says what to do when it is not one."""
    try:
        document = _load_state(path)
    except OSError as e:
        raise OutputError(f"{path}: unreadable ({e.strerror or e}); {garbled}") from None
    except folders.Unreadable as e:
        raise OutputError(f"{path}{'' if e.line is None else f':{e.line}'}: {e}; {garbled}") from None
    if not isinstance(document, dict):
        raise OutputError(f"{path}: not a bpecli file; {garbled}")
    return document


# A manifest or journal larger than this is none of bpecli's (one listing a million shards, or
# the parts of 10 TB of inputs, is about 300 MB).
STATE_LIMIT = 1 << 30


def _load_state(path: Path):
    """The JSON value in a manifest or journal. It must be a file of its own, of at most
    STATE_LIMIT bytes: a link, a FIFO or a device such as /dev/zero could lead out of the folder,
    or be read forever. ValueError (folders.Unreadable) says what is wrong with it."""
    data, _ = folders.read_regular(path, STATE_LIMIT, follow_links=False)
    return folders.parse_json(data)


REBUILD = "encode again with --force to rebuild the folder"
# what inspect says of a manifest that is no JSON object: --force would not replace it (bpecli
# cannot tell it wrote it), so a new folder is the way that works
UNREADABLE = "inspect shows only folders bpecli encode finished: encode the corpus again into a new --out folder"


def _damaged(path: Path, what: str) -> OutputError:
    return OutputError(f"{path}: damaged ({what}); {REBUILD}")


def _is_count(value) -> bool:
    """A whole number from 0 on (JSON's true and false are not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _checked_shards(path: Path, document: dict, settings: dict, parts: int | None = None) -> list[dict]:
    """The shards a manifest or journal lists, checked to be as bpecli writes them: each split's
    named in order from 0, every one but its last holding shard_tokens, each document index
    named after its shard. For a journal (parts: how many parts it lists read), also where in
    the inputs each shard ends: within those parts, and following on from the shard before.

    Example: a journal whose shard_00003.npy ends 5,000 ids into part 7 while shard_00002.npy
    ends 4,000 ids into part 7 is damaged unless shard_00003.npy holds exactly 1,000 tokens.
    """
    shards = document.get("shards")
    if not isinstance(shards, list):
        raise _damaged(path, "its list of shards is missing or malformed")
    shard_format, full = settings.get("shard_format", "npy"), settings["shard_tokens"]
    splits = splits_of(settings.get("val_fraction"), shard_format)
    written: dict[str, list[dict]] = {split: [] for split in splits}
    ends = {split: (0, 0) for split in splits}  # (part, ids into it) where each split's last shard ends
    for shard in shards:
        if not isinstance(shard, dict):
            raise _damaged(path, "its list of shards holds something other than shards")
        file, due = shard.get("file"), [shard_name(len(written[split]), shard_format, split) for split in splits]
        if file not in due:
            raise _damaged(path, f"it lists {file!r} where {' or '.join(due)} comes next")
        split = _split_of(file)
        tokens: Any = shard.get("tokens")
        if not _is_count(tokens) or not 1 <= tokens <= full:
            raise _damaged(path, f"{file} holds {tokens!r} tokens, not 1 to shard_tokens ({full:,})")
        if written[split] and written[split][-1]["tokens"] != full:
            raise _damaged(path, f"{written[split][-1]['file']} holds fewer than shard_tokens, yet {file} follows it")
        if not _is_count(shard.get("documents")):
            raise _damaged(path, f"{file}: 'documents' is missing or not a whole number")
        for key in ("sha256", "index_sha256") if "index" in shard else ("sha256",):
            if not (isinstance(shard.get(key), str) and _SHA256.fullmatch(shard[key])):
                raise _damaged(path, f"{file}: {key!r} is missing or not a sha256")
        if "index" in shard and shard["index"] != index_name(file):
            raise _damaged(path, f"{file}: its document index is {shard['index']!r}, not {index_name(file)}")
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
    if "next_part" not in shard or not (part is None or _is_count(part)) or not _is_count(skip):
        raise _damaged(path, f"{file}: 'next_part' and 'skip' must be whole numbers from 0 on")
    if part is None:  # its split's last shard, closed as the inputs ended: shorter than the rest
        if tokens == full or skip:
            raise _damaged(path, f"{file} is marked as its split's last, yet holds shard_tokens or a skip")
        return before
    if tokens != full:
        raise _damaged(path, f"{file} holds {tokens:,} tokens, fewer than shard_tokens, yet is not marked as its split's last")
    if part > parts or (skip and part >= parts):
        raise _damaged(path, f"{file} ends in part {part:,}, past the {parts:,} parts read")
    # within one part, the shard holds exactly the ids from where the one before ended; across
    # parts, it holds at least the skip ids of the last (and one of the first, if it began inside it)
    if part < before[0] or (part == before[0] and skip != before[1] + tokens) \
            or (part > before[0] and skip > tokens - (1 if before[1] else 0)):
        raise _damaged(path, f"{file} ends {skip:,} ids into part {part:,}, which does not follow on from "
                             f"the shard before it ({before[1]:,} ids into part {before[0]:,})")
    return part, skip


_SHARD_NAME = re.compile(r"(shard|train|val)(_[0-9]{5,})?\.(npy|bin|idx)")
_PARTIAL = re.compile(r"(\.(shard|train|val)\S*|manifest\.json|\.bpecli-progress\.json)\.partial")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def read_manifest(path: Path, garbled: str = "use --force to rebuild") -> dict:
    """A manifest.json, checked to be one this bpecli can read and to be whole: its settings,
    its shards (see _checked_shards) and its totals; garbled says what to do when it is no
    JSON object."""
    manifest = _read_json(path, garbled)
    if manifest.get("format_version") != folders.FORMAT_VERSION:
        raise OutputError(f"{path}: format_version {manifest.get('format_version')} is not {folders.FORMAT_VERSION}; "
                          "use the bpecli that wrote it, or encode again with --force")
    checks = {
        "total_tokens": _is_count, "total_documents": _is_count, "text_column": lambda v: isinstance(v, str),
        "shard_tokens": lambda v: _is_count(v) and v >= 1, "dtype": lambda v: v in ("uint16", "uint32"),
        "shard_format": lambda v: v in SHARD_SUFFIX, "val_fraction": lambda v: v is None or _is_fraction(v),
        "eot": _is_token, "bos": _is_token, "max_id": _is_count,
        "tokenizer": lambda v: isinstance(v, dict) and _is_count(v.get("vocab_size")),
        "inputs": lambda v: isinstance(v, list) and all(isinstance(i, dict) and isinstance(i.get("path"), str) for i in v),
    }
    optional = {"shard_format", "val_fraction", "bos", "max_id"}  # not written by every bpecli of this format
    for key, check in checks.items():
        if not (key in optional and key not in manifest) and not check(manifest.get(key)):
            raise _damaged(path, f"{key!r} is missing or malformed")
    shards = _checked_shards(path, manifest, manifest)
    for key, field in (("total_tokens", "tokens"), ("total_documents", "documents")):
        if manifest[key] != sum(shard[field] for shard in shards):
            raise _damaged(path, f"{key} {manifest[key]:,} is not the sum over its shards")
    if "splits" in manifest and manifest["splits"] != _split_totals(shards, splits_of(manifest.get("val_fraction"))):
        raise _damaged(path, "'splits' does not add up to its shards")
    return manifest


def _split_totals(shards: list[dict], splits: list[str]) -> dict:
    """What the manifest says of each split. Example: {"train": {"tokens": 9, "documents": 2, "shards": [...]}, "val": ...}"""
    of = {split: [s for s in shards if _split_of(s["file"]) == split] for split in splits}
    return {split: {"tokens": sum(s["tokens"] for s in of[split]), "documents": sum(s["documents"] for s in of[split]),
                    "shards": [s["file"] for s in of[split]]} for split in splits}


def _is_fraction(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1


def _is_token(value) -> bool:
    """None, or an eot or bos as the manifest records it: {"id": 50256, "token": "<|endoftext|>"}."""
    return value is None or (isinstance(value, dict) and _is_count(value.get("id")))


def _split_of(file: str) -> str:
    """The split a shard file belongs to. Example: "val_00003.npy" -> "val"; "train.bin" -> "train"
    """
    return re.split(r"[_.]", file, maxsplit=1)[0]


def _npy_header(dtype: str, length: int) -> bytes:
    buffer = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(np.dtype(dtype).newbyteorder("<"))
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": (length,)})
    return buffer.getvalue()


@dataclass
class _Stream:
    """One series of shards being written (shard_*, or train_* / val_*), and where it resumes."""

    split: str
    shards: list  # its finished shards
    resume_part: int = 0  # parts before this one are in its kept shards...
    skip: int = 0  # ...and so are this many ids of this one
    file: Any = None
    digest: Any = None  # the sha256 of what the file holds, as written (for a full shard's header)
    count: int = 0
    documents: int = 0
    starts: list = field(default_factory=list)  # arrays of where documents start in the shard being written
    unchecked: bool = False  # resumed: its last kept shard is yet to be found ending where the journal says


class _ShardWriter:
    """Appends ids to the current shard's temporary file, one stream of shards per split; a full
    shard is recorded in the journal (with where it ends in the inputs) and renamed to its final
    name, its document index beside it. The journal is written for the first shard and then at
    most once a second (and when the run stops): shards past it are written again by a rerun, and
    a run of millions of tiny shards stays linear."""

    JOURNAL_SECONDS = 1.0

    def __init__(self, out: Path, settings: dict, kept: list[dict], splits: list[str]):
        self.out = out
        self.settings = settings
        self.dtype = np.dtype(settings["dtype"]).newbyteorder("<")
        self.shard_tokens = settings["shard_tokens"]
        self.format = settings.get("shard_format", "npy")
        self.full_header = _header(self.format, settings["dtype"], self.shard_tokens)  # a full shard's
        self.recorded = kept[-1]["parts"] if kept else []  # the part checksums of the run resumed
        # what each part gave each split ({split: [tokens, documents]}, by part number): from the run
        # resumed, then as parts are encoded
        self.part_written: list = list(kept[-1]["written"]) if kept else []
        self.shards = [{k: v for k, v in shard.items() if k not in ("parts", "written")} for shard in kept]
        self.splits = splits
        self.streams = {split: _Stream(split, []) for split in splits}
        for shard in self.shards:
            stream = self.streams[_split_of(shard["file"])]
            stream.shards.append(shard)
            # a stream's last shard (next_part None) was closed when the inputs ended: it takes nothing more
            stream.resume_part = UNBOUNDED if shard["next_part"] is None else shard["next_part"]
            stream.skip = shard["skip"]
            stream.unchecked = stream.resume_part != UNBOUNDED
        self.total_tokens = sum(s["tokens"] for s in kept)
        self.parts: list[tuple[str, str]] = []  # (input label, sha256) of every part read
        self.journaled = len(self.shards)
        self.journaled_at = 0.0

    def resume_part(self) -> int:
        """The first part some stream still needs: its resume point, or the part before it when
        its kept shards end where that part ends (see _check_resume)."""
        return min(stream.resume_part - (stream.unchecked and not stream.skip) for stream in self.streams.values())

    def read(self, index: int, label: str, digest: str) -> None:
        """Record the checksum of part `index` as read; a part an interrupted run read too must
        be the same bytes, or the shards kept from it are stale."""
        if index < len(self.recorded) and self.recorded[index] != digest:
            raise InputError(f"{label} changed since the interrupted run wrote shards from it; "
                             "use --force to encode it afresh")
        assert index == len(self.parts)
        self.parts.append((label, digest))

    def write(self, split: str, ids: np.ndarray, doc_ends: np.ndarray, part: int) -> None:
        """Add the ids of part number `part` to a split's shards (doc_ends: where each of its
        documents ends); what the stream's kept shards hold already is passed over."""
        stream = self.streams[split]
        if stream.unchecked and part >= stream.resume_part - (not stream.skip):
            self._check_resume(stream, ids, part)
        if part < stream.resume_part:
            return
        position = stream.skip if part == stream.resume_part else 0
        doc_starts = np.concatenate(([0], doc_ends[:-1])).astype(np.int64)
        while position < len(ids):
            if stream.file is None:
                stream.file = self._guarded(open, self._temporaries(stream)[0], "wb")
                self._guarded(stream.file.write, self.full_header)
                stream.digest = hashlib.sha256(self.full_header)
                stream.starts = []
            take = min(len(ids) - position, self.shard_tokens - stream.count)
            data = ids[position : position + take].astype(self.dtype, copy=False).tobytes()
            self._guarded(stream.file.write, data)
            stream.digest.update(data)  # while the workers encode: a full shard is not read again to close it
            first, last = np.searchsorted(doc_starts, [position, position + take])
            stream.starts.append(doc_starts[first:last] - position + stream.count)
            stream.documents += int(np.searchsorted(doc_ends, position + take, "right") - np.searchsorted(doc_ends, position, "right"))
            stream.count += take
            self.total_tokens += take
            position += take
            if stream.count == self.shard_tokens:
                self._close(stream, *((part, position) if position < len(ids) else (part + 1, 0)))

    def tally(self, part: int, split: str, tokens: int, documents: int) -> None:
        """Record what part number `part` gave a split, for the manifest's "read" entries."""
        self.part_written += [None] * (part + 1 - len(self.part_written))
        self.part_written[part] = {**(self.part_written[part] or {}), split: [tokens, documents]}

    def _written(self, label: str) -> dict | None:
        """What the parts of an input gave each split, or None if a part's tally is unknown (a run
        resumed from the journal of an older bpecli)."""
        total: dict[str, dict[str, int]] = {split: {"tokens": 0, "documents": 0} for split in self.splits}
        for index, (name, _) in enumerate(self.parts):
            if name != label:
                continue
            found = self.part_written[index] if index < len(self.part_written) else None
            if found is None or set(found) != set(self.splits):
                return None
            for split, (tokens, documents) in found.items():
                total[split]["tokens"] += tokens
                total[split]["documents"] += documents
        return total

    # ids compared at the end of a resumed stream's last kept shard: enough to tell any two places apart
    RESUME_CHECK = 1 << 12

    def _check_resume(self, stream: _Stream, ids: np.ndarray, part: int) -> None:
        """The ids of part `part` agree with the journal's word on where the stream's last kept
        shard ends (skip ids into part resume_part, or the end of the part before it if skip is 0):
        a journal edited or damaged to point elsewhere would lose or repeat ids without it."""
        stream.unchecked = False
        last = stream.shards[-1]
        if part == stream.resume_part and stream.skip >= len(ids):
            raise _damaged(self.out / JOURNAL, f"{last['file']} is said to end {stream.skip:,} ids into part "
                                               f"{part:,}, which has {len(ids):,}")
        before = ids[: stream.skip] if part == stream.resume_part else ids
        n = min(len(before), last["tokens"], self.RESUME_CHECK)
        with open(self.out / last["file"], "rb") as f:
            f.seek(-n * self.dtype.itemsize, os.SEEK_END)
            tail = np.frombuffer(f.read(n * self.dtype.itemsize), dtype=self.dtype)
        if not np.array_equal(tail, before[len(before) - n :]):
            where = f"{stream.skip:,} ids into part {part:,}" if stream.skip else f"where part {part:,} ends"
            raise _damaged(self.out / JOURNAL, f"{last['file']} does not end {where}, as it says")

    def finish(self, inputs: list[tuple[str, str]], max_id: int) -> dict:
        """Close the last shard of each stream and write manifest.json (max_id: the tokenizer's
        largest id, which no id in a shard passes); the journal goes."""
        if len(self.parts) < len(self.recorded) or any(stream.unchecked for stream in self.streams.values()):
            raise _damaged(self.out / JOURNAL, f"it lists {len(self.recorded):,} parts read, or shards ending in them, "
                                               f"where the inputs hold {len(self.parts):,}")
        for stream in self.streams.values():
            if stream.file is not None:
                self._close(stream, None, 0)
        if not self.shards:
            raise InputError("the inputs hold no documents to encode")
        read = []
        for _, label in inputs:  # what was read of each input: the sha256 of its parts' sha256s
            digests = [digest for name, digest in self.parts if name == label]
            read.append({"path": label, "parts": len(digests), "sha256": hashlib.sha256("".join(digests).encode()).hexdigest()})
            written = self._written(label)
            if written is not None:  # what the input gave each split
                read[-1]["written"] = written
        shards = [s for split in self.splits for s in self.streams[split].shards]
        manifest = {
            **self.settings,
            "max_id": max_id,
            "total_tokens": sum(s["tokens"] for s in shards),
            "total_documents": sum(s["documents"] for s in shards),
            "shards": [{k: s[k] for k in ("file", "tokens", "documents", "sha256", "index", "index_sha256") if k in s}
                       for s in shards],
            "read": read,
        }
        if len(self.splits) > 1:
            manifest["splits"] = _split_totals(shards, self.splits)
        self._guarded(write_json_atomically, manifest, self.out / MANIFEST)
        self.journaled = len(self.shards)
        try:
            (self.out / JOURNAL).unlink(missing_ok=True)
        except OSError:  # the folder is finished whatever: a manifest outranks a journal beside it
            pass
        return manifest

    def discard(self) -> None:
        """Remove the temporary files of unfinished shards and bring the journal up to date (on
        errors and interrupts), so that a rerun keeps every finished shard."""
        for stream in self.streams.values():
            if stream.file is not None:
                try:
                    stream.file.close()
                except OSError:  # its buffered bytes had nowhere to go (a full disk): the file goes anyway
                    pass
                stream.file = None
            for temporary in self._temporaries(stream):
                temporary.unlink(missing_ok=True)
        if self.journaled < len(self.shards):
            try:
                self._write_journal(self.shards)
            except OSError:
                pass  # the shards past the journal are written again by a rerun

    def _close(self, stream: _Stream, next_part: int | None, skip: int) -> None:
        """Finish a stream's shard: its file and document index are written out under temporary
        names, recorded in the journal, and only then renamed, so that a shard or index under
        its own name is always one the journal knows (a rerun never finds files of unknown origin)."""
        file, (temporary, index_temporary) = stream.file, self._temporaries(stream)
        # a full shard's sha256 was taken as it was written; the last one's header is written again
        digest = stream.digest.hexdigest() if stream.count == self.shard_tokens else None
        if stream.count != self.shard_tokens:  # the last shard: its header names its real length
            header = _header(self.format, self.settings["dtype"], stream.count)
            if len(header) == len(self.full_header):
                self._guarded(file.seek, 0)  # (a seek writes out what is buffered)
                self._guarded(file.write, header)
            else:
                self._guarded(file.close)
                data = temporary.read_bytes()[len(self.full_header) :]
                file = stream.file = self._guarded(open, temporary, "wb")
                self._guarded(file.write, header + data)
        self._guarded(file.flush)
        self._guarded(os.fsync, file.fileno())
        self._guarded(file.close)
        stream.file = None
        name = shard_name(len(stream.shards), self.format, stream.split)
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate(stream.starts).astype("<i8"))
        self._guarded(write_file, buffer.getvalue(), index_temporary)
        shard = {"file": name, "tokens": stream.count, "documents": stream.documents, "sha256": digest or file_sha256(temporary),
                 "index": index_name(name), "index_sha256": hashlib.sha256(buffer.getvalue()).hexdigest(),
                 "next_part": next_part, "skip": skip}
        if not self.journaled or time.monotonic() - self.journaled_at > self.JOURNAL_SECONDS:
            self._guarded(self._write_journal, self.shards + [shard])
        self._guarded(os.replace, index_temporary, self.out / index_name(name))
        self._guarded(os.replace, temporary, self.out / name)
        self.shards.append(shard)
        stream.shards.append(shard)
        stream.count = stream.documents = 0

    def _temporaries(self, stream: _Stream) -> tuple[Path, Path]:
        """The temporary names of the shard a stream is writing and of its document index."""
        name = shard_name(len(stream.shards), self.format, stream.split)
        return self.out / f".{name}.partial", self.out / f".{index_name(name)}.partial"

    def _write_journal(self, shards: list[dict]) -> None:
        digests = [digest for _, digest in self.parts] or self.recorded
        write_json_atomically({"settings": self.settings, "shards": shards, "parts": digests,
                                "written": self.part_written[: len(digests)]}, self.out / JOURNAL)
        self.journaled, self.journaled_at = len(shards), time.monotonic()

    def _guarded(self, action, *args):
        """Run a file operation; a full disk or any other OS error becomes one clear line."""
        try:
            return action(*args)
        except OSError as e:
            self.discard()
            raise OutputError(f"{self.out}: cannot write ({e.strerror or e}); nothing unfinished was left there, "
                              "and the same command run again keeps the finished shards") from None


# ---- encoding parts in worker processes --------------------------------------------------------

@dataclass(frozen=True)
class _Encoder:
    """What each worker needs to encode a part: made once per worker (see parallel.map_in_order)."""

    tokenizer: Tokenizer
    eot: int | None
    bos: int | None
    val_fraction: float | None
    dtype: str
    splitters: Splitters  # what ends a document in text
    text_column: str
    errors: str


def _setup(tokenizer: Tokenizer, eot, bos, val_fraction, dtype, separators, text_column, errors) -> _Encoder:
    return _Encoder(tokenizer, eot, bos, val_fraction, dtype, Splitters.of(separators), text_column, errors)


def _encode_part(encoder: _Encoder, part: Part) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, str]:
    """([(ids, where each document's ids end)] for each split, bytes read, their sha256) for one part."""
    # the bulk engine reads UTF-8 bytes; normalization reads str
    documents, n_bytes, digest = read_documents(part, splitters=encoder.splitters, text_column=encoder.text_column,
                                                errors=encoder.errors, as_bytes=not encoder.tokenizer.normalize)
    if not encoder.val_fraction:
        return [_encode(encoder, documents)], n_bytes, digest
    validation = in_validation(documents, encoder.val_fraction)
    train: list = [d for d, v in zip(documents, validation) if not v]
    val: list = [d for d, v in zip(documents, validation) if v]
    return [_encode(encoder, train), _encode(encoder, val)], n_bytes, digest


def _encode(encoder: _Encoder, documents: list[str] | list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    ids, doc_ends = encoder.tokenizer.encode_documents(documents, eot=encoder.eot, dtype=encoder.dtype)
    if encoder.bos is not None and len(doc_ends):  # bos before each document
        starts = np.concatenate(([0], doc_ends[:-1]))
        ids = np.insert(ids, starts, encoder.bos).astype(encoder.dtype, copy=False)
        doc_ends = doc_ends + np.arange(1, len(doc_ends) + 1)
    return ids, doc_ends


def _parts_from(parts: Iterator[Part], first: int, writer, separators, text_column, errors, progress) -> Iterator[tuple[int, Part]]:
    """(index, part) for the parts from number `first` on. Earlier ones were written by an
    interrupted run: they are read again (not encoded) to check that they are the same bytes."""
    splitters = Splitters.of(separators)
    for index, part in enumerate(parts):
        if index >= first:
            yield index, part
            continue
        _, _, digest = read_documents(part, splitters=splitters, text_column=text_column, errors=errors)
        writer.read(index, part.label, digest)
        if progress is not None:
            progress.update(part.weight)


def _encode_in_order(numbered: Iterator[tuple[int, Part]], workers: int, scheduler: str | None, args: tuple):
    """(index, part, _encode_part(part)) in order, by `workers` processes or a Dask cluster (see
    parallel.map_in_order)."""
    taken: deque = deque()

    def parts():
        for index, part in numbered:
            taken.append((index, part))
            yield part

    for result in map_in_order(_encode_part, parts(), workers=workers, setup=_setup, args=args, scheduler=scheduler):
        index, part = taken.popleft()
        yield index, part, result


def verify(out_dir: str | Path) -> list[str]:
    """Re-hash every shard against manifest.json; the problems found, first bad shard first.
    Only files in the folder are read, and only local inputs are looked at: a manifest's word is
    no reason to reach out over a network."""
    out = Path(out_dir)
    manifest_path = out / MANIFEST
    if not os.path.lexists(manifest_path):
        raise InputError(f"{out}: no {MANIFEST} here (not a finished shard folder)")
    manifest = read_manifest(manifest_path, UNREADABLE)
    problems = []
    for shard in manifest["shards"]:
        for name, digest in ((shard["file"], shard["sha256"]), (shard.get("index"), shard.get("index_sha256"))):
            if name is None:
                continue
            if not os.path.lexists(out / name):
                problems.append(f"{name}: missing")
            elif not _is_file_here(out / name):
                problems.append(f"{name}: not a file of its own (a link or a folder, which bpecli never writes)")
            elif file_sha256(out / name) != digest:
                problems.append(f"{name}: sha256 does not match the manifest")
    for before in manifest["inputs"]:  # inputs still where they were must be as they were read
        path = before["path"]
        if before.get("mtime_ns") is None or is_uri(path) or not os.path.isfile(path):
            continue
        try:
            now = _input_identity(path, path)
        except InputError:  # a file no longer there: the shards do not need it
            continue
        if now != before:
            problems.append(f"input {path} changed since these shards were written from it; encode again with --force")
    return problems


def checked_shard(path: Path, shard: dict, manifest: dict) -> np.ndarray:
    """A shard's ids (memory-mapped), once it is found to be a file of the folder holding the
    manifest's dtype and its number of tokens: nothing is sized from ids that are not."""
    if not _is_file_here(path):
        raise InputError(f"{path}: missing, or not a file of its own; {REBUILD}")
    ids = read_shard(path)
    if ids.dtype != np.dtype(manifest["dtype"]).newbyteorder("<"):
        kind = ids.dtype.name + (" (big-endian)" if ids.dtype.byteorder == ">" else "")
        raise InputError(f"{path}: holds {kind} ids where the manifest says {manifest['dtype']}; {REBUILD}")
    if len(ids) != shard["tokens"]:
        raise InputError(f"{path}: holds {len(ids):,} ids where the manifest says {shard['tokens']:,}; {REBUILD}")
    return ids
