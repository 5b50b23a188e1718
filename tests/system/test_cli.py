"""The commands run as processes: streams closed or full, signals, fifos, full disks, memory
limits, and what the installed command loads."""

import json
import os

import pytest
from typer.testing import CliRunner

from bpecli.cli import app


runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def test_an_unwritable_parent_of_out_is_one_line(gpt2_vocab, tmp_path, read_only_dir):
    corpus = tmp_path / "t.txt"
    corpus.write_text("some text " * 10)
    for command in (["train", corpus, "--vocab-size", 300, "--out", read_only_dir / "tok", "-q"],
                    ["train", corpus, "--vocab-size", 300, "--out", read_only_dir / "a" / "b", "-q"],
                    ["encode", "-t", gpt2_vocab, corpus, "--out", read_only_dir / "shards", "-q"]):
        done = shell(" ".join(f"'{a}'" for a in ["bpecli", *map(str, command)]))
        error = one_stderr_line(done)
        assert done.returncode == 1 and ("cannot write into" in error or "cannot make" in error), error
    assert list(read_only_dir.iterdir()) == []


def test_a_killed_encode_rerun_ends_byte_identical(gpt2_vocab, tmp_path):
    """The real thing: SIGKILL mid-run (no clean-up code runs), then the same command again."""
    import gzip
    import signal
    import subprocess
    import sys
    import time

    from conftest import CORPUS

    if not CORPUS.is_file():
        pytest.skip("the benchmark corpus is absent")
    corpus = tmp_path / "docs.txt"
    with gzip.open(CORPUS, "rb") as f:
        corpus.write_bytes(f.read(12_000_000))

    def command(out):
        return [sys.executable, "-m", "bpecli", "encode", "-t", str(gpt2_vocab), str(corpus), "--out", str(out),
                "--shard-tokens", "200000", "--workers", "1", "-q"]

    subprocess.run(command(tmp_path / "whole"), check=True)
    victim = subprocess.Popen(command(tmp_path / "cut"))
    journal = tmp_path / "cut" / ".bpecli-progress.json"
    while not journal.exists() and victim.poll() is None:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (tmp_path / "cut" / "manifest.json").exists(), "the run finished before it could be killed"
    subprocess.run(command(tmp_path / "cut"), check=True)
    whole = {p.name: p.read_bytes() for p in (tmp_path / "whole").iterdir()}
    assert {p.name: p.read_bytes() for p in (tmp_path / "cut").iterdir()} == whole


def shell(script: str, **kwargs):
    """Run a bash script in which `bpecli` is this interpreter's bpecli."""
    import subprocess
    import sys

    prelude = f'bpecli() {{ "{sys.executable}" -m bpecli "$@"; }}\n'
    return subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, timeout=120, **kwargs)


def one_stderr_line(done) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "script, status, message",
    [
        ("echo hi | bpecli encode -t {vocab} >&-", 1, "standard output is closed"),
        ("bpecli encode -t {vocab} <&-", 1, "standard input is closed"),
        ("echo hi | bpecli encode -t {vocab} --out never-made --json >&-", 1, "standard output is closed"),  # before any work
        ("bpecli train {vocab} --vocab-size 300 --out never-made --json >&-", 1, "standard output is closed"),
        ("echo hi | bpecli encode -t {vocab} >/dev/full", 1, "No space left on device (standard output)"),
        ("echo 31373 | bpecli decode -t {vocab} >/dev/full", 1, "No space left on device (standard output)"),
        ("bpecli inspect {vocab} --json >/dev/full", 1, "No space left on device (standard output)"),
        ("bpecli inspect {vocab} >/dev/full", 1, "No space left on device (standard output)"),
        ("bpecli --version >/dev/full", 1, "No space left on device (standard output)"),
        ("bpecli train --help >/dev/full", 1, "No space left on device (standard output)"),
        ("echo '72 ²' | bpecli decode -t {vocab}", 1, "<stdin>:1: '²' is not a token id"),
        ("echo '72 -1' | bpecli decode -t {vocab}", 1, "'-1' is not a token id"),
        ("echo '99999999' | bpecli decode -t {vocab}", 1, "id 99999999 is not in the vocabulary"),
        ("bpecli train {vocab} --vocab-size 300 --out x --workers 0", 2, "Invalid value for '--workers'"),
        ("bpecli encode -t {vocab} --dtype int8 --out x", 2, "'int8' is not one of"),
        ("bpecli nosuch", 2, "No such command 'nosuch'"),
        ("bpecli train {vocab} --vocab-size 99999999999999999999 --out x", 2, "is above 2,147,483,647"),
    ],
)
def test_closed_and_full_streams_and_bad_ids_are_one_line(gpt2_vocab, script, status, message):
    done = shell(script.format(vocab=gpt2_vocab))
    assert done.returncode == status
    assert message in one_stderr_line(done)


