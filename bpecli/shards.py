"""Documents -> token ids -> shards (.npy, or llm.c's .bin) and manifest.json, atomically and
resumably; verify them.

A shard folder holds shard_00000.npy, shard_00001.npy, ... (every one exactly shard_tokens long
but the last) and, once everything is written, manifest.json. While a run is under way a journal
(.bpecli-progress.json) lists the finished shards with their checksums and where in the inputs
each one ends, so that a rerun of the same command keeps them and carries on from there.
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import Part, check_apart, document_parts, input_bytes, input_stat, is_uri, read_documents
from .errors import BpecliError, InputError, OutputError
from .executor import map_in_order, progress_bar
from .files import locked
from .pretokenize import special_splitter
from .tokenizer import Tokenizer

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
JOURNAL = ".bpecli-progress.json"
DEFAULT_EOT = "<|endoftext|>"


# Shard files: standard .npy, or llm.c's .bin (a header of 256 int32: magic, version, token count;
# then the tokens), whose magic and version say the token dtype.
SHARD_SUFFIX = {"npy": ".npy", "llmc": ".bin"}
LLMC_HEADER_INTS = 256
LLMC_MAGIC = {"uint16": (20240520, 1), "uint32": (20240801, 7)}  # dtype -> (magic, version)


def shard_name(index: int, shard_format: str = "npy") -> str:
    return f"shard_{index:05d}{SHARD_SUFFIX[shard_format]}"


def _header(shard_format: str, dtype: str, length: int) -> bytes:
    """The bytes before a shard's tokens."""
    if shard_format == "llmc":
        header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
        header[:3] = (*LLMC_MAGIC[dtype], length)
        return header.tobytes()
    return _npy_header(dtype, length)


def read_shard(path: str | Path) -> np.ndarray:
    """The tokens of a shard file (.npy, or llm.c's .bin), memory-mapped."""
    path = Path(path)
    try:
        if path.suffix == ".bin":
            header = np.fromfile(path, dtype="<i4", count=LLMC_HEADER_INTS)
            dtype = next((d for d, (magic, version) in LLMC_MAGIC.items()
                          if len(header) == LLMC_HEADER_INTS and (header[0], header[1]) == (magic, version)), None)
            if dtype is None:
                raise ValueError("no llm.c header (magic 20240520 version 1, or 20240801 version 7)")
            return np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r", offset=4 * LLMC_HEADER_INTS,
                             shape=(int(header[2]),))
        array = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable shard ({e})") from None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InputError(f"{path}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
    return array


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
    if eot == "none":
        return None
    if eot in tokenizer.special_tokens:
        return tokenizer.special_tokens[eot]
    if eot.isdigit() and int(eot) in tokenizer.decoder:
        return int(eot)
    known = ", ".join(tokenizer.special_tokens) or "none"
    raise BpecliError(f"--eot {eot!r} is neither a special token of this tokenizer ({known}) nor an id in it")


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
    inputs: list[str | tuple[str, str]],
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
    progress=None,
) -> ShardRun:
    """Encode the documents of inputs (paths, or (path, label) pairs) into shards in out_dir:
    .npy files, or llm.c's .bin with shard_format="llmc".

    Every document is encoded on its own (special tokens in it count as text) and followed by
    eot. The result depends only on the inputs, the tokenizer and these options, never on workers
    nor on where they run (a Dask cluster's, given its scheduler: see executor.map_in_order).
    progress, if given, makes the bar: progress("encoding", total bytes, "B") (see executor.progress_bar).
    """
    if shard_tokens < 1:
        raise BpecliError("--shard-tokens must be at least 1")
    if shard_format not in SHARD_SUFFIX:
        raise BpecliError(f"--shard-format {shard_format!r}: expected npy or llmc")
    if shard_format == "llmc" and shard_tokens > np.iinfo(np.int32).max:
        raise BpecliError("--shard-tokens: llm.c's header counts tokens in an int32, so at most 2,147,483,647")
    started = time.perf_counter()
    out = Path(out_dir)
    pairs = [(item, item) if isinstance(item, str) else item for item in inputs]
    check_apart(out, [label for _, label in pairs])
    settings = _settings(tokenizer, pairs, shard_tokens, eot, text_column, resolve_dtype(tokenizer, dtype), shard_format)
    _make_folder(out)
    with locked(out):
        found = _prepare(out, settings, force)
        if isinstance(found, dict):
            return ShardRun(out, found, "complete")
        kept = found
        separators = document_separators(tokenizer)
        parts = document_parts(pairs, separators=separators, text_column=text_column)
        setup_args = (tokenizer, eot, settings["dtype"], separators, text_column, errors)
        tokenizer.prepare_bulk()
        writer = _ShardWriter(out, settings, kept)
        resume_part, skip = (kept[-1]["next_part"], kept[-1]["skip"]) if kept else (0, 0)
        n_bytes = 0
        with progress_bar(progress, "encoding", input_bytes(pairs), "B") as bar:
            try:
                todo = _parts_from(parts, resume_part, writer, separators, text_column, errors, bar)
                for index, part, (ids, doc_ends, part_bytes, digest) in _encode_in_order(todo, workers, scheduler, setup_args):
                    writer.read(index, part.label, digest)
                    writer.write(ids, doc_ends, index, skip if index == resume_part else 0)
                    n_bytes += part_bytes
                    if bar is not None:
                        bar.update(part.weight)
                        bar.set_postfix_str(f"{writer.total_tokens / (time.perf_counter() - started):,.0f} tokens/s")
                _check_unchanged(pairs, settings)
                manifest = writer.finish(pairs)
            finally:
                writer.discard()
    return ShardRun(out, manifest, "resumed" if kept else "written", len(kept), time.perf_counter() - started, n_bytes)


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
    if force:
        _clear(out, keep=0)
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
    elif any(_SHARD_NAME.fullmatch(p.name) for p in out.glob("shard_*")):
        raise OutputError(f"{out} holds shards that bpecli did not record writing; use --force to replace them")
    _clear(out, keep=len(kept))
    return [dict(shard, parts=recorded) for shard in kept]


