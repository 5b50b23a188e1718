"""GPT-2's byte-level alphabet: each byte a printable character (space is "Ġ", newline "Ċ"), as
vocab.json, merges.txt and tokenizer.json spell tokens."""

from __future__ import annotations

import codecs
from functools import cache
from itertools import accumulate


@cache
def byte_to_char() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character alphabet (space is "Ġ", newline "Ċ").

    Bytes that print as themselves keep their code point; the others take 256, 257, ... in order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@cache
def _alphabet() -> str:
    """byte_to_char as 256 characters, byte by byte: the table of a charmap codec, which maps
    bytes to the alphabet and back in C."""
    return "".join(byte_to_char()[b] for b in range(256))


@cache
def _encoding_map():
    return codecs.charmap_build(_alphabet())


def token_to_str(token: bytes) -> str:
    """Example: b" hello" -> "Ġhello" """
    return codecs.charmap_decode(token, "strict", _alphabet())[0]


def str_to_token(text: str) -> bytes | None:
    """The inverse of token_to_str; None if text has a character outside the alphabet.

    Example: "Ġhello" -> b" hello"; "a b" -> None (a plain space is not in the alphabet)
    """
    try:
        return codecs.charmap_encode(text, "strict", _encoding_map())[0]
    except UnicodeEncodeError:
        return None


def strs_to_tokens(texts: list[str]) -> list[bytes | None]:
    """str_to_token of each text: in one encode when all their characters are in the alphabet
    (each character is one byte, so the bytes are cut where the texts end), else one by one."""
    joined = str_to_token("".join(texts))
    if joined is None:
        return list(map(str_to_token, texts))
    ends = list(accumulate(map(len, texts)))
    return list(map(joined.__getitem__, map(slice, [0, *ends[:-1]], ends)))
