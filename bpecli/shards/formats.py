"""The three shard formats: .npy, llm.c's .bin (a header of 256 int32: magic, version, token
count; then the tokens), whose magic and version say the token dtype, and nanoGPT's raw train.bin
/ val.bin (the tokens alone, their dtype in the manifest beside them); reading a shard of any of
them, and the dtype of a run's ids."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .. import folders
from ..errors import BpecliError, InputError, arg
from ..tokenizer import Tokenizer
from .layout import INDEX_SUFFIX, MANIFEST, REBUILD, UNBOUNDED, load_state

LLMC_HEADER_INTS = 256
LLMC_MAGIC = {"uint16": (20240520, 1), "uint32": (20240801, 7)}  # dtype -> (magic, version)


# The sizes a shard's header may have, by format: numpy pads a 1.0 header to a multiple of 64
# bytes, and a 1-d array's fits in 64 or 128 of them; nanoGPT's .bin has none.
HEADER_SIZES = {"npy": (64, 128), "llmc": (4 * LLMC_HEADER_INTS,), "nanogpt": (0,)}


def shard_header(shard_format: str, dtype: str, length: int) -> bytes:
    """The bytes before a shard's tokens."""
    if shard_format == "nanogpt":
        return b""
    if shard_format == "llmc":
        header = np.zeros(LLMC_HEADER_INTS, dtype="<i4")
        header[:3] = (*LLMC_MAGIC[dtype], length)
        return header.tobytes()
    return _npy_header(dtype, length)


def shard_bytes(shard_format: str, dtype: str, length: int) -> int:
    """The size of a shard file of length ids: its header and the ids."""
    return len(shard_header(shard_format, dtype, length)) + length * np.dtype(dtype).itemsize


def has_shard_shape(path: Path, shard_format: str, dtype: str, shard_tokens: int) -> bool:
    """Whether the file at path is shaped as the shard (or, for an .idx name, the document index)
    bpecli writes: its format's very header for the ids it holds, at most shard_tokens of them.
    (A nanoGPT .bin has no header: only its size is checked.)"""
    if path.suffix == INDEX_SUFFIX:
        shard_format, dtype, shard_tokens = "npy", "int64", UNBOUNDED
    itemsize = np.dtype(dtype).itemsize
    try:
        with _open_shard(path, "shard") as (f, size):
            head = f.read(4 * LLMC_HEADER_INTS)
    except (OSError, InputError):
        return False
    for header_size in HEADER_SIZES[shard_format]:
        length, rest = divmod(size - header_size, itemsize)
        if 0 <= length <= shard_tokens and not rest and head.startswith(shard_header(shard_format, dtype, length)):
            return True
    return False


def _npy_header(dtype: str, length: int) -> bytes:
    buffer = io.BytesIO()
    descr = np.lib.format.dtype_to_descr(np.dtype(dtype).newbyteorder("<"))
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": (length,)})
    return buffer.getvalue()


def read_shard(path: str | Path, *, as_listed: bool = False) -> np.ndarray:
    """The tokens of a shard file (.npy, llm.c's .bin, or nanoGPT's raw .bin listed in the
    manifest.json beside it, which says its dtype), memory-mapped. as_listed: a shard the manifest
    beside it lists must hold as many ids of the dtype as it says (as a shard read on its own, by decode)."""
    path = Path(path)
    array = _read_any(path)
    listed = _listed(path) if as_listed else None
    if listed is not None:
        dtype, tokens = listed
        if array.dtype != np.dtype(dtype).newbyteorder("<"):
            kind = array.dtype.name + (" (big-endian)" if array.dtype.byteorder == ">" else "")
            raise InputError(f"{path}: holds {kind} ids where the manifest says {dtype}; {REBUILD}")
        if len(array) != tokens:
            raise InputError(f"{path}: holds {len(array):,} ids where the manifest says {tokens:,}; {REBUILD}")
    return array


def _read_any(path: Path) -> np.ndarray:
    if path.suffix != ".bin":
        array = load_npy(path, "shard")
    else:
        try:
            with _open_shard(path, "shard") as (f, size):
                array = _read_bin(path, f, size)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: not a readable shard ({_reason(e)})") from None
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InputError(f"{path}: expected a 1-d integer array, found {array.dtype} of shape {array.shape}")
    return array


def load_npy(path: Path, what: str) -> np.ndarray:
    """A .npy file (a shard, a document index) memory-mapped, never unpickled; one clear line
    (InputError) where it is none."""
    try:
        with _open_shard(path, what) as (f, size):
            if f.read(6) != b"\x93NUMPY":  # np.load would take it for a pickle and speak of allow_pickle
                raise InputError(f"{path}: not a .npy file (it does not start as one)"
                                 + ("; to decode ids written as text, give a file of another name, or pipe it in on stdin"
                                    if what == "shard" else ""))
            f.seek(0)
            version = np.lib.format.read_magic(f)
            if version not in NPY_HEADERS:
                raise ValueError(f"a .npy of version {version[0]}.{version[1]}, which numpy does not write")
            shape, fortran, dtype = NPY_HEADERS[version](f)
            if dtype.hasobject:
                raise ValueError("it holds Python objects, not numbers")
            extra = size - f.tell() - int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if extra < 0:
                raise ValueError(f"cut short: {-extra:,} bytes fewer than its header says")
            array = _array_at(f, dtype, f.tell(), shape, fortran)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable {what} ({_reason(e)})") from None
    if extra:
        raise InputError(f"{path}: {extra:,} bytes more than its array; not a {what} as bpecli writes one")
    return array


