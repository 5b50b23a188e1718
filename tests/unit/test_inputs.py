"""Inputs: streams, spooling, ids, cuts that keep pieces whole, and --out kept apart from inputs."""

import errno
import os
import tempfile

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli.inputs import documents, sources, spool
from bpecli.inputs import parts as input_parts
from bpecli.errors import InputError, OutputError
from bpecli.pretokenize import PATTERNS, SAFE_CUT


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "B", "1", " ", "\n", "\r", ".", "/", "'s", "é", "中", "\t", ".\n", "\n\n", "!", "_"]),
                max_size=40).map("".join))
def test_text_cut_at_safe_cuts_splits_into_the_same_pieces(text):
    """Training counts, and bulk encoding encodes, text in parts cut at SAFE_CUT."""
    cuts = [m.start() for m in regex.finditer(SAFE_CUT, text)]
    for name, pattern in PATTERNS.items():
        parts, at = [], 0
        for cut in cuts + [len(text)]:
            parts += regex.findall(pattern, text[at:cut])
            at = cut
        assert parts == regex.findall(pattern, text), name


def test_text_without_separators_is_cut_at_safe_cuts_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 14)
    path = tmp_path / "t.txt"
    path.write_text("line of text\nnext line\n" * 5000)
    inputs = [(str(path), "t.txt")]
    parts = list(input_parts.document_parts(inputs, separators=[], safe_cut=SAFE_CUT))
    assert len(parts) > 4 and parts[0].start == 0 and parts[-1].end == path.stat().st_size
    data = path.read_bytes()
    assert all(data[p.start - 1 : p.start + 1] == b"\nl" for p in parts[1:])
    assert len(list(input_parts.document_parts(inputs, separators=[]))) == 1  # one document: encode keeps it whole


def test_compressed_text_without_separators_is_cut_at_safe_cuts_too(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 14)
    text = "line of text\nnext line\n" * 5000
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(text.encode()))
    parts = list(input_parts.document_parts([(str(tmp_path / "t.txt.gz"), "t.txt.gz")], separators=[], safe_cut=SAFE_CUT))
    assert len(parts) > 4 and b"".join(p.data for p in parts) == text.encode()
    assert all(p.data.startswith(b"next line") or p.data.startswith(b"line") for p in parts)


@pytest.mark.parametrize("text", ["72 ²", "1 ١", "1_0", "+5", "3.0", "0x10"])
def test_ids_are_plain_ascii_digits(tmp_path, text):
    (tmp_path / "ids.txt").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="is not a token id"):
        documents.read_ids(str(tmp_path / "ids.txt"))


def test_a_fifo_is_a_stream_read_whole(tmp_path):
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert sources.is_stream(fifo) and not sources.is_stream(tmp_path) and not sources.is_stream(tmp_path / "none")
    writer = threading.Thread(target=lambda: fifo.write_bytes(b"streamed text"))
    writer.start()
    assert documents.read_text(str(fifo)) == "streamed text"
    writer.join()


