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
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .corpus import (Part, check_apart, document_parts, input_bytes, input_pairs, input_stat, is_uri, parse_id,
                     read_document_bytes, read_documents, shown)
from .errors import BpecliError, InputError, OutputError
from .executor import map_in_order, progress_bar
from .files import LOCK, locked
from .pretokenize import special_byte_splitter, special_splitter
from .tokenizer import Tokenizer

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
JOURNAL = ".bpecli-progress.json"
DEFAULT_EOT = "<|endoftext|>"


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
            header = np.fromfile(path, dtype="<i4", count=LLMC_HEADER_INTS)
            dtype = next((d for d, (magic, version) in LLMC_MAGIC.items()
                          if len(header) == LLMC_HEADER_INTS and (header[0], header[1]) == (magic, version)), None)
            if dtype is None:
                raw_dtype = _nanogpt_dtype(path)
                if raw_dtype is None:
                    raise ValueError("no llm.c header (magic 20240520 version 1, or 20240801 version 7), and no "
                                     "manifest.json beside it that lists it as a nanoGPT .bin")
                return np.memmap(path, dtype=np.dtype(raw_dtype).newbyteorder("<"), mode="r")
            return np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r", offset=4 * LLMC_HEADER_INTS,
                             shape=(int(header[2]),))
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable shard ({e})") from None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InputError(f"{path}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
    return array


def _nanogpt_dtype(path: Path) -> str | None:
    """The dtype of a raw nanoGPT .bin, from the manifest of its folder (None if it lists no such file)."""
    manifest_path = path.parent / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
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


