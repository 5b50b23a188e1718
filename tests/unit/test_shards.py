"""Shards: ids equal tiktoken's per document, the same for every worker count and input format,
atomic, resumable after an interruption, and verifiable."""

import errno
import gzip
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli import folders
from bpecli.errors import BpecliError, InputError, OutputError
from bpecli.inputs import parts as input_parts
from bpecli.report import shard_figures
from bpecli.shards import encode, formats, journal as shard_journal, layout, verify, write_shards, writer

from conftest import Interrupt

EOT = 50256


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of 64 KB, so that a 2 MB sample is many parts (and resuming has parts to skip)."""
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 16)


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory, kernel_docs_sample):
    path = tmp_path_factory.mktemp("corpus") / "sample.txt"
    path.write_text(kernel_docs_sample, encoding="utf-8")
    return path


def documents(text: str) -> list[str]:
    return [d for d in text.split("<|endoftext|>") if d]


def shard_bytes(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))


def concatenated(folder) -> np.ndarray:
    return np.concatenate([np.load(p, mmap_mode="r") for p in sorted(folder.glob("shard_*.npy"))])


def test_shards_hold_tiktoken_ids_of_each_document_then_eot(gpt2, tiktoken_gpt2, sample_file, tmp_path, small_parts):
    run = write_shards(gpt2, [str(sample_file)], tmp_path / "out", shard_tokens=100_000, workers=2, eot=EOT)
    expected = []
    for ids in tiktoken_gpt2.encode_ordinary_batch(documents(sample_file.read_text(encoding="utf-8"))):
        expected += ids + [EOT]
    assert concatenated(tmp_path / "out").tolist() == expected

    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest == run.manifest
    assert manifest["dtype"] == "uint16" and manifest["total_tokens"] == len(expected)
    assert manifest["total_documents"] == expected.count(EOT) == sum(s["documents"] for s in manifest["shards"])
    sizes = [s["tokens"] for s in manifest["shards"]]
    assert all(n == 100_000 for n in sizes[:-1]) and 0 < sizes[-1] <= 100_000
    first = np.load(tmp_path / "out" / "shard_00000.npy", mmap_mode="r")
    assert first.dtype == np.uint16 and first.shape == (100_000,)
    assert verify(tmp_path / "out") == []


def test_any_worker_count_gives_identical_bytes(gpt2, sample_file, tmp_path, small_parts):
    for workers in (1, 2):
        write_shards(gpt2, [str(sample_file)], tmp_path / f"w{workers}", shard_tokens=77_777, workers=workers, eot=EOT)
    assert shard_bytes(tmp_path / "w1") == shard_bytes(tmp_path / "w2")


def test_every_input_format_gives_identical_shards(gpt2, sample_file, tmp_path, small_parts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = documents(sample_file.read_text(encoding="utf-8"))
    lines = "".join(json.dumps({"id": i, "text": d}) + "\n" for i, d in enumerate(docs))
    with gzip.open(tmp_path / "docs.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(lines)
    pq.write_table(pa.table({"text": docs}), tmp_path / "docs.parquet", row_group_size=500)
    with pa.output_stream(tmp_path / "docs.txt.zst", compression="zstd") as f:
        f.write(sample_file.read_bytes())
    with pa.output_stream(tmp_path / "docs.jsonl.bz2", compression="bz2") as f:
        f.write(lines.encode("utf-8"))
    (tmp_path / "docs.jsonl").write_text(lines, encoding="utf-8")

    def body(name):  # the shards and manifest less the inputs it names and what it read of them
        out = tmp_path / f"out-{name}"
        write_shards(gpt2, [str(tmp_path / name if name != "txt" else sample_file)], out, shard_tokens=50_000, workers=2, eot=EOT)
        manifest = json.loads((out / "manifest.json").read_text())
        del manifest["inputs"], manifest["read"]
        return {**shard_bytes(out), "manifest.json": manifest}

    reference = body("txt")
    assert len(reference) > 3
    for name in ("docs.jsonl", "docs.jsonl.gz", "docs.jsonl.bz2", "docs.parquet", "docs.txt.zst"):
        assert body(name) == reference, name


def test_an_interrupted_run_resumes_to_the_same_bytes(gpt2, sample_file, tmp_path, small_parts):
    options = dict(shard_tokens=40_000, workers=1, eot=EOT)
    write_shards(gpt2, [str(sample_file)], tmp_path / "whole", **options)

    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(sample_file)], tmp_path / "cut", progress=Interrupt(after=12), **options)
    left = sorted(p.name for p in (tmp_path / "cut").iterdir())
    assert "manifest.json" not in left and not [n for n in left if n.endswith(".partial")]
    assert 0 < len([n for n in left if n.startswith("shard_")]) < len(list((tmp_path / "whole").glob("shard_*")))

    run = write_shards(gpt2, [str(sample_file)], tmp_path / "cut", **options)
    assert run.status == "resumed" and run.kept_shards > 0
    assert shard_bytes(tmp_path / "cut") == shard_bytes(tmp_path / "whole")


def test_a_damaged_shard_of_an_interrupted_run_is_written_again(gpt2, sample_file, tmp_path, small_parts):
    options = dict(shard_tokens=40_000, workers=2, eot=EOT)
    write_shards(gpt2, [str(sample_file)], tmp_path / "whole", **options)
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(sample_file)], tmp_path / "cut", progress=Interrupt(after=20), **options)
    flip_a_byte(tmp_path / "cut" / "shard_00001.npy")
    run = write_shards(gpt2, [str(sample_file)], tmp_path / "cut", **options)
    assert run.kept_shards == 1
    assert shard_bytes(tmp_path / "cut") == shard_bytes(tmp_path / "whole")


def test_a_finished_folder_is_left_alone_and_force_rebuilds_it(gpt2, sample_file, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(sample_file)], out, shard_tokens=200_000, eot=EOT)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert write_shards(gpt2, [str(sample_file)], out, shard_tokens=200_000, eot=EOT).status == "complete"
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before

    with pytest.raises(OutputError, match="another run"):
        write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT)
    run = write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT, force=True)
    assert run.status == "written" and all(s["tokens"] <= 100_000 for s in run.manifest["shards"])
    assert len(list(out.glob("shard_*.npy"))) == len(run.manifest["shards"])


def test_eot_none_and_uint32(gpt2, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello world<|endoftext|>hello<|endoftext|>", encoding="utf-8")
    write_shards(gpt2, [str(path)], tmp_path / "out", eot=None, dtype="uint32")
    ids = np.load(tmp_path / "out" / "shard_00000.npy")
    assert ids.dtype == np.uint32 and ids.tolist() == [31373, 995, 31373]


def test_the_default_eot_is_an_error_where_the_tokenizer_has_none(tmp_path):
    import bpecli

    path = tmp_path / "a.txt"
    path.write_text("hello world<|endoftext|>hello", encoding="utf-8")
    plain = bpecli.train([str(path)], vocab_size=260)
    with pytest.raises(BpecliError, match=r"no <\|endoftext\|> .* eot='none'"):
        bpecli.write_shards(plain, str(path), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert bpecli.write_shards(plain, str(path), tmp_path / "out", eot=None).manifest["eot"] is None


def test_verify_names_the_changed_shard(gpt2, sample_file, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT)
    flip_a_byte(out / "shard_00002.npy")
    assert verify(out) == ["shard_00002.npy: sha256 does not match the manifest"]


def test_bad_inputs_are_clear_errors_and_leave_no_shard(gpt2, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:3: not valid JSON"):
        write_shards(gpt2, [str(bad)], tmp_path / "o1")
    bad.write_text('{"text": "fine"}\n{"body": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:2: no field 'text'.*name the text field with text_column"):
        write_shards(gpt2, [str(bad)], tmp_path / "o2")

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "t.parquet")
    with pytest.raises(InputError, match=r"t.parquet: no column 'text' \(it has body\)"):
        write_shards(gpt2, [str(tmp_path / "t.parquet")], tmp_path / "o3")

    empty = tmp_path / "empty.txt"
    empty.write_text("<|endoftext|>", encoding="utf-8")
    with pytest.raises(InputError, match="no documents"):
        write_shards(gpt2, [str(empty)], tmp_path / "o4")
    for out in ("o1", "o2", "o3", "o4"):
        assert not list((tmp_path / out).glob("*shard*")) and not (tmp_path / out / "manifest.json").exists()


def test_ids_that_do_not_fit_the_dtype_are_an_error(cl100k_file):
    from bpecli import Tokenizer

    with pytest.raises(BpecliError, match="uint16 cannot hold"):
        formats.resolve_dtype(Tokenizer.load(cl100k_file), "uint16")


def test_links_at_the_temporary_names_are_never_written_through(gpt2, sample_file, tmp_path, small_parts):
    """Links named as the temporaries of shards not yet begun (a shard's and its index's), made
    while the run goes on: each is removed, never followed, and the file it points at stays as it is."""
    victim = tmp_path / "victim.txt"
    victim.write_text("important")
    out = tmp_path / "out"

    class Planting:  # a progress bar that makes the links as the first part is written
        planted = False

        def update(self, n):
            if not self.planted:
                for number in range(1, 4):
                    (out / f".shard_{number:05d}.npy.partial").symlink_to(victim)
                    (out / f".shard_{number:05d}.idx.partial").symlink_to(victim)
                self.planted = True

        def set_postfix_str(self, *args, **kwargs):
            pass

        def close(self):
            pass

    run = write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, workers=1, eot=EOT,
                       progress=lambda *args: Planting())
    assert len(run.manifest["shards"]) >= 4 and victim.read_text() == "important"
    assert verify(out) == [] and not [p for p in out.iterdir() if p.is_symlink() or p.name.endswith(".partial")]


def test_a_file_written_whole_never_writes_through_a_link_at_its_temporary_name(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("important")
    (tmp_path / "manifest.json.partial").symlink_to(victim)
    folders.write_json_atomically({"a": 1}, tmp_path / "manifest.json")
    assert victim.read_text() == "important" and json.loads((tmp_path / "manifest.json").read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "victim.txt"]


def test_a_full_disk_leaves_no_partial_shard(gpt2, sample_file, tmp_path, monkeypatch):
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer.os, "fsync", no_space)
    with pytest.raises(OutputError, match="No space left on device"):
        write_shards(gpt2, [str(sample_file)], tmp_path / "out", shard_tokens=100_000, eot=EOT)
    assert not (tmp_path / "out").exists()  # it held nothing finished: the folder made for it goes too


def test_a_pattern_without_the_vectorised_path_shards_the_same_ids(cl100k_file, kernel_docs_sample, tmp_path):
    """A custom pattern (cl100k's, in a group: the same pieces, but no preset) goes through the
    regex, one document at a time; ids as tiktoken's cl100k_base."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from bpecli import PATTERNS, Tokenizer

    tok = Tokenizer.load(cl100k_file, pattern="(?:" + PATTERNS["cl100k"] + ")")
    assert tok._text.bulk is None  # no vectorised splitter for it: the regex path
    theirs = tiktoken.Encoding("cl100k_base", pat_str=PATTERNS["cl100k"], mergeable_ranks=load_tiktoken_bpe(str(cl100k_file)),
                               special_tokens=tok.special_tokens)
    path = tmp_path / "sample.txt"
    path.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    run = write_shards(tok, [str(path)], tmp_path / "out", shard_tokens=30_000, workers=2, eot=100257)
    expected = []
    for ids in theirs.encode_ordinary_batch(documents(path.read_text(encoding="utf-8"))):
        expected += ids + [100257]
    assert run.manifest["dtype"] == "uint32"
    assert concatenated(tmp_path / "out").tolist() == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"<s>", b"<t>", b"\n"]), max_size=60).map(b"".join), st.integers(1, 12))
