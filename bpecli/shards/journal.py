"""The journal of a run under way (.bpecli-progress.json): the shards finished, with their
checksums and where in the inputs each one ends, and the checksums of the parts read, so that a
rerun of the same command keeps those shards and carries on from there. Here a run decides, from
what its folder holds, to resume, to rebuild or to refuse; and the journal is written."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from .. import folders
from ..errors import OutputError, arg
from .formats import has_shard_shape, shard_bytes, shard_header
from .layout import (CLEARING, JOURNAL, MANIFEST, PARTIAL, REBUILD, SHA256, SHARD_NAME, UNBOUNDED, checked_shards, damaged,
                     differences, index_name, is_file_here, load_state, read_json, read_manifest, shard_name, splits_of)
from .verification import missing, verify


def prepare(out: Path, settings: dict, force: bool) -> dict | list[dict]:
    """The finished manifest if out holds this very run complete; else the shards kept from an
    interrupted run of it (checksums verified), with everything else of ours cleared away.

    Without force, a folder of another run (or one whose records are damaged) is an error. With
    force, the folder is made to match this run, keeping what already does, as Make wants: a
    finished run of the same settings whose shards all verify is kept, an interrupted one is
    resumed, and anything else is rebuilt."""
    manifest_path, journal_path = out / MANIFEST, out / JOURNAL
    records = [path for path in (manifest_path, journal_path) if path.exists()]
    if not any(map(_written_by_bpecli, records)):
        for path in records:  # a journal or manifest cut short (a full disk, an editor): said as such
            why = _unparsed(path)
            if why is None and path == journal_path:  # JSON, but none of bpecli's: bpecli's file by its name all the same
                why = "not a journal bpecli writes"
            if why is None:
                continue
            if path == journal_path:  # bpecli's by its name
                raise OutputError(f"{path}: damaged ({why}), so bpecli cannot tell what it wrote in {out} and "
                                  f"neither resumes nor rebuilds it; remove the folder, or choose another {arg('out_dir')}")
            raise OutputError(f"{path}: damaged or not bpecli's ({why}); if a bpecli run left it, remove the folder "
                              f"and encode again, else choose another {arg('out_dir')}")
        _refuse_foreign(out, [path.name for path in records])  # a manifest.json bpecli did not write
    try:
        return _same_run(out, settings, force)
    except OutputError as e:
        if not force:
            raise
        why = " (its records here are damaged, so it cannot tell its own files)" if "damaged" in str(e) else ""
    clear(out, keep=set(), why=why)  # another run, or records too damaged to trust: rebuilt from nothing
    return []


def _same_run(out: Path, settings: dict, force: bool) -> dict | list[dict]:
    """prepare's answer when out holds nothing, or this very run (finished or not); OutputError
    when it holds another run or its records are damaged."""
    manifest_path, journal_path = out / MANIFEST, out / JOURNAL
    if manifest_path.exists():
        manifest = read_manifest(manifest_path)
        differs = differences(manifest, settings)
        if differs:
            raise OutputError(f"{out} holds shards of another run ({'; '.join(differs)}); use {arg('force', True)} to rebuild")
        problems = verify(out) if force else missing(out, manifest)
        if problems:
            raise OutputError(f"{out}: {problems[0]}" + ("" if force else f"; {REBUILD}"))
        if force:
            # the folder is what this run would write: its manifest now counts as made from these
            # inputs, so that Make, seeing it newer than them, does not run the rule again
            os.utime(manifest_path)
        return manifest
    kept: list[dict] = []
    recorded: list = []
    journal: dict = {}
    if journal_path.exists():
        journal = read_json(journal_path)
        there = journal.get("settings")
        differs = differences(there if isinstance(there, dict) else {}, settings)
        if differs:
            raise OutputError(f"{out} holds an unfinished run of other settings ({'; '.join(differs)}); "
                              f"use {arg('force', True)} to restart")
        recorded = journal.get("parts")  # type: ignore[assignment]
        if not isinstance(recorded, list) or not all(isinstance(d, str) and SHA256.fullmatch(d) for d in recorded):
            raise damaged(journal_path, "its list of the parts read is missing or malformed")
        for shard in checked_shards(journal_path, journal, settings, parts=len(recorded)):
            if not _intact(out, shard, settings):
                break
            kept.append(shard)
    clear(out, keep={name for shard in kept for name in (shard["file"], shard.get("index"))})
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
    shard_format = settings.get("shard_format", "npy")
    header = shard_header(shard_format, dtype, shard["tokens"])
    try:  # what is looked at, read and hashed is one file: through one descriptor
        with folders.open_regular(path, follow_links=False) as (f, found):
            if found.st_size != shard_bytes(shard_format, dtype, shard["tokens"]) or f.read(len(header)) != header:
                return False
            if folders.sha256_of(f) != shard["sha256"]:
                return False
        index = shard.get("index")
        return index is None or folders.file_sha256(out / index) == shard["index_sha256"]
    except (OSError, folders.Unreadable):  # gone, a link, a FIFO...: not the shard written
        return False


def _written_by_bpecli(path: Path) -> bool:
    """Whether a manifest or journal is bpecli's, however damaged its other fields: a JSON object
    whose settings carry a format_version (bpecli writes it whole, by a rename, or not at all)."""
    try:
        document = load_state(path)
    except (OSError, ValueError):
        return False
    settings = document.get("settings", document) if isinstance(document, dict) else None
    return isinstance(settings, dict) and "format_version" in settings


def _unparsed(path: Path) -> str | None:
    """What is wrong with a manifest or journal that is no JSON at all (empty, cut short); None if
    it parses (whoever wrote it) or is not a file of its own."""
    try:
        load_state(path)
    except folders.Unreadable as e:
        return f"{'' if e.line is None else f'line {e.line}: '}{e}"
    except (OSError, ValueError):
        return None
    return None


def _refuse_foreign(out: Path, found: list[str], why: str = "") -> Ours:
    """What in out is bpecli's (see Ours); an error, before anything is removed, naming what out
    holds of someone else's: found, and every entry with a shard's name (nanoGPT's own train.bin,
    say) that bpecli's records here neither name nor claim, or that is no file of its own. Such
    files are never removed nor replaced, force or not. why: what is wrong with the records, if
    anything."""
    ours = Ours.of(out)
    foreign = sorted(found + [path.name for path in out.iterdir() if SHARD_NAME.fullmatch(path.name)
                              and not ours(path)])
    if foreign:
        named = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputError(f"{out} holds {named}, which bpecli has no record of writing{why}; move them away "
                          f"or choose another {arg('out_dir')}")
    return ours


class Ours:
    """Whether a file in a shard folder is bpecli's: a shard (or document index) that its
    manifest or journal lists, or one its journal claims. A run claims the names it may write
    before it writes them (Journal.write), so even the shards past the journal's list are known;
    a file at a claimed name is ours only if it is shaped as the shard the run would have
    written there (formats.has_shard_shape), so what someone put there since is left alone."""

    def __init__(self, listed: set[str], claimed: dict[str, int], settings: dict):
        self.listed, self.claimed = listed, claimed
        self.format = settings.get("shard_format", "npy")
        self.dtype: str = settings["dtype"] if settings.get("dtype") in ("uint16", "uint32") else "uint32"
        tokens = settings.get("shard_tokens")
        self.shard_tokens = tokens if type(tokens) is int and tokens > 0 else UNBOUNDED

    @classmethod
    def of(cls, out: Path) -> Ours:
        listed: set[str] = set()
        claimed: dict[str, int] = {}
        journal_settings: dict = {}
        for path in (out / MANIFEST, out / JOURNAL, out / CLEARING):
            try:
                document = load_state(path)
            except (OSError, ValueError):  # absent or damaged: it names nothing
                continue
            if not isinstance(document, dict):
                continue
            shards = document.get("shards")
            for shard in shards if isinstance(shards, list) else []:
                for key in ("file", "index"):
                    name = shard.get(key) if isinstance(shard, dict) else None
                    if isinstance(name, str) and SHARD_NAME.fullmatch(name):
                        listed.add(name)
            settings = document.get("settings")
            if path.name == JOURNAL and isinstance(settings, dict):
                journal_settings = settings
                found = document.get("claimed")
                if isinstance(found, dict):
                    claimed = {split: n for split, n in found.items() if type(n) is int}
                elif found is None and "format_version" in settings:  # a journal of a bpecli that claimed nothing:
                    # every name of its format and splits, as that bpecli took them
                    shard_format = settings.get("shard_format", "npy")
                    claimed = dict.fromkeys(splits_of(settings.get("val_fraction"), shard_format), UNBOUNDED)
        return cls(listed, claimed, journal_settings)

    def __call__(self, path: Path) -> bool:
        if not is_file_here(path):
            return False
        name = path.name
        if name in self.listed:
            return True
        found = SHARD_NAME.fullmatch(name)
        if found is None or found.group(1) not in self.claimed:
            return False
        number = int(found.group(2)[1:]) if found.group(2) else 0
        shard = shard_name(number, self.format, found.group(1))
        return (number < self.claimed[found.group(1)] and name in (shard, index_name(shard))
                and has_shard_shape(path, self.format, self.dtype, self.shard_tokens))


def clear(out: Path, keep: set, why: str = "") -> None:
    """Remove our files from out (see Ours), except the shards (and indexes) named in keep; none
    while out holds someone else's (see _refuse_foreign: why). The manifest goes first, as a
    rename to CLEARING: the folder never looks finished while it is not, and a removal cut short
    (a kill) leaves a record of what is bpecli's; the records go last."""
    ours = _refuse_foreign(out, [], why)
    if (out / MANIFEST).exists():
        os.replace(out / MANIFEST, out / CLEARING)
    for path in out.iterdir():
        mine = ours(path) or PARTIAL.fullmatch(path.name)
        if mine and path.name not in keep:
            path.unlink()
    if not keep:
        (out / JOURNAL).unlink(missing_ok=True)
    (out / CLEARING).unlink(missing_ok=True)


