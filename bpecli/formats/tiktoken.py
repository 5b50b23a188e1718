"""tiktoken's ranks files (.tiktoken): base64 of each token's bytes, a space, its rank; one token a
line. They hold no pattern and no special tokens: cl100k's pattern and tiktoken's special tokens
for the number of ranks are taken unless told otherwise."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

from .. import folders
from ..errors import TokenizerFileError
from ..vocab import MAX_ID, Vocab
from .common import checked, pattern_of

# The special tokens of tiktoken's encodings, known by the number of ordinary tokens they have.
SPECIAL_PRESETS = {
    50256: {"<|endoftext|>": 50256},
    100256: {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    199998: {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


def write_tiktoken(vocab: Vocab, path: Path) -> None:
    """tiktoken's ranks file: base64 of the token's bytes, a space, its rank; one per line."""
    lines = [
        f"{binascii.b2a_base64(token, newline=False).decode('ascii')} {rank}\n"
        for token, rank in sorted(vocab.ranks.items(), key=lambda item: item[1])
    ]
    path.write_text("".join(lines), encoding="ascii")


def load_tiktoken(generation: folders.Generation, name: str, pattern: str | None,
                  special_tokens: dict[str, int] | None) -> Vocab:
    """The vocabulary of a .tiktoken file of the folder."""
    shown = generation.path / name
    ranks = parse_tiktoken(generation.read(name), shown, quote=not generation.linked(name))
    specials = special_tokens if special_tokens is not None else SPECIAL_PRESETS.get(len(ranks), {})
    return checked(shown, ranks, specials, pattern_of(pattern, "cl100k", "the default for .tiktoken files"), [shown])


# A .tiktoken file as tiktoken writes it: every line "base64 rank"; such a file is read in a few
# calls over all of it, any other line by line (which says where a bad line is).
_TIKTOKEN_LINES = re.compile(r"(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,10}\n)*")


def parse_tiktoken(data: bytes, path: Path, *, quote: bool) -> dict[bytes, int]:
    """The ranks in a .tiktoken file's bytes. quote=False keeps the file's lines out of the errors
    (a file reached by a symbolic link may be anyone's)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{path}: byte 0x{data[e.start]:02x} at offset {e.start:,} is not ASCII; a .tiktoken "
                                 "file holds lines of 'base64 rank'") from None
    if _TIKTOKEN_LINES.fullmatch(text):
        fields = text.split()
        try:
            ranks = dict(zip(map(binascii.a2b_base64, fields[::2]), map(int, fields[1::2])))
            if 2 * len(ranks) == len(fields):  # else a token listed twice: the lines below say where
                return ranks
        except binascii.Error:  # padding that does not fit: the lines below say where
            pass
    ranks = {}
    lines: dict[bytes, int] = {}  # token -> the line it was on
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        shown = f" {line[:60]!r}" if quote else ""
        parts = line.split()
        if len(parts) != 2 or not parts[1].removeprefix("-").isdigit():  # ASCII digits: the text is ASCII
            raise TokenizerFileError(f"{where}: error parsing line{shown} (expected 'base64 rank')")
        if len(parts[1]) > len(str(MAX_ID)):  # (the range check after this names ids of a few digits)
            raise TokenizerFileError(f"{where}: a rank of {len(parts[1]):,} characters is out of range: bpecli's ids "
                                     f"are 0 to {MAX_ID:,}")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except binascii.Error:
            raise TokenizerFileError(f"{where}: error parsing line{shown} (expected 'base64 rank')") from None
        if token in ranks:
            raise TokenizerFileError(f"{where}: the token of line {lines[token]} is listed again; a token has one rank")
        ranks[token], lines[token] = int(parts[1]), number
    return ranks