def test_cuts_are_at_the_first_special_token_after_each_guess(data, n_parts):
    """part_boundaries looks for all the tokens at once (one search, whichever comes first); the
    cuts are those of looking for every token from every guess."""
    tokens = [b"<s>", b"<t>", b"<never>"]
    step, expected = len(data) // n_parts, [0]
    for i in range(1, n_parts):
        guess = max(i * step, expected[-1] + 1)
        expected.append(min([p for t in tokens if (p := data.find(t, guess)) != -1], default=len(data)))
    expected = sorted(set(expected + [len(data)])) if n_parts > 1 and data else [0, len(data)]
    assert input_parts.part_boundaries(data, n_parts, tokens) == expected


# ---- what must never pass for finished: concurrent runs, changed inputs, overflowing ids ----

def test_a_second_run_into_the_same_folder_is_refused_while_the_first_holds_it(gpt2, sample_file, tmp_path):
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(OutputError, match=f"another bpecli is writing {out}"):
            write_shards(gpt2, [str(sample_file)], out, eot=EOT)
    finally:
        os.close(held)
    assert write_shards(gpt2, [str(sample_file)], out, eot=EOT).status == "written"


def edit_in_place(path, keep_mtime: bool) -> None:
    """Change one byte of a file, its size the same; keep its modification time if asked."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] = ord("X") if data[len(data) // 2] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_input_edited_in_place_is_never_complete_already(gpt2, sample_file, tmp_path):
    corpus_path = tmp_path / "docs.txt"
    corpus_path.write_bytes(sample_file.read_bytes())
    out = tmp_path / "out"
    write_shards(gpt2, [str(corpus_path)], out, shard_tokens=200_000, eot=EOT)
    edit_in_place(corpus_path, keep_mtime=False)
    with pytest.raises(OutputError, match=r"holds shards of another run \(input .*docs.txt: modified since\)"):
        write_shards(gpt2, [str(corpus_path)], out, shard_tokens=200_000, eot=EOT)
    assert any("changed since these shards were written" in problem for problem in verify(out))


@pytest.mark.parametrize("keep_mtime", [False, True])
def test_an_input_edited_between_interruption_and_resume_is_caught(gpt2, sample_file, tmp_path, small_parts, keep_mtime):
    corpus_path = tmp_path / "docs.txt"
    corpus_path.write_bytes(sample_file.read_bytes())
    options = dict(shard_tokens=40_000, workers=1, eot=EOT)
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(corpus_path)], tmp_path / "cut", progress=Interrupt(after=20), **options)
    edit_in_place(corpus_path, keep_mtime=keep_mtime)
    # a new time says so at once; the same time is caught by the checksum of each part read again
    message = "changed since the interrupted run" if keep_mtime else "modified since"
    with pytest.raises(BpecliError, match=message):
        write_shards(gpt2, [str(corpus_path)], tmp_path / "cut", **options)
    assert not (tmp_path / "cut" / "manifest.json").exists()


class Truncate(Interrupt):
    """A progress bar that cuts the input short after `after` updates, as another program might."""

    def __init__(self, after, path):
        super().__init__(after)
        self.path = path

    def update(self, n):
        self.left -= 1
        if self.left == 0:
            os.truncate(self.path, self.path.stat().st_size // 2)


def test_an_input_truncated_while_it_is_read_never_ends_as_finished(gpt2, sample_file, tmp_path, small_parts):
    corpus_path = tmp_path / "docs.txt"
    corpus_path.write_bytes(sample_file.read_bytes())
    with pytest.raises(InputError, match="docs.txt changed while bpecli read it"):
        write_shards(gpt2, [str(corpus_path)], tmp_path / "out", shard_tokens=40_000, eot=EOT,
                     progress=Truncate(5, corpus_path))
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_the_manifest_records_what_was_read_of_each_input(gpt2, sample_file, tmp_path, small_parts):
    run = write_shards(gpt2, [str(sample_file)], tmp_path / "out", eot=EOT)
    (read,) = run.manifest["read"]
    assert read["parts"] > 10 and len(read["sha256"]) == 64
    assert run.manifest["inputs"][0]["mtime_ns"] == sample_file.stat().st_mtime_ns


def test_ids_past_uint32_are_an_error_never_wrapped(tmp_path):
    from bpecli import Tokenizer

    tok = Tokenizer(ranks={bytes([b]): b for b in range(256)}, special_tokens={"<|endoftext|>": 2**32 + 5})
    (tmp_path / "a.txt").write_text("hi")
    with pytest.raises(BpecliError, match="past uint32"):
        write_shards(tok, [str(tmp_path / "a.txt")], tmp_path / "out", eot=2**32 + 5)


def test_many_tiny_shards_do_not_rewrite_the_journal_each_time(gpt2, tmp_path, monkeypatch):
    writes = []
    original = folders.write_json_atomically
    monkeypatch.setattr(folders, "write_json_atomically", lambda doc, path: (writes.append(path.name), original(doc, path)))
    monkeypatch.setattr(shard_journal, "JOURNAL_SECONDS", 3600.0)  # a loaded machine's clock decides nothing here
    (tmp_path / "a.txt").write_text("hello world " * 100)
    run = write_shards(gpt2, [str(tmp_path / "a.txt")], tmp_path / "out", shard_tokens=1, eot=EOT)
    assert len(run.manifest["shards"]) == 202  # 201 tokens and the eot
    # the first shard's, then one each time the names claimed run out (they double): 0, 16, 32, 64, 128
    assert writes.count(".bpecli-progress.json") == 5 and writes[-1] == "manifest.json"


@pytest.mark.parametrize("kind", ["dictionary", "struct", "large_string", "a dot in its name"])
def test_parquet_text_in_other_arrow_types_reads_the_same(gpt2, tmp_path, kind):
    pa = pytest.importorskip("pyarrow")
    from pyarrow import parquet

    docs = ["hello world", "second document", "hello world"]
    parquet.write_table(pa.table({"text": docs}), tmp_path / "plain.parquet")
    column = {"dictionary": pa.array(docs).dictionary_encode(), "large_string": pa.array(docs, pa.large_string()),
              "struct": pa.StructArray.from_arrays([pa.array(docs)], names=["body"]), "a dot in its name": pa.array(docs)}[kind]
    name = {"struct": "meta", "a dot in its name": "meta.body"}.get(kind, "text")
    parquet.write_table(pa.table({name: column}), tmp_path / "other.parquet")
    want = write_shards(gpt2, [str(tmp_path / "plain.parquet")], tmp_path / "a", eot=EOT).manifest
    got = write_shards(gpt2, [str(tmp_path / "other.parquet")], tmp_path / "b", eot=EOT,
                       text_column="meta.body" if kind in ("struct", "a dot in its name") else "text").manifest
    assert [s["sha256"] for s in got["shards"]] == [s["sha256"] for s in want["shards"]]


@pytest.mark.parametrize(
    "column, text_column, message",
    [
        ("lists", "text", r"holds lists \(list<\w+: string>\), not one text per row"),
        ("numbers", "text", "holds int64, not text"),
        ("struct", "meta", "is a struct; name its text field with text_column \\(meta.body\\)"),
        ("struct", "meta.nope", "has no field 'nope'"),
        ("nulls", "text", "row 2: column 'text' is null"),
    ],
)
def test_parquet_columns_that_are_not_text_are_one_clear_error(gpt2, tmp_path, column, text_column, message):
    pa = pytest.importorskip("pyarrow")
    from pyarrow import parquet

    values = {"lists": pa.array([["a", "b"], ["c"]]), "numbers": pa.array([1, 2]),
              "struct": pa.StructArray.from_arrays([pa.array(["a", "b"])], names=["body"]), "nulls": pa.array(["a", None])}[column]
    parquet.write_table(pa.table({"meta" if column == "struct" else "text": values}), tmp_path / "t.parquet")
    with pytest.raises(InputError, match=message):
        write_shards(gpt2, [str(tmp_path / "t.parquet")], tmp_path / "out", eot=EOT, text_column=text_column)


@pytest.mark.parametrize("tokenizer_name, dtype, magic, version", [("gpt2", "uint16", 20240520, 1), ("cl100k", "uint32", 20240801, 7)])
def test_llm_c_shards_have_its_header_and_the_same_tokens(gpt2, cl100k_file, sample_file, tmp_path, tokenizer_name, dtype, magic, version):
    """llm.c's .bin: 256 int32 (magic, version, token count), then the tokens, as its loaders read them."""
    from bpecli import Tokenizer

    tok = gpt2 if tokenizer_name == "gpt2" else Tokenizer.load(cl100k_file)
    eot = tok.special_tokens["<|endoftext|>"]
    npy = write_shards(tok, [str(sample_file)], tmp_path / "npy", shard_tokens=100_000, eot=eot).manifest
    run = write_shards(tok, [str(sample_file)], tmp_path / "bin", shard_tokens=100_000, eot=eot, shard_format="llmc")
    assert run.manifest["shard_format"] == "llmc" and run.manifest["dtype"] == dtype
    assert [s["file"] for s in run.manifest["shards"]] == [s["file"].replace(".npy", ".bin") for s in npy["shards"]]
    for ours, theirs in zip(run.manifest["shards"], npy["shards"]):
        raw = (tmp_path / "bin" / ours["file"]).read_bytes()
        header = np.frombuffer(raw[:1024], dtype="<i4")
        assert (header[0], header[1], header[2]) == (magic, version, ours["tokens"]) and not header[3:].any()
        tokens = np.frombuffer(raw[1024:], dtype=np.dtype(dtype).newbyteorder("<"))
        assert tokens.tolist() == np.load(tmp_path / "npy" / theirs["file"]).tolist()
    assert verify(tmp_path / "bin") == []
    assert shard_figures(tmp_path / "bin")["total_tokens"] == npy["total_tokens"]


