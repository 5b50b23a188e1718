"""Inputs, one pipeline: files and streams of every format -> documents -> parts of whole documents."""

from __future__ import annotations

import errno
import mmap
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError, OutputError


def is_stream(path: str | Path) -> bool:
    """A FIFO, `<(...)`, /dev/stdin or any other input that is not a regular file: it can be read
    once, front to back, and has no size to cut into ranges."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _open_error(path, e: OSError) -> InputError:
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


# The credentials a URI may carry: everything before the host's "@" (up to the last "@" before the
# query: a secret key may hold "/"), and the values of query parameters named like keys or secrets.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^?#\s]*@")
# (a value ends at the next parameter, or at ": " or a quote, as after a URI in a message)
_SECRET_PARAMETER = re.compile(r"([?&;][^=&;#\s]*(?:key|secret|token|passw|pwd|signature|credential|auth)[^=&;#\s]*=)"
                               r"(?:[^&;#\s:'\"]|:(?=[^\s]))*", re.IGNORECASE)


def redact(text: str) -> str:
    """text with the credentials of every URI in it replaced by ***: what messages, progress,
    --json, the manifest and the journal say of an input (its label).

    Example: "s3://KEY:SECRET@bucket/a.txt?secret_key=S" -> "s3://***@bucket/a.txt?secret_key=***"
    """
    if "://" not in text:
        return text
    return _SECRET_PARAMETER.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def input_pairs(inputs) -> list[tuple[str, str]]:
    """(path, label) for each input: a path or URI (str or Path), or a (path, label) pair. The
    label is what messages and records show of the input, its credentials redacted."""
    pairs = [(str(item), str(item)) if isinstance(item, (str, Path)) else (str(item[0]), str(item[1])) for item in inputs]
    return [(path, redact(label)) for path, label in pairs]


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
        info = os.stat(path)
    except OSError as e:
        raise _open_error(label, e) from None
    return info.st_size, info.st_mtime_ns


def open_input(path: str, label: str):
    """A pyarrow file with random access (read_at, tell, size) for a path or URI."""
    if is_uri(path):
        return _remote_call(path, lambda filesystem, key: filesystem.open_input_file(key))
    import pyarrow as pa

    try:
        return pa.OSFile(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{label}: cannot read ({e})") from None


class _RemoteBytes:
    """A remote file as chunk_boundaries and _Cuts read it: a size, and searches from
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
            if info.st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise _open_error(label or path, e) from None


def read_range(path: str, label: str, start: int, end: int) -> bytes:
    """Bytes start..end of a file, read (not mapped: a file cut short while mapped kills the
    process with SIGBUS); a file that no longer holds them is an error, never fewer bytes."""
    if is_uri(path):
        with open_input(path, label) as f:
            data, size = f.read_at(end - start, start), f.size()
    else:
        data, size = _pread(path, label, start, end)
    if len(data) != end - start:
        raise InputError(f"{label} changed while bpecli read it (now {size:,} bytes, bytes up to {end:,} expected); "
                         "rerun once it no longer changes")
    return data


def _pread(path: str, label: str, start: int, end: int) -> tuple[bytes, int]:
    try:
        with open(path, "rb") as f:
            data = os.pread(f.fileno(), end - start, start)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise _open_error(label, e) from None
    return data, size


def _stdin_buffer():
    if sys.stdin is None:
        raise InputError("standard input is closed; name an input file or pipe text in")
    return sys.stdin.buffer


