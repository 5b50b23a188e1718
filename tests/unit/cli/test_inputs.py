"""Hostile and unlucky inputs through the commands, in this process: numbers, secrets in URIs,
documents of any size, files that are not what their name says. One line, never a traceback."""

import json

import pytest
from typer.testing import CliRunner

from bpecli.cli import app

LONG = "7" * 5000  # past int()'s 4,300 digits


def run(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_a_long_number_in_a_jsonl_record_is_a_number(gpt2, tmp_path):
    """JSON puts no limit on digits: a record with a 5,000-digit field is read (only its text matters)."""
    from bpecli.errors import InputError
    from bpecli.shards import write_shards

    path = tmp_path / "n.jsonl"
    path.write_text(f'{{"text": "hello world", "n": {LONG}}}\n{{"text": {LONG}}}\n')
    with pytest.raises(InputError, match=r"n.jsonl:2: field 'text' holds a JSON number"):
        write_shards(gpt2, [str(path)], tmp_path / "out")
    path.write_text(f'{{"text": "hello world", "n": {LONG}}}\n')
    assert write_shards(gpt2, [str(path)], tmp_path / "out2", eot=None).manifest["total_tokens"] == 2


SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def test_redact_hides_credentials_of_every_uri_in_a_text():
    from bpecli.inputs.sources import redact

    assert redact(f"s3://AKIA:{SECRET}@bucket/a.txt: no such object") == "s3://***@bucket/a.txt: no such object"
    assert (redact("s3://b/k.txt?endpoint_override=h:9000&access_key=AKIA&secret_key=S:x: cannot open")
            == "s3://b/k.txt?endpoint_override=h:9000&access_key=***&secret_key=***: cannot open")
    assert redact("failed on 's3://u:p@b/k' (timeout)") == "failed on 's3://***@b/k' (timeout)"
    assert redact("docs/a@b.txt") == "docs/a@b.txt" and redact("s3://b/k?scheme=http") == "s3://b/k?scheme=http"


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    return tmp_path / "loop"


def test_a_symlink_loop_as_an_input_is_one_line_everywhere(gpt2_vocab, tmp_path, loop):
    for args in (["encode", "-t", gpt2_vocab, loop], ["encode", "-t", gpt2_vocab, loop, "--out", tmp_path / "o"],
                 ["train", loop, "--vocab-size", 260, "--out", tmp_path / "t"], ["decode", "-t", gpt2_vocab, loop],
                 ["inspect", gpt2_vocab, "--corpus", loop], ["bench", "-t", gpt2_vocab, loop]):
        assert "loop: a loop of symbolic links, not a file" in one_line_error(run(*args)), args
    assert not (tmp_path / "o").exists() and not (tmp_path / "t").exists()


def test_a_symlink_loop_as_out_is_one_line(gpt2_vocab, docs, loop):
    for args in (["encode", "-t", gpt2_vocab, docs, "--out", loop], ["train", docs, "--vocab-size", 260, "--out", loop]):
        assert f"--out {loop} is a loop of symbolic links" in one_line_error(run(*args)), args


def _train_and_shard(gpt2_vocab, tmp_path, path, *args):
    """The error lines of train and encode --out on path (None where one succeeded)."""
    said = []
    for command in (["train", path, "--vocab-size", 260, "--out", tmp_path / "t", "-q"],
                    ["encode", "-t", gpt2_vocab, path, "--out", tmp_path / "o", "-q"]):
        result = run(*command, *args)
        said.append(None if result.exit_code == 0 else one_line_error(result))
    return said


def test_jsonl_nested_100000_deep_is_one_line(gpt2_vocab, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "x", "n": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    for said in _train_and_shard(gpt2_vocab, tmp_path, path):
        assert "deep.jsonl:2: JSON nested too deeply" in said


def test_jsonl_with_a_byte_order_mark_is_named_so(gpt2_vocab, tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "hello"}\n')
    for said in _train_and_shard(gpt2_vocab, tmp_path, path):
        assert "bom.jsonl:1: starts with a byte-order mark (U+FEFF)" in said and "utf-8-sig" not in said


def test_a_lone_surrogate_in_jsonl_is_an_error_or_replaced_as_tiktoken_does(gpt2_vocab, gpt2, tmp_path):
    import numpy as np

    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "low lower a\\ud800b"}\n')
    for said in _train_and_shard(gpt2_vocab, tmp_path, path):
        assert "s.jsonl:1: field 'text' holds a lone surrogate ('\\ud800' at character 11)" in said
        assert "--errors replace" in said
    assert _train_and_shard(gpt2_vocab, tmp_path, path, "--errors", "replace") == [None, None]
    ids = np.load(tmp_path / "o" / "shard_00000.npy").tolist()
    assert gpt2.decode(ids) == "low lower a\ufffdb<|endoftext|>"  # never the bytes of the surrogate itself


def test_invalid_utf8_in_a_parquet_string_column_is_one_line(gpt2_vocab, gpt2, tmp_path):
    import numpy as np
    import pyarrow as pa
    from pyarrow import parquet

    raw = pa.array([b"hello", b"bad \xff here"], pa.binary())
    texts = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())  # as a careless writer leaves it
    path = tmp_path / "bad.parquet"
    parquet.write_table(pa.table({"text": texts}), path)
    for said in _train_and_shard(gpt2_vocab, tmp_path, path):
        assert "bad.parquet: row 2: column 'text' holds invalid UTF-8 at byte 4 (b'\\xff" in said
    assert _train_and_shard(gpt2_vocab, tmp_path, path, "--errors", "replace") == [None, None]
    assert gpt2.decode(np.load(tmp_path / "o" / "shard_00000.npy").tolist()) == "hello<|endoftext|>bad \ufffd here<|endoftext|>"