# The journal is written for a run's first shard and then at most once every this many seconds
# (and when the run stops): shards past it are written again by a rerun, and a run of millions of
# tiny shards stays linear.
JOURNAL_SECONDS = 1.0


class Journal:
    """The journal file of a run under way, and how many of its shards it lists."""

    def __init__(self, out: Path, settings: dict, listed: int):
        self.path, self.settings = out / JOURNAL, settings
        self.listed = listed  # the shards the journal on disk lists
        self.written_at = 0.0

    def due(self) -> bool:
        """Whether a shard just finished should be listed now (see JOURNAL_SECONDS)."""
        return not self.listed or time.monotonic() - self.written_at > JOURNAL_SECONDS

    def write(self, shards: list[dict], parts: list[str], written: list, claimed: dict[str, int]) -> None:
        """List shards, the checksums of the parts read and what each part gave each split, and
        claim the names the run may write before the next write ({split: shards numbered below})."""
        folders.write_json_atomically({"settings": self.settings, "shards": shards, "parts": parts, "written": written,
                                       "claimed": claimed}, self.path)
        self.listed, self.written_at = len(shards), time.monotonic()

    def remove(self, listed: int) -> None:
        """The run is finished (its manifest written): the journal goes."""
        self.listed = listed
        try:
            self.path.unlink(missing_ok=True)
        except OSError:  # the folder is finished whatever: a manifest outranks a journal beside it
            pass


