"""Documents -> token ids -> .npy shards and manifest.json, atomically and resumably; verify them.

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
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import Part, document_parts, read_documents
from .errors import BpecliError, InputError, OutputError
from .pretokenize import process_pool, special_splitter
from .tokenizer import Tokenizer

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
JOURNAL = ".bpecli-progress.json"
DEFAULT_EOT = "<|endoftext|>"


def shard_name(index: int) -> str:
    return f"shard_{index:05d}.npy"


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
    eot: int | None = None,
    text_column: str = "text",
    dtype: str = "auto",
    errors: str = "strict",
    force: bool = False,
    progress=None,
) -> ShardRun:
    """Encode the documents of inputs (paths, or (path, label) pairs) into .npy shards in out_dir.

    Every document is encoded on its own (special tokens in it count as text) and followed by
    eot. The result depends only on the inputs, the tokenizer and these options, never on workers.
    """
    if shard_tokens < 1:
        raise BpecliError("--shard-tokens must be at least 1")
    started = time.perf_counter()
    out = Path(out_dir)
    pairs = [(item, item) if isinstance(item, str) else item for item in inputs]
    settings = _settings(tokenizer, pairs, shard_tokens, eot, text_column, resolve_dtype(tokenizer, dtype))
    found = _prepare(out, settings, force)
    if isinstance(found, dict):
        return ShardRun(out, found, "complete")
    kept = found

    separators = document_separators(tokenizer)
    parts = document_parts(pairs, separators=separators, text_column=text_column)
    init_args = (tokenizer, eot, settings["dtype"], separators, text_column, errors)
    tokenizer.prepare_bulk()
    writer = _ShardWriter(out, settings, kept)
    resume_part, skip = (kept[-1]["next_part"], kept[-1]["skip"]) if kept else (0, 0)
    n_bytes = 0
    try:
        todo = _parts_from(parts, resume_part, progress)
        for index, (ids, doc_ends, part_bytes) in _encode_in_order(todo, workers, init_args):
            writer.write(ids, doc_ends, index, skip if index == resume_part else 0)
            n_bytes += part_bytes
            if progress is not None:
                progress.update(part_bytes)
                progress.set_postfix_str(f"{writer.total_tokens / (time.perf_counter() - started):,.0f} tokens/s", refresh=False)
        manifest = writer.finish()
    finally:
        writer.discard()
    return ShardRun(out, manifest, "resumed" if kept else "written", len(kept), time.perf_counter() - started, n_bytes)


def _settings(tokenizer, inputs, shard_tokens, eot, text_column, dtype) -> dict:
    """Everything a shard folder's content depends on; a rerun resumes only if these are equal."""
    sizes = []
    for path, label in inputs:
        try:
            sizes.append({"path": label, "size": os.path.getsize(path)})
        except OSError:
            raise InputError(f"{label}: no such file") from None
    return {
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
        "inputs": sizes,
    }


def _same_run(document: dict, settings: dict) -> bool:
    return all(document.get(key) == value for key, value in json.loads(json.dumps(settings)).items())