@pytest.fixture
def records(tmp_path):
    """The same four records as JSONL, gzipped JSONL and Parquet (one empty, one with a special token)."""
    import gzip

    import pyarrow as pa
    from pyarrow import parquet

    texts = ["hello world", "", "two<|endoftext|>", 'a "quoted" {brace}\nline']
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" + ("\n" if i == 0 else "") for i, t in enumerate(texts)))
    (tmp_path / "r.jsonl.gz").write_bytes(gzip.compress(jsonl.read_bytes()))
    parquet.write_table(pa.table({"text": texts}), tmp_path / "r.parquet", row_group_size=3)
    return texts, [jsonl, tmp_path / "r.jsonl.gz", tmp_path / "r.parquet"]


def test_plain_encode_prints_a_line_of_ids_per_record_never_the_json(gpt2_vocab, gpt2, records):
    texts, paths = records
    for path in paths:
        result = run("encode", "-t", gpt2_vocab, path)
        assert result.exit_code == 0, result.output
        assert result.output == "".join(" ".join(map(str, gpt2.encode(t, allowed_special="all"))) + "\n" for t in texts)
        ordinary = run("encode", "-t", gpt2_vocab, path, "--allowed-special", "none").output.splitlines()
        assert ordinary == [" ".join(map(str, gpt2.encode_ordinary(t))) for t in texts]
    lines = run("encode", "-t", gpt2_vocab, paths[0], "-f", "json").output.splitlines()
    assert [(r["line"], r["count"]) for r in map(json.loads, lines)] == [(1, 2), (3, 0), (4, 2), (5, 10)]
    rows = run("encode", "-t", gpt2_vocab, paths[2], "-f", "json").output.splitlines()
    assert [r["row"] for r in map(json.loads, rows)] == [1, 2, 3, 4]


