"""The README's shell blocks run as written from a fresh copy of the repository with nothing beside
it (no ../shared): each ```sh block in order, in one folder holding the repository's files.

What the test environment stands in for:
- the install line (`python3 -m venv .venv && ... pip install .`) needs the network; it runs as
  written only with BPECLI_TEST_INSTALL=1, otherwise the rest of its block runs with the bpecli
  these tests run against;
- the test command is not run (it is the whole suite): it must be word for word what .ci/run runs;
- the S3 block runs against a local S3-compatible server (moto's) whose bucket `corpora` holds the
  examples' files, with AWS_ENDPOINT_URL pointing at it; skipped when moto is not installed;
- the Dask block starts its own scheduler and workers, as written, and they are stopped after it;
  skipped when dask.distributed is not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install ."


def shell_blocks(text: str) -> list[str]:
    """The ```sh blocks of a Markdown text, in order."""
    return [m.group(1) for m in re.finditer(r"^```sh\n(.*?)^```$", text, re.S | re.M)]


def _kind(block: str) -> str:
    if "pytest" in block:
        return "tests"
    if "s3://" in block:
        return "s3"
    if "--scheduler" in block:
        return "dask"
    return "local"


BLOCKS = shell_blocks(README.read_text(encoding="utf-8"))


def _fresh_copy(folder: Path) -> Path:
    """The repository's files (tracked, or new and not ignored) copied into folder, as a clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    clone = folder / "bpecli"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    return clone


def _environment(**extra: str) -> dict[str, str]:
    """This Python's bin folder (and so this bpecli) first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BPECLI_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def _run(block: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"README block failed (exit {result.returncode}):\n{block}\n{result.stdout}\n{result.stderr}"
    return result


def test_readme_is_a_short_guide_with_its_blocks_found():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 12_500
    assert "../shared" not in "".join(BLOCKS)
    assert [_kind(b) for b in BLOCKS].count("local") >= 5 and {"tests", "s3", "dask"} <= {_kind(b) for b in BLOCKS}
    assert BLOCKS[0].startswith(INSTALL + "\n")


def test_readme_test_command_is_what_ci_runs():
    (block,) = [b for b in BLOCKS if _kind(b) == "tests"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert block.strip() in ci


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return _fresh_copy(tmp_path_factory.mktemp("readme"))


@pytest.mark.system
def test_readme_local_blocks_run_as_written(clone):
    env = _environment()
    for block in [b for b in BLOCKS if _kind(b) == "local"]:
        if block.startswith(INSTALL) and os.environ.get("BPECLI_TEST_INSTALL") != "1":
            block = block[len(INSTALL):]
        result = _run(block, clone, env)
        if "encode -t tok | bpecli decode" in block:
            assert "hello world" in result.stdout
        if "transformers" in block:  # the three libraries print bpecli's ids for the same text
            ids = subprocess.run(["bpecli", "encode", "-t", "tok"], input="hello world", cwd=clone, env=env,
                                 capture_output=True, text=True, check=True).stdout.split()
            printed = [re.findall(r"\d+", line) for line in result.stdout.splitlines()]
            assert printed == [ids, ids, ids]
    for made in ("tok", "shards/manifest.json", "shards-llmc/manifest.json", "shards-nanogpt/val.bin",
                 "examples/shards/manifest.json", "tok-python/bpecli.json", "tok-both/tokenizer.json"):
        assert (clone / made).exists(), made


@pytest.mark.system
def test_readme_s3_block_runs_against_a_local_server(tmp_path):
    moto_server = pytest.importorskip("moto.server")
    from pyarrow import fs

    clone = _fresh_copy(tmp_path)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        storage = fs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="test",
                                  secret_key="test", region="us-east-1", allow_bucket_creation=True)
        storage.create_dir("corpora")
        for name in ("docs.parquet", "docs.jsonl"):
            with storage.open_output_stream(f"corpora/{name}", compression=None) as out:
                out.write((clone / "examples" / name).read_bytes())
        env = _environment(AWS_ENDPOINT_URL=f"http://{host}:{port}", AWS_ACCESS_KEY_ID="test",
                           AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
        for block in [b for b in BLOCKS if _kind(b) == "s3"]:
            _run(block, clone, env)
    finally:
        server.stop()
    assert (clone / "tok-s3" / "bpecli.json").exists()


@pytest.mark.system
def test_readme_dask_block_runs_with_its_own_cluster(tmp_path):
    pytest.importorskip("distributed")
    clone = _fresh_copy(tmp_path)
    env = _environment()
    for block in [b for b in BLOCKS if _kind(b) == "dask"]:
        # its own process group, so that the scheduler and workers the block starts in the background stop with it
        # (and its output into a file: the background processes keep a pipe open after the block ends)
        log = tmp_path / "dask.log"
        with open(log, "w") as output:
            process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", block], cwd=clone, env=env,
                                       stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                process.wait(timeout=600)
            finally:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        assert process.returncode == 0, f"README block failed:\n{block}\n{log.read_text()}"
    assert (clone / "shards-dask" / "manifest.json").exists()
