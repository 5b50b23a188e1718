"""docs/cli.md is the commands' --help as it is now, and the README and docs spell only options that
the help has."""

from __future__ import annotations

import re
from pathlib import Path

from bpecli.cli.reference import commands, reference

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"


def test_cli_reference_is_current():
    assert CLI_MD.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md is stale: run `python -m bpecli.cli.reference docs/cli.md`")


def test_cli_reference_has_every_command():
    text = CLI_MD.read_text(encoding="utf-8")
    assert commands() == ["train", "encode", "decode", "inspect", "bench"]
    for name in commands():
        assert f"## bpecli {name}\n" in text and f"Usage: bpecli {name} [OPTIONS]" in text


def test_readme_and_docs_name_only_options_the_help_has():
    helps = CLI_MD.read_text(encoding="utf-8")
    known = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", helps))
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for document in documents:
        if document == CLI_MD:
            continue
        # options of bpecli's command lines only: not pip's, pytest's, dask's or make's
        for line in document.read_text(encoding="utf-8").splitlines():
            for command in re.findall(r"bpecli (?:train|encode|decode|inspect|bench)\b[^|`]*", line):
                unknown = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", command)) - known
                assert not unknown, f"{document.name}: {sorted(unknown)} in {command!r} is no option of bpecli's --help"


def test_the_terminal_help_shows_every_default_the_reference_shows():
    """Rich reads "[...]" written into an option's help as markup and drops it: every default
    goes through show_default, so that the terminal's help says it as the reference does."""
    import os
    import subprocess
    import sys

    from bpecli.cli.reference import _AS_BPECLI, help_text

    for name in commands():
        rich = subprocess.run([sys.executable, "-c", _AS_BPECLI, name, "--help"], capture_output=True, text=True,
                              env=dict(os.environ, COLUMNS="400", TERM="xterm"), check=True).stdout
        assert rich.count("[default:") == help_text(name).replace("\n", " ").count("[default:"), name
