"""Where inputs come from: local files, URIs (pyarrow's filesystems), stdin and FIFOs (copied to
a temporary file first: spool.py), their names and kinds, their sizes, and byte ranges of them; check_apart
keeps an output away from its inputs, redact keeps credentials out of what is said of an input."""

from __future__ import annotations

import errno
import mmap
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from .. import folders
from ..errors import InputError, OutputError, arg

# pyarrow and tempfile are imported where they are used: a one-line encode of a local text file
# needs neither.

# The memory budget for one document: bpecli reads a document (text between special tokens, a
# JSONL line, a Parquet value; in training, text between places it may cut) whole, and stops at
# one longer than this, naming where it starts, rather than grow without limit.
MAX_DOCUMENT_BYTES = 64 << 20

# Compressed inputs are read through pyarrow's own streams; no extra packages.
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2"}


def is_stream(path: str | Path) -> bool:
    """A FIFO, `<(...)`, /dev/stdin or any other input that is not a regular file: it can be read
    once, front to back, and has no size to cut into ranges."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def open_error(path, e: OSError) -> InputError:
    if isinstance(e, FileNotFoundError):
        return InputError(f"{path}: no such file")
    if e.errno == errno.ELOOP:
        return InputError(f"{path}: a loop of symbolic links, not a file")
    if isinstance(e, IsADirectoryError):
        return InputError(f"{path}: is a directory, not a text file")
    if isinstance(e, PermissionError):
        return InputError(f"{path}: permission denied")
    return InputError(f"{path}: cannot read ({e.strerror or e})")


def is_uri(name: str) -> bool:
    """An input on object storage or another filesystem pyarrow opens: s3://bucket/key, gs://..."""
    return "://" in str(name)


# The credentials a URI may carry: its userinfo, "//USER:SECRET@" right after the scheme (RFC 3986;
# "scheme:/" too, as pathlib writes "s3://..."); a secret with a "/" left unencoded, as in
# "s3://KEY:a/b@bucket", up to the "@" (what follows "KEY:" is no port); and the values of query
# parameters named like keys or secrets.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/{1,2})(?:[^/?#\s@]*|[^/?#\s@:]*:(?![0-9]*(?:[/?#\s]|$))[^?#\s@]*)@")
# (a value ends at the next parameter, or at ": " or a quote, as after a URI in a message)
_SECRET_PARAMETER = re.compile(r"([?&;][^=&;#\s]*(?:key|secret|token|passw|pwd|signature|credential|auth)[^=&;#\s]*=)"
                               r"(?:[^&;#\s:'\"]|:(?=[^\s]))*", re.IGNORECASE)


def redact(text: str) -> str:
    """text with the credentials of every URI in it replaced by ***: what messages, progress,
    JSON output, the manifest and the journal say of an input (its label).

    Example: "s3://KEY:SECRET@bucket/a.txt?secret_key=S" -> "s3://***@bucket/a.txt?secret_key=***"
    """
    if ":/" not in text:
        return text
    return _SECRET_PARAMETER.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def label_of(name: str) -> str:
    """What messages call an input given by name: <stdin> for "-", else the name, redacted."""
    return "<stdin>" if name == "-" else redact(name)


def input_pairs(inputs) -> list[tuple[str, str]]:
    """(path, label) for each input: a path or URI (str or Path), or a (path, label) pair. The
    label is what messages and records show of the input, its credentials redacted."""
    pairs = [(str(item), str(item)) if isinstance(item, (str, Path)) else (str(item[0]), str(item[1])) for item in inputs]
    return [(path, redact(label)) for path, label in pairs]


def _path_of(name: str) -> str:
    """The path of a file name or URI, without a URI's query (?endpoint_override=...)."""
    if not is_uri(name):
        return name
    return urlsplit(name).path


def input_kind(name: str) -> tuple[str, str | None]:
    """(kind, compression) from a file name.

    Example: "docs.jsonl.gz" -> ("jsonl", "gzip"); "notes.txt" -> ("text", None)
    """
    path = Path(_path_of(name).lower())  # DOCS.JSONL is JSONL too
    compression = COMPRESSIONS.get(path.suffix)
    suffix = Path(path.stem).suffix if compression else path.suffix
    kind = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "text")
    if kind == "parquet" and compression:
        raise InputError(f"{name}: Parquet compresses itself; give the .parquet file uncompressed")
    return kind, compression