# ids compared at the end of a resumed stream's last kept shard: enough to tell any two places apart
RESUME_CHECK = 1 << 12


class ResumeMismatch(OutputError):
    """A kept shard does not end where the journal says: the run cannot resume from it."""


def check_resume(out: Path, last: dict, resume_part: int, skip: int, ids: np.ndarray, part: int, dtype: np.dtype) -> None:
    """The ids of part `part` agree with the journal's word on where a stream's last kept shard
    (last) ends: skip ids into part resume_part, or the end of the part before it if skip is 0. A
    journal edited or damaged to point elsewhere would lose or repeat ids without it."""
    if part == resume_part and skip >= len(ids):
        raise ResumeMismatch(*damaged(out / JOURNAL, f"{last['file']} is said to end {skip:,} ids into part {part:,}, "
                                     f"which has {len(ids):,}").args)
    before = ids[:skip] if part == resume_part else ids
    n = min(len(before), last["tokens"], RESUME_CHECK)
    try:
        with folders.open_regular(out / last["file"], follow_links=False) as (f, _):  # (a FIFO there: not waited on)
            f.seek(-n * dtype.itemsize, os.SEEK_END)
            tail = np.frombuffer(f.read(n * dtype.itemsize), dtype=dtype)
    except (OSError, folders.Unreadable):
        tail = None
    if tail is None or not np.array_equal(tail, before[len(before) - n :]):
        where = f"{skip:,} ids into part {part:,}" if skip else f"where part {part:,} ends"
        raise ResumeMismatch(*damaged(out / JOURNAL, f"{last['file']} does not end {where}, as it says").args)