def test_a_reader_that_leaves_early_is_not_an_error(gpt2_vocab, fixtures):
    done = shell(f"bpecli encode -t {gpt2_vocab} --lines {fixtures / 'corpus.en'} | head -1; exit ${{PIPESTATUS[0]}}")
    assert done.returncode == 0 and done.stderr == "" and len(done.stdout.splitlines()) == 1


def test_fifos_process_substitution_and_dev_stdin_are_read_as_streams(gpt2_vocab, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = shell(f"(printf 'hello world' > {fifo} &) ; bpecli encode -t {gpt2_vocab} {fifo}")
    assert (done.returncode, done.stdout) == (0, "31373 995\n"), done.stderr
    done = shell(f"bpecli encode -t {gpt2_vocab} <(printf 'hello world')")
    assert (done.returncode, done.stdout) == (0, "31373 995\n"), done.stderr
    done = shell(f"printf 'hello world' | bpecli encode -t {gpt2_vocab} /dev/stdin")
    assert (done.returncode, done.stdout) == (0, "31373 995\n"), done.stderr
    text = "low lower lowest " * 50
    done = shell(f"bpecli train <(printf '{text}') --vocab-size 260 --out {tmp_path / 'tok'} -q")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tok" / "merges.txt").read_text(encoding="utf-8").splitlines()[1:] == ["o w", "l ow", "Ġ low", "Ġlow e"]
    done = shell(f"(printf 'hello world<|endoftext|>hi' > {fifo} &) ; bpecli encode -t {gpt2_vocab} {fifo} --out {tmp_path / 'shards'} -q")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "shards" / "manifest.json").read_text())["total_tokens"] == 5


def test_sigterm_to_a_multi_worker_run_is_one_line_and_resumable(gpt2_vocab, tmp_path, fixtures):
    import signal
    import subprocess
    import sys
    import time

    corpus = tmp_path / "docs.txt"
    corpus.write_text(((fixtures / "corpus.en").read_text(encoding="utf-8") + "<|endoftext|>") * 60, encoding="utf-8")

    def command(out):
        return [sys.executable, "-m", "bpecli", "encode", "-t", str(gpt2_vocab), str(corpus), "--out", str(out),
                "--shard-tokens", "20000", "--workers", "2", "-q"]

    subprocess.run(command(tmp_path / "whole"), check=True)
    victim = subprocess.Popen(command(tmp_path / "cut"), stderr=subprocess.PIPE, text=True)
    journal = tmp_path / "cut" / ".bpecli-progress.json"
    while not journal.exists() and victim.poll() is None:
        time.sleep(0.005)
    victim.send_signal(signal.SIGTERM)
    _, stderr = victim.communicate(timeout=60)
    if victim.returncode == 0:
        pytest.skip("the run finished before SIGTERM reached it")
    assert victim.returncode == 143 and stderr.strip() == "bpecli: terminated", stderr
    assert not list((tmp_path / "cut").glob("*.partial")) and not (tmp_path / "cut" / "manifest.json").exists()
    subprocess.run(command(tmp_path / "cut"), check=True)
    whole = {p.name: p.read_bytes() for p in (tmp_path / "whole").iterdir()}
    assert {p.name: p.read_bytes() for p in (tmp_path / "cut").iterdir()} == whole