def spool(name: str, directory: str | None = None, separators: Sequence[str] = (), errors: str = "replace") -> str:
    """Copy a stream ("-" for stdin, a FIFO...) to a temporary file so it can be read in ranges
    like any other input; the copy is removed again if it cannot be made whole. Text or JSONL that
    runs MAX_DOCUMENT_BYTES without a newline or one of separators is an error here (/dev/zero
    would fill the disk): no document of it could be read; so is invalid UTF-8 with errors="strict"
    (/dev/urandom would)."""
    import tempfile  # (here and hashlib below: imported when used, ~9 ms a one-line encode never needs)

    label = "<stdin>" if name == "-" else name
    kind = ("text", None) if name == "-" else input_kind(name)
    # the copy keeps the suffixes that say the kind (a FIFO named docs.jsonl holds JSONL)
    suffix = "".join(Path(name).suffixes[-2:]) if kind != ("text", None) else ".txt"
    ends = [b"\n", *(s.encode("utf-8") for s in separators)] if kind[0] != "parquet" and not kind[1] else []
    fd, path = tempfile.mkstemp(prefix="bpecli-stdin-", suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, (open(name, "rb") if name != "-" else nullcontext(_stdin_buffer())) as source:
            _copy_checked(source, out, ends, label, strict=errors == "strict")
    except OSError as e:
        os.unlink(path)
        if e.filename is None or e.filename == path:
            what = "standard input" if name == "-" else label
            raise InputError(f"cannot copy {what} to {os.path.dirname(path)} ({e.strerror or e}); "
                             "set TMPDIR to a folder with room") from None
        raise _open_error(label, e) from None
    except BaseException:
        os.unlink(path)
        raise
    return path


def _copy_checked(source, out, ends: list[bytes], label: str, strict: bool = False) -> None:
    """Copy source to out a block at a time; with ends, stop once MAX_DOCUMENT_BYTES pass without
    one, and if strict (and ends: text), at the first invalid UTF-8."""
    import codecs

    keep = max(map(len, ends), default=1) - 1  # the bytes before a block that an end may start in
    copied, after_end, tail = 0, 0, b""  # after_end: where the bytes after the last end start
    checker = codecs.getincrementaldecoder("utf-8")() if strict and ends else None
    lines = 0  # the newlines copied, for where invalid UTF-8 is
    while block := source.read(1 << 20):
        out.write(block)
        if checker is not None:
            held = checker.getstate()[0]  # a character's first bytes, from the block before
            try:
                checker.decode(block)
            except UnicodeDecodeError:  # said as reading it would say it (decode_utf8), where it is
                decode_utf8(held + block, label, offset=copied - len(held), first_line=lines + 1, hint=ERRORS_HINT)
            lines += block.count(b"\n")
        if ends:
            window = tail + block  # window starts at byte copied - len(tail)
            found = max((at + len(end) for end in ends if (at := window.rfind(end)) >= 0), default=0)
            if found:
                after_end = max(after_end, copied - len(tail) + found)
            if copied + len(block) - after_end > MAX_DOCUMENT_BYTES:
                more = "or special token " if len(ends) > 1 else ""
                raise InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB from byte {after_end:,} with no line end "
                                 f"{more}in it (is it an endless stream, such as /dev/zero?); bpecli holds a "
                                 f"document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one")
            tail = window[len(window) - keep :] if keep else b""
        copied += len(block)


@contextmanager
def streams_spooled(names: list[str], separators: Sequence[str] = (), errors: str = "replace"):
    """(path, label) for each input name; stdin ("-") and other streams (FIFOs, `<(...)`) are
    copied to temporary files first and removed afterwards, so that every input can be read in
    byte ranges like a file. separators end documents in them, errors says how invalid UTF-8 is
    read (see spool)."""
    spooled: dict[str, str] = {}
    try:
        for name in names:
            if (name == "-" or is_stream(name)) and name not in spooled:
                spooled[name] = spool(name, separators=separators, errors=errors)
        yield input_pairs([(spooled.get(name, name), "<stdin>" if name == "-" else name) for name in names])
    finally:
        for path in spooled.values():
            os.unlink(path)


def input_bytes(inputs: list[tuple[str, str]]) -> int:
    """The bytes of the (path, label) inputs that are files (compressed ones as they are on disk):
    the total that progress counts towards."""
    return sum(input_stat(path, label)[0] for path, label in inputs if is_uri(path) or os.path.isfile(path))


def check_apart(out: str | Path, names: list[str]) -> None:
    """--out may not be an input, nor a folder that holds one: writing it must never touch them.
    Either one a loop of symbolic links is an error here, before any work."""
    target = _resolved(out, lambda: OutputError(f"--out {out} is a loop of symbolic links; choose another --out"))
    for name in names:
        if name == "-" or is_uri(name):
            continue
        path = _resolved(name, lambda: InputError(f"{name}: a loop of symbolic links, not a file"))
        if path == target or target in path.parents:
            raise OutputError(f"--out {out} {'is' if path == target else 'holds'} the input {name}; "
                              "choose an --out folder apart from the inputs")


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


def chunk_boundaries(data: mmap.mmap | bytes | _RemoteBytes, n_chunks: int, split_tokens: list[bytes]) -> list[int]:
    """Offsets that cut data into about n_chunks pieces, each cut at the start of a special token.

    Example: b"ab<s>cd<s>ef" cut in 3 at b"<s>" -> [0, 2, 7, 12]
    """
    size = len(data)
    if n_chunks <= 1 or not split_tokens or size == 0:
        return [0, size]
    step = size // n_chunks
    # one search for any of the tokens: one that never occurs is not looked for through all the
    # data at every cut (a whole remote object read once per such token)
    tokens = re.compile(b"|".join(map(re.escape, split_tokens)))  # a match starts where the first token does
    bounds = [0]
    for i in range(1, n_chunks):
        at = _search(data, tokens, max(i * step, bounds[-1] + 1))
        if at < 0:
            break
        bounds.append(at)
    return sorted(set(bounds + [size]))


def _search(data, pattern: re.Pattern, start: int) -> int:
    """Where pattern first matches data at or after start; -1 if nowhere."""
    if isinstance(data, _RemoteBytes):
        return data.search(pattern, start)
    match = pattern.search(data, start)
    return match.start() if match else -1


