"""Writing the files of a run: the ids of each split appended to its current shard under a
temporary name, each full shard (and its document index) recorded in the journal and only then
renamed to its own name, and manifest.json once everything is written."""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import folders
from ..errors import InputError, OutputError, arg
from ..folders import file_sha256, write_file
from .formats import shard_header
from .journal import Journal, check_resume
from .layout import JOURNAL, MANIFEST, UNBOUNDED, damaged, index_name, shard_name, split_of, split_totals


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


# A stream claims the names of at least this many shards past its last, and of as many as it has
# written: few journal writes for the claims, however many tiny shards a run writes.
CLAIM_AHEAD = 16


class ShardWriter:
    """Appends ids to the current shard's temporary file, one stream of shards per split; a full
    shard is recorded in the journal (with where it ends in the inputs, when the journal is due:
    see journal.Journal) and renamed to its final name, its document index beside it."""

    def __init__(self, out: Path, settings: dict, kept: list[dict], splits: list[str]):
        self.out = out
        self.settings = settings
        self.dtype = np.dtype(settings["dtype"]).newbyteorder("<")
        self.shard_tokens = settings["shard_tokens"]
        self.format = settings.get("shard_format", "npy")
        self.full_header = shard_header(self.format, settings["dtype"], self.shard_tokens)  # a full shard's
        self.recorded = kept[-1]["parts"] if kept else []  # the part checksums of the run resumed
        # what each part gave each split ({split: [tokens, documents]}, by part number): from the run
        # resumed, then as parts are encoded
        self.part_written: list = list(kept[-1]["written"]) if kept else []
        self.shards = [{k: v for k, v in shard.items() if k not in ("parts", "written")} for shard in kept]
        self.splits = splits
        self.streams = {split: _Stream(split, []) for split in splits}
        for shard in self.shards:
            stream = self.streams[split_of(shard["file"])]
            stream.shards.append(shard)
            # a stream's last shard (next_part None) was closed when the inputs ended: it takes nothing more
            stream.resume_part = UNBOUNDED if shard["next_part"] is None else shard["next_part"]
            stream.skip = shard["skip"]
            stream.unchecked = stream.resume_part != UNBOUNDED
        self.total_tokens = sum(s["tokens"] for s in kept)
        self.parts: list[tuple[str, str]] = []  # (input label, sha256) of every part read
        self.journal = Journal(out, settings, listed=len(self.shards))
        # the shards each stream may write before the journal is written again (see journal.Ours)
        self.claimed = {split: len(stream.shards) for split, stream in self.streams.items()}

    def resume_part(self) -> int:
        """The first part some stream still needs: its resume point, or the part before it when
        its kept shards end where that part ends (see journal.check_resume)."""
        return min(stream.resume_part - (stream.unchecked and not stream.skip) for stream in self.streams.values())

    def read(self, index: int, label: str, digest: str) -> None:
        """Record the checksum of part `index` as read; a part an interrupted run read too must
        be the same bytes, or the shards kept from it are stale."""
        if index < len(self.recorded) and self.recorded[index] != digest:
            raise InputError(f"{label} changed since the interrupted run wrote shards from it (or its journal is damaged); "
                             f"use {arg('force', True)} to encode it afresh")
        assert index == len(self.parts)
        self.parts.append((label, digest))

    def write(self, split: str, ids: np.ndarray, doc_ends: np.ndarray, part: int) -> None:
        """Add the ids of part number `part` to a split's shards (doc_ends: where each of its
        documents ends); what the stream's kept shards hold already is passed over."""
        stream = self.streams[split]
        if stream.unchecked and part >= stream.resume_part - (not stream.skip):
            stream.unchecked = False
            check_resume(self.out, stream.shards[-1], stream.resume_part, stream.skip, ids, part, self.dtype)
        if part < stream.resume_part:
            return
        position = stream.skip if part == stream.resume_part else 0
        doc_starts = np.concatenate(([0], doc_ends[:-1])).astype(np.int64)
        while position < len(ids):
            if stream.file is None:
                stream.file = self._guarded(folders.open_new, self._temporaries(stream)[0])
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
        resumed from a journal without tallies)."""
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

    def finish(self, inputs: list[tuple[str, str]], max_id: int, decoder_sha256: str) -> dict:
        """Close the last shard of each stream and write manifest.json (max_id: the tokenizer's
        largest id, which no id in a shard passes; decoder_sha256: see Vocab.decoder_sha256); the
        journal goes."""
        if len(self.parts) < len(self.recorded) or any(stream.unchecked for stream in self.streams.values()):
            raise damaged(self.out / JOURNAL, f"it lists {len(self.recorded):,} parts read, or shards ending in them, "
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
            "decoder_sha256": decoder_sha256,
            "total_tokens": sum(s["tokens"] for s in shards),
            "total_documents": sum(s["documents"] for s in shards),
            "shards": [{k: s[k] for k in ("file", "tokens", "documents", "sha256", "index", "index_sha256") if k in s}
                       for s in shards],
            "read": read,
        }
        if len(self.splits) > 1:
            manifest["splits"] = split_totals(shards, self.splits)
        self._guarded(folders.write_json_atomically, manifest, self.out / MANIFEST)
        self.journal.remove(listed=len(self.shards))
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
        if self.journal.listed < len(self.shards):
            try:
                self._write_journal(self.shards)
            except OSError:
                pass  # the shards past the journal are written again by a rerun

    def _close(self, stream: _Stream, next_part: int | None, skip: int) -> None:
        """Finish a stream's shard: its file and document index are written out under temporary
        names and then renamed. The journal, written at most once every JOURNAL_SECONDS, may not
        list it yet: a rerun keeps only the shards the journal lists and checks, and removes the rest."""
        file, (temporary, index_temporary) = stream.file, self._temporaries(stream)
        # a full shard's sha256 was taken as it was written; the last one's header is written again
        digest = stream.digest.hexdigest() if stream.count == self.shard_tokens else None
        if stream.count != self.shard_tokens:  # the last shard: its header names its real length
            header = shard_header(self.format, self.settings["dtype"], stream.count)
            if len(header) == len(self.full_header):
                self._guarded(file.seek, 0)  # (a seek writes out what is buffered)
                self._guarded(file.write, header)
            else:
                self._guarded(file.close)
                data = temporary.read_bytes()[len(self.full_header) :]
                file = stream.file = self._guarded(folders.open_new, temporary)
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
        number = len(stream.shards)
        unclaimed = number >= self.claimed[stream.split]  # claimed before it has its name: a rerun knows it is ours
        if unclaimed:
            self.claimed[stream.split] = max(2 * number, number + CLAIM_AHEAD)
        if unclaimed or self.journal.due():
            self._guarded(self._write_journal, self.shards + [shard])
        if os.path.lexists(self.out / name) or os.path.lexists(self.out / index_name(name)):
            self.discard()
            raise OutputError(f"{self.out / name} appeared while bpecli was writing {self.out}; it is left as it is, "
                              "and the same command run again, once it is moved away, keeps the finished shards")
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
        self.journal.write(shards, digests, self.part_written[: len(digests)], self.claimed)

    def _guarded(self, action, *args):
        """Run a file operation; a full disk or any other OS error becomes one clear line."""
        try:
            return action(*args)
        except OSError as e:
            self.discard()
            raise OutputError(f"{self.out}: cannot write ({e.strerror or e}); nothing unfinished was left there, "
                              "and the same command run again keeps the finished shards") from None