# A .npy header's reader by the format's version (3.0 differs from 2.0 only in allowing UTF-8
# field names: an array of numbers has none, and its header reads alike)
NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0,
               (3, 0): np.lib.format.read_array_header_2_0}


@contextmanager
def _open_shard(path: Path, what: str) -> Iterator[tuple[BinaryIO, int]]:
    """(the file at path open for reading, its size): folders.open_regular, its refusal said of a
    shard or index."""
    try:
        with folders.open_regular(path) as (f, found):
            yield f, found.st_size
    except folders.Unreadable as e:
        fifo = e.mode is not None and stat.S_ISFIFO(e.mode)
        raise InputError(f"{path}: not a regular file; a {what} is mapped from a file"
                         + (" (to decode ids from a stream, pipe them in as text on stdin)" if what == "shard" and fifo else "")) from None


def _reason(error: OSError | ValueError) -> str:
    """Why a file is no array, in a few words: an OS error's own, or numpy's first line (its words
    may run over several lines)."""
    if isinstance(error, OSError):
        return folders.why(error)
    return str(error).splitlines()[0] if str(error).strip() else type(error).__name__


def _read_bin(path: Path, f: BinaryIO, size: int) -> np.ndarray:
    """An llm.c .bin (its header's token count must be what the file holds) or a nanoGPT .bin,
    from the open file f of size bytes."""
    head = f.read(4 * LLMC_HEADER_INTS)
    header = np.frombuffer(head[: len(head) // 4 * 4], dtype="<i4")
    dtype = next((d for d, (magic, version) in LLMC_MAGIC.items()
                  if len(header) == LLMC_HEADER_INTS and (header[0], header[1]) == (magic, version)), None)
    if dtype is None:
        listed = _listed(path, shard_format="nanogpt", required=True)
        if listed is None:
            raise ValueError("no llm.c header (magic 20240520 version 1, or 20240801 version 7), and no "
                             "manifest.json beside it that lists it as a nanoGPT .bin")
        raw_dtype = np.dtype(listed[0]).newbyteorder("<")
        if size % raw_dtype.itemsize:
            raise ValueError(f"{size:,} bytes, no whole number of {listed[0]} ids")
        return _array_at(f, raw_dtype, 0, (size // raw_dtype.itemsize,))
    itemsize, count = np.dtype(dtype).itemsize, int(header[2])
    held = (size - 4 * LLMC_HEADER_INTS) / itemsize
    if count != held:
        raise ValueError(f"its llm.c header says {count:,} tokens, but it holds {held:,g}")
    return _array_at(f, np.dtype(dtype).newbyteorder("<"), 4 * LLMC_HEADER_INTS, (count,))


def _array_at(f: BinaryIO, dtype, offset: int, shape: tuple, fortran: bool = False) -> np.ndarray:
    """The array at offset in the open file f, mapped through its descriptor (numpy maps no empty
    file: an empty array is made instead)."""
    if not np.prod(shape, dtype=np.int64):
        return np.zeros(shape, dtype=dtype)
    return np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def _listed(path: Path, shard_format: str | None = None, required: bool = False) -> tuple[str, int] | None:
    """(dtype, tokens) the manifest beside a shard says of it, if it lists the shard (and is of
    shard_format, if given); None where there is no manifest there, or it lists no such shard. A
    manifest that cannot be read is passed by, or, if required (a nanoGPT .bin is read by it), a
    ValueError that says so."""
    manifest_path = path.parent / MANIFEST
    if not os.path.lexists(manifest_path):
        return None
    try:
        manifest = load_state(manifest_path)
        if shard_format not in (None, manifest.get("shard_format")):
            return None
        entry = next((shard for shard in manifest["shards"] if shard.get("file") == path.name), None)
        if entry is None:
            return None
        dtype, tokens = manifest.get("dtype"), entry["tokens"]
        if dtype not in ("uint16", "uint32"):
            raise ValueError(f"a dtype of {dtype!r}")
        if type(tokens) is not int or tokens < 0:
            raise ValueError(f"a count of {tokens!r} tokens for {path.name}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        if not required:
            return None
        why = _reason(e) if isinstance(e, (OSError, ValueError)) else "not as bpecli writes one"
        raise ValueError(f"the {MANIFEST} beside it, which says how to read a nanoGPT .bin, is damaged ({why})") from None
    return dtype, tokens


def resolve_dtype(tokenizer: Tokenizer, dtype: str = "auto") -> str:
    """uint16 when every id fits, else uint32; a dtype asked for must hold every id."""
    top = max(tokenizer.decoder)
    if dtype == "auto":
        if top > np.iinfo(np.uint32).max:
            raise BpecliError(f"the tokenizer's ids go up to {top:,}, past uint32 (the widest shard dtype); "
                              "renumber its special tokens below 2**32")
        return "uint16" if top <= np.iinfo(np.uint16).max else "uint32"
    if dtype not in ("uint16", "uint32"):
        raise BpecliError(f"{arg('dtype')} {dtype!r}: expected auto, uint16 or uint32")
    if top > np.iinfo(dtype).max:
        raise BpecliError(f"the tokenizer's ids go up to {top}, which {dtype} cannot hold; use {arg('dtype', 'uint32')} or auto")
    return dtype
