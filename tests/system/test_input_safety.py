"""Hostile and unlucky inputs through every command that reads them: numbers, secrets in URIs,
documents of any size, files that are not what their name says. One line, never a traceback."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import _tmpfs


LONG = "7" * 5000  # past int()'s 4,300 digits


def shell(script: str, **kwargs):
    """Run a bash script in which `bpecli` is this interpreter's bpecli."""
    prelude = f'bpecli() {{ "{sys.executable}" -m bpecli "$@"; }}\n'
    return subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, timeout=300, **kwargs)


def one_line(done, status: int = 1) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert done.returncode == status, done.stderr
    assert len(lines[0]) < 400, lines[0]
    return lines[0]


# ---- numbers ----------------------------------------------------------------------------------

@pytest.mark.system
@pytest.mark.parametrize(
    "args, status, message",
    [
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--eot", "٣"], 1, "--eot '٣' is neither a special token"),
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--bos", "²"], 1, "--bos '²' is neither a special token"),
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--eot", LONG], 1, "(5,000 characters) is neither"),
        (["encode", "-t", "{vocab}", "{docs}", "--special-ids", "<|x|>=²"], 1, "--special-ids '<|x|>=²': expected TOKEN=ID"),
        (["encode", "-t", "{vocab}", "{docs}", "--special-ids", "<|x|>=٣"], 1, "--special-ids '<|x|>=٣': expected TOKEN=ID"),
        (["encode", "-t", "{vocab}", "{docs}", "--special-ids", f"<|x|>={LONG}"], 1, "expected TOKEN=ID"),
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--workers", "٣"], 2, "'٣' is not a whole number"),
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--shard-tokens", LONG], 2, "(5,000 characters) is too large"),
        (["encode", "-t", "{vocab}", "{docs}", "--out", "{out}", "--val-fraction", "٠.٥"], 2, "'٠.٥' is not a number"),
        (["train", "{docs}", "--out", "{out}", "--vocab-size", "٢٦٠"], 2, "'٢٦٠' is not a whole number"),
        (["train", "{docs}", "--out", "{out}", "--vocab-size", "300", "--min-frequency", "١"], 2, "not a whole number"),
        (["bench", "-t", "{vocab}", "{docs}", "--repeat", "١"], 2, "'١' is not a whole number"),
    ],
)
def test_numbers_are_ascii_digits_and_a_long_one_is_one_short_line(gpt2_vocab, docs, tmp_path, args, status, message):
    words = [a.format(vocab=gpt2_vocab, docs=docs, out=tmp_path / "out") for a in args]
    done = subprocess.run([sys.executable, "-m", "bpecli", *words], capture_output=True, text=True, timeout=120)
    assert message in one_line(done, status)
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.system
def test_a_long_number_among_ids_to_decode_is_one_line(gpt2_vocab, tmp_path):
    (tmp_path / "ids.txt").write_text(f"31373\n995 {LONG}\n")
    done = shell(f"bpecli decode -t {gpt2_vocab} {tmp_path / 'ids.txt'}")
    assert "ids.txt:2: '7777" in one_line(done) and "ids have at most 20 digits" in done.stderr


# ---- secrets in URIs --------------------------------------------------------------------------

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


@pytest.fixture(scope="module")
def s3_server():
    moto_server = pytest.importorskip("moto.server")
    from pyarrow import fs

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        storage = fs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", access_key="AKIA", secret_key=SECRET,
                                  region="us-east-1", allow_bucket_creation=True)
        storage.create_dir("corpora")
        with storage.open_output_stream("corpora/d.txt") as out:
            out.write(b"hello world<|endoftext|>hi there<|endoftext|>")
        yield f"endpoint_override={host}:{port}&scheme=http"
    finally:
        server.stop()