def _clear(out: Path, keep: int) -> None:
    """Remove our files from out, except the first `keep` shards (manifest first: never a folder
    that looks finished but is not)."""
    (out / MANIFEST).unlink(missing_ok=True)
    if keep == 0:
        (out / JOURNAL).unlink(missing_ok=True)
    for pattern in (".shard_*.partial", MANIFEST + ".partial", JOURNAL + ".partial"):
        for path in out.glob(pattern):
            path.unlink()
    for path in out.glob("shard_*"):
        if _SHARD_NAME.fullmatch(path.name) and int(path.name[6:].split(".")[0]) >= keep:
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


_SHARD_NAME = re.compile(r"shard_[0-9]{5,}\.(npy|bin)")


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
    temporary = path.with_name(path.name + ".partial")
    try:
        temporary.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _npy_header(dtype: str, length: int) -> bytes:
    buffer = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(np.dtype(dtype).newbyteorder("<"))
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": (length,)})
    return buffer.getvalue()


class _ShardWriter:
    """Appends ids to the current shard's temporary file; a full shard is recorded in the journal
    (with where it ends in the inputs) and renamed to its final name. The journal is written for
    the first shard and then at most once a second (and when the run stops): shards past it are
    written again by a rerun, and a run of millions of tiny shards stays linear."""

    JOURNAL_SECONDS = 1.0

    def __init__(self, out: Path, settings: dict, kept: list[dict]):
        self.out = out
        self.settings = settings
        self.dtype = np.dtype(settings["dtype"]).newbyteorder("<")
        self.shard_tokens = settings["shard_tokens"]
        self.format = settings.get("shard_format", "npy")
        self.full_header = _header(self.format, settings["dtype"], self.shard_tokens)  # a full shard's
        self.recorded = kept[-1]["parts"] if kept else []  # the part checksums of the run resumed
        self.shards = [{k: v for k, v in shard.items() if k != "parts"} for shard in kept]
        self.total_tokens = sum(s["tokens"] for s in kept)
        self.parts: list[tuple[str, str]] = []  # (input label, sha256) of every part read
        self.file = None
        self.count = 0
        self.documents = 0
        self.journaled = len(self.shards)
        self.journaled_at = 0.0

    @property
    def temporary(self) -> Path:
        return self.out / f".{shard_name(len(self.shards), self.format)}.partial"

    def read(self, index: int, label: str, digest: str) -> None:
        """Record the checksum of part `index` as read; a part an interrupted run read too must
        be the same bytes, or the shards kept from it are stale."""
        if index < len(self.recorded) and self.recorded[index] != digest:
            raise InputError(f"{label} changed since the interrupted run wrote shards from it; "
                             "use --force to encode it afresh")
        assert index == len(self.parts)
        self.parts.append((label, digest))

    def write(self, ids: np.ndarray, doc_ends: np.ndarray, part: int, offset: int) -> None:
        """Add the ids of part number `part` from position offset on (doc_ends: where each of
        its documents ends)."""
        position = offset
        while position < len(ids):
            if self.file is None:
                self.file = self._guarded(open, self.temporary, "wb")
                self._guarded(self.file.write, self.full_header)
            take = min(len(ids) - position, self.shard_tokens - self.count)
            self._guarded(self.file.write, ids[position : position + take].astype(self.dtype, copy=False).tobytes())
            self.documents += int(np.searchsorted(doc_ends, position + take, "right") - np.searchsorted(doc_ends, position, "right"))
            self.count += take
            self.total_tokens += take
            position += take
            if self.count == self.shard_tokens:
                self._close(*((part, position) if position < len(ids) else (part + 1, 0)))

    def finish(self, inputs: list[tuple[str, str]]) -> dict:
        """Close the last shard and write manifest.json; the journal goes."""
        if self.file is not None:
            self._close(None, 0)
        if not self.shards:
            raise InputError("the inputs hold no documents to encode")
        read = []
        for _, label in inputs:  # what was read of each input: the sha256 of its parts' sha256s
            digests = [digest for name, digest in self.parts if name == label]
            read.append({"path": label, "parts": len(digests), "sha256": hashlib.sha256("".join(digests).encode()).hexdigest()})
        manifest = {
            **self.settings,
            "total_tokens": sum(s["tokens"] for s in self.shards),
            "total_documents": sum(s["documents"] for s in self.shards),
            "shards": [{k: s[k] for k in ("file", "tokens", "documents", "sha256")} for s in self.shards],
            "read": read,
        }
        self._guarded(_write_json_atomically, manifest, self.out / MANIFEST)
        (self.out / JOURNAL).unlink(missing_ok=True)
        self.journaled = len(self.shards)
        return manifest

    def discard(self) -> None:
        """Remove the temporary file of an unfinished shard and bring the journal up to date (on
        errors and interrupts), so that a rerun keeps every finished shard."""
        if self.file is not None:
            self.file.close()
            self.file = None
        self.temporary.unlink(missing_ok=True)
        if self.journaled < len(self.shards):
            try:
                self._write_journal()
            except OSError:
                pass  # the shards past the journal are written again by a rerun

    def _close(self, next_part: int | None, skip: int) -> None:
        file, temporary = self.file, self.temporary
        if self.count != self.shard_tokens:  # the last shard: its header names its real length
            header = _header(self.format, self.settings["dtype"], self.count)
            if len(header) == len(self.full_header):
                file.seek(0)
                self._guarded(file.write, header)
            else:
                file.close()
                data = temporary.read_bytes()[len(self.full_header) :]
                file = self._guarded(open, temporary, "wb")
                self._guarded(file.write, header + data)
        self._guarded(file.flush)
        self._guarded(os.fsync, file.fileno())
        file.close()
        self.file = None
        name = shard_name(len(self.shards), self.format)
        self.shards.append(
            {"file": name, "tokens": self.count, "documents": self.documents, "sha256": file_sha256(temporary),
             "next_part": next_part, "skip": skip}
        )
        if not self.journaled or time.monotonic() - self.journaled_at > self.JOURNAL_SECONDS:
            self._guarded(self._write_journal)  # before the rename: a shard under its name is always known
        self._guarded(os.replace, temporary, self.out / name)
        self.count = self.documents = 0

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
    dtype: str
    splitter: object  # the special-token splitter for text inputs
    text_column: str
    errors: str


def _setup(tokenizer: Tokenizer, eot, dtype, separators, text_column, errors) -> _Encoder:
    return _Encoder(tokenizer, eot, dtype, special_splitter(separators), text_column, errors)


def _encode_part(encoder: _Encoder, part: Part) -> tuple[np.ndarray, np.ndarray, int, str]:
    """(ids, where each document's ids end, bytes read, their sha256) for one part."""
    documents, n_bytes, digest = read_documents(part, splitter=encoder.splitter, text_column=encoder.text_column,
                                                errors=encoder.errors)
    ids, doc_ends = encoder.tokenizer.encode_documents(documents, eot=encoder.eot, dtype=encoder.dtype)
    return ids, doc_ends, n_bytes, digest


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
