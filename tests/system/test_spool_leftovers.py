"""stdin copied to $TMPDIR for train and encode --out is locked by its run: a copy a kill -9 left
behind is removed by the next run that copies a stream, and a live run's copy never is."""

import os
import signal
import subprocess
import sys
import time

import pytest

BPECLI = [sys.executable, "-m", "bpecli"]


def _started(tmp, out):
    """train reading stdin from a pipe that stays open: it holds its copy of stdin, half written."""
    run = subprocess.Popen([*BPECLI, "train", "-", "--vocab-size", "260", "--out", str(out), "-q"], stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp)})
    run.stdin.write(b"hello world\n" * 200_000)  # past the 1 MiB blocks it copies
    run.stdin.flush()
    for _ in range(600):
        copies = [p for p in tmp.iterdir() if p.name.startswith("bpecli-stdin-")]
        if copies and copies[0].stat().st_size > 0:
            return run, copies[0]
        time.sleep(0.05)
    raise AssertionError("the run made no copy of stdin")


def _age(path):
    old = time.time() - 3600
    os.utime(path, (old, old))


@pytest.mark.system
def test_a_copy_of_stdin_left_by_a_kill_9_goes_with_the_next_run_and_a_live_runs_stays(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed, left = _started(tmp, tmp_path / "a")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    killed.stdin.close()
    assert left.exists()  # what a kill -9 leaves
    _age(left)  # an hour on
    live, held = _started(tmp, tmp_path / "b")
    try:
        _age(held)
        done = subprocess.run([*BPECLI, "train", "-", "--vocab-size", "260", "--out", str(tmp_path / "c"), "-q"],
                              input=b"hello world\n", capture_output=True, env={**os.environ, "TMPDIR": str(tmp)})
        assert done.returncode == 0, done.stderr
        assert not left.exists()  # the killed run's copy is gone
        assert held.exists()  # the live run's stays
    finally:
        live.stdin.close()
        assert live.wait(timeout=120) == 0
    assert list(tmp.iterdir()) == []