def test_an_interrupted_llm_c_run_resumes_to_the_same_bytes(gpt2, sample_file, tmp_path, small_parts):
    options = dict(shard_tokens=40_000, workers=2, eot=EOT, shard_format="llmc")
    write_shards(gpt2, [str(sample_file)], tmp_path / "whole", **options)
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(sample_file)], tmp_path / "cut", progress=Interrupt(after=12), **options)
    assert write_shards(gpt2, [str(sample_file)], tmp_path / "cut", **options).status == "resumed"
    assert shard_bytes(tmp_path / "cut") == shard_bytes(tmp_path / "whole")
    with pytest.raises(OutputError, match='shard_format "llmc" there, "npy" now'):
        write_shards(gpt2, [str(sample_file)], tmp_path / "whole", shard_tokens=40_000, eot=EOT)


def test_each_shard_has_a_document_index_of_where_its_documents_start(gpt2, sample_file, tmp_path, small_parts):
    write_shards(gpt2, [str(sample_file)], tmp_path / "out", shard_tokens=30_000, workers=2, eot=EOT)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    whole, starts, offset = [], [], 0
    for shard in manifest["shards"]:
        ids = np.load(tmp_path / "out" / shard["file"])
        index = np.load(tmp_path / "out" / shard["index"])
        assert index.dtype == np.int64 and (np.diff(index) > 0).all() and (index < len(ids)).all()
        whole.append(ids)
        starts += (index + offset).tolist()
        offset += len(ids)
    ids = np.concatenate(whole)
    # a document starts at 0 and after each eot, and nowhere else
    assert starts == [0, *(np.flatnonzero(ids == EOT)[:-1] + 1).tolist()]
    assert verify(tmp_path / "out") == []
    (tmp_path / "out" / manifest["shards"][1]["index"]).write_bytes(b"")
    assert verify(tmp_path / "out") == [f"{manifest['shards'][1]['index']}: sha256 does not match the manifest"]


