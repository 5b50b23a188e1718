"""Vocabularies already read, kept by the sha256 of their files: a one-line encode loads its
tokenizer in a few ms where parsing and checking 50,000 or 100,000 tokens takes about 0.1 s; and
the tables the bulk encoder builds from one (0.1-0.3 s before any worker starts), kept by its
fingerprint.

An entry is found by the digest of the file asked for and the arguments of the load; it holds
the digest of every other file the load read and what it found of every name it looked for, and
is used only when all of them are the same now. A load is a function of those files, names and
arguments alone, so an entry gives what reading the files again would give. The folder is
BPECLI_CACHE_DIR, else bpecli/ in XDG_CACHE_HOME or ~/.cache; BPECLI_CACHE_DIR set to nothing
turns it off. A cache that cannot be read or written is passed by, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
import re
import sys
import time
import zlib
from pathlib import Path

from .. import folders
from ..vocab import Template, Vocab

# Entries kept of each kind at most (a vocabulary's are 1-3 MB, its tables' 15-60 MB): the oldest
# (by when last written) go first.
MAX_ENTRIES = {".vocab": 32, ".tables": 8}
# Where an entry's layout changes, this does, and older entries are never read.
LAYOUT = 1
_SUFFIX, _TABLES = ".vocab", ".tables"  # a vocabulary; the bulk encoder's tables for one
# A temporary of a process that is not alive here is removed once untouched this long
STALE_SECONDS = 600
# The names of entries, and of one being written by a process (its pid, then random bits): only
# these are ever removed
_ENTRY = re.compile(r"[0-9a-f]{32}\.(vocab|tables)")
_PARTIAL = re.compile(r"\.[0-9a-f]{32}\.(\d+)\.[0-9a-f]+\.partial")


class Recording(folders.Generation):
    """A generation of a folder that keeps the sha256 of each file read from it (the fingerprint
    of a vocabulary is of the files as read, with no second read: see Vocab.fingerprint) and
    whether each name it looked for was there, for the cache's entries. Each file is read and
    hashed once: a lookup that finds no entry leaves its reads to the load that follows."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.digests: dict[str, bytes] = {}
        self.looked: dict[str, bool] = {}
        self._read: dict[str, bytes] = {}

    def read(self, name: str) -> bytes:
        if name not in self._read:
            data = self._read[name] = super().read(name)
            self.digests[name] = hashlib.sha256(data).digest()
        return self._read[name]

    def has(self, name: str) -> bool:
        found = self.looked[name] = super().has(name)
        return found


def folder() -> Path | None:
    """The cache's folder, or None where it is turned off."""
    given = os.environ.get("BPECLI_CACHE_DIR")
    if given is not None:
        return Path(given) if given else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bpecli"


def lookup(generation: Recording, name: str, pattern: str | None, special_tokens: dict[str, int] | None) -> Vocab | None:
    """The vocabulary an earlier load of the same files gave, or None (the files are read then)."""
    where = folder()
    if where is None:
        return None
    try:
        generation.read(name)  # its digest is the key's
        data, found = folders.read_regular(where / (_key(generation, name, pattern, special_tokens) + _SUFFIX),
                                           folders.MAX_FILE_BYTES)  # (a FIFO put there is refused, not waited on)
        if hashlib.sha256(data[32:]).digest() != data[:32] or not _mine(found):
            return None
        layout, digests, looked, fields = marshal.loads(data[32:])
        if layout != LAYOUT or any(generation.has(other) != found for other, found in looked.items()):
            return None
        for other, digest in digests.items():
            if other != name:
                generation.read(other)
            if generation.digests[other] != digest:
                return None
        return _vocab(fields)
    except Exception:  # no entry, or one damaged or of another layout: the files are read instead
        return None


def _mine(found: os.stat_result) -> bool:
    """Whether a cache entry is this user's: a folder shared with others (BPECLI_CACHE_DIR) may
    hold entries they made, which this user's runs never trust."""
    return found.st_uid == getattr(os, "getuid", lambda: found.st_uid)()


def store(generation: Recording, name: str, pattern: str | None, special_tokens: dict[str, int] | None,
          vocab: Vocab) -> None:
    """Keep what a load of these files gave, for the next load of the same files."""
    where = folder()
    if where is None:
        return
    try:
        entry = marshal.dumps((LAYOUT, dict(generation.digests), dict(generation.looked), _fields(vocab)))
        _write(where / (_key(generation, name, pattern, special_tokens) + _SUFFIX), hashlib.sha256(entry).digest() + entry)
    except (OSError, ValueError):  # a cache that cannot be written: the next load reads the files
        pass


def load_tables(vocab: Vocab) -> dict | None:
    """The bulk encoder's tables (bulk.VocabTables.arrays) kept for this vocabulary, or None."""
    path = _tables_path(vocab)
    if path is None:
        return None
    try:
        data, found = folders.read_regular(path, folders.MAX_FILE_BYTES)
        return _arrays_of(data) if _mine(found) else None
    except Exception:  # none kept, or damaged: the tables are built instead
        return None


def store_tables(vocab: Vocab, arrays: dict) -> None:
    """Keep the bulk encoder's tables for this vocabulary, for the next run that encodes with it."""
    path = _tables_path(vocab)
    if path is None:
        return
    try:
        _write(path, _entry_of(arrays))
    except (OSError, ValueError):
        pass