@pytest.mark.system
def test_credentials_in_a_uri_reach_no_message_record_or_output(gpt2_vocab, tmp_path, s3_server):
    env = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"}
    secret = SECRET.replace("/", "%2F").replace("+", "%2B")  # as a URI carries it
    good = f"s3://AKIA:{secret}@corpora/d.txt?{s3_server}"
    missing = f"s3://AKIA:{secret}@corpora/nope.txt?{s3_server}"
    in_query = f"s3://corpora/d.txt?{s3_server}&access_key=AKIA&secret_key={secret}"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    out = tmp_path / "out"
    said = []
    for script, status in [
        (f"bpecli encode -t {gpt2_vocab} '{good}' --out {out} --json", 0),
        (f"bpecli inspect {out} --json", 0),
        (f"bpecli encode -t {gpt2_vocab} '{good}' -f json", 0),
        (f"bpecli encode -t {gpt2_vocab} '{good}' {bad} --out {tmp_path / 'failed'} --shard-tokens 1", 1),
        (f"bpecli encode -t {gpt2_vocab} '{missing}' --out {tmp_path / 'o2'}", 1),
        (f"bpecli encode -t {gpt2_vocab} '{missing}'", 1),
        (f"bpecli encode -t {gpt2_vocab} '{in_query}'", 1),
        (f"bpecli train '{missing}' --vocab-size 260 --out {tmp_path / 'tok'}", 1),
        (f"bpecli inspect {gpt2_vocab} --corpus '{missing}'", 1),
        (f"bpecli bench -t {gpt2_vocab} '{missing}'", 1),
    ]:
        done = shell(script, env=env)
        assert done.returncode == status, (script, done.stderr)
        said += [done.stdout, done.stderr]
    assert json.loads(said[2])["inputs"][0]["path"] == f"s3://***@corpora/d.txt?{s3_server}"
    assert json.loads(said[4])["input"].startswith("s3://***@corpora/d.txt")
    assert "access_key=***&secret_key=***" in said[13]
    records = [(out / "manifest.json").read_text(), (tmp_path / "failed" / ".bpecli-progress.json").read_text()]
    assert "s3://***@corpora/d.txt" in records[1]
    for text in said + records:
        assert secret not in text and "AKIA" not in text, text


# ---- files that are not what they seem --------------------------------------------------------


# ---- plain encode reads the documents encode --out and train read ------------------------------



@pytest.mark.system
def test_a_fifo_named_jsonl_is_read_as_jsonl(gpt2_vocab, gpt2, tmp_path):
    import os

    fifo = tmp_path / "docs.jsonl"
    os.mkfifo(fifo)
    feed = f"(printf '%s\\n' '{{\"text\": \"hello world\"}}' > {fifo} &) ; "
    done = shell(feed + f"bpecli encode -t {gpt2_vocab} {fifo}")
    assert (done.returncode, done.stdout) == (0, "31373 995\n"), done.stderr
    done = shell(feed + f"bpecli encode -t {gpt2_vocab} {fifo} --out {tmp_path / 'out'} -q")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["total_tokens"] == 3


# ---- memory stays bounded whatever the input ---------------------------------------------------

# Runs a command and, on its last stderr line, says the peak resident memory (KiB) of it and of
# every process it waited for: the largest of bpecli's own and its workers'.
PEAK = ("import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:])\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(done.returncode)\n")
SAFETY = "ulimit -v 6000000; "  # a runaway (the code before this test) fails, not the machine


def measured(script: str, **kwargs):
    """(the run of a bpecli command line in bash, its peak memory in MiB)."""
    prelude = f'bpecli() {{ "{sys.executable}" -c "$PEAK" "{sys.executable}" -m bpecli "$@"; }}\n'
    done = subprocess.run(["bash", "-c", SAFETY + prelude + script], capture_output=True, text=True, timeout=300,
                          env={**kwargs.pop("env", {}), "PEAK": PEAK, "PATH": "/usr/bin:/bin"}, **kwargs)
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("PEAK "), done.stderr
    done.stderr = "\n".join(lines[:-1])
    return done, int(lines[-1].split()[1]) / 1024


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    """128 MiB of "a" in 130 kB of gzip: no separator, newline or safe cut in it."""
    import zlib

    path = tmp_path_factory.mktemp("bomb") / "bomb.txt.gz"
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        for _ in range(128):
            out.write(packer.compress(b"a" * (1 << 20)))
        out.write(packer.flush())
    return path


@pytest.mark.system
@pytest.mark.parametrize("command", ["train {input} --vocab-size 300 --out {out}", "encode -t {vocab} {input} --out {out}",
                                     "encode -t {vocab} {input} -f count"])
def test_a_gzip_bomb_stops_at_the_budget_naming_where(gpt2_vocab, tmp_path, bomb, command):
    done, peak = measured("bpecli " + command.format(input=bomb, out=tmp_path / "out", vocab=gpt2_vocab))
    said = one_line(done)
    assert "bomb.txt.gz: " in said and "64 MiB from byte 0 of the decompressed data" in said or (
        "the document at byte 0 of the decompressed data runs over 64 MiB" in said), said
    assert peak < 400, f"{peak:.0f} MiB"  # the budget and a part, not the 128 MiB (or the gigabytes) of the bomb
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.fixture
def roomy_tmpdir(tmp_path):
    """A 96 MiB tmpfs for spooled streams: /dev/zero fills it unless the copy stops at the budget."""
    yield from _tmpfs(tmp_path / "spool", "size=96m", "a tmpfs")


