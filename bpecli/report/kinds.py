"""Kinds of tokens: ASCII letters, digits, whitespace, punctuation and code, each script of
non-ASCII text, and pieces of UTF-8 characters."""

from __future__ import annotations

from functools import cache

import regex

LETTERS, DIGITS, WHITESPACE, CODE = "ASCII letters", "digits", "whitespace", "punctuation & code"
SYMBOLS, PIECES = "non-ASCII symbols", "pieces of characters"
# The scripts named on their own, by the names Unicode gives them (\p{Script=...}); any other is
# "other scripts". Latin here means accented and other non-ASCII Latin letters.
SCRIPTS = {
    "Latin": "Latin, non-ASCII", "Greek": "Greek", "Cyrillic": "Cyrillic", "Armenian": "Armenian",
    "Hebrew": "Hebrew", "Arabic": "Arabic", "Devanagari": "Devanagari", "Bengali": "Bengali",
    "Tamil": "Tamil", "Telugu": "Telugu", "Thai": "Thai", "Georgian": "Georgian", "Hangul": "Hangul",
    "Hiragana": "Japanese kana", "Katakana": "Japanese kana", "Han": "Han (CJK)",
}
OTHER_SCRIPTS = "other scripts"
# A character's own script first; then the scripts it is used with (the kana length mark is
# "Common" itself, and used with Hiragana and Katakana).
_SCRIPTS = [regex.compile("|".join(f"(?P<{name}>\\p{{{key}={name}}})" for name in SCRIPTS))
            for key in ("Script", "Script_Extensions")]


def kind_of(token: bytes) -> str:
    """The kind of an ordinary token, from its bytes (a leading space does not count).

    Example: b" the" -> "ASCII letters"; b" 42" -> "digits"; b"\\xd0\\xbf" -> "Cyrillic"
    """
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return PIECES
    word = text[1:] if text.startswith(" ") and len(text) > 1 else text
    if word.isspace():
        return WHITESPACE
    if word.isascii():
        return LETTERS if word.isalpha() else DIGITS if word.isdigit() else CODE
    letter = next((c for c in word if not c.isascii() and c.isalpha()), None)
    if letter is not None:
        return _script(letter)
    return DIGITS if word.isdigit() else SYMBOLS


@cache
def _script(char: str) -> str:
    for scripts in _SCRIPTS:
        found = scripts.match(char)
        if found and found.lastgroup:
            return SCRIPTS[found.lastgroup]
    return OTHER_SCRIPTS


def kinds(ranks: dict[bytes, int], examples: int = 6) -> list[dict]:
    """How many ordinary tokens there are of each kind, with the earliest of each (the lowest
    ids, the merges made first), the most common kind first."""
    found: dict[str, list[tuple[int, bytes]]] = {}
    for token, rank in ranks.items():
        found.setdefault(kind_of(token), []).append((rank, token))
    out = []
    for kind, tokens in sorted(found.items(), key=lambda item: (-len(item[1]), item[0])):
        tokens.sort()
        longer = [t for t in tokens if len(t[1]) > 1] or tokens  # single bytes say little
        out.append({"kind": kind, "tokens": len(tokens), "share": len(tokens) / max(1, len(ranks)),
                    "mean_bytes": sum(len(t) for _, t in tokens) / len(tokens),
                    "examples": [{"id": rank, "bytes": token} for rank, token in longer[:examples]]})
    return out