def test_plain_encode_and_encode_out_read_the_same_documents(gpt2_vocab, gpt2, records, tmp_path):
    import numpy as np

    texts, paths = records
    for path in paths:
        out = tmp_path / f"out-{path.name}"
        assert run("encode", "-t", gpt2_vocab, path, "--out", out, "--eot", "none", "-q").exit_code == 0
        shard = np.load(out / "shard_00000.npy").tolist()
        plain = run("encode", "-t", gpt2_vocab, path, "--allowed-special", "none").output.split()
        assert shard == [int(i) for i in plain]


def test_inspect_corpus_and_bench_read_records_not_json(gpt2_vocab, gpt2, records):
    texts, paths = records
    n_bytes = sum(len(t.encode()) for t in texts)
    n_tokens = sum(len(gpt2.encode_ordinary(t)) for t in texts)  # as encode --out writes them: a special token is text
    for path in paths:
        info = json.loads(run("inspect", gpt2_vocab, "--corpus", path, "--json").output)
        assert list(info["bytes_per_token"].values()) == [n_bytes / n_tokens]
        report = json.loads(run("bench", "-t", gpt2_vocab, path, "--repeat", 1, "--json").output)
        ordinary = sum(len(gpt2.encode_ordinary(t)) for t in texts)  # bench times encode_ordinary
        assert (report["documents"], report["bytes"], report["bpecli"]["tokens"]) == (3, n_bytes, ordinary)


@pytest.mark.parametrize("safe", [False, True])
def test_a_document_past_the_budget_is_named_alike_in_a_file_and_in_a_stream(tmp_path, monkeypatch, safe):
    """The same line (JSONL) or byte (text) whether the file is read mapped or as a gzip stream."""
    import gzip

    from bpecli.errors import InputError
    from bpecli.inputs import parts
    from bpecli.pretokenize import SAFE_CUT

    monkeypatch.setattr(parts, "MAX_DOCUMENT_BYTES", 1000)
    lines = [json.dumps({"text": "x" * 50})] * 30 + [json.dumps({"text": "y" * 2000}), json.dumps({"text": "z"})]
    jsonl = ("\n".join(lines) + "\n").encode()
    text = (("word " * 100).strip() + "\n") * 5 + "q" * 3000 + "<|endoftext|>tail"
    expected = {"a.jsonl": r"a.jsonl(.gz)?:31: a line of over 0 MiB \(from byte 1,890",
                "t.txt": "from byte 2,500" if safe else "the document at byte 0"}
    for name, data in (("a.jsonl", jsonl), ("t.txt", text.encode())):
        (tmp_path / name).write_bytes(data)
        (tmp_path / f"{name}.gz").write_bytes(gzip.compress(data))
        for path in (tmp_path / name, tmp_path / f"{name}.gz"):
            with pytest.raises(InputError, match=expected[name]):
                list(parts.document_parts([(str(path), path.name)], separators=["<|endoftext|>"],
                                           safe_cut=SAFE_CUT if safe else None, part_bytes=300))


def test_long_documents_encode_and_count_in_blocks_to_the_same_ids_and_counts(gpt2, tiktoken_gpt2, kernel_docs_sample):
    """A document past a batch is cut at safe cuts first: the ids and counts are those of the whole."""
    from collections import Counter

    from bpecli.training.counting import COUNT_BATCH, count_pieces
    from bpecli.pretokenize import PATTERNS, compiled, vectorised_splitter

    text = kernel_docs_sample.replace("<|endoftext|>", "") * 5  # ~10 MB: past the 4 MiB batch
    ids, ends = gpt2.encode_documents([b"tiny", text.encode(), b"", b"end"], eot=50256)
    expected = [tiktoken_gpt2.encode_ordinary(t) + [50256] for t in ("tiny", text, "", "end")]
    assert ids.tolist() == [i for e in expected for i in e]
    assert ends.tolist() == list(__import__("itertools").accumulate(map(len, expected)))
    document = text[: 3 * COUNT_BATCH].encode()
    counts = count_pieces([document], vectorised_splitter(PATTERNS["gpt2"])).to_dict()
    assert counts == Counter(p.encode() for p in compiled(PATTERNS["gpt2"]).findall(document.decode()))


