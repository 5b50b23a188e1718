"""docs/cli.md, the command-line reference, made from the commands' own --help.

`python -m bpecli.cli.reference docs/cli.md` writes it; tests/test_cli_reference.py fails when the
file differs from what this makes, so the reference cannot fall behind the help.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WIDTH = "80"  # click wraps help at 80 columns at most: a narrower terminal must not change the file

_HEAD = """# Command-line reference

Every command's `--help`, as `bpecli COMMAND --help` prints it. This file is generated:
`python -m bpecli.cli.reference docs/cli.md` writes it again, and a test fails when it is stale.
"""


_AS_BPECLI = "import sys; sys.argv[0] = 'bpecli'; from bpecli.cli import main; main()"  # the console script's name


def help_text(*command: str) -> str:
    """What `bpecli COMMAND --help` prints, as plain text (click's layout, without rich's boxes)."""
    env = dict(os.environ, TYPER_USE_RICH="0", COLUMNS=WIDTH, TERM="dumb", NO_COLOR="1")
    result = subprocess.run([sys.executable, "-c", _AS_BPECLI, *command, "--help"], env=env, capture_output=True,
                            text=True, check=True)
    return result.stdout.rstrip() + "\n"


def commands() -> list[str]:
    """The names of the app's commands, in the order of its help."""
    from typer.main import get_command_name

    from .app import app

    return [info.name or get_command_name(info.callback.__name__) for info in app.registered_commands]  # type: ignore[union-attr]


def reference() -> str:
    """The Markdown text of docs/cli.md."""
    sections = [_HEAD, "## bpecli\n", "```text\n" + help_text() + "```\n"]
    for name in commands():
        sections += [f"## bpecli {name}\n", "```text\n" + help_text(name) + "```\n"]
    return "\n".join(sections)


def main(argv: list[str]) -> None:
    """Write the reference to the file named, or to stdout."""
    text = reference()
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
