"""Checking a finished shard folder: every shard re-hashed against the manifest, and a shard read
only once it is found to be what the manifest says."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError, arg
from ..folders import Unreadable, file_sha256, why
from ..inputs.sources import is_uri
from .formats import read_shard, shard_bytes
from .layout import MANIFEST, REBUILD, UNREADABLE, input_identity, is_file_here, read_manifest


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
            elif not is_file_here(out / name):
                problems.append(f"{name}: not a file of its own (a link or a folder, which bpecli never writes)")
            else:
                try:
                    if file_sha256(out / name) != digest:
                        problems.append(f"{name}: sha256 does not match the manifest")
                except (OSError, Unreadable) as e:  # swapped since it was looked at, or unreadable
                    problems.append(f"{name}: {e if isinstance(e, Unreadable) else why(e)}")
    for before in manifest["inputs"]:  # inputs still where they were must be as they were read
        path = before["path"]
        if before.get("mtime_ns") is None or is_uri(path) or not os.path.isfile(path):
            continue
        try:
            now = input_identity(path, path)
        except InputError:  # a file no longer there: the shards do not need it
            continue
        if now != before:
            # (a problem is a plain string, not an error: its flag stays as the command line spells it)
            problems.append(f"input {path} changed since these shards were written from it; encode again with {arg('force', True)}")
    return problems


def missing(out: Path, manifest: dict) -> list[str]:
    """The shards (and document indexes) a finished folder's manifest lists that are gone, or are
    not of the size it says: the cheap half of verify, for a rerun that finds the run finished."""
    problems = []
    for shard in manifest["shards"]:
        size = shard_bytes(manifest.get("shard_format", "npy"), manifest["dtype"], shard["tokens"])
        for name, expected in ((shard["file"], size), (shard.get("index"), None)):
            if name is None:
                continue
            if not is_file_here(out / name):
                problems.append(f"{name}: missing, or not a file of its own")
            elif expected is not None and (found := (out / name).stat().st_size) != expected:
                problems.append(f"{name}: {found:,} bytes where the manifest says {expected:,}")
    return problems


def checked_shard(path: Path, shard: dict, manifest: dict) -> np.ndarray:
    """A shard's ids (memory-mapped), once it is found to be a file of the folder holding the
    manifest's dtype and its number of tokens: nothing is sized from ids that are not."""
    if not is_file_here(path):
        raise InputError(f"{path}: missing, or not a file of its own; {REBUILD}")
    ids = read_shard(path)
    if ids.dtype != np.dtype(manifest["dtype"]).newbyteorder("<"):
        kind = ids.dtype.name + (" (big-endian)" if ids.dtype.byteorder == ">" else "")
        raise InputError(f"{path}: holds {kind} ids where the manifest says {manifest['dtype']}; {REBUILD}")
    if len(ids) != shard["tokens"]:
        raise InputError(f"{path}: holds {len(ids):,} ids where the manifest says {shard['tokens']:,}; {REBUILD}")
    return ids