# The hint for invalid UTF-8, for the commands that have --errors.
ERRORS_HINT = "to carry on with U+FFFD in its place, use --errors replace"
# Leading bytes of compressed formats, to say so instead of "invalid UTF-8".
_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz",
          b"PK\x03\x04": "zip", b"\x04\x22\x4d\x18": "lz4", b"PAR1": "Parquet"}


def decode_utf8(raw: bytes, name: str, *, errors: str = "strict", offset: int = 0, first_line: int = 1,
                hint: str | None = None, lines_before=None) -> str:
    """raw as text; invalid UTF-8 is an error that says where (line and byte). lines_before()
    counts the lines of the file before raw, when raw does not start it; hint says what to do."""
    try:
        return raw.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        if offset == 0:
            found = _binary_kind(raw, name)
            if found is not None:
                raise found from None
        where = offset + e.start
        line = raw[: e.start].count(b"\n") + (lines_before() + 1 if lines_before else first_line)
        raise InputError(
            f"{name}:{line}: invalid UTF-8 at byte {where} ({raw[e.start:e.start + 4]!r})" + (f"; {hint}" if hint else "")
        ) from None


def _binary_kind(raw: bytes, name: str, wanted: str = "text") -> InputError | None:
    """The error for data that starts like a compressed or Parquet file, saying how bpecli reads
    such a file; None if it starts like neither."""
    kind = next((kind for magic, kind in _MAGIC.items() if raw.startswith(magic)), None)
    if kind is None:
        return None
    if kind == "Parquet":
        how = "bpecli reads a Parquet file named .parquet"
    elif kind in ("gzip", "zstd", "bzip2"):
        how = "bpecli decompresses .gz, .zst and .bz2 files named so, or decompress it and pipe it in (-)"
    else:
        how = "decompress it and pipe it in (-)"
    if wanted != "text":
        how = f"decode reads {wanted}: whitespace-separated ids in text, or a shard (.npy, llm.c's .bin)"
    return InputError(f"{name}: holds {kind} data, not {wanted}; {how}")


def _lines_before(path: str, offset: int) -> int:
    return _lines_before_in(_RemoteBytes(path, path) if is_uri(path) else open_mmap(path), offset)


def _lines_before_in(data, offset: int) -> int:
    """The newlines in data[:offset], counted a block at a time (never a copy of the whole)."""
    step = 16 << 20
    return sum(bytes(data[at : min(offset, at + step)]).count(b"\n") for at in range(0, offset, step))


def read_bytes(name: str) -> bytes:
    """The whole of a file (decompressed if it is named .gz, .zst or .bz2), or of stdin for "-";
    at most MAX_DOCUMENT_BYTES of it (more is an error: /dev/zero never ends)."""
    if name == "-":
        return _bounded(_stdin_buffer().read(MAX_DOCUMENT_BYTES + 1), "<stdin>")
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

        try:
            with pa.input_stream(name, compression=compression) as stream:
                return _bounded(stream.read(MAX_DOCUMENT_BYTES + 1), label)
        except FileNotFoundError:
            raise InputError(f"{label}: no such file") from None
        except (OSError, pa.ArrowException) as e:
            raise InputError(f"{label}: cannot read or decompress ({e})") from None
    return bytes(_bounded(open_mmap(name, label), label))


