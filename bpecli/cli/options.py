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


class Special(str, Enum):
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


def _whole(minimum: int):
    """The parser of a whole-number option: ASCII digits only (int() takes "٣" as 3), and a number
    too long to be a count is refused in one short line."""

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
        return number

    parse.__name__ = "int range"
    return parse


def whole_option(minimum: int, **kwargs):
    """A whole-number option of at least minimum."""
    return typer.Option(parser=_whole(minimum), metavar=f"<int range> [x>={minimum}]", **kwargs)


_FRACTION = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)


def fraction(value: str | float) -> float:
    """The parser of a fraction: ASCII digits, a point and an exponent only (float() also takes
    "٠.٥", "nan" and "1_0")."""
    if isinstance(value, float):
        return value
    if not _FRACTION.fullmatch(value):
        from ..inputs.documents import shown

        raise typer.BadParameter(f"{shown(value)} is not a number such as 0.005")
    return float(value)


fraction.__name__ = "float"


TokenizerOption = Annotated[  # a str, as given: a Path would write "s3://" as "s3:/" in messages
    str, typer.Option("--tokenizer", "-t", help="A bpecli folder, vocab.json, tokenizer.json or .tiktoken file.")
]
SchedulerOption = Annotated[Optional[str], typer.Option(
    envvar="BPECLI_SCHEDULER", show_envvar=False,
    help="Run the workers on a Dask cluster: its scheduler's address (tcp://host:8786) or scheduler file; "
         "also BPECLI_SCHEDULER. Inputs must be reachable from the workers. [default: this machine]")]
PatternOption = Annotated[
    Optional[str], typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex (for .tiktoken files).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="A machine-readable result on stdout.")]
SpecialIdsOption = Annotated[
    Optional[list[str]], typer.Option("--special-ids", help="TOKEN=ID, repeatable (for .tiktoken files).")
]
