"""On a Dask cluster: the same merges and the same shards as a local run, a lost worker retried,
and `distributed` never loaded by a local run. A LocalCluster serves the quick cases; a real
`dask scheduler` and `dask worker --nworkers 2`, started as processes on 127.0.0.1, serve the
command as a user runs it."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from bpecli.parallel import dask as cluster
from bpecli.shards import write_shards
from bpecli.training import train

distributed = pytest.importorskip("distributed")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def local_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as started:
        yield started
        cluster.disconnect()


@pytest.fixture(scope="module")
def dask_processes(tmp_path_factory):
    """`dask scheduler` and `dask worker --nworkers 2` as a user starts them; stopped by their handles."""
    with _dask(tmp_path_factory.mktemp("dask")) as (scheduler_file, _):
        yield scheduler_file


@contextmanager
def _dask(folder: Path):
    """(scheduler file, scheduler process) of a scheduler and 2 workers started as processes."""
    scheduler_file = folder / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    log = open(folder / "log.txt", "wb")
    scheduler = subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--dashboard-address", ":0", "--scheduler-file", scheduler_file],
                                 stdout=log, stderr=log, start_new_session=True)
    workers = None
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = subprocess.Popen([bin_dir / "dask", "worker", "--scheduler-file", scheduler_file, "--nworkers", "2",
                                    "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                   stdout=log, stderr=log, start_new_session=True, cwd=folder)
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield scheduler_file, scheduler
    finally:
        cluster.disconnect()
        for process in (workers, scheduler):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        log.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, kernel_docs_sample) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "docs.txt"
    path.write_text(kernel_docs_sample, encoding="utf-8")
    return path


def test_training_on_a_local_cluster_gives_the_local_merges(local_cluster, corpus, tmp_path):
    jsonl = tmp_path / "docs.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as f:
        for document in corpus.read_text(encoding="utf-8").split("<|endoftext|>"):
            f.write(json.dumps({"text": document}) + "\n")
    local = train([corpus], vocab_size=600, special_tokens=["<|endoftext|>"], workers=2)
    for inputs in ([corpus], [jsonl]):
        on_dask = train(inputs, vocab_size=600, special_tokens=["<|endoftext|>"], scheduler=local_cluster.scheduler_address)
        assert on_dask.merges == local.merges


def test_shards_on_a_local_cluster_equal_the_local_ones(local_cluster, corpus, gpt2, tmp_path):
    write_shards(gpt2, [str(corpus)], tmp_path / "local", shard_tokens=50_000, workers=1)
    write_shards(gpt2, [str(corpus)], tmp_path / "dask", shard_tokens=50_000, scheduler=local_cluster.scheduler_address)
    assert _folder(tmp_path / "dask") == _folder(tmp_path / "local")


def test_a_worker_killed_mid_run_is_retried_and_the_shards_are_the_same(local_cluster, corpus, gpt2, tmp_path,
                                                                         monkeypatch):
    """The first finished part kills a worker process (its nanny starts another, which gets the
    tokenizer again): Dask runs its lost tasks elsewhere, and the output does not change."""
    from bpecli.inputs import parts

    monkeypatch.setattr(parts, "PART_BYTES", 1 << 17)  # many parts, so some are lost with the worker
    client = cluster.connect(local_cluster.scheduler_address)
    killed = []

    class KillsAWorker:
        def update(self, n):
            if not killed:
                pids = client.run(os.getpid)
                victim = sorted(pids.values())[0]
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        def set_postfix_str(self, text):
            pass

        def close(self):
            pass

    write_shards(gpt2, [str(corpus)], tmp_path / "local", shard_tokens=50_000, workers=1)
    write_shards(gpt2, [str(corpus)], tmp_path / "dask", shard_tokens=50_000, scheduler=local_cluster.scheduler_address,
                 progress=lambda *_: KillsAWorker())
    assert killed
    assert _folder(tmp_path / "dask") == _folder(tmp_path / "local")
    client.wait_for_workers(2, timeout=60)


def test_the_command_runs_on_a_real_scheduler_and_workers(dask_processes, corpus, tmp_path):
    """`bpecli train` and `bpecli encode --out` with --scheduler (a scheduler file) and with
    BPECLI_SCHEDULER, against the same commands run locally."""
    def bpecli(*args, env=None):
        done = subprocess.run([sys.executable, "-m", "bpecli", *map(str, args), "-q"], capture_output=True, text=True,
                              env={**os.environ, **(env or {})})
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""

    train_args = ["train", corpus, "--vocab-size", 700, "--special", "<|endoftext|>"]
    bpecli(*train_args, "--out", tmp_path / "local-tok", "--workers", 2)
    bpecli(*train_args, "--out", tmp_path / "dask-tok", "--scheduler", dask_processes)
    assert _folder(tmp_path / "dask-tok") == _folder(tmp_path / "local-tok")

    encode_args = ["encode", "-t", tmp_path / "local-tok", corpus, "--shard-tokens", 40_000]
    bpecli(*encode_args, "--out", tmp_path / "local-shards")
    bpecli(*encode_args, "--out", tmp_path / "dask-shards", env={"BPECLI_SCHEDULER": str(dask_processes)})
    assert _folder(tmp_path / "dask-shards") == _folder(tmp_path / "local-shards")


def test_a_cluster_without_workers_is_said_after_a_while_and_waited_for(corpus, tmp_path):
    import threading

    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=":0", worker_dashboard_address=":0",
                                  processes=True) as empty:
        train = subprocess.Popen([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300", "-q",
                                  "--out", str(tmp_path / "tok"), "--scheduler", empty.scheduler_address],
                                 stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(train.stderr), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + cluster.WORKER_GRACE_SECONDS + 60
            while not lines and train.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            empty.scale(1)
            assert train.wait(timeout=300) == 0
        finally:
            if train.poll() is None:
                train.kill()
                train.wait()
        reader.join(timeout=10)
    address = empty.scheduler_address
    assert lines == [f"bpecli: note: the Dask cluster of {address} has had no worker for 10 s; waiting for one "
                     f"(start them: dask worker {address})\n"]
    assert (tmp_path / "tok" / "tokenizer.json").is_file()


def test_an_unreachable_scheduler_is_one_line(corpus, tmp_path):
    done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300",
                           "--out", str(tmp_path / "tok"), "--scheduler", "tcp://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 1
    assert done.stderr.startswith("bpecli: error: cannot reach the Dask scheduler tcp://127.0.0.1:9")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "tok").exists()


@pytest.mark.system
def test_a_scheduler_file_is_waited_for_as_dask_worker_waits_for_it(corpus, tmp_path):
    """As a Makefile or a CI script starts them: the scheduler in the background, bpecli at once."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    train = subprocess.Popen([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300", "-q",
                              "--out", str(tmp_path / "tok"), "--scheduler", str(folder / "scheduler.json")],
                             stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    with _dask(folder):
        _, stderr = train.communicate(timeout=300)
    assert train.returncode == 0, stderr
    assert (tmp_path / "tok" / "tokenizer.json").is_file()


