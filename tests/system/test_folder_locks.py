"""The lock of an output folder is on the folder itself, the one a link given as --out leads to,
and every lock a run takes (locked() or lock()) ends with that run: a forked worker never keeps it."""

import fcntl
import os
import subprocess
import sys

import pytest

from bpecli import folders

BPECLI = [sys.executable, "-m", "bpecli"]


@pytest.mark.system
def test_encode_out_a_link_to_a_folder_writes_there_and_locks_that_folder(gpt2_vocab, tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n" * 100)
    real = tmp_path / "disk" / "shards"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    command = [*BPECLI, "encode", "-t", str(gpt2_vocab), str(tmp_path / "a.txt"), "--out", str(tmp_path / "link"), "-q"]
    held = os.open(real, os.O_RDONLY | os.O_DIRECTORY)  # as another bpecli writing into the folder holds it
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.close(held)
    assert busy.returncode == 1 and "another bpecli is writing" in busy.stderr, busy.stderr
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (real / "manifest.json").exists() and (tmp_path / "link").is_symlink()


def test_a_forked_process_holds_no_lock_of_its_parent(tmp_path):
    taken = [folders.lock(tmp_path), folders.make_building(tmp_path, ".x.")[1]]
    try:
        pid = os.fork()
        if pid == 0:  # the child: each descriptor of a lock is closed
            closed = 0
            for fd in taken:
                try:
                    os.fstat(fd)
                except OSError:
                    closed += 1
            os._exit(0 if closed == len(taken) else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        for fd in taken:
            folders.unlock(fd)
