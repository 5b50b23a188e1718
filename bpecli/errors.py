"""The errors a user may see. Their messages speak the library's terms: an argument is named by
arg(), which Python callers read as `errors='replace'` and the command line as `--errors replace`.
The CLI prints the message on one line and exits 1."""

from __future__ import annotations

import re
from collections.abc import Mapping

# An argument named in a message: its name and, if one is suggested, a value, between two
# private-use characters that no path or text in a message is taken for.
_OPEN, _SEP, _CLOSE = "\ue000", "\ue001", "\ue002"
_ARG = re.compile(f"{_OPEN}([^{_SEP}{_CLOSE}]*)(?:{_SEP}([^{_CLOSE}]*))?{_CLOSE}")


def arg(name: str, value: object = None) -> str:
    """An argument (and a value for it) inside an error message, shown as each caller spells it.

    Example: f"use {arg('errors', 'replace')}" -> "use errors='replace'" in Python,
    "use --errors replace" on the command line
    """
    if value is None:
        return f"{_OPEN}{name}{_CLOSE}"
    return f"{_OPEN}{name}{_SEP}{value!r}{_CLOSE}"


def _as_python(match: re.Match) -> str:
    name, value = match.group(1), match.group(2)
    return name if value is None else f"{name}={value}"


def render_for_cli(message: str, flags: Mapping[str, str] = {}) -> str:
    """message with each argument spelled as its flag: flags maps an argument name to its flag
    where they differ; otherwise it is "--" and the name with dashes. A value of True is the flag
    alone.

    Example: "use {arg('errors', 'replace')}" -> "use --errors replace"
    """

    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(2)
        option = flags.get(name, "--" + name.replace("_", "-"))
        if value is None or value == "True":
            return option
        if value[:1] in ("'", '"'):  # a string's repr: the shell takes it bare
            value = value[1:-1]
        return f"{option} {value}"

    return _ARG.sub(flag, message)


class BpecliError(Exception):
    """A problem with the user's input or files; the message is safe to show and says what to do."""

    def __str__(self) -> str:
        return _ARG.sub(_as_python, self._message())

    def for_cli(self, flags: Mapping[str, str] = {}) -> str:
        """The message as the command line shows it: each argument named as its flag (--errors replace)."""
        return render_for_cli(self._message(), flags)

    def _message(self) -> str:
        # the message itself: KeyError's own str() would quote it
        return str(self.args[0]) if len(self.args) == 1 else Exception.__str__(self)


class InputError(BpecliError):
    """An input file is missing, unreadable, empty or not valid text."""


class TokenizerFileError(BpecliError):
    """A tokenizer file is of no known format, corrupt, or of another format version."""


class OutputError(BpecliError):
    """The output location exists already, or cannot be written."""


class DisallowedSpecialError(BpecliError, ValueError):
    """Text holds a special token that encode was told not to accept (tiktoken raises ValueError)."""


class UnknownIdError(BpecliError, KeyError):
    """An id outside the vocabulary (tiktoken raises KeyError); position: where it is among the ids
    decoded."""

    def __init__(self, message: str, position: int = 0):
        super().__init__(message)
        self.position = position