def test_a_scheduler_file_no_scheduler_writes_is_one_line_after_the_connect_timeout(corpus, tmp_path):
    scheduler = tmp_path / "scheduler.json"
    done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300",
                           "--out", str(tmp_path / "tok"), "--scheduler", str(scheduler)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 1
    assert done.stderr == (f"bpecli: error: --scheduler {scheduler}: no scheduler wrote this file within 2 s; "
                           f"start `dask scheduler --scheduler-file {scheduler}` first\n")


@pytest.mark.parametrize("scheduler", ["/nonexistent/scheduler.json", "not an address"])
def test_a_scheduler_that_is_neither_a_file_nor_an_address_is_one_line(corpus, tmp_path, scheduler):
    done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300",
                           "--out", str(tmp_path / "tok"), "--scheduler", scheduler], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"bpecli: error: --scheduler {scheduler}: no such scheduler file, nor an address such as tcp://host:8786\n"


@pytest.mark.system
@pytest.mark.parametrize("content", [b'{"foo": 1}', b"not json", b"[1, 2]", b'{"address": 5}', b'{"address": "nowhere"}',
                                     b"", b"\xff\xfe", b"[" * 100_000, b" " * (2 << 20)])
def test_a_scheduler_file_of_the_wrong_shape_is_one_line_at_once(corpus, tmp_path, content):
    """Dask waited a minute on these, then raised a traceback."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_bytes(content)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300", "--out",
                           str(tmp_path / "tok")], capture_output=True, text=True, timeout=50,
                          env={**os.environ, "BPECLI_SCHEDULER": str(scheduler_file)})
    assert done.returncode == 1
    assert done.stderr.startswith(f"bpecli: error: --scheduler {scheduler_file}: not a Dask scheduler file, ")
    assert done.stderr.count("\n") == 1
    assert time.monotonic() - started < 30
    assert not (tmp_path / "tok").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling link"])
def test_a_scheduler_file_that_is_no_regular_file_is_one_line_at_once(corpus, tmp_path, kind):
    """Only a .json name of nothing yet is waited for (a scheduler about to write it)."""
    scheduler = tmp_path / "scheduler.json"
    if kind == "fifo":
        os.mkfifo(scheduler)
    elif kind == "folder":
        scheduler.mkdir()
    else:
        scheduler.symlink_to(tmp_path / "nothing")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300",
                           "--out", str(tmp_path / "tok"), "--scheduler", str(scheduler)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(f"bpecli: error: --scheduler {scheduler}: ") and done.stderr.count("\n") == 1
    assert time.monotonic() - started < 20  # the connect timeout is 30 s


def _server(answer: bytes):
    """A TCP server on 127.0.0.1 that accepts every connection and sends answer (nothing: silent)."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []

    def serve():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            accepted.append(connection)
            if answer:
                connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return listener