def test_spooling_into_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The in-process twin of the CLI's real full-TMPDIR test, for machines that cannot mount one."""
    source = tmp_path / "in.txt"
    source.write_text("x" * 1000)

    def no_space(source_file, out, ends, label, **options):
        out.write(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(spool, "_copy_checked", no_space)
    monkeypatch.setattr(spool, "is_stream", lambda name: True)
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(spool_dir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (tempfile caches the folder it picked)
    with pytest.raises(InputError, match="No space left on device.*set TMPDIR to a folder with room"):
        with spool.streams_spooled([str(source)]):
            pass
    assert list(spool_dir.iterdir()) == []


def test_out_is_never_an_input_nor_a_folder_holding_one(tmp_path):
    (tmp_path / "data").mkdir()
    text = tmp_path / "data" / "t.txt"
    text.write_text("x")
    for out in (text, tmp_path / "data", tmp_path):
        with pytest.raises(OutputError, match="choose an out_dir folder apart from the inputs"):
            sources.check_apart(out, [str(text)])
    sources.check_apart(tmp_path / "data" / "out", [str(text), "-"])


def test_a_part_read_after_its_file_shrank_is_an_error(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"0123456789" * 10)
    assert sources.read_range(str(path), "t.txt", 10, 20) == b"0123456789"
    os.truncate(path, 15)
    with pytest.raises(InputError, match=r"t.txt changed while bpecli read it \(now 15 bytes"):
        sources.read_range(str(path), "t.txt", 10, 20)


@pytest.mark.parametrize("kind", ["text", "parquet"])
def test_a_part_of_a_file_replaced_or_written_to_after_it_was_cut_is_an_error_never_other_documents(tmp_path, kind):
    """Parts are read by their offsets in the file they were cut from: another file of the same
    size moved into its place, or the same file written over, would be other documents."""
    path = tmp_path / f"corpus.{'parquet' if kind == 'parquet' else 'txt'}"

    def write(letter):
        if kind == "parquet":
            import pyarrow as pa
            from pyarrow import parquet

            parquet.write_table(pa.table({"text": [letter * 40] * 50}), path, row_group_size=10)
        else:
            path.write_text((letter * 40 + "<|endoftext|>") * 50_000)

    write("a")
    parts = list(input_parts.document_parts([(str(path), "corpus")], separators=["<|endoftext|>"]))
    assert len(parts) > 1
    read = lambda part: documents.read_documents(part, splitters=documents.Splitters.of(["<|endoftext|>"]))  # noqa: E731
    assert read(parts[1])[0][0] == "a" * 40
    replacement = tmp_path / "other"
    path.rename(replacement)
    write("b")  # another file of the same size, another time of change
    os.utime(path, ns=(0, os.stat(replacement).st_mtime_ns + 10**9))
    with pytest.raises(InputError, match="corpus changed while bpecli read it"):
        read(parts[1])
    os.unlink(path)
    replacement.rename(path)
    assert read(parts[1])[0][0] == "a" * 40  # the file itself again
    with open(path, "r+b") as f:  # the same file written over in place, to the same size
        f.write(b"c" * 40)
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 10**9))
    with pytest.raises(InputError, match="corpus changed while bpecli read it"):
        read(parts[1])
    os.unlink(path)
    os.mkfifo(path)  # no writer: reading it would wait forever
    with pytest.raises(InputError, match="corpus changed while bpecli read it"):
        read(parts[1])


def test_a_row_group_too_large_is_refused_in_a_column_whose_name_holds_a_dot(tmp_path, monkeypatch):
    import pyarrow as pa
    from pyarrow import parquet

    texts = [os.urandom(2500).hex() for _ in range(10)]  # (repeated text would be stored once)
    parquet.write_table(pa.table({"meta.body": texts}), tmp_path / "d.parquet")
    monkeypatch.setattr(input_parts, "MAX_ROW_GROUP_BYTES", 10_000)
    with pytest.raises(InputError, match="row group 0 holds"):
        list(input_parts.document_parts([(str(tmp_path / "d.parquet"), "d")], separators=[], text_column="meta.body"))


SPECIALS = ["<|endoftext|>", "<|a|>", "<|a|>b"]  # one the start of another: the longer cuts first


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["x y", "é", "\u4e00\u4e8c", "😀", "\n", "<|endoftext|>", "<|a|>", "<|a|>b", "<|a", "b"]),
                max_size=30))
def test_documents_read_as_bytes_are_the_documents_read_as_text(tmp_path_factory, words):
    """Counting and encode --out read a text part's documents as UTF-8 bytes, checked without a
    str of the part: the same documents, byte count and sha256 as read as text, from a file and
    from a compressed stream."""
    text = "".join(words)
    folder = tmp_path_factory.mktemp("parts")
    (folder / "a.txt").write_text(text, encoding="utf-8")
    import gzip

    (folder / "a.txt.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    for name in ("a.txt", "a.txt.gz"):
        path = str(folder / name)
        for part in input_parts.document_parts([(path, name)], separators=SPECIALS, part_bytes=7):
            as_text, n_bytes, digest = documents.read_documents(part, splitters=documents.Splitters.of(SPECIALS))
            as_bytes = documents.read_documents(part, splitters=documents.Splitters.of(SPECIALS), as_bytes=True)
            assert as_bytes == ([d.encode() for d in as_text], n_bytes, digest)


def test_invalid_utf8_read_as_bytes_is_the_same_error(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes("fine\nstill fine<|endoftext|>é\n".encode() + b"\xe2<|endoftext|>tail\n")
    part = next(input_parts.document_parts([(str(path), "bad.txt")], separators=SPECIALS))
    with pytest.raises(InputError) as as_text:
        documents.read_documents(part, splitters=documents.Splitters.of(SPECIALS))
    with pytest.raises(InputError) as as_bytes:
        documents.read_documents(part, splitters=documents.Splitters.of(SPECIALS), as_bytes=True)
    assert str(as_bytes.value) == str(as_text.value) and "bad.txt:3: invalid UTF-8 at byte" in str(as_bytes.value)