def test_bos_goes_before_each_document(gpt2, tiktoken_gpt2, tmp_path):
    corpus_file = tmp_path / "c.txt"
    corpus_file.write_text("hello world<|endoftext|>second one<|endoftext|>", encoding="utf-8")
    write_shards(gpt2, [str(corpus_file)], tmp_path / "out", eot=None, bos=EOT)
    expected = [EOT, *tiktoken_gpt2.encode("hello world"), EOT, *tiktoken_gpt2.encode("second one")]
    assert concatenated(tmp_path / "out").tolist() == expected
    assert np.load(tmp_path / "out" / "shard_00000.idx").tolist() == [0, 3]


def split_ids(folder, split: str) -> list[int]:
    return np.concatenate([np.load(p) for p in sorted(folder.glob(f"{split}_*.npy"))]).tolist()


def test_the_validation_split_is_by_document_whatever_the_workers_and_on_resume(gpt2, tiktoken_gpt2, sample_file,
                                                                               tmp_path, small_parts):
    options = dict(shard_tokens=30_000, eot=EOT, val_fraction=0.1)
    one = write_shards(gpt2, [str(sample_file)], tmp_path / "one", workers=1, **options)
    write_shards(gpt2, [str(sample_file)], tmp_path / "two", workers=2, **options)
    assert shard_bytes(tmp_path / "two") == shard_bytes(tmp_path / "one")
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, [str(sample_file)], tmp_path / "cut", workers=2, progress=Interrupt(after=12), **options)
    assert write_shards(gpt2, [str(sample_file)], tmp_path / "cut", workers=2, **options).status == "resumed"
    assert shard_bytes(tmp_path / "cut") == shard_bytes(tmp_path / "one")

    # every document is whole on one side, in order; about a tenth of them is validation
    docs = documents(sample_file.read_text(encoding="utf-8"))
    val = encode.in_validation(docs, 0.1)
    assert 0.05 < val.mean() < 0.15
    for split, chosen in (("train", ~val), ("val", val)):
        expected = [i for d, c in zip(docs, chosen) if c for i in tiktoken_gpt2.encode_ordinary(d) + [EOT]]
        assert split_ids(tmp_path / "one", split) == expected
    splits = one.manifest["splits"]
    assert splits["val"]["documents"] == int(val.sum()) and splits["train"]["documents"] == len(docs) - int(val.sum())
    assert not list((tmp_path / "one").glob("shard_*"))


def test_nanogpt_bins_are_the_raw_tokens_of_each_split(gpt2, sample_file, tmp_path, small_parts):
    write_shards(gpt2, [str(sample_file)], tmp_path / "npy", shard_tokens=30_000, eot=EOT, val_fraction=0.1)
    run = write_shards(gpt2, [str(sample_file)], tmp_path / "nano", eot=EOT, val_fraction=0.1, shard_format="nanogpt",
                       workers=2)
    for split in ("train", "val"):
        # as nanoGPT's train.py reads them
        raw = np.memmap(tmp_path / "nano" / f"{split}.bin", dtype=np.uint16, mode="r")
        assert raw.tolist() == split_ids(tmp_path / "npy", split)
        assert formats.read_shard(tmp_path / "nano" / f"{split}.bin").tolist() == raw.tolist()
    assert [s["file"] for s in run.manifest["shards"]] == ["train.bin", "val.bin"]
    assert verify(tmp_path / "nano") == []
    stray = tmp_path / "stray.bin"
    stray.write_bytes(b"\x00" * 64)
    with pytest.raises(InputError, match="no llm.c header"):
        formats.read_shard(stray)


@pytest.mark.parametrize("shard_format", ["npy", "nanogpt"])
def test_a_shard_read_alone_holds_what_its_manifest_says_or_is_an_error(gpt2, sample_file, tmp_path, shard_format):
    """decode reads a shard as listed: one cut short or grown (a raw nanoGPT .bin reads either way)
    is an error that names the counts, and a nanoGPT .bin beside a damaged manifest says so."""
    out = tmp_path / "out"
    run = write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT, shard_format=shard_format)
    shard = out / run.manifest["shards"][0]["file"]
    listed = run.manifest["shards"][0]["tokens"]
    assert len(formats.read_shard(shard, as_listed=True)) == listed
    whole = shard.read_bytes()
    if shard_format == "nanogpt":
        shard.write_bytes(whole + bytes(20))
    else:
        np.save(shard, np.load(shard)[:-10])
    held = listed + 10 if shard_format == "nanogpt" else listed - 10
    with pytest.raises(InputError, match=f"holds {held:,} ids where the manifest says {listed:,}"):
        formats.read_shard(shard, as_listed=True)
    if shard_format == "nanogpt":
        shard.write_bytes(whole)
        for damaged in ("{", "[]", '{"shard_format": "nanogpt", "shards": "train.bin"}',
                        '{"shard_format": "nanogpt", "dtype": "int8", "shards": [{"file": "train.bin", "tokens": 1}]}'):
            (out / "manifest.json").write_text(damaged)
            with pytest.raises(InputError, match="the manifest.json beside it, which says how to read a nanoGPT .bin, is damaged"):
                formats.read_shard(shard, as_listed=True)


