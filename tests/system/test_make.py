"""encode --out --force as Make needs it: the same run is resumed or kept, anything else rebuilt,
and examples/Makefile runs as a data-prep step with no hand step."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from unit.shards.test_make_reruns import corpus  # noqa: F401


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.system
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_example_makefile_builds_checks_and_rebuilds_with_make(tmp_path):
    """`make` trains, shards and checks; a second `make` has nothing to do; a changed corpus is
    rebuilt, and shards the retrained tokenizer would write again are kept, with no hand step."""
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    bpecli = f"{sys.executable} -m bpecli"

    def make(*targets):
        done = subprocess.run(["make", "-C", str(work), f"BPECLI={bpecli}", *targets], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    make()
    manifest = json.loads((work / "shards" / "manifest.json").read_text())
    assert manifest["total_tokens"] > 0 and (work / "tok" / "tokenizer.json").is_file()
    assert "Nothing to be done" in make("shards/manifest.json") or "is up to date" in make("shards/manifest.json")
    # the corpus grows: the shards are rebuilt from it, by the same rule
    with open(work / "sample.txt", "a", encoding="utf-8") as f:
        f.write("\nA new paragraph at the end of the corpus.\n")
    make()
    assert json.loads((work / "shards" / "manifest.json").read_text())["inputs"][0]["size"] == (work / "sample.txt").stat().st_size
    # the tokenizer trained again (the same files, newer): the shards are what it would write, so
    # they are kept, and make has nothing more to do
    os.utime(work / "tok" / "bpecli.json")
    shards = {p.name: p.stat().st_mtime_ns for p in (work / "shards").iterdir() if p.name != "manifest.json"}
    make()
    assert {p.name: p.stat().st_mtime_ns for p in (work / "shards").iterdir() if p.name != "manifest.json"} == shards
    assert "Nothing to be done" in make("shards/manifest.json") or "is up to date" in make("shards/manifest.json")
    assert subprocess.run([sys.executable, "-m", "bpecli", "inspect", str(work / "shards"), "--verify"],
                          capture_output=True).returncode == 0