def _remote(uri: str):
    """(pyarrow filesystem, path in it) for a URI. For s3:// the endpoint may come from the URI's
    query (?endpoint_override=host:port&scheme=http) or, as for the AWS tools, from
    AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL."""
    import pyarrow as pa
    from pyarrow import fs

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    target = uri
    if uri.startswith("s3://") and endpoint and "endpoint_override=" not in uri:
        scheme, _, host = endpoint.rpartition("://")
        target += ("&" if "?" in uri else "?") + f"endpoint_override={host.rstrip('/')}" + (f"&scheme={scheme}" if scheme else "")
    try:
        return fs.FileSystem.from_uri(target)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InputError(redact(f"{uri}: cannot open ({e})")) from None


def _remote_call(uri: str, action):
    """action(filesystem, path), with a missing object or any storage error as one line."""
    import pyarrow as pa

    filesystem, path = _remote(uri)
    try:
        return action(filesystem, path)
    except FileNotFoundError:
        raise InputError(f"{redact(uri)}: no such object") from None
    except (pa.ArrowException, OSError) as e:
        raise InputError(redact(f"{uri}: cannot read ({str(e).splitlines()[0]})")) from None


def input_stat(path: str, label: str) -> tuple[int, int | None]:
    """(size in bytes, last modified in ns or None) of a file or URI."""
    if is_uri(path):
        info = _remote_call(path, lambda filesystem, key: filesystem.get_file_info(key))
        if info.type.name != "File":
            raise InputError(f"{label}: no such object")
        return info.size, (info.mtime_ns if info.mtime is not None else None)
    try:
        return file_version(os.stat(path))
    except OSError as e:
        raise open_error(label, e) from None


def open_input(path: str, label: str, *, version: tuple | None = None):
    """A pyarrow file with random access (read_at, tell, size) for a path or URI; with version (a
    part's: see open_local), read through the descriptor that open_local checked."""
    if is_uri(path):
        return _remote_call(path, lambda filesystem, key: filesystem.open_input_file(key))
    import pyarrow as pa

    if version is not None:
        return pa.PythonFile(open_local(path, label, version=version), mode="r")
    try:
        return pa.OSFile(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{label}: cannot read ({e})") from None


def file_version(found: os.stat_result) -> tuple[int, int]:
    """What tells one state of a file from another, alike on every machine of a cluster that
    mounts it (device and inode numbers need not be): its size and its time of last change."""
    return found.st_size, found.st_mtime_ns


def open_local(path: str, label: str, *, version: tuple | None = None) -> BinaryIO:
    """A local regular file opened for reading (folders.open_file_regular: a FIFO is not waited
    on); when version is given (file_version, as its parts were cut), the file must still be in
    that state: its parts are read by their offsets in it, and another file's bytes there would be
    other documents, silently."""
    try:
        file, found = folders.open_file_regular(path)
    except folders.Unreadable as e:
        if e.mode is not None and stat.S_ISDIR(e.mode):
            raise open_error(label, IsADirectoryError()) from None
        raise _changed(label) from None
    except OSError as e:
        raise open_error(label, e) from None
    if version is not None and file_version(found) != tuple(version):
        file.close()
        raise _changed(label)
    return file


def _changed(label: str) -> InputError:
    return InputError(f"{label} changed while bpecli read it (another file, or written to); rerun once it no longer changes")


class RemoteBytes:
    """A remote file as the cutting into parts reads it (see parts.py): a size, and searches from
    an offset that fetch a window at a time, so cutting a large object into parts reads little of it."""

    WINDOW = 1 << 20
    MARGIN = 64  # bytes a match may look ahead past a window's end, or back before its start

    def __init__(self, uri: str, label: str):
        self.uri, self.label = uri, label
        self.file = open_input(uri, label)
        self.size = self.file.size()

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, where: slice) -> bytes:
        start, stop, _ = where.indices(self.size)
        return self.file.read_at(max(0, stop - start), start)

    def search(self, pattern, start: int) -> int:
        """The offset of the first match of pattern (a bytes regex, or bytes) at or after start, or -1."""
        while start < self.size:
            back = min(start, self.MARGIN)
            window = self[start - back : start + self.WINDOW]
            last = start + self.WINDOW >= self.size
            if isinstance(pattern, bytes):
                at = window.find(pattern, back)
                found = at if at >= 0 else None
            else:
                match = pattern.search(window, back)
                found = match.start() if match else None
            if found is not None and (last or found < len(window) - self.MARGIN):
                return start - back + found
            start += self.WINDOW - self.MARGIN
        return -1