def test_a_long_document_with_no_safe_cut_is_one_block(gpt2, tiktoken_gpt2):
    from bpecli.pretokenize import safe_blocks

    text = "漢字" * 800_000 + ".\nNext line"  # 4.8 MB: one cut, before "Next"
    assert [len(b) for b in safe_blocks(text.encode(), 1 << 20)] == [4_800_002, 9]
    ids, _ = gpt2.encode_documents([text.encode()])
    assert ids.tolist() == tiktoken_gpt2.encode_ordinary(text)


def test_plain_encode_of_a_large_file_in_parts_prints_what_reading_it_whole_does(gpt2_vocab, gpt2, kernel_docs_sample,
                                                                               tmp_path, monkeypatch):
    """A file past PART_BYTES is read in parts cut before special tokens or at safe cuts (gzip too),
    stdin whole: the same line of ids, tokens, JSON or count, and the same lines with --lines; and
    a file past the budget for what is read whole is still encoded."""
    import gzip

    from bpecli.inputs import parts, sources

    text = kernel_docs_sample + kernel_docs_sample[:300_000]  # 2.3 MB with <|endoftext|> in it: two parts
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "big.txt.gz").write_bytes(gzip.compress(path.read_bytes()))
    every = ([], ["--allowed-special", "none", "-f", "json"], ["-f", "tokens"], ["--lines", "-f", "count"])
    wholes = [run("encode", "-t", gpt2_vocab, "-", *args, input=text) for args in every]
    assert all(whole.exit_code == 0 for whole in wholes)
    for module in (sources, parts):  # stdin (read whole) would be refused now
        monkeypatch.setattr(module, "MAX_DOCUMENT_BYTES", 1 << 20)
    for args, whole in zip(every, wholes):
        for source in (path, tmp_path / "big.txt.gz"):
            in_parts = run("encode", "-t", gpt2_vocab, source, *args)
            assert in_parts.output.replace(f'"input": "{source}"', '"input": "-"') == whole.output.replace(
                '"input": "<stdin>"', '"input": "-"'), (args, source)
    assert run("encode", "-t", gpt2_vocab, path, "-f", "count").output == f"{len(gpt2.encode(text, allowed_special='all'))}\n"


def test_a_long_record_is_written_a_block_at_a_time_with_the_ids_of_the_whole(gpt2_vocab, gpt2, kernel_docs_sample,
                                                                             tmp_path):
    text = kernel_docs_sample.replace("<|endoftext|>", "") * 3  # 6 MB: past the 4 MiB written at once
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"text": "short"}) + "\n" + json.dumps({"text": text}) + "\n")
    lines = run("encode", "-t", gpt2_vocab, path, "-f", "json").output.splitlines()
    assert [json.loads(line)["ids"] for line in lines] == [gpt2.encode("short"), gpt2.encode(text)]
    assert json.loads(lines[1])["line"] == 2 and json.loads(lines[1])["count"] == len(gpt2.encode(text))


def test_binary_data_is_named_with_how_bpecli_reads_such_a_file(gpt2_vocab, tmp_path):
    import gzip

    import pyarrow as pa
    from pyarrow import parquet

    parquet.write_table(pa.table({"text": ["a"]}), tmp_path / "d.parquet")
    (tmp_path / "p.txt").write_bytes((tmp_path / "d.parquet").read_bytes())
    (tmp_path / "g.txt").write_bytes(gzip.compress(b"31373 995"))
    said = one_line_error(run("decode", "-t", gpt2_vocab, tmp_path / "d.parquet"))
    assert "d.parquet: holds Parquet data, not token ids; decode reads token ids" in said and ".gz" not in said
    assert "g.txt: holds gzip data, not token ids" in one_line_error(run("decode", "-t", gpt2_vocab, tmp_path / "g.txt"))
    said = one_line_error(run("encode", "-t", gpt2_vocab, tmp_path / "p.txt"))
    assert said.endswith("p.txt: holds Parquet data, not text; bpecli reads a Parquet file named .parquet")
    said = one_line_error(run("encode", "-t", gpt2_vocab, tmp_path / "g.txt"))
    assert "g.txt: holds gzip data, not text; bpecli decompresses .gz, .zst and .bz2 files named so" in said



