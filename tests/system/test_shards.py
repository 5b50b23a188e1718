"""Shards written by real processes: two runs racing for one folder, disks that fill, kill -9
mid-write, and inspect in little memory without connecting out."""

import json
import os
import re

import numpy as np
import pytest

from bpecli.shards import verify, write_shards
from unit.test_shards import finished  # noqa: F401


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory, kernel_docs_sample):
    path = tmp_path_factory.mktemp("corpus") / "sample.txt"
    path.write_text(kernel_docs_sample, encoding="utf-8")
    return path


def shard_bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_two_real_runs_into_one_folder_never_end_with_a_wrong_manifest(gpt2_vocab, sample_file, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "out"
    command = [sys.executable, "-m", "bpecli", "encode", "-t", str(gpt2_vocab), str(sample_file), "--out", str(out),
               "--shard-tokens", "50000", "--workers", "1", "-q"]
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(r.wait(timeout=120), r.stderr.read()) for r in runs]
    assert any(code == 0 for code, _ in results)
    for code, stderr in results:
        assert code == 0 or stderr.strip().endswith(f"another bpecli is writing {out}; wait for it to finish, or choose another --out")
    assert verify(out) == []


def run_bpecli(*args, journal_every_shard=False, trace=None):
    """bpecli as a process (optionally with the journal written at every shard, and its failed
    system calls traced into the file `trace`)."""
    import subprocess
    import sys

    code = ("import sys\nfrom bpecli.shards import journal\nfrom bpecli.cli import main\n"
            + ("journal.JOURNAL_SECONDS = 0\n" if journal_every_shard else "") + "main()\n")
    command = [sys.executable, "-c", code, *map(str, args)]
    if trace is not None:
        command = ["strace", "-f", "-y", "-Z", "-e", "trace=write", "-o", str(trace), *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def fill(disk, free_pages: int):
    """Leave exactly free_pages pages of 4 KiB free on a tmpfs (by one file of zeros)."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    stat = os.statvfs(disk)
    with open(filler, "wb") as f:
        f.write(bytes(stat.f_bavail * stat.f_frsize - free_pages * 4096))
    return filler


def failed_write(trace) -> str:
    """Which file the first write that failed was for: shard, index, journal or manifest."""
    import re

    for line in trace.read_text().splitlines():
        found = re.search(r"write\(\d+<[^>]*/([^/>]+)>.*= -1 ENOSPC", line)
        if found:
            name = found.group(1)
            return ("journal" if name.startswith(".bpecli-progress") else "manifest" if name.startswith("manifest")
                    else "index" if ".idx" in name else "shard")
    return "none"


@pytest.mark.system
def test_a_disk_that_fills_at_any_write_leaves_no_trace_and_a_rerun_with_room_finishes(gpt2_vocab, kernel_docs_sample,
                                                                                      tmp_path, tiny_disk):
    """A real 64 KiB tmpfs, filled so that the shard, its document index, the journal or the
    manifest is the write that finds it full: one line, no .partial file, no shard or index the
    journal does not know of; freed, the same command finishes the folder, byte for byte."""
    import shutil

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (it tells which write found the disk full)")
    corpus_file = tmp_path / "docs.txt"
    corpus_file.write_text(kernel_docs_sample[:20_000], encoding="utf-8")
    command = ["encode", "-t", gpt2_vocab, corpus_file, "--shard-tokens", "1500", "-q", "--out"]
    assert run_bpecli(*command, tmp_path / "roomy").returncode == 0
    reference = shard_bytes(tmp_path / "roomy")
    assert 4 < len(reference) < 16  # shards and indexes of a page each, and the manifest: they fit

    out, trace, seen = tiny_disk / "out", tmp_path / "trace.txt", {}
    # the journal written at every shard: the first few pages fill at a shard, an index or the
    # journal; at its usual pace (once a second) the last page fills at the manifest
    attempts = [(True, free) for free in range(5)] + [(False, free) for free in range(len(reference), 4, -1)]
    for every_shard, free in attempts:
        if "manifest" in seen and not every_shard:
            break
        shutil.rmtree(out, ignore_errors=True)
        filler = fill(tiny_disk, free)
        done = run_bpecli(*command, out, journal_every_shard=every_shard, trace=trace)
        where = failed_write(trace)
        if where == "none":
            assert done.returncode == 0, done.stderr
            continue
        seen.setdefault(where, free)
        assert done.returncode == 1 and "Traceback" not in done.stderr, (free, where, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "No space left on device" in done.stderr, done.stderr
        left = sorted(p.name for p in out.iterdir()) if out.exists() else []  # (gone if it held nothing yet)
        assert not [n for n in left if n.endswith(".partial")] and "manifest.json" not in left, (free, where, left)
        if [n for n in left if n.startswith("shard_")]:  # a shard or index under its name: the journal knew of it
            journal = json.loads((out / ".bpecli-progress.json").read_text())
            assert "shard_00000.idx" not in left or journal["shards"][0]["index"] == "shard_00000.idx"
        filler.unlink()
        again = run_bpecli(*command, out)
        assert again.returncode == 0, (free, where, again.stderr)
        assert shard_bytes(out) == reference
        assert verify(out) == []
    assert set(seen) == {"shard", "index", "journal", "manifest"}, seen


@pytest.mark.system
def test_a_manifest_that_cannot_be_written_after_the_journal_listed_the_last_shard_resumes(gpt2_vocab, kernel_docs_sample,
                                                                                           tmp_path):
    """The journal lists every shard, the last one too (it ends where the inputs end), and then
    the manifest's writes fail (injected by strace): the same command run again finishes."""
    import shutil

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (it makes the manifest's writes fail)")
    corpus_file = tmp_path / "docs.txt"
    corpus_file.write_text(kernel_docs_sample[:20_000], encoding="utf-8")
    command = ["encode", "-t", gpt2_vocab, corpus_file, "--shard-tokens", "1500", "-q", "--out"]
    assert run_bpecli(*command, tmp_path / "roomy").returncode == 0
    out = tmp_path / "out"
    code = ("import sys\nfrom bpecli.shards import journal\nfrom bpecli.cli import main\n"
            "journal.JOURNAL_SECONDS = 0\nmain()\n")
    import subprocess
    import sys

    done = subprocess.run(["strace", "-f", "-o", os.devnull, "-P", str(out / "manifest.json.partial"),
                           "-e", "trace=write", "-e", "inject=write:error=ENOSPC",
                           sys.executable, "-c", code, *map(str, command), str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "No space left on device" in done.stderr, done.stderr
    journal = json.loads((out / ".bpecli-progress.json").read_text())
    assert journal["shards"][-1]["next_part"] is None  # the last shard, as the inputs ended
    again = run_bpecli(*command, out)
    assert again.returncode == 0, again.stderr
    assert shard_bytes(out) == shard_bytes(tmp_path / "roomy")


@pytest.mark.system
def test_inspect_verify_of_a_local_folder_never_connects_out(finished):
    """A manifest naming an input on object storage (here a server of this test's, which counts
    who calls): verify looks only at local files, the shards being what it checks."""
    import socket
    import subprocess
    import sys
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    callers = []

    def count():
        while True:
            try:
                callers.append(server.accept())
            except OSError:
                return

    threading.Thread(target=count, daemon=True).start()
    manifest = json.loads((finished / "manifest.json").read_text())
    port = server.getsockname()[1]
    manifest["inputs"] = [{"path": f"s3://bucket/docs.txt?endpoint_override=127.0.0.1:{port}&scheme=http",
                           "size": 5, "mtime_ns": 1}]
    (finished / "manifest.json").write_text(json.dumps(manifest))
    try:
        done = subprocess.run([sys.executable, "-m", "bpecli", "inspect", str(finished), "--verify", "--json"],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "AWS_EC2_METADATA_DISABLED": "true"})
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"] is True and callers == []


def capped(*command: str, memory: int = 1536 << 20, timeout: float = 60):
    """Run command with at most `memory` bytes of address space: a test that fails must not
    take the machine's memory with it."""
    import resource
    import subprocess

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (memory if hard == resource.RLIM_INFINITY else min(memory, hard), hard))

    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, preexec_fn=cap)


@pytest.mark.system
def test_inspect_of_an_int64_shard_holding_2_31_is_one_line_in_little_memory(finished):
    import sys

    shard = finished / "shard_00000.npy"
    np.save(shard, np.concatenate([[2**31 - 1], np.zeros(len(np.load(shard)) - 1, dtype=np.int64)]))
    done = capped(sys.executable, "-m", "bpecli", "inspect", str(finished))
    assert done.returncode == 1 and done.stderr == (
        f"bpecli: error: {shard}: holds int64 ids where the manifest says uint16; "
        "encode again with --force to rebuild the folder\n")


@pytest.mark.system
def test_inspect_of_shards_with_ids_up_to_2_32_counts_them_in_little_memory(tmp_path):
    """A special token numbered 2**32 - 2 as the eot: counted apart, not in an array of 32 GB
    (the process may map 1.5 GB)."""
    import sys

    from bpecli import PATTERNS, Tokenizer

    tok = Tokenizer(ranks={bytes([b]): b for b in range(256)}, special_tokens={"<|endoftext|>": 2**32 - 2},
                    pattern=PATTERNS["gpt2"])
    (tmp_path / "a.txt").write_text("hello<|endoftext|>world<|endoftext|>")
    write_shards(tok, [str(tmp_path / "a.txt")], tmp_path / "out", eot=2**32 - 2)
    import pickle

    (tmp_path / "tok.pickle").write_bytes(pickle.dumps(tok))
    code = ("import json, pickle, sys\nfrom bpecli.report import shard_figures\n"
            "tok = pickle.loads(open(sys.argv[2], 'rb').read())\n"
            "print(json.dumps([[e['id'], e['count']] for e in shard_figures(sys.argv[1], tokenizer=tok, top=3)['most_frequent']]))\n")
    done = capped(sys.executable, "-c", code, str(tmp_path / "out"), str(tmp_path / "tok.pickle"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[108, 3], [111, 2], [2**32 - 2, 2]]


@pytest.mark.system
def test_a_kill_9_before_any_step_of_writing_a_shard_leaves_a_folder_the_rerun_finishes(gpt2_vocab, kernel_docs_sample,
                                                                                         tmp_path):
    """Each shard is three files flushed to disk (the shard, its index, the journal) and three
    renames; a kill -9 (sent by strace as one of them begins) before any of them, for the first
    shard, the last, and the manifest: the same command run again ends with the same bytes."""
    import shutil
    import subprocess
    import sys

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed (it sends the kill at each step)")
    corpus_file = tmp_path / "docs.txt"
    corpus_file.write_text(kernel_docs_sample[:20_000], encoding="utf-8")
    command = ["encode", "-t", gpt2_vocab, corpus_file, "--shard-tokens", "1500", "--workers", "1", "-q", "--out"]
    assert run_bpecli(*command, tmp_path / "roomy").returncode == 0
    reference = shard_bytes(tmp_path / "roomy")
    n = len(json.loads((tmp_path / "roomy" / "manifest.json").read_text())["shards"])
    assert n > 2
    code = "from bpecli.shards import journal\nfrom bpecli.cli import main\njournal.JOURNAL_SECONDS = 0\nmain()\n"
    quiet = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no .pyc renamed into place by python itself
    for syscall in ("fsync", "rename"):
        for when in (1, 2, 3, 3 * n - 2, 3 * n - 1, 3 * n, 3 * n + 1):  # the first shard, the last, the manifest
            out = tmp_path / f"{syscall}-{when}"
            killed = subprocess.run(["strace", "-f", "-o", os.devnull, "-e", f"trace={syscall}",
                                     "-e", f"inject={syscall}:signal=KILL:when={when}", sys.executable, "-c", code,
                                     *map(str, command), str(out)], capture_output=True, text=True, timeout=120, env=quiet)
            assert killed.returncode != 0 and not (out / "manifest.json").exists(), (syscall, when, killed.stderr)
            again = run_bpecli(*command, out)
            assert again.returncode == 0, (syscall, when, again.stderr)
            assert shard_bytes(out) == reference, (syscall, when)


@pytest.mark.system
@pytest.mark.parametrize("kind, message", [
    ("a link to /dev/zero", "a link, which bpecli never writes"),
    ("a FIFO", "is a FIFO, not a file bpecli reads"),
    ("JSON nested 100,000 deep", "nested too deeply \\(arrays or objects more than 1,000 levels deep\\)"),
])
def test_a_manifest_that_is_no_file_of_json_is_one_line_for_every_command(gpt2_vocab, finished, kind, message):
    """Read forever, blocked on, or recursed into before; now each command says what it found."""
    import sys

    manifest = finished / "manifest.json"
    manifest.unlink()
    if kind == "a FIFO":
        os.mkfifo(manifest)
    elif kind == "a link to /dev/zero":
        manifest.symlink_to("/dev/zero")
    else:
        manifest.write_text("[" * 100_000)
    bpecli = [sys.executable, "-m", "bpecli"]
    for command in (["inspect", finished], ["inspect", finished, "--verify"]):
        done = capped(*bpecli, *map(str, command), timeout=30)
        assert done.returncode == 1 and re.match(f"bpecli: error: {manifest}: {message}; inspect shows only", done.stderr), done.stderr
    done = capped(*bpecli, "encode", "-t", str(gpt2_vocab), str(finished.parent / "docs.txt"), "--out", str(finished), timeout=30)
    found = f"bpecli: error: {re.escape(str(manifest))}: damaged or not bpecli's \\({message}\\); if a bpecli run left it"
    assert done.returncode == 1 and re.match(found, done.stderr), done.stderr
    assert len(done.stderr.splitlines()) == 1
