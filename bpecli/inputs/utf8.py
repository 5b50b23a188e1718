"""Bytes as text: UTF-8 decoding that says where it failed (file, line, byte), and what to say of
data that is compressed or Parquet rather than text."""

from __future__ import annotations

from ..errors import InputError, arg

# The hint for invalid UTF-8, where the caller can read with errors="replace".
ERRORS_HINT = f"to carry on with U+FFFD in its place, use {arg('errors', 'replace')}"

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
            found = binary_kind(raw, name)
            if found is not None:
                raise found from None
        where = offset + e.start
        line = raw[: e.start].count(b"\n") + (lines_before() + 1 if lines_before else first_line)
        raise InputError(
            f"{name}:{line}: invalid UTF-8 at byte {where} ({raw[e.start:e.start + 4]!r})" + (f"; {hint}" if hint else "")
        ) from None


def binary_kind(raw: bytes, name: str, wanted: str = "text") -> InputError | None:
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