# A tables entry: the crc32 of all that follows it (4 bytes, little-endian), the length of the
# header (4 bytes), the header (marshal of each array's name, dtype and length), then each array's
# bytes in the header's order, each from an offset that is a multiple of ARRAY_ALIGN. Loading it
# is one read and one checksum: the arrays are views of the bytes read, never copied (npz copied
# each array twice and parsed a zip, 0.05 s of every run for cl100k_base's 33 MB).
ARRAY_ALIGN = 64


def _entry_of(arrays: dict) -> bytes:
    header = marshal.dumps([(name, a.dtype.str, len(a)) for name, a in arrays.items()])
    chunks, at = [len(header).to_bytes(4, "little"), header], 8 + len(header)
    for a in arrays.values():
        chunks.append(bytes(-at % ARRAY_ALIGN))
        at += -at % ARRAY_ALIGN + a.nbytes
        chunks.append(a.tobytes())
    body = b"".join(chunks)
    return zlib.crc32(body).to_bytes(4, "little") + body


def _arrays_of(data: bytes) -> dict:
    """The arrays of a tables entry (read-only views of data); a ValueError where it is damaged."""
    import numpy as np

    if len(data) < 8 or zlib.crc32(memoryview(data)[4:]) != int.from_bytes(data[:4], "little"):
        raise ValueError("damaged")
    size = int.from_bytes(data[4:8], "little")
    arrays, at = {}, 8 + size
    for name, dtype, length in marshal.loads(data[8 : 8 + size]):
        at += -at % ARRAY_ALIGN
        arrays[name] = np.frombuffer(data, dtype=np.dtype(dtype), count=length, offset=at)
        at += arrays[name].nbytes
    return arrays


def _tables_path(vocab: Vocab) -> Path | None:
    """Where the tables of a vocabulary read from files or known by name are kept (its fingerprint
    is of those files, or of its ranks, and of its pattern and special tokens); None for one made
    in memory, whose tables would crowd out the others'."""
    where = folder()
    if where is None or not (vocab.file_digests or vocab.name):
        return None
    key = hashlib.sha256(marshal.dumps((_code(), LAYOUT, "tables", vocab.fingerprint))).hexdigest()[:32]
    return where / (key + _TABLES)


def _write(path: Path, data: bytes) -> None:
    """data under path, whole or not at all, through a temporary name of its own (the process id,
    which a process of another PID namespace sharing the folder may also have, and random bits);
    the oldest entries of its kind go past MAX_ENTRIES of them. Not flushed to disk: an entry lost
    or cut short by a crash fails its checksum and is made again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.{os.urandom(8).hex()}.partial")
    try:
        with folders.open_new(temporary) as f:
            f.write(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    suffix = path.suffix
    kept = sorted((p for p in path.parent.glob("*" + suffix) if _ENTRY.fullmatch(p.name)), key=lambda p: p.stat().st_mtime_ns)
    for old in kept[: -MAX_ENTRIES[suffix]]:
        old.unlink(missing_ok=True)
    for left in path.parent.glob(".*.partial"):  # what a process killed mid-write left
        written_by = _PARTIAL.fullmatch(left.name)
        if written_by and not _alive(int(written_by.group(1))) and _stale(left):
            left.unlink(missing_ok=True)


def _stale(partial: Path) -> bool:
    """Whether a temporary was last written long ago: one of a live process in another PID
    namespace (sharing the folder, its pid unknown here) is written within seconds."""
    try:
        return time.time() - partial.stat().st_mtime > STALE_SECONDS
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        pass
    return True


def _key(generation: Recording, name: str, pattern: str | None, special_tokens: dict[str, int] | None) -> str:
    """The file asked for, its content and the load's arguments, with the code that reads them."""
    asked = (_code(), LAYOUT, name, generation.digests[name], pattern,
             None if special_tokens is None else sorted(special_tokens.items()))
    return hashlib.sha256(marshal.dumps(asked)).hexdigest()[:32]


@functools.cache
def _code() -> tuple:
    """bpecli's version, and the size and time of each module that reads tokenizer files or builds
    their tables: an entry made by other code (an upgrade, an edit of a checkout) is never used."""
    package = Path(__file__).resolve().parents[1]
    modules = sorted([*package.glob("formats/*.py"), package / "vocab.py", *package.glob("bulk/*.py")])
    return (sys.modules["bpecli"].__version__, *((str(m), *_identity(m)) for m in modules))


def _identity(module: Path) -> tuple[int, int]:
    found = module.stat()
    return found.st_size, found.st_mtime_ns


def _fields(vocab: Vocab) -> tuple:
    template = None if vocab.template is None else (vocab.template.single, vocab.template.pair)
    return (vocab.ranks, vocab.special_tokens, vocab.pattern, vocab.normalize, vocab.add_prefix_space, template,
            vocab.strips, vocab.trained_merges, vocab.files)


def _vocab(fields: tuple) -> Vocab:
    ranks, specials, pattern, normalize, add_prefix_space, template, strips, trained_merges, files = fields
    if not (isinstance(ranks, dict) and isinstance(specials, dict) and isinstance(pattern, str)):
        raise ValueError("not an entry")
    return Vocab(ranks, specials, pattern, normalize=normalize, add_prefix_space=add_prefix_space,
                 template=None if template is None else Template(*template), strips=strips,
                 trained_merges=trained_merges, files=files)