@pytest.mark.parametrize("sig, status, message, spooled", [("SIGTERM", 143, "bpecli: terminated", False),
                                                         ("SIGINT", 130, "bpecli: interrupted", False),
                                                         ("SIGTERM", 143, "bpecli: terminated", True)])
def test_a_signal_ends_a_run_held_in_c_code(gpt2_vocab, tmp_path, sig, status, message, spooled):
    """pyarrow opening a FIFO that no one writes (or --out copying one) never returns to Python,
    where signal handlers run: the signal thread ends the process after its grace period, with the
    same line, and removes the copy it had begun."""
    import signal
    import subprocess
    import sys
    import time

    from bpecli.cli.signals import TERMINATE_GRACE

    fifo = tmp_path / ("never.txt" if spooled else "never.txt.gz")
    os.mkfifo(fifo)
    (tmp_path / "tmp").mkdir()
    victim = subprocess.Popen([sys.executable, "-m", "bpecli", "encode", "-t", str(gpt2_vocab), str(fifo),
                               *(["--out", str(tmp_path / "out")] if spooled else [])],
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    deadline = time.monotonic() + 60  # a loaded machine may take long to start it
    while len(os.listdir(f"/proc/{victim.pid}/task")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the signal thread, the command's first step, is not running yet
    time.sleep(1.5)  # and blocked in the open
    victim.send_signal(getattr(signal, sig))
    try:
        _, stderr = victim.communicate(timeout=TERMINATE_GRACE + 30)
    finally:
        victim.kill()  # a run the signal did not end must not outlive the test
        victim.wait()
    assert victim.returncode == status and stderr.strip() == message, stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_stdin_spooled_into_a_full_tmpdir_is_one_line_and_leaves_nothing(gpt2_vocab, tmp_path, tiny_disk):
    done = shell(f"head -c 1000000 /dev/zero | tr '\\0' a | TMPDIR={tiny_disk} bpecli encode -t {gpt2_vocab} - --out {tmp_path / 'out'} -q")
    assert done.returncode == 1
    assert "cannot copy standard input to" in one_stderr_line(done) and "set TMPDIR to a folder with room" in done.stderr
    assert list(tiny_disk.iterdir()) == []


def test_a_full_disk_under_shards_is_one_line_and_a_rerun_carries_on(gpt2_vocab, tmp_path, tiny_disk, fixtures):
    """64 KiB fill up in the middle of the shards, the journal or the manifest: whichever it is,
    one line, nothing partial, and the same command with room finishes the folder."""
    corpus = tmp_path / "docs.txt"
    corpus.write_text((fixtures / "corpus.en").read_text(encoding="utf-8") * 2, encoding="utf-8")
    out = tiny_disk / "shards"
    done = shell(f"bpecli encode -t {gpt2_vocab} {corpus} --out {out} --shard-tokens 2000 -q")
    line = one_stderr_line(done)  # naming the folder, whichever write found the disk full
    assert done.returncode == 1 and "No space left on device" in line and f"{out}: cannot write" in line
    assert not list(out.glob("*.partial")) and not (out / "manifest.json").exists()
    kept = sorted(p.name for p in out.glob("shard_*.npy"))
    # move the folder somewhere with room; the rerun keeps what it can verify and finishes
    import shutil

    shutil.copytree(out, tmp_path / "roomy")
    done = shell(f"bpecli encode -t {gpt2_vocab} {corpus} --out {tmp_path / 'roomy'} --shard-tokens 2000")
    assert done.returncode == 0, done.stderr
    # kept: the shards the journal knew of (the disk may have filled before it could list them all)
    assert ("kept from an interrupted run" in done.stderr) if kept else "wrote" in done.stderr
    assert shell(f"bpecli inspect {tmp_path / 'roomy'} --verify").returncode == 0


@pytest.mark.system
def test_inspect_into_a_reader_that_leaves_early_exits_0_quietly(gpt2_vocab, tmp_path):
    corpus = tmp_path / "t.txt"
    corpus.write_text("hello world<|endoftext|>again" * 50)
    assert run("encode", "-t", gpt2_vocab, corpus, "--out", tmp_path / "out", "--shard-tokens", 20, "-q").exit_code == 0
    for target in (tmp_path / "out", gpt2_vocab):
        for reader in ("head -1", "true"):
            done = shell(f"bpecli inspect {target} | {reader}; exit ${{PIPESTATUS[0]}}")
            assert (done.returncode, done.stderr) == (0, ""), (target, reader)


def test_version():
    import bpecli

    done = shell("bpecli --version")
    assert (done.returncode, done.stdout) == (0, f"bpecli {bpecli.__version__}\n")


def test_progress_in_a_log_is_plain_lines(gpt2_vocab, tmp_path, fixtures):
    """stderr to a file, as in a CI job: lines with amounts, a percentage, time and rate; no \\r,
    no escape codes. Compressed inputs count their compressed bytes, so they end at 100% too."""
    import gzip

    corpus = tmp_path / "docs.txt.gz"
    corpus.write_bytes(gzip.compress((fixtures / "tinystories_sample.txt").read_bytes()))
    log = tmp_path / "log"
    done = shell(f"bpecli train {corpus} --vocab-size 300 --special '<|endoftext|>' --out {tmp_path / 'tok'} 2> {log}"
                 f" && bpecli encode -t {tmp_path / 'tok'} {corpus} --out {tmp_path / 'shards'} 2>> {log}")
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    counting = [line for line in lines if line.startswith("bpecli counting: ")]
    assert counting and "(100%)" in counting[-1] and "B/s" in counting[-1]
    merging = [line for line in lines if line.startswith("bpecli merging: ")]
    assert merging and merging[-1].startswith("bpecli merging: 43 of 43 merges (100%)")
    encoding = [line for line in lines if line.startswith("bpecli encoding: ")]
    assert encoding and "(100%)" in encoding[-1] and "tokens/s" in encoding[-1]
    quiet = shell(f"bpecli encode -t {tmp_path / 'tok'} {corpus} --out {tmp_path / 'again'} -q")
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_the_command_line_loads_numpy_only_when_it_needs_it():
    """A one-liner starts fast, and the signal thread blocks SIGTERM and SIGINT before numpy
    starts threads of its own (which would take those signals where no one waits for them)."""
    import subprocess
    import sys

    code = "import sys, bpecli, bpecli.cli, bpecli.formats, bpecli.tokenizer; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_one_line_encode_reads_stdin_without_numpy_or_pyarrow(gpt2_vocab):
    """`echo ... | bpecli encode -t vocab.json` reads stdin as a stream, which needs pyarrow only to
    decompress: importing pyarrow, and numpy with it, took about a third of a one-liner's time."""
    import subprocess
    import sys

    code = ("import sys\nfrom bpecli.cli.app import main\nsys.argv = ['bpecli', 'encode', '-t', sys.argv[1]]\n"
            "try:\n    main()\nfinally:\n    print(sorted(m for m in ('numpy', 'pyarrow') if m in sys.modules), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, str(gpt2_vocab)], input="hello world",
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.split(), done.stderr.strip()) == (0, ["31373", "995"], "[]")


def _bpecli_process(*args, timeout=120, **kwargs):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "bpecli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


@pytest.mark.system
def test_a_pattern_that_backtracks_catastrophically_is_one_line_wherever_it_runs(tmp_path):
    """(?:a|aa)+$|[\\s\\S] runs for minutes on 41 characters: as --pattern for train, as
    --pattern for encode (the regex path, and --out's workers), and from bpecli.json."""
    pattern = r"(?:a|aa)+$|[\s\S]"
    corpus = tmp_path / "docs.txt"
    corpus.write_text("hello world\n" * 20 + "a" * 40 + "b\n", encoding="utf-8")
    tok = tmp_path / "tok"
    assert run("train", corpus, "--vocab-size", 260, "--out", tok, "-q").exit_code == 0
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("bpecli.json", "tokenizer.tiktoken"):
        (bad / name).write_bytes((tok / name).read_bytes())
    meta = json.loads((bad / "bpecli.json").read_text())
    (bad / "bpecli.json").write_text(json.dumps({**meta, "pattern": pattern}))
    runs = {
        "train": ["train", corpus, "--vocab-size", 260, "--out", tmp_path / "t2", "--pattern", pattern, "--workers", 2],
        "encode": ["encode", "-t", tok / "tokenizer.tiktoken", "--pattern", pattern, corpus],
        "encode --out": ["encode", "-t", tok / "tokenizer.tiktoken", "--pattern", pattern, corpus, "--out", tmp_path / "s",
                         "--workers", 2, "--eot", "none"],
        "bpecli.json": ["encode", "-t", bad, corpus],
    }
    for name, args in runs.items():
        done = _bpecli_process(*args, "-q")
        assert done.returncode == 1, (name, done.stderr)
        assert done.stderr.startswith("bpecli: error: the pattern '(?:a|aa)+$|[\\\\s\\\\S]'"), (name, done.stderr)
        assert "backtracks catastrophically" in done.stderr and done.stderr.count("\n") == 1, (name, done.stderr)


@pytest.fixture(scope="module")
def small_corpora(tmp_path_factory, kernel_docs_sample):
    """1 MB of real text as .txt, .txt.gz and .parquet."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("corpora")
    text = kernel_docs_sample[:1_000_000]
    (folder / "docs.txt").write_text(text, encoding="utf-8")
    with gzip.open(folder / "docs.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    pq.write_table(pa.table({"text": text.split("<|endoftext|>")}), folder / "docs.parquet")
    return folder


@pytest.mark.system
@pytest.mark.parametrize("limit_kb", [60_000, 100_000, 150_000, 200_000, 250_000, 280_000, 300_000, 320_000])
def test_a_tight_memory_limit_is_one_line_never_a_traceback(small_corpora, gpt2_vocab, tmp_path, limit_kb):
    """Under `ulimit -v`: numpy's OpenBLAS ended the process with lines of its own, a library that
    could not be mapped raised ImportError, pyarrow's jemalloc said its thread did not start, its
    mimalloc crashed the exit after the line (SIGSEGV); each command either runs or says it ran out
    of memory within the limit, in one line."""
    import resource
    import subprocess
    import sys

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit_kb << 10, limit_kb << 10))

    runs = [["encode", "-t", gpt2_vocab, small_corpora / "docs.txt"],
            ["encode", "-t", gpt2_vocab, "-"],
            ["train", small_corpora / "docs.txt", "--vocab-size", 300, "--out", tmp_path / "tok", "--workers", 2, "-q"],
            ["train", small_corpora / "docs.parquet", "--vocab-size", 300, "--out", tmp_path / "tok2", "-q"]]
    runs += [["encode", "-t", gpt2_vocab, small_corpora / name, "--out", tmp_path / name, "--workers", 2, "-q"]
             for name in ("docs.txt.gz", "docs.parquet")]
    failed = []
    for args in runs:
        done = subprocess.run([sys.executable, "-m", "bpecli", *map(str, args)], input="hello world", capture_output=True,
                              text=True, timeout=120, preexec_fn=limited)
        if done.returncode:
            assert done.returncode == 1 and done.stderr.startswith("bpecli: error: "), (args, done.stderr[-2000:])
            assert done.stderr.count("\n") == 1, (args, done.stderr[-2000:])
            failed.append(done.stderr)
    if limit_kb <= 100_000:
        assert failed and all(f"out of memory within the limit of {limit_kb >> 10} MB a process (ulimit -v {limit_kb})"
                                  in line for line in failed), failed


@pytest.mark.system
def test_a_memory_error_lost_on_the_way_out_under_a_limit_is_one_line():
    """Near `ulimit -v`, CPython may find no memory for a MemoryError and end the command with
    "SystemError: ... returned NULL without setting an exception": it is out of memory too."""
    import subprocess
    import sys

    script = """
import resource
import sys
import bpecli.cli.app
app = sys.modules["bpecli.cli.app"]  # (bpecli.cli's `app` is the Typer app)
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
def lost(args):
    def run(**kwargs):
        raise SystemError("<function Typer.__call__> returned NULL without setting an exception")
    return run
app._app_for = lost
app.main()
"""
    done = subprocess.run([sys.executable, "-c", script, "train"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("bpecli: error: out of memory within the limit of 8,192 MB a process (ulimit -v 8388608)")