@pytest.mark.parametrize("name", ["ids.npy", "ids.bin"])
def test_a_shard_that_is_a_fifo_is_refused_without_opening_it(tmp_path, name):
    """A FIFO would be opened twice (its magic, then the array) and the second open wait forever."""
    os.mkfifo(tmp_path / name)
    with pytest.raises(InputError, match="not a regular file"):
        formats.read_shard(tmp_path / name)


_opened: list[str] = []
_counting_opens = False


def _count_opens(event, args):  # an audit hook stays for the whole process: it counts only when asked
    if _counting_opens and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_count_opens)


@pytest.mark.parametrize("shard_format", ["npy", "llmc", "nanogpt"])
def test_a_shard_is_opened_by_its_name_once(gpt2, sample_file, tmp_path, shard_format):
    """Everything read of a shard or index comes through one descriptor: a name looked up twice
    could be swapped for another file (or a FIFO, which would hang) between the looks."""
    global _counting_opens
    run = write_shards(gpt2, [str(sample_file)], tmp_path / "out", eot=EOT, shard_format=shard_format)
    paths = [tmp_path / "out" / shard["file"] for shard in run.manifest["shards"]]
    paths += [tmp_path / "out" / shard["index"] for shard in run.manifest["shards"] if "index" in shard]
    settings = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for read in ("read", "checked for a resume", "verified"):
        _opened.clear()
        _counting_opens = True
        try:
            if read == "read":
                for path in paths:
                    (formats.load_npy(path, "document index") if path.suffix == ".idx"
                     else formats.read_shard(path, as_listed=True))
            elif read == "checked for a resume":
                assert all(shard_journal._intact(tmp_path / "out", shard, settings) for shard in settings["shards"])
            else:
                assert verify(tmp_path / "out") == []
        finally:
            _counting_opens = False
        assert sorted(p for p in _opened if not p.endswith("manifest.json")) == sorted(map(str, paths)), read


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_a_npy_of_every_version_numpy_writes_is_read(tmp_path, version):
    with open(tmp_path / "ids.npy", "wb") as f:
        np.lib.format.write_array(f, np.arange(10, dtype=np.uint16), version=version)
    assert formats.read_shard(tmp_path / "ids.npy").tolist() == list(range(10))


def test_a_npy_with_bytes_after_its_array_or_objects_in_it_is_refused(tmp_path):
    np.save(tmp_path / "ids.npy", np.arange(10, dtype=np.uint16))
    with open(tmp_path / "ids.npy", "ab") as f:
        f.write(b"tail")
    with pytest.raises(InputError, match="4 bytes more than its array"):
        formats.read_shard(tmp_path / "ids.npy")
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object))
    with pytest.raises(InputError, match=r"^\S+objects.npy: not a readable shard \(.*objects"):
        formats.read_shard(tmp_path / "objects.npy")


def test_a_validation_fraction_outside_0_and_1_is_an_error(gpt2, sample_file, tmp_path):
    with pytest.raises(BpecliError, match="val_fraction 1.5"):
        write_shards(gpt2, [str(sample_file)], tmp_path / "out", val_fraction=1.5)


def test_shard_names_bpecli_has_no_record_of_are_never_replaced(gpt2, sample_file, tmp_path):
    """A nanoGPT data folder already holding its own train.bin: refused, --force or not, and kept."""
    out = tmp_path / "data"
    out.mkdir()
    (out / "train.bin").write_bytes(b"their tokens")
    (out / "prepare.py").write_text("# theirs\n")
    for force in (False, True):
        with pytest.raises(OutputError, match="holds train.bin, which bpecli has no record of writing"):
            write_shards(gpt2, [str(sample_file)], out, shard_format="nanogpt", force=force)
    assert (out / "train.bin").read_bytes() == b"their tokens"
    assert sorted(p.name for p in out.iterdir()) == ["prepare.py", "train.bin"]


def test_a_manifest_bpecli_did_not_write_is_no_record(gpt2, sample_file, tmp_path):
    """Someone else's manifest.json (another tool's, or not JSON) beside shard names: refused,
    --force or not, and everything kept. A damaged manifest of bpecli's own names no file as
    bpecli's: --force rebuilds only once the files it cannot vouch for are moved away."""
    out = tmp_path / "data"
    out.mkdir()
    for theirs in ("not json", '{"name": "another tool"}'):
        (out / "manifest.json").write_text(theirs)
        (out / "shard_00000.npy").write_bytes(b"their tokens")
        for force in (False, True):
            with pytest.raises(OutputError, match="holds manifest.json, shard_00000.npy, which bpecli has no record of writing"
                               if theirs != "not json" else "manifest.json: damaged or not bpecli's"):
                write_shards(gpt2, [str(sample_file)], out, force=force)
        assert (out / "manifest.json").read_text() == theirs and (out / "shard_00000.npy").read_bytes() == b"their tokens"
    (out / "shard_00000.npy").unlink()
    (out / "manifest.json").unlink()
    write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000)
    (out / "manifest.json").write_text(json.dumps({**json.loads((out / "manifest.json").read_text()), "shards": None}))
    with pytest.raises(OutputError, match="damaged"):
        write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000)
    shards = sorted(p.name for p in out.glob("shard_*"))
    with pytest.raises(OutputError, match="no record of writing .its records here are damaged"):
        write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, force=True)
    assert sorted(p.name for p in out.glob("shard_*")) == shards  # nothing removed
    for name in shards:
        (out / name).unlink()
    assert write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, force=True).status == "written"
    assert verify(out) == []


def test_the_manifest_says_what_each_input_gave_each_split_resumed_or_not(gpt2, sample_file, tmp_path, small_parts):
    """Each input's tokens and documents per split, as a run of that input alone counts them; a
    resumed run records the same (its manifest is the same bytes as an uninterrupted run's)."""
    second = tmp_path / "second.txt"
    second.write_text(sample_file.read_text(encoding="utf-8")[:300_000], encoding="utf-8")
    inputs = [str(sample_file), str(second)]
    options = dict(shard_tokens=8_000, eot=EOT, val_fraction=0.1, workers=2)
    whole = write_shards(gpt2, inputs, tmp_path / "whole", **options).manifest
    for path, read in zip(inputs, whole["read"]):
        alone = write_shards(gpt2, [path], tmp_path / f"alone-{read['parts']}", **options).manifest
        assert read["written"] == {split: {k: totals[k] for k in ("tokens", "documents")} for split, totals in alone["splits"].items()}
    with pytest.raises(KeyboardInterrupt):
        write_shards(gpt2, inputs, tmp_path / "cut", progress=Interrupt(after=25), **options)
    kept = json.loads((tmp_path / "cut" / layout.JOURNAL).read_text())["shards"]
    assert any(s["file"].startswith("val_") for s in kept)  # both splits resume past their first parts
    assert write_shards(gpt2, inputs, tmp_path / "cut", **options).status == "resumed"
    assert (tmp_path / "cut" / "manifest.json").read_bytes() == (tmp_path / "whole" / "manifest.json").read_bytes()