@pytest.mark.parametrize("name, compression", [("e.txt.gz", "gzip"), ("e.jsonl.zst", "zstd"), ("e.txt.bz2", "bz2")])
def test_an_empty_file_named_compressed_is_no_compressed_data(gpt2_vocab, tmp_path, name, compression):
    """gzip -t refuses an empty .gz (a download cut short, say); the decompressors read it as no text."""
    (tmp_path / name).write_bytes(b"")
    for args in (["encode", "-t", gpt2_vocab, tmp_path / name, "-f", "count"],
                 ["encode", "-t", gpt2_vocab, tmp_path / name, "--out", tmp_path / "o"],
                 ["train", tmp_path / name, "--vocab-size", "260", "--out", tmp_path / "t"]):
        assert one_line_error(run(*args)).endswith(f"{name}: an empty file, not {compression} data"), args

def test_an_upper_case_suffix_names_the_kind_too(gpt2_vocab, tmp_path):
    import gzip

    record = json.dumps({"text": "hello world"}) + "\n"
    (tmp_path / "DOCS.JSONL").write_text(record)
    (tmp_path / "DOCS.JSONL.GZ").write_bytes(gzip.compress(record.encode()))
    for name in ("DOCS.JSONL", "DOCS.JSONL.GZ"):
        assert run("encode", "-t", gpt2_vocab, tmp_path / name).output == "31373 995\n"


def test_an_input_is_named_as_the_user_named_it(gpt2_vocab, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    for args in (["train", "missing.txt", "--vocab-size", 260, "--out", "t"], ["train", "adir", "--vocab-size", 260, "--out", "t"],
                 ["encode", "-t", gpt2_vocab, "adir", "--out", "o"]):
        said = one_line_error(run(*args))
        assert said.startswith(f"bpecli: error: {args[1 if args[0] == 'train' else 3]}: ") and str(tmp_path) not in said


def test_a_failed_encode_out_leaves_no_folder_it_made(gpt2_vocab, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "x"}\n')
    assert "no field 'text'" in one_line_error(run("encode", "-t", gpt2_vocab, bad, "--out", tmp_path / "new" / "out"))
    assert not (tmp_path / "new" / "out").exists()
    (tmp_path / "mine").mkdir()
    assert "no field 'text'" in one_line_error(run("encode", "-t", gpt2_vocab, bad, "--out", tmp_path / "mine"))
    assert (tmp_path / "mine").is_dir()  # a folder that was there stays


def test_a_long_line_with_special_tokens_allowed_is_never_cut_inside_one(gpt2, tiktoken_gpt2, tmp_path, monkeypatch):
    """A line past the block size is written a block at a time, cut after a letter before
    punctuation too: with special tokens allowed, "<|endoftext|>" ("t|") is cut around, never in."""
    import io

    import bpecli.cli.ids as ids
    from bpecli.cli.options import Format

    monkeypatch.setattr(ids, "_LONG_UNIT", 10)
    text = ("word, word" * 3 + "<|endoftext|>") * 4
    (tmp_path / "line.txt").write_text(text)
    out = io.BytesIO()
    ids.write_ids(gpt2, [str(tmp_path / "line.txt")], Format.ids, False, True, "text", "strict", out, add_special_tokens=False)
    assert list(map(int, out.getvalue().split())) == tiktoken_gpt2.encode(text, allowed_special="all")