def document_separators(tokenizer: Tokenizer) -> list[str]:
    """What ends a document in a text input: any special token of the tokenizer, and
    <|endoftext|> even when the tokenizer does not register it."""
    return sorted(set(tokenizer.special_tokens) | {DEFAULT_EOT})


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
    nor on where they run (a Dask cluster's, given its scheduler: see executor.map_in_order).
    progress, if given, makes the bar: progress("encoding", total bytes, "B") (see executor.progress_bar).
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
    with _folder_for(out), locked(out):
        found = _prepare(out, settings, force)
        if isinstance(found, dict):
            return ShardRun(out, found, "complete")
        kept = found
        separators = document_separators(tokenizer)
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
                    n_bytes += part_bytes
                    if bar is not None:
                        bar.update(part.weight)
                        bar.set_postfix_str(f"{writer.total_tokens / (time.perf_counter() - started):,.0f} tokens/s")
                _check_unchanged(pairs, settings)
                manifest = writer.finish(pairs)
            finally:
                writer.discard()
    return ShardRun(out, manifest, "resumed" if kept else "written", len(kept), time.perf_counter() - started, n_bytes)


@contextmanager
def _folder_for(out: Path):
    """out, made if it is missing; if this run made it and stops on bad input, it goes again
    unless something but the lock is in it: such a run leaves no empty folder behind."""
    made = not os.path.lexists(out)
    _make_folder(out)
    try:
        yield
    except InputError:
        if made:
            try:
                if set(os.listdir(out)) <= {LOCK}:
                    (out / LOCK).unlink(missing_ok=True)
                    out.rmdir()
            except OSError:  # something came into it meanwhile: it stays
                pass
        raise


def _make_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a folder for shards; choose another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot make {out} ({e.strerror or e}); choose an --out you can write to") from None


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
        "format_version": FORMAT_VERSION,
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
                    what = f"{old.get('size'):,} -> {new['size']:,} bytes" if old.get("size") != new["size"] else "modified since"
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
        differs = _differences(journal.get("settings") or {}, settings)
        if differs:
            raise OutputError(f"{out} holds an unfinished run of other settings ({'; '.join(differs)}); use --force to restart")
        recorded = journal.get("parts")
        if not isinstance(recorded, list):
            raise OutputError(f"{journal_path}: damaged; use --force to restart")
        for shard in _checked_shards(journal_path, journal):
            path = out / shard["file"]
            if not path.is_file() or file_sha256(path) != shard["sha256"]:
                break
            kept.append(shard)
    _clear(out, keep={name for shard in kept for name in (shard["file"], shard.get("index"))})
    return [dict(shard, parts=recorded) for shard in kept]


def _written_by_bpecli(path: Path) -> bool:
    """Whether a manifest or journal is bpecli's, however damaged its other fields: a JSON object
    whose settings carry a format_version (bpecli writes it whole, by a rename, or not at all)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
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


def _read_json(path: Path) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise OutputError(f"{path}: unreadable ({e}); use --force to rebuild") from None
    if not isinstance(document, dict):
        raise OutputError(f"{path}: not a bpecli file; use --force to rebuild")
    return document


def _checked_shards(path: Path, document: dict) -> list[dict]:
    """The shards a manifest or journal lists, each checked to have the fields bpecli wrote."""
    shards = document.get("shards")
    fields = {"file": str, "tokens": int, "documents": int, "sha256": str}
    if not isinstance(shards, list) or not all(
        isinstance(shard, dict) and all(isinstance(shard.get(k), t) for k, t in fields.items())
        and _SHARD_NAME.fullmatch(shard["file"]) for shard in shards
    ):
        raise OutputError(f"{path}: damaged (its list of shards is missing or malformed); "
                          "encode again with --force to rebuild the folder")
    return shards


_SHARD_NAME = re.compile(r"(shard|train|val)(_[0-9]{5,})?\.(npy|bin|idx)")
_PARTIAL = re.compile(r"(\.(shard|train|val)\S*|manifest\.json|\.bpecli-progress\.json)\.partial")


def read_manifest(path: Path) -> dict:
    """A manifest.json, checked to be one this bpecli can read."""
    manifest = _read_json(path)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise OutputError(f"{path}: format_version {manifest.get('format_version')} is not {FORMAT_VERSION}; "
                          "use the bpecli that wrote it, or encode again with --force")
    _checked_shards(path, manifest)
    for key, kind in {"total_tokens": int, "total_documents": int, "dtype": str, "shard_tokens": int,
                      "inputs": list, "tokenizer": dict}.items():
        if not isinstance(manifest.get(key), kind):
            raise OutputError(f"{path}: damaged ({key!r} is missing or malformed); encode again with --force to rebuild")
    if not all(isinstance(item, dict) and isinstance(item.get("path"), str) for item in manifest["inputs"]):
        raise OutputError(f"{path}: damaged ('inputs' is malformed); encode again with --force to rebuild")
    return manifest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _write_json_atomically(document: dict, path: Path) -> None:
    _write_atomically((json.dumps(document, indent=1) + "\n").encode("utf-8"), path, path.with_name(path.name + ".partial"))


def _write_atomically(data: bytes, path: Path, temporary: Path, sync: bool = False) -> None:
    """data under path, whole or not at all: written to temporary (flushed to disk if sync) and
    renamed; the temporary file never stays behind."""
    try:
        with open(temporary, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
        self.shards = [{k: v for k, v in shard.items() if k != "parts"} for shard in kept]
        self.splits = splits
        self.streams = {split: _Stream(split, []) for split in splits}
        for shard in self.shards:
            stream = self.streams[_split_of(shard["file"])]
            stream.shards.append(shard)
            stream.resume_part, stream.skip = shard["next_part"], shard["skip"]
        self.total_tokens = sum(s["tokens"] for s in kept)
        self.parts: list[tuple[str, str]] = []  # (input label, sha256) of every part read
        self.journaled = len(self.shards)
        self.journaled_at = 0.0

    def resume_part(self) -> int:
        """The first part some stream still needs."""
        return min(stream.resume_part for stream in self.streams.values())

    def _temporary(self, stream: _Stream) -> Path:
        return self.out / f".{shard_name(len(stream.shards), self.format, stream.split)}.partial"

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
        if part < stream.resume_part:
            return
        position = stream.skip if part == stream.resume_part else 0
        doc_starts = np.concatenate(([0], doc_ends[:-1])).astype(np.int64)
        while position < len(ids):
            if stream.file is None:
                stream.file = self._guarded(open, self._temporary(stream), "wb")
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

    def finish(self, inputs: list[tuple[str, str]]) -> dict:
        """Close the last shard of each stream and write manifest.json; the journal goes."""
        for stream in self.streams.values():
            if stream.file is not None:
                self._close(stream, None, 0)
        if not self.shards:
            raise InputError("the inputs hold no documents to encode")
        read = []
        for _, label in inputs:  # what was read of each input: the sha256 of its parts' sha256s
            digests = [digest for name, digest in self.parts if name == label]
            read.append({"path": label, "parts": len(digests), "sha256": hashlib.sha256("".join(digests).encode()).hexdigest()})
        shards = [s for split in self.splits for s in self.streams[split].shards]
        manifest = {
            **self.settings,
            "total_tokens": sum(s["tokens"] for s in shards),
            "total_documents": sum(s["documents"] for s in shards),
            "shards": [{k: s[k] for k in ("file", "tokens", "documents", "sha256", "index", "index_sha256") if k in s}
                       for s in shards],
            "read": read,
        }
        if len(self.splits) > 1:
            manifest["splits"] = {
                split: {"tokens": sum(s["tokens"] for s in self.streams[split].shards),
                        "documents": sum(s["documents"] for s in self.streams[split].shards),
                        "shards": [s["file"] for s in self.streams[split].shards]}
                for split in self.splits
            }
        self._guarded(_write_json_atomically, manifest, self.out / MANIFEST)
        (self.out / JOURNAL).unlink(missing_ok=True)
        self.journaled = len(self.shards)
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
            self._temporary(stream).unlink(missing_ok=True)
        if self.journaled < len(self.shards):
            try:
                self._write_journal()
            except OSError:
                pass  # the shards past the journal are written again by a rerun

    def _close(self, stream: _Stream, next_part: int | None, skip: int) -> None:
        file, temporary = stream.file, self._temporary(stream)
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
        index = self.out / index_name(name)
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate(stream.starts).astype("<i8"))
        self._guarded(_write_atomically, buffer.getvalue(), index, index.with_name(f".{index.name}.partial"), True)
        shard = {"file": name, "tokens": stream.count, "documents": stream.documents, "sha256": digest or file_sha256(temporary),
                 "index": index.name, "index_sha256": hashlib.sha256(buffer.getvalue()).hexdigest(),
                 "next_part": next_part, "skip": skip}
        self.shards.append(shard)
        stream.shards.append(shard)
        if not self.journaled or time.monotonic() - self.journaled_at > self.JOURNAL_SECONDS:
            self._guarded(self._write_journal)  # before the rename: a shard under its name is always known
        self._guarded(os.replace, temporary, self.out / name)
        stream.count = stream.documents = 0

    def _write_journal(self) -> None:
        digests = [digest for _, digest in self.parts] or self.recorded
        _write_json_atomically({"settings": self.settings, "shards": self.shards, "parts": digests}, self.out / JOURNAL)
        self.journaled, self.journaled_at = len(self.shards), time.monotonic()

    def _guarded(self, action, *args):
        """Run a file operation; a full disk or any other OS error becomes one clear line."""
        try:
            return action(*args)
        except OSError as e:
            self.discard()
            raise OutputError(f"{self.out}: cannot write ({e.strerror or e}); the unfinished shard was removed, "
                              "and a rerun keeps the finished ones") from None


# ---- encoding parts in worker processes --------------------------------------------------------

@dataclass(frozen=True)
class _Encoder:
    """What each worker needs to encode a part: made once per worker (see executor.map_in_order)."""

    tokenizer: Tokenizer
    eot: int | None
    bos: int | None
    val_fraction: float | None
    dtype: str
    splitter: object  # the special-token splitter for text inputs
    byte_splitter: object  # the same for UTF-8 bytes
    text_column: str
    errors: str


def _setup(tokenizer: Tokenizer, eot, bos, val_fraction, dtype, separators, text_column, errors) -> _Encoder:
    return _Encoder(tokenizer, eot, bos, val_fraction, dtype, special_splitter(separators), special_byte_splitter(separators),
                    text_column, errors)


def _encode_part(encoder: _Encoder, part: Part) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, str]:
    """([(ids, where each document's ids end)] for each split, bytes read, their sha256) for one part."""
    documents: list[str] | list[bytes]
    if part.kind == "text" and encoder.errors == "strict" and not encoder.tokenizer.normalize:  # what the bulk engine reads
        documents, n_bytes, digest = read_document_bytes(part, splitter=encoder.byte_splitter)
    else:
        documents, n_bytes, digest = read_documents(part, splitter=encoder.splitter, text_column=encoder.text_column,
                                                    errors=encoder.errors)
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
    splitter = special_splitter(separators)
    for index, part in enumerate(parts):
        if index >= first:
            yield index, part
            continue
        _, _, digest = read_documents(part, splitter=splitter, text_column=text_column, errors=errors)
        writer.read(index, part.label, digest)
        if progress is not None:
            progress.update(part.weight)


def _encode_in_order(numbered: Iterator[tuple[int, Part]], workers: int, scheduler: str | None, args: tuple):
    """(index, part, _encode_part(part)) in order, by `workers` processes or a Dask cluster (see
    executor.map_in_order)."""
    taken: deque = deque()

    def parts():
        for index, part in numbered:
            taken.append((index, part))
            yield part

    for result in map_in_order(_encode_part, parts(), workers=workers, setup=_setup, args=args, scheduler=scheduler):
        index, part = taken.popleft()
        yield index, part, result


def verify(out_dir: str | Path) -> list[str]:
    """Re-hash every shard against manifest.json; the problems found, first bad shard first."""
    out = Path(out_dir)
    manifest_path = out / MANIFEST
    if not manifest_path.is_file():
        raise InputError(f"{out}: no {MANIFEST} here (not a finished shard folder)")
    manifest = read_manifest(manifest_path)
    problems = []
    for shard in manifest["shards"]:
        path = out / shard["file"]
        if not path.is_file():
            problems.append(f"{shard['file']}: missing")
        elif file_sha256(path) != shard["sha256"]:
            problems.append(f"{shard['file']}: sha256 does not match the manifest")
        index = shard.get("index")
        if isinstance(index, str):
            if not (out / index).is_file():
                problems.append(f"{index}: missing")
            elif file_sha256(out / index) != shard.get("index_sha256"):
                problems.append(f"{index}: sha256 does not match the manifest")
    for before in manifest["inputs"]:  # inputs still where they were must be as they were read
        path = before["path"]
        if before.get("mtime_ns") is None or not (is_uri(path) or os.path.isfile(path)):
            continue
        try:
            now = _input_identity(path, path)
        except InputError:  # an object no longer there: the shards do not need it
            continue
        if now != before:
            problems.append(f"input {path} changed since these shards were written from it; encode again with --force")
    return problems


def describe_shards(out_dir: str | Path, top: int = 10) -> dict:
    """What `bpecli inspect DIR` shows: the manifest's totals and shards, and the most frequent
    token ids (counted over every shard)."""
    out = Path(out_dir)
    if not (out / MANIFEST).is_file():
        hint = " (an unfinished run: rerun the encode command to finish it)" if (out / JOURNAL).exists() else ""
        raise InputError(f"{out}: no {MANIFEST} here{hint}")
    manifest = read_manifest(out / MANIFEST)
    counts = np.zeros(0, dtype=np.int64)
    for shard in manifest["shards"]:
        found = np.bincount(read_shard(out / shard["file"]))
        if len(found) > len(counts):
            found[: len(counts)] += counts
            counts = found
        else:
            counts[: len(found)] += found
    frequent = np.argsort(-counts, kind="stable")[:top]
    return {
        **{k: manifest.get(k) for k in ("total_tokens", "total_documents", "dtype", "shard_tokens", "eot", "inputs")},
        "tokenizer": manifest["tokenizer"],
        "shards": manifest["shards"],
        "most_frequent": [{"id": int(i), "count": int(counts[i])} for i in frequent if counts[i]],
    }