@pytest.mark.system
@pytest.mark.parametrize("answer", [b"", b"HTTP/1.0 200 OK\r\n\r\nhello\n" * 100])
def test_a_server_that_is_no_scheduler_is_one_line_within_the_connect_timeout(corpus, tmp_path, answer):
    """Silent, it held bpecli forever (Dask bounds the connection, not the first answer); talking
    HTTP, it made Dask allocate what its first bytes said: \"out of memory\" and a traceback."""
    listener = _server(answer)
    address = "tcp://127.0.0.1:%d" % listener.getsockname()[1]
    try:
        done = subprocess.run([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300", "--out",
                               str(tmp_path / "tok"), "--scheduler", address], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    finally:
        listener.close()
    assert done.returncode == 1
    assert done.stderr.startswith(f"bpecli: error: cannot reach the Dask scheduler {address} ("), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


@pytest.mark.system
def test_a_scheduler_killed_mid_run_is_one_line_at_once(tmp_path, kernel_docs_sample):
    """Killed once the workers count: the futures are cancelled, and bpecli says so in one line, with
    no traceback of Dask's FutureCancelledError and no log of its client reconnecting."""
    corpus = tmp_path / "docs.txt"
    corpus.write_text(kernel_docs_sample * 4, encoding="utf-8")
    pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s"""  # the regex's pace: seconds
    folder = tmp_path / "dask"
    folder.mkdir()
    with _dask(folder) as (scheduler_file, scheduler):
        run = subprocess.Popen([sys.executable, "-m", "bpecli", "train", str(corpus), "--vocab-size", "300", "--out",
                                str(tmp_path / "tok"), "--scheduler", str(scheduler_file), "--pattern", pattern, "-q"],
                               stderr=subprocess.PIPE, text=True)
        try:
            with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as watcher:
                deadline = time.monotonic() + 120
                while not any(watcher.processing().values()):
                    assert run.poll() is None and time.monotonic() < deadline, "the count never started"
                    time.sleep(0.05)
                os.killpg(scheduler.pid, signal.SIGKILL)
                scheduler.wait()
                killed = time.monotonic()
                assert run.wait(timeout=60) == 1
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
            stderr = run.stderr.read()
            run.stderr.close()
    assert time.monotonic() - killed < 30
    assert stderr.startswith(f"bpecli: error: lost the Dask scheduler {scheduler_file} ("), stderr
    assert stderr.count("\n") == 1, stderr


def test_a_local_run_never_imports_distributed(corpus, tmp_path, gpt2_vocab):
    script = (
        "import sys\n"
        "from bpecli.cli import main\n"
        f"for argv in ({['train', str(corpus), '--vocab-size', '300', '--out', str(tmp_path / 'tok'), '-q']!r},"
        f" {['encode', '-t', str(gpt2_vocab), str(corpus), '--out', str(tmp_path / 'shards'), '-q']!r}):\n"
        "    sys.argv = ['bpecli', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('distributed', 'dask')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _folder(path: Path) -> dict[str, bytes]:
    """Every file of a folder, bpecli's lock aside (its presence is not output)."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.name != ".bpecli-lock"}



def _dies(_, item):
    os._exit(1)


@pytest.mark.system
def test_workers_dying_on_one_part_again_and_again_is_one_error():
    """Dask gives up on a task that killed its workers (KilledWorker): one error, not its traceback."""
    from bpecli.errors import BpecliError
    from bpecli.parallel import map_in_order

    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0",
                                      processes=True) as started:
            try:
                with pytest.raises(BpecliError, match="Dask workers of .* died, again and again, running the same part"):
                    list(map_in_order(_dies, [1], workers=1, setup=int, args=(), scheduler=started.scheduler_address))
            finally:
                cluster.disconnect()