def open_mmap(path: str | Path, label: str | None = None) -> mmap.mmap | bytes:
    """Map a file read-only; an empty file gives b"" (mmap refuses length 0), and a stream (see
    is_stream) is read whole, up to MAX_DOCUMENT_BYTES."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                return _bounded(f.read(MAX_DOCUMENT_BYTES + 1), label or str(path))
            return _map_whole(f, info)
    except OSError as e:
        raise open_error(label or path, e) from None


def map_local(path: str, label: str) -> tuple[mmap.mmap | bytes, tuple]:
    """(a local regular file mapped read-only, its file_version): the file its parts are cut from."""
    with open_local(path, label) as f:
        info = os.fstat(f.fileno())
        try:
            return _map_whole(f, info), file_version(info)
        except OSError as e:
            raise open_error(label, e) from None


def _map_whole(f, info: os.stat_result) -> mmap.mmap | bytes:
    return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if info.st_size else b""


def read_range(path: str, label: str, start: int, end: int, *, version: tuple | None = None) -> bytes:
    """Bytes start..end of a file, read (not mapped: a file cut short while mapped kills the
    process with SIGBUS); a file that no longer holds them, or (version: see open_local) is no
    longer the file they were cut from, is an error, never other bytes."""
    if is_uri(path):
        with open_input(path, label) as f:
            data, size = f.read_at(end - start, start), f.size()
    else:
        data, size = _pread(path, label, start, end, version=version)
    if len(data) != end - start:
        raise InputError(f"{label} changed while bpecli read it (now {size:,} bytes, bytes up to {end:,} expected); "
                         "rerun once it no longer changes")
    return data


def _pread(path: str, label: str, start: int, end: int, *, version: tuple | None) -> tuple[bytes, int]:
    with open_local(path, label, version=version) as f:
        try:
            data = os.pread(f.fileno(), end - start, start)
            size = os.fstat(f.fileno()).st_size
        except OSError as e:
            raise open_error(label, e) from None
    return data, size


def lines_before(path: str, offset: int, label: str | None = None, *, version: tuple | None = None) -> int:
    """The newlines before byte offset of a file or URI (version: see open_local): where a part
    starts, in lines."""
    if is_uri(path):
        return lines_in(RemoteBytes(path, path), offset)
    with open_local(path, label or path, version=version) as f:
        return lines_in(_map_whole(f, os.fstat(f.fileno())), offset)


def lines_in(data, offset: int) -> int:
    """The newlines in data[:offset], counted a block at a time (never a copy of the whole)."""
    step = 16 << 20
    return sum(bytes(data[at : min(offset, at + step)]).count(b"\n") for at in range(0, offset, step))


def stdin_buffer():
    if sys.stdin is None:
        raise InputError("standard input is closed; name an input file or pipe text in")
    return sys.stdin.buffer


class ReadOnce:
    """stdin ("-") or a FIFO as a stream read once, a block at a time: read(n), tell() (the bytes
    read so far), and close(), which leaves stdin open."""

    def __init__(self, path: str, label: str):
        self.label, self.position = label, 0
        if path == "-":
            self.file, self.owned = stdin_buffer(), False
        else:
            try:
                self.file, self.owned = open(path, "rb"), True
            except OSError as e:
                raise open_error(label, e) from None

    def read(self, n: int) -> bytes:
        try:
            data = self.file.read(n)
        except OSError as e:
            raise open_error(self.label, e) from None
        self.position += len(data)
        return data

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        if self.owned:
            self.file.close()

    def __enter__(self) -> ReadOnce:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_bytes(name: str) -> bytes:
    """The whole of a file (decompressed if it is named .gz, .zst or .bz2), or of stdin for "-";
    at most MAX_DOCUMENT_BYTES of it (more is an error: /dev/zero never ends)."""
    if name == "-":
        return _bounded(stdin_buffer().read(MAX_DOCUMENT_BYTES + 1), "<stdin>")
    label = redact(name)
    compression = input_kind(name)[1]
    if is_uri(name):
        import pyarrow as pa

        with open_input(name, label) as raw:
            try:
                if compression:
                    return _bounded(pa.CompressedInputStream(raw, compression).read(MAX_DOCUMENT_BYTES + 1), label)
                return _bounded(raw.read(MAX_DOCUMENT_BYTES + 1), label)
            except (OSError, pa.ArrowException) as e:
                raise InputError(redact(f"{name}: cannot read or decompress ({e})")) from None
    if compression:
        import pyarrow as pa

        not_empty(name, label, compression)
        try:
            with pa.input_stream(name, compression=compression) as stream:
                return _bounded(stream.read(MAX_DOCUMENT_BYTES + 1), label)
        except FileNotFoundError:
            raise InputError(f"{label}: no such file") from None
        except (OSError, pa.ArrowException) as e:
            raise InputError(f"{label}: cannot read or decompress ({e})") from None
    return bytes(_bounded(open_mmap(name, label), label))


def not_empty(name: str, label: str, compression: str) -> None:
    """An error for an empty local file named as compressed: gzip -t refuses it (a download cut
    short, say), though the decompressors read it as empty text."""
    try:
        found = os.stat(name)
    except OSError:  # said by the read
        return
    if stat.S_ISREG(found.st_mode) and found.st_size == 0:
        raise InputError(f"{label}: an empty file, not {compression} data")


def read_blocks(name: str, size: int = 4 << 20) -> Iterator[bytes]:
    """A file (decompressed if it is named .gz, .zst or .bz2), URI, FIFO or stdin ("-") front to
    back, a block of at most size bytes at a time: what is held stays bounded whatever its size."""
    label = label_of(name)
    compression = None if name == "-" else input_kind(name)[1]
    if not compression and not is_uri(name):
        with ReadOnce(name, label) as source:
            while block := source.read(size):
                yield block
        return
    import pyarrow as pa

    try:
        if is_uri(name):
            raw = open_input(name, label)
            stream = pa.CompressedInputStream(raw, compression) if compression else raw
        else:
            if compression:
                not_empty(name, label, compression)
            stream = pa.input_stream(name, compression=compression)
        with stream:
            while block := stream.read(size):
                yield block
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except (OSError, pa.ArrowException) as e:
        raise InputError(redact(f"{label}: cannot read or decompress ({e})")) from None


def _bounded(data, label: str):
    """data, if it is no more than MAX_DOCUMENT_BYTES (read as MAX_DOCUMENT_BYTES + 1 at most)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _too_much(label)
    return data