def _bounded(data, label: str):
    """data, if it is no more than MAX_DOCUMENT_BYTES (read as MAX_DOCUMENT_BYTES + 1 at most)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _too_much(label)
    return data


def _too_much(label: str) -> InputError:
    return InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB, more than bpecli reads whole (is it an endless "
                      "stream, such as /dev/zero?); a file is read in parts by encode, encode --out and train")


def reads_whole(name: str) -> bool:
    """Whether encode reads this text input whole: stdin and other streams (read once, up to the
    budget) and local uncompressed files of at most PART_BYTES; others it reads in parts."""
    if name == "-" or is_stream(name):
        return True
    if is_uri(name) or input_kind(name)[1]:
        return False
    try:
        return os.stat(name).st_size <= PART_BYTES
    except OSError:
        return True  # missing or unreadable: said by the read


def text_parts(name: str, *, separators: list[str], safe_cut: str | None = None, errors: str = "strict") -> Iterator[str]:
    """The text of a file or URI (plain or compressed) a part at a time, cut before a separator
    or at a safe cut (see document_parts): what encode reads of a text too large to read whole."""
    for part in document_parts([(name, redact(name))], separators=separators, safe_cut=safe_cut):
        yield _part_text(part, _part_bytes(part), errors)


def read_text(name: str, errors: str = "strict", hint: str | None = None) -> str:
    """The text of a file or stdin; hint is what to suggest for invalid UTF-8 (ERRORS_HINT where
    the command has --errors)."""
    return decode_utf8(read_bytes(name), "<stdin>" if name == "-" else redact(name), errors=errors, hint=hint)


def read_ids(name: str) -> list[int]:
    """Whitespace-separated token ids in a file or stdin ("-")."""
    label = "<stdin>" if name == "-" else redact(name)
    raw = read_bytes(name)
    found = _binary_kind(raw, label, "token ids")
    if found is not None:
        raise found
    text = decode_utf8(raw, label)
    if _IDS.fullmatch(text):  # int() alone would take "²"'s neighbours "١" and "1_0"
        long = _LONG_ID.search(text)
        if long is None:
            return list(map(int, text.split()))
        row = text.count("\n", 0, long.start()) + 1
        raise InputError(f"{label}:{row}: {shown(long.group())} is no token id: ids have at most {MAX_ID_DIGITS} digits")
    for number, line in enumerate(text.splitlines(), 1):
        for word in line.split():
            if not _ID.fullmatch(word):
                raise InputError(f"{label}:{number}: {shown(word)} is not a token id (expected integers 0, 1, 2, ...)")
    raise InputError(f"{label}: holds something other than token ids and spaces")


# The largest id any shard holds, 2**64 - 1, has 20 digits: a longer number is no id (and int()
# refuses numbers of over 4,300 digits with a ValueError).
MAX_ID_DIGITS = 20
_IDS = re.compile(r"[0-9\s]*", re.ASCII)
_ID = re.compile(r"[0-9]+", re.ASCII)
_LONG_ID = re.compile(r"[0-9]{%d,}" % (MAX_ID_DIGITS + 1), re.ASCII)


def parse_id(text: str) -> int | None:
    """text as a token id or a count: ASCII digits alone, at most MAX_ID_DIGITS of them; else None
    (int() also takes "٣" as 3, and " 7" and "1_0").

    Example: "50256" -> 50256; "٣" -> None; "-1" -> None
    """
    if len(text) > MAX_ID_DIGITS or not _ID.fullmatch(text):
        return None
    return int(text)


def shown(text: str, limit: int = 40) -> str:
    """text quoted for a message, cut short if long: a 5,000-digit number makes one short line.

    Example: "7" * 5000 -> "'7777777777777777777777777777777777777777'… (5,000 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


# ---- documents for encoding to shards: text, JSONL and Parquet, plain or compressed -----------

# Compressed inputs are read through pyarrow's own streams; no extra packages.
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2"}
# Inputs are handed to workers in parts of about this many bytes, whatever the worker count, so
# that a part's number means the same thing on every run (resuming relies on it).
PART_BYTES = 2 << 20
# The memory budget for one document: bpecli reads a document (text between special tokens, a
# JSONL line, a Parquet value; in training, text between places it may cut) whole, and stops at
# one longer than this, naming where it starts, rather than grow without limit.
MAX_DOCUMENT_BYTES = 64 << 20
# A Parquet row group is one part, read whole: the most of its text column bpecli reads at once.
MAX_ROW_GROUP_BYTES = 1 << 30


@dataclass(frozen=True)
class Part:
    """A piece of one input that holds whole documents: a byte range of a file (start, end), a
    Parquet row group (start), or a block of a decompressed stream (data, first_line)."""

    path: str
    label: str  # the input as the user named it, for messages
    kind: str  # "text", "jsonl" or "parquet"
    start: int = 0
    end: int = 0
    data: bytes | None = None
    first_line: int = 1
    weight: int = 0  # the bytes of the input file it accounts for, for progress (compressed ones, for a stream)


def _path_of(name: str) -> str:
    """The path of a file name or URI, without a URI's query (?endpoint_override=...)."""
    if not is_uri(name):
        return name
    from urllib.parse import urlsplit

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