# ---- a disk that fills up at any write: nothing half-written stays, and a rerun finishes ----


# ---- the journal and the manifest are data from outside: checked, never turned into output ----

def shift(key, by):
    return lambda shard: shard.update({key: shard[key] + by})


JOURNAL_DAMAGE = {  # what is done to the last shard the journal lists -> what the error says
    "a part counter set far past the inputs": (lambda s: s.update(next_part=10**6), "past the"),
    "a negative skip": (lambda s: s.update(skip=-100), "whole numbers from 0 on"),
    "a skip past its part": (lambda s: s.update(skip=10**6), "does not follow on"),
    "a skip as text": (lambda s: s.update(skip="12"), "whole numbers from 0 on"),
    "a part counter of true": (lambda s: s.update(next_part=True), "whole numbers from 0 on"),
    "a fractional part counter": (lambda s: s.update(next_part=2.5), "whole numbers from 0 on"),
    "no skip": (lambda s: s.pop("skip"), "whole numbers from 0 on"),
    "no part counter": (lambda s: s.pop("next_part"), "whole numbers from 0 on"),
    "an index outside the folder": (lambda s: s.update(index="../outside.idx"), "its document index is '../outside.idx'"),
    "a shard of another split": (lambda s: s.update(file="val_00000.npy"), "where shard_0000"),
    "fewer tokens than its file": (lambda s: s.update(tokens=s["tokens"] - 1), "fewer than shard_tokens"),
    "an end moved back one part": (shift("next_part", -1), "does not end"),
    "an end moved 100 ids on": (shift("skip", 100), "does not end"),
    "an end moved 100 ids back": (shift("skip", -100), "does not end"),
    "no sha256": (lambda s: s.pop("sha256"), "'sha256' is missing"),
}


@pytest.fixture
def interrupted(gpt2, kernel_docs_sample, tmp_path, monkeypatch):
    """(write, folder of an interrupted run, the ids of the whole run): parts of 16 KB, shards of
    5,000 tokens, the last kept one ending inside a part."""
    corpus_path = tmp_path / "docs.txt"
    corpus_path.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 14)

    def write(out, **options):
        return write_shards(gpt2, [str(corpus_path)], out, shard_tokens=5000, eot=EOT, **options)

    write(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path / "cut", progress=Interrupt(after=8))
    journal = json.loads((tmp_path / "cut" / ".bpecli-progress.json").read_text())
    assert len(journal["shards"]) > 3 and journal["shards"][-1]["skip"] > 0
    return write, tmp_path / "cut", concatenated(tmp_path / "whole")



def test_files_beside_a_finished_run_that_it_never_wrote_are_never_removed(gpt2, sample_file, tmp_path):
    """Shard names the manifest does not list (another split's, another format's, a number past
    the run's, a folder): a rebuild with --force refuses before it removes anything."""
    out = tmp_path / "out"
    write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT)
    before = sorted(p.name for p in out.iterdir())
    for name in ("val_00000.npy", "train.bin", "shard_00009.npy"):
        (out / name).write_text("mine")
        with pytest.raises(OutputError, match=f"holds {name}, which bpecli has no record of writing"):
            write_shards(gpt2, [str(sample_file)], out, shard_tokens=10_000, eot=EOT, force=True)
        assert (out / name).read_text() == "mine" and sorted(p.name for p in out.iterdir()) == sorted(before + [name])
        (out / name).unlink()
    (out / "shard_00009.npy").mkdir()
    with pytest.raises(OutputError, match="holds shard_00009.npy"):
        write_shards(gpt2, [str(sample_file)], out, shard_tokens=10_000, eot=EOT, force=True)
    assert verify(out) == []



@pytest.mark.parametrize("shard_format", ["npy", "nanogpt"])
def test_a_finished_folder_missing_a_shard_is_never_complete_already(gpt2, sample_file, tmp_path, shard_format):
    out = tmp_path / "out"
    first = write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT, shard_format=shard_format)
    shard = out / first.manifest["shards"][-1]["file"]
    for damage in ("truncated", "missing"):
        if damage == "truncated":
            with open(shard, "r+b") as f:
                f.truncate(1001)
        else:
            shard.unlink()
        with pytest.raises(OutputError, match=f"{shard.name}: .*force"):
            write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT, shard_format=shard_format)
        rebuilt = write_shards(gpt2, [str(sample_file)], out, shard_tokens=100_000, eot=EOT, shard_format=shard_format, force=True)
        assert rebuilt.status == "written" and verify(out) == []




def test_a_journal_of_an_older_bpecli_claims_every_name_of_its_run(interrupted, tmp_path):
    """Journals before `claimed` existed: the shards a kill left past their list are the run's own."""
    import shutil

    write, cut, whole = interrupted
    out = tmp_path / "older"
    shutil.copytree(cut, out)
    journal = json.loads((out / ".bpecli-progress.json").read_text())
    del journal["claimed"]
    (out / ".bpecli-progress.json").write_text(json.dumps(journal))
    shutil.copy(cut / "shard_00000.npy", out / "shard_00090.npy")  # shaped as the killed run's shards
    assert write(out).status == "resumed" and np.array_equal(concatenated(out), whole)
    assert not (out / "shard_00090.npy").exists()


def test_a_rebuild_killed_while_it_removes_files_is_rebuilt_by_the_next(gpt2, sample_file, tmp_path):
    out = tmp_path / "out"
    write_shards(gpt2, [str(sample_file)], out, shard_tokens=10_000, eot=EOT)
    (out / "manifest.json").rename(out / ".bpecli-clearing.json")  # as clear() leaves it, killed right after
    (out / "shard_00000.npy").unlink()
    run = write_shards(gpt2, [str(sample_file)], out, shard_tokens=20_000, eot=EOT, force=True)
    assert run.status == "written" and verify(out) == [] and not (out / ".bpecli-clearing.json").exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(["manifest.json"] + [n for s in run.manifest["shards"] for n in (s["file"], s["index"])])

def test_a_journal_that_is_json_but_none_of_bpecli_s_is_said_damaged(interrupted, tmp_path):
    import shutil

    write, cut, whole = interrupted
    out = tmp_path / "emptied"
    shutil.copytree(cut, out)
    (out / ".bpecli-progress.json").write_text("[]")
    with pytest.raises(OutputError, match=r"progress.json: damaged \(not a journal bpecli writes\)"):
        write(out)