def _too_much(label: str) -> InputError:
    return InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB, more than bpecli reads whole (is it an endless "
                      f"stream, such as /dev/zero?); a file is read in parts by encode, encode {arg('out_dir')} and train")


def input_bytes(inputs: list[tuple[str, str]]) -> int:
    """The bytes of the (path, label) inputs that are files (compressed ones as they are on disk):
    the total that progress counts towards."""
    return sum(input_stat(path, label)[0] for path, label in inputs if is_uri(path) or os.path.isfile(path))


def check_apart(out: str | Path, names: list[str]) -> None:
    """out may not be an input, nor a folder that holds one: writing it must never touch them.
    Either one a loop of symbolic links is an error here, before any work."""
    target = _resolved(out, lambda: OutputError(f"{arg('out_dir')} {out} is a loop of symbolic links; "
                                                f"choose another {arg('out_dir')}"))
    for name in names:
        if name == "-" or is_uri(name):
            continue
        path = _resolved(name, lambda: InputError(f"{name}: a loop of symbolic links, not a file"))
        if path == target or target in path.parents:
            raise OutputError(f"{arg('out_dir')} {out} {'is' if path == target else 'holds'} the input {name}; "
                              f"choose an {arg('out_dir')} folder apart from the inputs")


def _resolved(path: str | Path, loop) -> Path:
    """path made absolute with its symbolic links followed; loop() is the error for a loop of them
    (Python before 3.13 raises RuntimeError there, later ones leave it to a stat)."""
    try:
        resolved = Path(path).resolve()
        os.stat(resolved)
    except RuntimeError:
        raise loop() from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise loop() from None
        return Path(path).absolute()  # missing or unreadable: said where it is opened
    return resolved