@pytest.mark.system
@pytest.mark.parametrize("command, message", [
    ("train /dev/zero --vocab-size 300 --out {out}", "/dev/zero: over 64 MiB from byte 0 with no line end in it"),
    ("encode -t {vocab} /dev/zero --out {out}", "/dev/zero: over 64 MiB from byte 0 with no line end or special token"),
    ("train - --vocab-size 300 --out {out} < /dev/zero", "<stdin>: over 64 MiB from byte 0 with no line end"),
    ("encode -t {vocab} /dev/zero", "/dev/zero: over 64 MiB from byte 0 with no <|endoftext|> and no line starting"),
    ("encode -t {vocab} < /dev/zero", "<stdin>: over 64 MiB from byte 0 with no <|endoftext|> and no line starting"),
    ("decode -t {vocab} /dev/zero", "/dev/zero:1: '\\x00\\x00"),  # read a block at a time: no id
    ("inspect {vocab} --corpus /dev/zero", "/dev/zero: over 64 MiB"),
    ("inspect {vocab} --text - < /dev/zero", "<stdin>: over 64 MiB"),
    ("bench -t {vocab} /dev/zero", "/dev/zero: over 64 MiB"),
])
def test_dev_zero_as_an_input_stops_at_the_budget(gpt2_vocab, tmp_path, roomy_tmpdir, command, message):
    script = "bpecli " + command.format(out=tmp_path / "out", vocab=gpt2_vocab)
    done, peak = measured(script, env={"TMPDIR": str(roomy_tmpdir)})
    assert message in one_line(done)
    assert peak < 400, f"{peak:.0f} MiB"
    assert list(roomy_tmpdir.iterdir()) == [] and not (tmp_path / "out" / "manifest.json").exists()


@pytest.fixture(scope="module")
def long_line(tmp_path_factory, kernel_docs_sample):
    """One JSONL line of 20 MB of real text, and the text as a plain file."""
    text = (kernel_docs_sample.replace("<|endoftext|>", "") * 10)[:20_000_000]
    folder = tmp_path_factory.mktemp("long")
    (folder / "line.jsonl").write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
    (folder / "doc.txt").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.system
@pytest.mark.parametrize("command", ["train {folder}/line.jsonl --vocab-size 300 --out {out} -q --workers 2",
                                     "encode -t {vocab} {folder}/line.jsonl --out {out} -q --workers 2",
                                     "encode -t {vocab} {folder}/doc.txt --out {out} -q --workers 1",
                                     "encode -t {vocab} {folder}/line.jsonl -f count"])
def test_a_20_mb_document_is_encoded_and_counted_in_bounded_memory(gpt2_vocab, tmp_path, long_line, command):
    """A document of newline-rich text is counted and encoded a few MB at a time, within the README's
    budget (held whole, it would take 40-45 times its size); test_long_lines.py has one long line."""
    done, peak = measured("bpecli " + command.format(folder=long_line, out=tmp_path / "out", vocab=gpt2_vocab))
    assert done.returncode == 0, done.stderr
    assert peak < 450, f"{peak:.0f} MiB"


# ---- found by the audit of every input through every command ----------------------------------


@pytest.mark.system
def test_an_endless_stream_of_random_bytes_stops_at_its_first_invalid_utf8(gpt2_vocab, tmp_path, roomy_tmpdir):
    for command in ("train /dev/urandom --vocab-size 300 --out {out}", "encode -t {vocab} /dev/urandom --out {out}",
                    "train - --vocab-size 300 --out {out} < /dev/urandom"):
        done = shell("bpecli " + command.format(out=tmp_path / "out", vocab=gpt2_vocab), env={"TMPDIR": str(roomy_tmpdir),
                                                                                            "PATH": "/usr/bin:/bin"})
        said = one_line(done)
        assert re.search(r"urandom|<stdin>", said) and re.search(r":[0-9]+: invalid UTF-8 at byte [0-9]+ ", said), said
        assert list(roomy_tmpdir.iterdir()) == []  # never the disk filled with it


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux's setpriv to read as a user without root's reach")
def test_a_tokenizer_folder_that_may_not_be_read_says_so(trained, tmp_path):
    """A folder bpecli may not look into is not "no tokenizer here": reading its file says why."""
    locked = tmp_path / "locked"
    shutil.copytree(trained[1], locked)
    locked.chmod(0)
    as_user = "setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search " if os.geteuid() == 0 else ""
    try:
        for command in (f"echo hi | {as_user}\"$BPECLI\" encode -t {locked}", f"{as_user}\"$BPECLI\" inspect {locked}"):
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "BPECLI": str(Path(sys.executable).parent / "bpecli")})
            assert "Permission denied" in one_line(done) and "no tokenizer here" not in done.stderr, (command, done.stderr)
    finally:
        locked.chmod(0o755)
