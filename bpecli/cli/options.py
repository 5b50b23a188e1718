"""The options the commands share: choices as enums, whole numbers and fractions read as ASCII
digits only, and the option types several commands take."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..parallel import available_cpus

# corpus is imported inside functions: --help, --version and shell completion do not load it.


class Errors(str, Enum):
    strict = "strict"
    replace = "replace"  # type: ignore[assignment]  # str.replace: the member wins, as typer reads it


class Format(str, Enum):
    ids = "ids"
    tokens = "tokens"
    json = "json"
    count = "count"  # type: ignore[assignment]


class AllowedSpecial(str, Enum):
    """encode --allowed-special, as tiktoken's allowed_special: all special tokens in the text
    become their ids, or none do (the text is encoded as it is)."""

    all = "all"
    none = "none"


class ShardFormat(str, Enum):
    npy = "npy"
    llmc = "llmc"
    nanogpt = "nanogpt"


class Dtype(str, Enum):
    auto = "auto"
    uint16 = "uint16"
    uint32 = "uint32"


class Peer(str, Enum):
    tiktoken = "tiktoken"
    tokenizers = "tokenizers"


def cpus() -> int:
    """The default of --workers: the CPUs this process may use."""
    return available_cpus()


def _whole(minimum: int, maximum: int | None = None):
    """The parser of a whole-number option: ASCII digits only (int() takes "٣" as 3), and a number
    too long to be a count, or out of range, is refused in one short line (a usage error, exit 2)."""

    def parse(value: str | int) -> int:
        if isinstance(value, int):  # the default
            return value
        from ..inputs.documents import parse_id, shown

        number = parse_id(value)
        if number is None:
            too_long = value.isascii() and value.isdigit()
            raise typer.BadParameter(f"{shown(value)} is {'too large' if too_long else 'not a whole number of ASCII digits'}")
        if number < minimum:
            raise typer.BadParameter(f"{number} is below {minimum}")
        if maximum is not None and number > maximum:
            raise typer.BadParameter(f"{number:,} is above {maximum:,}")
        return number

    parse.__name__ = "int range"
    return parse


def whole_option(minimum: int, maximum: int | None = None, **kwargs):
    """A whole-number option from minimum (to maximum), shown as typer shows an int range."""
    shown = f"{minimum}<=x<={maximum}" if maximum is not None else f"x>={minimum}"
    return typer.Option(parser=_whole(minimum, maximum), metavar=f"<int range> [{shown}]", **kwargs)


_FRACTION = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)


def fraction(value: str | float) -> float:
    """The parser of a fraction strictly between 0 and 1: ASCII digits, a point and an exponent
    only (float() also takes "٠.٥", "nan" and "1_0"); out of range is a usage error (exit 2)."""
    if isinstance(value, float):
        return value
    from ..inputs.documents import shown

    if not _FRACTION.fullmatch(value):
        raise typer.BadParameter(f"{shown(value)} is not a number such as 0.005")
    number = float(value)
    if not 0 < number < 1:
        raise typer.BadParameter(f"{shown(value)} is not between 0 and 1 (a fraction such as 0.005)")
    return number


FRACTION_METAVAR = "<float range> [0<x<1]"


def normalize_steps(value: str) -> str:
    """The parser of --normalize: each of its comma-separated steps must be one (a usage error, exit 2)."""
    from ..normalize import STEPS, unknown_step

    unknown = [step for step in (part.strip().lower() for part in value.split(",")) if step and step not in STEPS]
    if unknown:
        raise typer.BadParameter(unknown_step(unknown[0]))
    return value


def command_line_text(value: str) -> str:
    """The parser of a text given on the command line: bytes that are not UTF-8 (which Python
    reads as lone surrogates) are a usage error, as they are an error in a file or on stdin."""
    bad = next((at for at, character in enumerate(value) if "\udc80" <= character <= "\udcff"), None)
    if bad is not None:
        raise typer.BadParameter(f"byte 0x{ord(value[bad]) - 0xDC00:02x} (character {bad}) is not UTF-8")
    return value


def named(value: str) -> str:
    """The parser of a file, folder or tokenizer name: an empty one is a usage error (exit 2), where
    a path would take it as the current folder."""
    if value == "":
        raise typer.BadParameter("is empty; name a file or folder (. is the current folder)")
    return value


def folder(value: str | Path) -> Path:
    """The parser of a folder or file to write: a Path, and never an empty name."""
    return value if isinstance(value, Path) else Path(named(value))


named.__name__, folder.__name__ = "str", "path"  # the metavars typer shows, as before the parsers


TokenizerOption = Annotated[  # a str, as given: a Path would write "s3://" as "s3:/" in messages
    str, typer.Option("--tokenizer", "-t", parser=named, help="A bpecli folder, vocab.json, tokenizer.json or .tiktoken file, or the name of an encoding tiktoken knows (gpt2, cl100k_base, o200k_base...; a file of that name wins).")
]
SchedulerOption = Annotated[Optional[str], typer.Option(
    envvar="BPECLI_SCHEDULER", show_envvar=False, show_default="this machine",  # (in the help, "[...]" is rich's markup)
    help="Run the workers on a Dask cluster: its scheduler's address (tcp://host:8786) or scheduler file; "
         "also BPECLI_SCHEDULER. Inputs must be reachable from the workers.")]
PatternOption = Annotated[
    Optional[str], typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex (for .tiktoken files).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="A machine-readable result on stdout.")]
SpecialIdsOption = Annotated[
    Optional[list[str]], typer.Option("--special-ids", help="TOKEN=ID, repeatable (for .tiktoken files).")
]