def test_a_resumed_run_removes_only_the_shards_it_claimed(interrupted, tmp_path):
    """Shards written past the journal's list (a kill -9 before it was written again) are the
    run's own by its claim and their shape, and go; a file at a name it never claimed, or one
    at a claimed name not shaped as its shard, stops the rerun, kept."""
    import shutil

    write, cut, whole = interrupted
    journal = json.loads((cut / ".bpecli-progress.json").read_text())
    listed = len(journal["shards"])
    assert journal["claimed"]["shard"] > listed + 1
    out = tmp_path / "killed"
    shutil.copytree(cut, out)
    for name in (f"shard_{listed:05d}.npy", f"shard_{listed:05d}.idx"):  # as the killed run left them
        shutil.copy(tmp_path / "whole" / name, out / name)
    assert write(out).status == "resumed" and np.array_equal(concatenated(out), whole)
    far = f"shard_{journal['claimed']['shard']:05d}.npy"
    near = f"shard_{listed + 1:05d}.npy"
    too_long = np.zeros(5001, dtype=np.uint16)  # more ids than the run's shards hold
    for name, put in ((far, lambda path: path.write_text("mine")), (near, lambda path: path.write_text("mine")),
                      (near, lambda path: np.save(path, too_long)), (near, lambda path: np.save(path, too_long[:10].astype(np.int32)))):
        theirs = tmp_path / "theirs"
        shutil.copytree(cut, theirs)
        put(theirs / name)
        before = (theirs / name).read_bytes()
        with pytest.raises(OutputError, match=f"holds {name}, which bpecli has no record of writing"):
            write(theirs)
        assert (theirs / name).read_bytes() == before
        shutil.rmtree(theirs)


@pytest.mark.parametrize("damage", sorted(JOURNAL_DAMAGE))
def test_a_damaged_journal_is_refused_never_resumed(interrupted, tmp_path, damage):
    import shutil

    write, cut, whole = interrupted
    change, message = JOURNAL_DAMAGE[damage]
    out = tmp_path / "damaged"
    shutil.copytree(cut, out)
    journal = json.loads((out / ".bpecli-progress.json").read_text())
    change(journal["shards"][-1])
    (out / ".bpecli-progress.json").write_text(json.dumps(journal))
    before = shard_bytes(out)
    with pytest.raises(OutputError, match=r"\.bpecli-progress\.json: damaged \(.*" + message) as error:
        write(out)
    assert str(error.value).endswith("encode again with force=True to rebuild the folder")
    assert error.value.for_cli().endswith("encode again with --force to rebuild the folder")
    assert not (out / "manifest.json").exists()
    assert {name: data for name, data in shard_bytes(out).items() if not name.endswith(".partial")} == before
    assert write(out, force=True).status == "written" and concatenated(out).tolist() == whole.tolist()


def test_a_journal_of_parts_that_are_not_checksums_is_refused(interrupted, tmp_path):
    write, cut, _ = interrupted
    journal_path = cut / ".bpecli-progress.json"
    for parts in (None, [1, 2, 3], ["x" * 64]):
        journal_path.write_text(json.dumps({**json.loads(journal_path.read_text()), "parts": parts}))
        with pytest.raises(OutputError, match="damaged \\(its list of the parts read is missing or malformed\\)"):
            write(cut)


def test_a_journal_with_strange_settings_is_one_line(interrupted):
    write, cut, _ = interrupted
    journal_path = cut / ".bpecli-progress.json"
    journal = json.loads(journal_path.read_text())
    journal["settings"]["inputs"][0]["size"] = "large"
    journal_path.write_text(json.dumps(journal))
    with pytest.raises(OutputError, match='unfinished run of other settings .*"large" -> '):
        write(cut)


def test_an_intact_journal_still_resumes_to_the_same_ids(interrupted):
    write, cut, whole = interrupted
    assert write(cut).status == "resumed" and concatenated(cut).tolist() == whole.tolist()


def test_a_journal_with_a_missing_or_non_integer_field_is_one_line_from_the_command(interrupted, gpt2_vocab, tmp_path):
    from typer.testing import CliRunner

    from bpecli.cli import app

    _, cut, _ = interrupted
    journal_path = cut / ".bpecli-progress.json"
    intact = json.loads(journal_path.read_text())
    for field, value in (("tokens", None), ("skip", "many"), ("next_part", 1.5), ("documents", [])):
        journal = json.loads(json.dumps(intact))
        journal["shards"][1][field] = value
        if value is None:
            del journal["shards"][1][field]
        journal_path.write_text(json.dumps(journal))
        result = CliRunner().invoke(app, ["encode", "-t", str(gpt2_vocab), str(tmp_path / "docs.txt"), "--out", str(cut),
                                          "--shard-tokens", "5000", "-q"])
        assert result.exit_code == 1 and "Traceback" not in result.output
        (line,) = result.output.strip().splitlines()
        assert line.startswith(f"bpecli: error: {journal_path}: damaged (shard_00001.npy") and line.endswith("--force to rebuild the folder")


MANIFEST_DAMAGE = {  # what is done to a finished folder's manifest -> what the error says
    "an index outside the folder": (lambda m: m["shards"][0].update(index="../outside.idx"), "its document index is"),
    "an index that is a shard": (lambda m: m["shards"][0].update(index="shard_00001.npy"), "its document index is"),
    "shards out of order": (lambda m: m["shards"].reverse(), "where shard_00000.npy comes next"),
    "a short shard before the last": (lambda m: m["shards"][0].update(tokens=10), "fewer than shard_tokens"),
    "totals that do not add up": (lambda m: m.update(total_tokens=m["total_tokens"] + 1), "not the sum over its shards"),
    "a dtype of int64": (lambda m: m.update(dtype="int64"), "'dtype' is missing or malformed"),
    "a max_id below its eot": (lambda m: m.update(max_id=10), "max_id 10 is below an id it names .50,256."),
    "no shard_tokens": (lambda m: m.pop("shard_tokens"), "'shard_tokens' is missing"),
    "an eot id of -1": (lambda m: m.update(eot={"id": -1}), "'eot' is missing or malformed"),
    "a largest id of text": (lambda m: m.update(max_id="50256"), "'max_id' is missing or malformed"),
    "a list of what was read that is text": (lambda m: m.update(read="x"), "'read' is missing or malformed"),
    "a decoder digest that is a number": (lambda m: m.update(decoder_sha256=5), "'decoder_sha256' is missing or malformed"),
}


@pytest.fixture
def finished(gpt2, kernel_docs_sample, tmp_path):
    (tmp_path / "docs.txt").write_text(kernel_docs_sample[:100_000], encoding="utf-8")
    out = tmp_path / "out"
    write_shards(gpt2, [str(tmp_path / "docs.txt")], out, shard_tokens=5000, eot=EOT)
    return out


@pytest.mark.parametrize("damage", sorted(MANIFEST_DAMAGE))
def test_a_damaged_manifest_is_refused_by_every_reader(finished, gpt2, tmp_path, damage):
    change, message = MANIFEST_DAMAGE[damage]
    manifest = json.loads((finished / "manifest.json").read_text())
    change(manifest)
    (finished / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "outside.idx").write_bytes(b"not theirs to read")
    for reader in (verify, shard_figures,
                   lambda out: write_shards(gpt2, [str(tmp_path / "docs.txt")], out, shard_tokens=5000, eot=EOT)):
        with pytest.raises(OutputError, match=r"manifest\.json: damaged \(.*" + message):
            reader(finished)


def test_verify_reads_no_file_outside_the_folder(finished, tmp_path):
    (tmp_path / "secret").write_bytes(b"another file's content")
    (finished / "shard_00001.npy").unlink()
    (finished / "shard_00001.npy").symlink_to(tmp_path / "secret")
    (finished / "shard_00002.idx").unlink()
    (finished / "shard_00002.idx").symlink_to(tmp_path / "nowhere")
    problems = verify(finished)
    assert problems == ["shard_00001.npy: not a file of its own (a link or a folder, which bpecli never writes)",
                        "shard_00002.idx: not a file of its own (a link or a folder, which bpecli never writes)"]
    with pytest.raises(InputError, match="shard_00001.npy: missing, or not a file of its own"):
        shard_figures(finished)


