"""The layout of the project: every package installed, no import cycle, no module or class too
long, no development diary in its files."""

from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_bpecli_is_installed():
    """Every folder of bpecli that holds Python files is a package the build ships: a folder
    without __init__.py, or one pyproject's rule leaves out, would be missing from a non-editable
    install (the README's first command) while every test here still passed."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    from setuptools import find_packages

    rule = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    shipped = set(find_packages(where=ROOT, include=rule["include"]))
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bpecli").rglob("*.py")}
    assert "bpecli.cli" in found and shipped == found