def document_parts(
    inputs: list[tuple[str, str]], *, separators: list[str], text_column: str = "text", safe_cut: str | None = None,
    part_bytes: int | None = None,
) -> Iterator[Part]:
    """Parts of every input, in order. inputs are (path, label) pairs; separators are the special
    tokens that end documents in text files. Text without separators is one document, unless
    safe_cut (a regex where the pattern surely starts a piece: training) says where else to cut it.
    A document longer than MAX_DOCUMENT_BYTES is an error that says where it starts.

    part_bytes overrides PART_BYTES where the parts need not be the same on every run (training).

    Example: a 10 MB text file -> Part(start=0, end=2097190), Part(start=2097190, ...), ...
    """
    part_bytes = part_bytes or PART_BYTES
    for path, label in inputs:
        path = path if is_uri(path) else os.path.abspath(path)  # workers elsewhere may not share our cwd
        kind, compression = input_kind(path)
        if kind == "parquet":
            yield from _parquet_parts(path, label, text_column)
            continue
        cuts = _Cuts(kind, separators, safe_cut)
        if compression:
            yield from _stream_parts(path, label, kind, compression, cuts, part_bytes)
            continue
        data = _RemoteBytes(path, label) if is_uri(path) else open_mmap(path, label)
        n_parts = -(-len(data) // part_bytes)
        if cuts.safe is not None:
            bounds = cuts.boundaries(data, n_parts)
        else:  # (JSONL files cut before a newline, as parts always were: a part's number means the same)
            bounds = chunk_boundaries(data, n_parts, cuts.literals)
        for a, b in zip(bounds, bounds[1:]):
            if b - a > MAX_DOCUMENT_BYTES:  # a part this long may hold a document past the budget
                _check_lengths(data, a, b, cuts, label)
        yield from (Part(path, label, kind, a, b, weight=b - a) for a, b in zip(bounds, bounds[1:]) if b > a)


class _Cuts:
    """Where an input may be cut into parts: before a separator in text, and in training also at a
    safe cut (a regex that matches just after a newline, where a piece surely starts: SAFE_CUT);
    after a newline in JSONL read as a stream (before it in a file, as parts were always cut)."""

    def __init__(self, kind: str, separators: list[str], safe_cut: str | None):
        self.kind, self.separators = kind, separators
        self.literals = [s.encode("utf-8") for s in separators] if kind == "text" else [b"\n"]
        self.after = 1 if kind != "text" else 0  # a JSONL cut is after its newline
        # (a safe cut is never inside a separator unless a separator holds a newline)
        use_safe = kind == "text" and safe_cut is not None and not any("\n" in s for s in separators)
        self.safe = re.compile(safe_cut.encode()) if use_safe and safe_cut is not None else None
        self.margin = max(map(len, self.literals), default=0) + 8  # a match may end this far into new data

    def last(self, data, start: int) -> int:
        """The last cut in data[start - margin:], -1 if none."""
        start = max(0, start - self.margin)
        found = max((data.rfind(c, start) for c in self.literals), default=-1)
        found = found + self.after if found >= 0 else -1
        if self.safe is not None:  # newlines found by a literal search, then checked: ~50x a regex search
            at = len(data)
            while (at := data.rfind(b"\n", max(start, found), at)) >= 0 and at + 1 > found:
                if self.safe.match(data, at + 1):
                    return at + 1
        return found

    def first(self, data, start: int, end: int | None = None) -> int:
        """The first cut in data[start + 1:end], -1 if none."""
        end = len(data) if end is None else end
        if isinstance(data, _RemoteBytes):  # searched a window at a time
            needles: list = [*self.literals, *([self.safe] if self.safe is not None else [])]
            found = [at + (self.after if i < len(self.literals) else 0)
                     for i, at in enumerate(data.search(needle, start + 1) for needle in needles) if 0 <= at < end]
            return min(found, default=-1)
        found = [at + self.after for at in (data.find(c, start + 1, end) for c in self.literals) if at >= 0]
        best = min(found, default=end)
        if self.safe is not None:
            at = start
            while (at := data.find(b"\n", at, best - 1)) >= 0:
                if self.safe.match(data, at + 1):
                    best = at + 1
                    break
                at += 1
        return best if best < end else -1

    def boundaries(self, data, n_parts: int) -> list[int]:
        """Offsets that cut data into about n_parts pieces, each at a cut."""
        size, bounds = len(data), [0]
        for i in range(1, n_parts):
            found = self.first(data, max(i * size // n_parts, bounds[-1] + 1) - 1)
            if found < 0:
                break
            bounds.append(found)
        return sorted(set(bounds + [size]))

    def too_long(self, label: str, start: int, line: int | None, decompressed: bool = False) -> InputError:
        """The error for a document of over MAX_DOCUMENT_BYTES that starts at byte `start`."""
        at = f"byte {start:,}" + (" of the decompressed data" if decompressed else "")
        budget = f"bpecli holds a document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one"
        if self.kind == "jsonl":
            where = f"{label}:{line}" if line is not None else label
            return InputError(f"{where}: a line of over {MAX_DOCUMENT_BYTES >> 20} MiB (from {at}); {budget}")
        names = " or ".join(s if s.isprintable() else repr(s) for s in self.separators[:3]) or "special token"
        if self.safe is not None:
            return InputError(f"{label}: over {MAX_DOCUMENT_BYTES >> 20} MiB from {at} with no {names} and no line "
                              f"starting with a letter or digit to cut it at (is it text?); {budget}")
        hint = f"put {names.split(' or ')[0]} between documents" if self.separators else "name a special token that separates them"
        return InputError(f"{label}: the document at {at} runs over {MAX_DOCUMENT_BYTES >> 20} MiB with no {names} "
                          f"in it (is it text?); {budget}: {hint}")


def _check_lengths(data, a: int, b: int, cuts: _Cuts, label: str) -> None:
    """An error for the first document in data[a:b] longer than MAX_DOCUMENT_BYTES."""
    start = a + 1 if cuts.after and bytes(data[a : a + 1]) == b"\n" else a  # (a JSONL file's part starts at a newline)
    while start < b:
        end = cuts.first(data, start, min(b, start + MAX_DOCUMENT_BYTES + cuts.margin + 1))
        if end < 0 or end - start > MAX_DOCUMENT_BYTES:
            if b - start <= MAX_DOCUMENT_BYTES:
                return
            line = _lines_before_in(data, start) + 1 if cuts.kind == "jsonl" else None
            raise cuts.too_long(label, start, line)
        start = end


def _parquet_parts(path: str, label: str, column: str) -> Iterator[Part]:
    from pyarrow import ArrowException, parquet

    try:
        with open_input(path, label) as source:
            metadata = parquet.ParquetFile(source).metadata
    except (OSError, ArrowException) as e:
        raise InputError(f"{label}: not a readable Parquet file ({e})") from None
    top = parquet_text_column(metadata.schema.to_arrow_schema(), column, label)[0]
    row, groups, size = 0, metadata.num_row_groups, input_stat(path, label)[0]
    for group in range(groups):  # progress: the file's bytes shared out among its row groups
        chunks = metadata.row_group(group)
        held = sum(chunks.column(i).total_uncompressed_size for i in range(chunks.num_columns)
                   if chunks.column(i).path_in_schema.split(".")[0] == top)  # what reading the column holds
        if held > MAX_ROW_GROUP_BYTES:
            raise _row_group_too_large(label, group, held)
        weight = size * (group + 1) // groups - size * group // groups
        yield Part(path, label, "parquet", start=group, first_line=row + 1, weight=weight)
        row += chunks.num_rows


def _row_group_too_large(label: str, group: int, held: int) -> InputError:
    return InputError(f"{label}: row group {group} holds {held / 2**20:,.0f} MiB of the text column, more than the "
                      f"{MAX_ROW_GROUP_BYTES >> 20} MiB bpecli reads at once (a row group is read whole); write the file "
                      "with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=10_000)")


def _stream_parts(path: str, label: str, kind: str, compression: str, cuts: _Cuts,
                  part_bytes: int = PART_BYTES) -> Iterator[Part]:
    """Blocks of a compressed stream, each cut at its last cut (see _Cuts); a document longer than
    MAX_DOCUMENT_BYTES is an error, so what is held stays within the budget."""
    import pyarrow as pa

    raw = open_input(path, label)  # its position: the compressed bytes read so far, for progress
    try:
        stream = pa.CompressedInputStream(raw, compression)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{label}: cannot read ({e})") from None
    pending = bytearray()  # what is read and not yet in a part: it starts where a document does
    offset = 0  # where pending starts in the decompressed data
    line = 1
    counted = 0

    def advance() -> int:  # the compressed bytes read since the last part
        nonlocal counted
        step, counted = max(0, raw.tell() - counted), max(counted, raw.tell())
        return step

    with stream, raw:
        while True:
            try:
                block = stream.read(part_bytes)
            except (OSError, pa.ArrowException) as e:
                raise InputError(f"{label}: cannot decompress ({e})") from None
            if not block:
                if len(pending) > MAX_DOCUMENT_BYTES:
                    raise cuts.too_long(label, offset, line, decompressed=True)
                if pending:
                    yield Part(path, label, kind, data=bytes(pending), first_line=line, weight=advance())
                return
            searched = len(pending)
            pending += block
            # pending held no cut but at its start: only the new bytes (and a margin) can hold one,
            # and the first of them ends the document pending starts with
            cut = cuts.last(pending, searched)
            first = cuts.first(pending, max(0, searched - cuts.margin - 1)) if cut > 0 else -1
            if (first if first > 0 else len(pending)) > MAX_DOCUMENT_BYTES:
                raise cuts.too_long(label, offset, line, decompressed=True)
            if cut <= 0:
                continue
            part = bytes(pending[:cut])
            del pending[:cut]
            yield Part(path, label, kind, data=part, first_line=line, weight=advance())
            line += part.count(b"\n")
            offset += cut


def read_documents(part: Part, *, splitter, text_column: str = "text", errors: str = "strict",
                   checksum: bool = True) -> tuple[list[str], int, str]:
    """The non-empty documents of a part, the number of bytes they came from, and the sha256 of
    what was read (a rerun checks that its inputs still hold the same bytes; "" if not asked for).
    splitter is the compiled special-token splitter for text inputs (see pretokenize.special_splitter).

    Example: text part b"a<|endoftext|>b<|endoftext|>" -> (["a", "b"], 28, "9f2c...")
    """
    if part.kind == "parquet":
        return _parquet_documents(part, text_column, errors)
    raw = _part_bytes(part)
    text = _part_text(part, raw, errors)
    digest = _sha256(raw) if checksum else ""
    if part.kind == "text":
        documents = splitter.split(text)[::2] if splitter else [text]
        return [d for d in documents if d], len(raw), digest
    return _jsonl_documents(text, part, text_column, errors), len(raw), digest


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def read_document_bytes(part: Part, *, splitter, checksum: bool = True) -> tuple[list[bytes], int, str]:
    """read_documents of a text part read strictly, as the UTF-8 bytes the bulk engine reads:
    cut at the special tokens (splitter: pretokenize.special_byte_splitter's) and checked
    without a str of the part, which is a second copy, made in a slow pass as soon as the part
    holds one non-ASCII character. Only documents that hold one are decoded, to check them."""
    raw = _part_bytes(part)
    digest = _sha256(raw) if checksum else ""
    documents = [d for d in (splitter.split(raw)[::2] if splitter else [raw]) if d]
    if not raw.isascii():
        try:
            for document in documents:
                if not document.isascii():
                    document.decode("utf-8")
        except UnicodeDecodeError:
            _part_text(part, raw, "strict")  # says where: a document is invalid only where the part is
    return documents, len(raw), digest


def read_records(name: str, *, text_column: str = "text", errors: str = "strict") -> Iterator[tuple[int, str]]:
    """(line or row number, text) of every record of a JSONL or Parquet input (plain or
    compressed, a file, a stream or a URI), empty texts too, read a part at a time: the documents
    train and encode --out read, one by one, for encode to print a line of ids each.

    Example: a.jsonl holding {"text": "hi"}, a blank line, {"text": ""} -> (1, "hi"), (3, "")
    """
    with streams_spooled([name], errors=errors) as pairs:
        before = 0  # the lines of the parts before this one (JSONL parts start where a line does)
        for part in document_parts(pairs, separators=[], text_column=text_column):
            if part.kind == "parquet":
                yield from enumerate(_parquet_texts(part, text_column, errors)[0], part.first_line)
                continue
            text = _part_text(part, _part_bytes(part), errors)
            first = part.first_line if part.data is not None else before + 1
            yield from ((first + i, value) for i, value in _jsonl_records(text, part, text_column, errors))
            before = first - 1 + text.count("\n")


def _part_bytes(part: Part) -> bytes:
    return read_range(part.path, part.label, part.start, part.end) if part.data is None else part.data


def _part_text(part: Part, raw: bytes, errors: str) -> str:
    """A part's bytes as text; invalid UTF-8 is an error that says where (see decode_utf8)."""
    if part.data is None:
        return decode_utf8(raw, part.label, errors=errors, offset=part.start, hint=ERRORS_HINT,
                           lines_before=lambda: _lines_before(part.path, part.start))
    return decode_utf8(raw, part.label, errors=errors, first_line=part.first_line, hint=ERRORS_HINT)


def _jsonl_documents(text: str, part: Part, column: str, errors: str = "strict") -> list[str]:
    return [value for _, value in _jsonl_records(text, part, column, errors) if value]


def _jsonl_records(text: str, part: Part, column: str, errors: str = "strict") -> Iterator[tuple[int, str]]:
    """(index of its line in the part, its text) for each record of a JSONL part, empty texts too;
    blank lines hold no record."""
    import json

    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        where = lambda: f"{part.label}:{_line_number(part, i)}"  # noqa: E731 (counted only for an error)
        try:
            # numbers as floats: only the text field matters, and int() refuses over 4,300 digits
            record = json.loads(line, parse_int=float)
        except json.JSONDecodeError as e:
            if line.startswith("\ufeff"):
                raise InputError(f"{where()}: starts with a byte-order mark (U+FEFF), which JSON Lines does not have; "
                                 "save the file as UTF-8 without one") from None
            raise InputError(f"{where()}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise InputError(f"{where()}: JSON nested too deeply to read (over {sys.getrecursionlimit():,} levels)") from None
        if not isinstance(record, dict):
            raise InputError(f"{where()}: a JSON {_json_kind(record)}, not an object with a {column!r} field")
        if column not in record:
            fields = ", ".join(map(repr, list(record)[:8])) or "none"
            raise InputError(f"{where()}: no field {column!r} (fields: {fields}); name the text field with --text-column")
        value = record[column]
        if not isinstance(value, str):
            raise InputError(f"{where()}: field {column!r} holds a JSON {_json_kind(value)}, not a string of text")
        if not value.isascii() and (surrogate := _SURROGATE.search(value)):
            # "\ud800" alone is valid JSON but no character: an error, or U+FFFD as tiktoken makes it
            if errors == "strict":
                raise InputError(f"{where()}: field {column!r} holds a lone surrogate ({surrogate.group()!r} at character "
                                 f"{surrogate.start():,}), which is not text; {ERRORS_HINT}")
            value = _SURROGATE.sub("\ufffd", value)
        yield i, value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_kind(value) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "null")


def _line_number(part: Part, index: int) -> int:
    """The line number of line `index` of a part (counted only when an error needs it)."""
    if part.data is not None:
        return part.first_line + index
    return _lines_before(part.path, part.start) + 1 + index


def parquet_text_column(schema, column: str, label: str):
    """The path to the text column: a top-level name, or "outer.inner" for a field of a struct.
    Anything but text (dictionary-encoded text is text) is an error saying what it holds."""
    import pyarrow as pa

    names = column.split(".")
    if names[0] not in schema.names:
        raise InputError(f"{label}: no column {column!r} (it has {', '.join(schema.names)}); name one with --text-column")
    kind = schema.field(names[0]).type
    for depth, name in enumerate(names[1:], 1):
        if not pa.types.is_struct(kind) or kind.get_field_index(name) < 0:
            raise InputError(f"{label}: column {'.'.join(names[:depth])!r} has no field {name!r} ({kind})")
        kind = kind.field(name).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_struct(kind):
        fields = ", ".join(f"{column}.{kind.field(i).name}" for i in range(kind.num_fields))
        raise InputError(f"{label}: column {column!r} is a struct; name its text field with --text-column ({fields})")
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        raise InputError(f"{label}: column {column!r} holds lists ({kind}), not one text per row; "
                         "flatten it first, or name another column with --text-column")
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or str(kind) == "string_view"):
        raise InputError(f"{label}: column {column!r} holds {kind}, not text; name a text column with --text-column")
    return names


def _parquet_documents(part: Part, column: str, errors: str = "strict") -> tuple[list[str], int, str]:
    texts, n_bytes, digest = _parquet_texts(part, column, errors)
    return [text for text in texts if text], n_bytes, digest


def _parquet_texts(part: Part, column: str, errors: str = "strict") -> tuple[list[str], int, str]:
    """The text of every row of a Parquet part (a row group), empty ones too; the bytes they
    hold and their sha256."""
    import pyarrow as pa
    from pyarrow import compute, parquet

    try:
        with open_input(part.path, part.label) as source:
            file = parquet.ParquetFile(source)
            names = parquet_text_column(file.schema_arrow, column, part.label)
            values = file.read_row_group(part.start, columns=[names[0]]).column(0)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{part.label}: cannot read row group {part.start} ({e})") from None
    for name in names[1:]:
        values = compute.struct_field(values, name)
    if pa.types.is_dictionary(values.type):  # its texts written out: a few repeated ones may be huge
        held = sum(compute.sum(compute.take(compute.binary_length(chunk.dictionary), chunk.indices)).as_py() or 0
                   for chunk in values.chunks)
        if held > MAX_ROW_GROUP_BYTES:
            raise _row_group_too_large(part.label, part.start, held)
        values = values.cast(values.type.value_type)
    values = values.cast(pa.large_string()).combine_chunks()
    lengths = compute.binary_length(values)
    if len(values) and (compute.max(lengths).as_py() or 0) > MAX_DOCUMENT_BYTES:
        row = part.first_line + compute.index(compute.greater(lengths, MAX_DOCUMENT_BYTES), True).as_py()
        raise InputError(f"{part.label}: row {row}: column {column!r} holds over {MAX_DOCUMENT_BYTES >> 20} MiB of text; "
                         f"bpecli holds a document whole, and at most {MAX_DOCUMENT_BYTES >> 20} MiB of one")
    if values.null_count:
        row = part.first_line + compute.index(compute.is_null(values), True).as_py()
        raise InputError(f"{part.label}: row {row}: column {column!r} is null, not text")
    import hashlib

    digest = hashlib.sha256()
    for buffer in values.buffers()[1:]:
        digest.update(buffer)
    try:
        documents = values.to_pylist()
    except UnicodeDecodeError:  # a writer that did not check its strings: said as for a text file
        documents = _checked_texts(values.cast(pa.large_binary()).to_pylist(), part, column, errors)
    return documents, compute.sum(compute.binary_length(values)).as_py() or 0, digest.hexdigest()


def _checked_texts(values: list[bytes], part: Part, column: str, errors: str) -> list[str]:
    """The values of a Parquet string column that holds invalid UTF-8: an error naming the first
    bad row, or with errors="replace" U+FFFD in place of each bad byte."""
    texts = []
    for row, value in enumerate(values, part.first_line):
        try:
            texts.append(value.decode("utf-8", errors=errors))
        except UnicodeDecodeError as e:
            raise InputError(f"{part.label}: row {row}: column {column!r} holds invalid UTF-8 at byte {e.start} "
                             f"({value[e.start:e.start + 4]!r}); {ERRORS_HINT}") from None
    return texts