def test_inspect_checks_each_shard_against_the_manifest_before_counting_its_ids(finished):
    shard = finished / "shard_00000.npy"
    tokens = len(np.load(shard))
    rebuild = "; encode again with force=True to rebuild the folder"
    for ids, message in (
        (np.full(tokens, 2**15, dtype=np.int64), "holds int64 ids where the manifest says uint16" + rebuild),
        (np.full(tokens, 5, dtype=">u2"), "holds uint16 \\(big-endian\\) ids where the manifest says uint16" + rebuild),
        (np.full(tokens - 1, 5, dtype=np.uint16), f"holds {tokens - 1:,} ids where the manifest says {tokens:,}" + rebuild),
        (np.concatenate([np.full(tokens - 1, 5), [60_000]]).astype(np.uint16),
         f"id 60,000 at position {tokens - 1:,} is outside the vocabulary; the shard is damaged or of another tokenizer"),
    ):
        np.save(shard, ids)
        with pytest.raises(InputError, match=f"shard_00000.npy: {message}"):
            shard_figures(finished)


def test_shard_files_that_are_not_what_their_names_say_are_one_line(tmp_path):
    import struct

    (tmp_path / "ids.npy").write_text("31373 995\n")
    header = ("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }" + " " * 20_000 + "\n").encode()
    (tmp_path / "long.npy").write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + bytes(4))
    llmc = np.zeros(256, dtype="<i4")
    llmc[:3] = (20240520, 1, 1_000_000)
    (tmp_path / "short.bin").write_bytes(llmc.tobytes() + bytes(20))
    llmc[2] = -1
    (tmp_path / "negative.bin").write_bytes(llmc.tobytes() + bytes(20))
    for name, message in (
        ("ids.npy", "not a .npy file (it does not start as one); to decode ids written as text, give a file of another "
                    "name, or pipe it in on stdin"),
        ("long.npy", "not a readable shard (Header info length (20058) is large and may not be safe to load securely.)"),
        ("short.bin", "not a readable shard (its llm.c header says 1,000,000 tokens, but it holds 10)"),
        ("negative.bin", "not a readable shard (its llm.c header says -1 tokens, but it holds 10)"),
    ):
        with pytest.raises(InputError) as error:
            formats.read_shard(tmp_path / name)
        assert str(error.value) == f"{tmp_path / name}: {message}" and "allow_pickle" not in str(error.value)


def test_decoding_a_shard_names_a_bad_id_as_it_is_written(gpt2, tmp_path):
    from bpecli.errors import UnknownIdError

    for ids, bad in (([31373, 2**64 - 1], "18446744073709551615"), ([31373, 2**63], "9223372036854775808")):
        np.save(tmp_path / "u64.npy", np.array(ids, dtype=np.uint64))
        with pytest.raises(UnknownIdError, match=f"^id {bad} is not in the vocabulary \\(0\\.\\.50256\\)$"):
            gpt2.decode(formats.read_shard(tmp_path / "u64.npy"))
    np.save(tmp_path / "neg.npy", np.array([31373, -5], dtype=np.int64))
    with pytest.raises(UnknownIdError, match="^id -5 is not in the vocabulary \\(0\\.\\.50256\\)$"):
        gpt2.decode(formats.read_shard(tmp_path / "neg.npy"))


class _OsStoppingAt:
    """The os module as shards and folders see it, but for one function, which raises KeyboardInterrupt (as
    Ctrl-C would) when it is called for the `when`-th time."""

    def __init__(self, name: str, when: int):
        self.name, self.when, self.calls = name, when, 0

    def __getattr__(self, attribute):
        if attribute != self.name:
            return getattr(os, attribute)

        def stopping(*args, **kwargs):
            self.calls += 1
            if self.calls == self.when:
                raise KeyboardInterrupt
            return getattr(os, attribute)(*args, **kwargs)

        return stopping


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_an_interrupt_before_any_step_of_writing_a_shard_leaves_nothing_partial(gpt2, kernel_docs_sample, tmp_path,
                                                                                monkeypatch, step):
    corpus_file = tmp_path / "docs.txt"
    corpus_file.write_text(kernel_docs_sample[:20_000], encoding="utf-8")
    options = dict(shard_tokens=1500, eot=EOT)
    n = len(write_shards(gpt2, [str(corpus_file)], tmp_path / "roomy", **options).manifest["shards"])
    reference = shard_bytes(tmp_path / "roomy")
    monkeypatch.setattr(shard_journal, "JOURNAL_SECONDS", 0)
    for when in range(1, 3 * n + 2):  # three of each per shard (the shard, its index, the journal), and the manifest's
        out = tmp_path / f"{step}-{when}"
        stopping = _OsStoppingAt(step, when)  # one count for both modules that write the folder
        monkeypatch.setattr(writer, "os", stopping)
        monkeypatch.setattr(folders, "os", stopping)
        with pytest.raises(KeyboardInterrupt):
            write_shards(gpt2, [str(corpus_file)], out, **options)
        monkeypatch.setattr(writer, "os", os)
        monkeypatch.setattr(folders, "os", os)
        left = sorted(p.name for p in out.iterdir()) if out.exists() else []  # (gone if it held nothing yet)
        assert not [name for name in left if name.endswith(".partial")] and "manifest.json" not in left, (when, left)
        write_shards(gpt2, [str(corpus_file)], out, **options)
        assert shard_bytes(out) == reference, when


@pytest.mark.parametrize("shard_format", ["npy", "llmc", "nanogpt"])
def test_a_file_has_a_shard_s_shape_only_with_the_header_bpecli_writes(gpt2, sample_file, tmp_path, shard_format):
    out = tmp_path / "out"
    run = write_shards(gpt2, [str(sample_file)], out, shard_tokens=3000, eot=EOT, shard_format=shard_format)
    shard, index = out / run.manifest["shards"][0]["file"], out / run.manifest["shards"][0]["index"]
    limit = layout.UNBOUNDED if shard_format == "nanogpt" else 3000  # (nanoGPT: one file a split)
    assert formats.has_shard_shape(shard, shard_format, "uint16", limit)
    assert formats.has_shard_shape(index, shard_format, "uint16", limit)
    tokens = run.manifest["shards"][0]["tokens"]
    assert not formats.has_shard_shape(shard, shard_format, "uint16", tokens - 1)  # more ids than a shard holds
    if shard_format != "nanogpt":  # (raw ids: only the size says anything)
        assert not formats.has_shard_shape(shard, shard_format, "uint32", limit)
    with open(shard, "ab") as f:
        f.write(b"\x00")
    assert not formats.has_shard_shape(shard, shard_format, "uint16", limit)
    (tmp_path / "notes.txt").write_text("notes")
    assert not formats.has_shard_shape(tmp_path / "notes.txt", shard_format, "uint16", limit)
    assert not formats.has_shard_shape(tmp_path / "absent.npy", shard_format, "uint16", limit)