def _prepare(out: Path, settings: dict, force: bool) -> dict | list[dict]:
    """The finished manifest if out holds this very run complete; else the shards kept from an
    interrupted run of it (checksums verified), with everything else of ours cleared away."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a folder for shards")
    out.mkdir(parents=True, exist_ok=True)
    manifest_path, journal_path = out / MANIFEST, out / JOURNAL
    if force:
        _clear(out, keep=0)
        return []
    if manifest_path.exists():
        manifest = _read_json(manifest_path)
        if _same_run(manifest, settings):
            return manifest
        raise OutputError(f"{out} holds shards of another run (other inputs, tokenizer or options); use --force to rebuild")
    kept: list[dict] = []
    if journal_path.exists():
        journal = _read_json(journal_path)
        if not _same_run(journal.get("settings", {}), settings):
            raise OutputError(f"{out} holds an unfinished run with other inputs, tokenizer or options; use --force to restart")
        for shard in journal.get("shards", []):
            path = out / shard["file"]
            if not path.is_file() or file_sha256(path) != shard["sha256"]:
                break
            kept.append(shard)
    elif any(out.glob("shard_*.npy")):
        raise OutputError(f"{out} holds shards that this run did not write; use --force to replace them")
    _clear(out, keep=len(kept))
    return kept


def _clear(out: Path, keep: int) -> None:
    """Remove our files from out, except the first `keep` shards (manifest first: never a folder
    that looks finished but is not)."""
    (out / MANIFEST).unlink(missing_ok=True)
    if keep == 0:
        (out / JOURNAL).unlink(missing_ok=True)
    for path in out.glob(".shard_*.npy.partial"):
        path.unlink()
    for path in out.glob("shard_*.npy"):
        if path.name >= shard_name(keep):
            path.unlink()


def _read_json(path: Path) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise OutputError(f"{path}: unreadable ({e}); use --force to rebuild") from None
    if not isinstance(document, dict):
        raise OutputError(f"{path}: not a bpecli file; use --force to rebuild")
    return document


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _write_json_atomically(document: dict, path: Path) -> None:
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _npy_header(dtype: str, length: int) -> bytes:
    buffer = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(np.dtype(dtype).newbyteorder("<"))
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": (length,)})
    return buffer.getvalue()


class _ShardWriter:
    """Appends ids to the current shard's temporary file; a full shard is renamed to its final
    name and recorded (with where it ends in the inputs) in the journal."""

    def __init__(self, out: Path, settings: dict, kept: list[dict]):
        self.out = out
        self.settings = settings
        self.dtype = np.dtype(settings["dtype"]).newbyteorder("<")
        self.shard_tokens = settings["shard_tokens"]
        self.full_header = _npy_header(settings["dtype"], self.shard_tokens)  # a full shard's
        self.shards = list(kept)
        self.total_tokens = sum(s["tokens"] for s in kept)
        self.file = None
        self.count = 0
        self.documents = 0

    @property
    def temporary(self) -> Path:
        return self.out / f".{shard_name(len(self.shards))}.partial"

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

    def finish(self) -> dict:
        """Close the last shard and write manifest.json; the journal goes."""
        if self.file is not None:
            self._close(None, 0)
        if not self.shards:
            raise InputError("the inputs hold no documents to encode")
        manifest = {
            **self.settings,
            "total_tokens": sum(s["tokens"] for s in self.shards),
            "total_documents": sum(s["documents"] for s in self.shards),
            "shards": [{k: s[k] for k in ("file", "tokens", "documents", "sha256")} for s in self.shards],
        }
        self._guarded(_write_json_atomically, manifest, self.out / MANIFEST)
        (self.out / JOURNAL).unlink(missing_ok=True)
        return manifest

    def discard(self) -> None:
        """Remove the temporary file of an unfinished shard (on errors and interrupts)."""
        if self.file is not None:
            self.file.close()
            self.file = None
        self.temporary.unlink(missing_ok=True)

    def _close(self, next_part: int | None, skip: int) -> None:
        file, temporary = self.file, self.temporary
        if self.count != self.shard_tokens:  # the last shard: its header names its real length
            header = _npy_header(self.settings["dtype"], self.count)
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
        name = shard_name(len(self.shards))
        os.replace(temporary, self.out / name)
        self.shards.append(
            {"file": name, "tokens": self.count, "documents": self.documents, "sha256": file_sha256(self.out / name),
             "next_part": next_part, "skip": skip}
        )
        self.count = self.documents = 0
        self._guarded(_write_json_atomically, {"settings": self.settings, "shards": self.shards}, self.out / JOURNAL)

    def _guarded(self, action, *args):
        """Run a file operation; a full disk or any other OS error becomes one clear line."""
        try:
            return action(*args)
        except OSError as e:
            self.discard()
            raise OutputError(f"{self.out}: cannot write ({e.strerror or e}); nothing partial was kept") from None


# ---- encoding parts in worker processes --------------------------------------------------------

# Per-process state built once by the pool initializer.
_worker: dict = {}


def _init_worker(tokenizer: Tokenizer, eot, dtype, separators, text_column, errors) -> None:
    _worker.update(
        tokenizer=tokenizer, eot=eot, dtype=dtype, splitter=special_splitter(separators),
        text_column=text_column, errors=errors,
    )


def _encode_part(part: Part) -> tuple[np.ndarray, np.ndarray, int]:
    """(ids, where each document's ids end, bytes read) for one part."""
    w = _worker
    documents, n_bytes = read_documents(part, splitter=w["splitter"], text_column=w["text_column"], errors=w["errors"])
    ids, doc_ends = w["tokenizer"].encode_documents(documents, eot=w["eot"], dtype=w["dtype"])
    return ids, doc_ends, n_bytes


def _parts_from(parts: Iterator[Part], first: int, progress) -> Iterator[tuple[int, Part]]:
    """(index, part) for the parts from number `first` on; earlier ones were written by an
    interrupted run (they still count on the progress bar)."""
    for index, part in enumerate(parts):
        if index >= first:
            yield index, part
        elif progress is not None:
            progress.update(part.end - part.start if part.data is None else len(part.data))


def _encode_in_order(numbered: Iterator[tuple[int, Part]], workers: int, init_args: tuple):
    """(index, _encode_part(part)) in order, by `workers` processes; at most 2 * workers parts
    are in flight, so memory stays bounded however long the inputs are."""
    if workers <= 1:
        _init_worker(*init_args)
        for index, part in numbered:
            yield index, _encode_part(part)
        return
    with process_pool(workers, _init_worker, init_args) as pool:
        pending: deque = deque()
        for index, part in numbered:
            pending.append((index, pool.apply_async(_encode_part, (part,))))
            if len(pending) > 2 * workers:
                index, result = pending.popleft()
                yield index, result.get()
        while pending:
            index, result = pending.popleft()
            yield index, result.get()


def verify(out_dir: str | Path) -> list[str]:
    """Re-hash every shard against manifest.json; the problems found, first bad shard first."""
    out = Path(out_dir)
    manifest_path = out / MANIFEST
    if not manifest_path.is_file():
        raise InputError(f"{out}: no {MANIFEST} here (not a finished shard folder)")
    manifest = _read_json(manifest_path)
    problems = []
    for shard in manifest.get("shards", []):
        path = out / shard["file"]
        if not path.is_file():
            problems.append(f"{shard['file']}: missing")
        elif file_sha256(path) != shard["sha256"]:
            problems.append(f"{shard['file']}: sha256 does not match the manifest")
    return problems


def describe_shards(out_dir: str | Path, top: int = 10) -> dict:
    """What `bpecli inspect DIR` shows: the manifest's totals and shards, and the most frequent
    token ids (counted over every shard)."""
    out = Path(out_dir)
    if not (out / MANIFEST).is_file():
        hint = " (an unfinished run: rerun the encode command to finish it)" if (out / JOURNAL).exists() else ""
        raise InputError(f"{out}: no {MANIFEST} here{hint}")
    manifest = _read_json(out / MANIFEST)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{out / MANIFEST}: format_version {manifest.get('format_version')} is not {FORMAT_VERSION}; "
                         "use the bpecli that wrote it, or encode again")
    counts = np.zeros(0, dtype=np.int64)
    for shard in manifest["shards"]:
        try:
            ids = np.load(out / shard["file"], mmap_mode="r")
        except (OSError, ValueError) as e:
            raise InputError(f"{out / shard['file']}: not a readable shard ({e})") from None
        found = np.bincount(ids)
        if len(found) > len(counts):
            found[: len(counts)] += counts
            counts = found
        else:
            counts[: len(found)] += found
    frequent = np.argsort(-counts, kind="stable")[:top]
    return {
        **{k: manifest[k] for k in ("total_tokens", "total_documents", "dtype", "shard_tokens", "eot", "inputs")},
        "tokenizer": manifest["tokenizer"],
        "shards": manifest["shards"],
        "most_frequent": [{"id": int(i), "count": int(counts[i])} for i in frequent if counts[i]],
    }
