"""The cache of loaded vocabularies: a second load of the same files reads no token, and gives
what reading them gives, whatever changed in between."""

import dataclasses
import os
import time
import shutil

import pytest

import bpecli
from bpecli.errors import TokenizerFileError
from bpecli.formats import cache, folder
from bpecli.formats.folder import load


def fields_of(vocab) -> dict:
    """A vocabulary's fields (a Vocab compares by identity)."""
    return {f.name: getattr(vocab, f.name) for f in dataclasses.fields(vocab)}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("BPECLI_CACHE_DIR", str(where))
    return where


@pytest.fixture
def gpt2_folder(fixtures, tmp_path):
    """GPT-2's vocab.json and merges.txt, as the CS336 fixtures name them."""
    made = tmp_path / "gpt2"
    made.mkdir()
    for name in ("gpt2_vocab.json", "gpt2_merges.txt"):
        shutil.copy(fixtures / name, made / name)
    return made


def test_a_second_load_comes_from_the_cache_and_is_the_same(gpt2_folder, cache_dir, monkeypatch):
    first = load(gpt2_folder / "gpt2_vocab.json")
    assert len(list(cache_dir.glob("*.vocab"))) == 1

    def parse(*args):
        raise AssertionError("the files were parsed")

    monkeypatch.setattr(folder, "_load_file", parse)
    again = load(gpt2_folder / "gpt2_vocab.json")
    assert fields_of(again) == fields_of(first)
    assert (again.fingerprint, again.files, again.file_digests) == (first.fingerprint, first.files, first.file_digests)
    assert bpecli.Tokenizer(vocab=again).encode("hello world") == [31373, 995]


def test_an_entry_another_user_made_is_never_used(gpt2_folder, cache_dir, monkeypatch):
    """A cache folder shared with others (BPECLI_CACHE_DIR) may hold entries they planted."""
    first = load(gpt2_folder / "gpt2_vocab.json")
    bpecli.Tokenizer(vocab=first).prepare_bulk()
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # the entries are now another user's
    parsed = []
    real_load = folder._load_file
    monkeypatch.setattr(folder, "_load_file", lambda *args: parsed.append(args) or real_load(*args))
    assert cache.load_tables(first) is None
    assert fields_of(load(gpt2_folder / "gpt2_vocab.json")) == fields_of(first) and parsed  # read from the files


def test_the_arguments_of_a_load_are_part_of_its_entry(gpt2_folder, cache_dir):
    plain = load(gpt2_folder / "gpt2_vocab.json")
    other = load(gpt2_folder / "gpt2_vocab.json", pattern="cl100k", special_tokens={"<|x|>": 50257})
    assert (other.pattern, other.special_tokens) != (plain.pattern, plain.special_tokens)
    assert other.special_tokens == {"<|x|>": 50257}
    assert len(list(cache_dir.glob("*.vocab"))) == 2


def test_a_changed_file_is_read_again(gpt2_folder, cache_dir):
    load(gpt2_folder / "gpt2_vocab.json")
    merges = gpt2_folder / "gpt2_merges.txt"
    merges.write_text("Ġ qqqqzz\n" + merges.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="names 'qqqqzz'"):
        load(gpt2_folder / "gpt2_vocab.json")


def test_a_file_that_appears_where_the_load_looked_is_read(gpt2_folder, fixtures, cache_dir):
    """vocab.json takes merges.txt when its own (gpt2_merges.txt) is not there: the load looked for
    gpt2_merges.txt, and once it is there, it is the one read."""
    (gpt2_folder / "gpt2_merges.txt").rename(gpt2_folder / "merges.txt")
    assert load(gpt2_folder / "gpt2_vocab.json").files[-1].endswith("/merges.txt")
    (gpt2_folder / "gpt2_merges.txt").write_text("Ġ qqqqzz\n", encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="gpt2_merges.txt: merge 1 .* names 'qqqqzz'"):
        load(gpt2_folder / "gpt2_vocab.json")


@pytest.mark.parametrize("damage", [b"", b"not an entry", b"\0" * 100], ids=["empty", "text", "zeros"])
def test_a_damaged_entry_is_passed_by(gpt2_folder, cache_dir, damage):
    first = load(gpt2_folder / "gpt2_vocab.json")
    (entry,) = cache_dir.glob("*.vocab")
    entry.write_bytes(damage)
    assert fields_of(load(gpt2_folder / "gpt2_vocab.json")) == fields_of(first)
    assert entry.read_bytes() != damage  # written again, whole


def test_an_entry_of_the_right_checksum_but_wrong_shape_is_passed_by(gpt2_folder, cache_dir):
    import hashlib
    import marshal

    first = load(gpt2_folder / "gpt2_vocab.json")
    (entry,) = cache_dir.glob("*.vocab")
    for shape in [(cache.LAYOUT, {}, {}, ("ranks", {}, "")), (cache.LAYOUT + 1,), [1, 2, 3]]:
        body = marshal.dumps(shape)
        entry.write_bytes(hashlib.sha256(body).digest() + body)
        assert fields_of(load(gpt2_folder / "gpt2_vocab.json")) == fields_of(first)


def test_an_empty_cache_dir_setting_turns_the_cache_off(gpt2_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("BPECLI_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    load(gpt2_folder / "gpt2_vocab.json")
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_an_unwritable_cache_is_no_error(gpt2_folder, tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("BPECLI_CACHE_DIR", str(blocked / "cache"))
    assert bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json").encode("hello world") == [31373, 995]
    assert bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json").encode("hello world") == [31373, 995]


def test_the_oldest_entries_go_and_other_files_stay(gpt2_folder, cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", {".vocab": 2, ".tables": 2})
    cache_dir.mkdir()
    (cache_dir / "notes.txt").write_text("someone else's")
    (cache_dir / "mine.vocab").write_text("someone else's")
    for i in range(4):
        load(gpt2_folder / "gpt2_vocab.json", special_tokens={f"<|{i}|>": 50257})
    assert len(list(cache_dir.glob("*.vocab"))) == 2 + 1  # and mine.vocab
    assert (cache_dir / "notes.txt").read_text() == (cache_dir / "mine.vocab").read_text() == "someone else's"
    assert not list(cache_dir.glob("*.partial"))


def test_a_folder_train_wrote_loads_from_the_cache_with_its_settings(tmp_path, cache_dir, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower lowest<|endoftext|>newer wider new\n" * 50, encoding="utf-8")
    trained = bpecli.train([corpus], vocab_size=300, special_tokens=["<|endoftext|>"], bos="<|endoftext|>",
                           add_prefix_space=True)
    trained.save(tmp_path / "tok")
    first = load(tmp_path / "tok")
    monkeypatch.setattr(folder, "_load_file", lambda *args: pytest.fail("the files were parsed"))
    again = load(tmp_path / "tok")
    assert fields_of(again) == fields_of(first)
    assert (again.template, again.add_prefix_space) == (first.template, True)
    assert bpecli.Tokenizer(vocab=again).encode("lower newer") == bpecli.Tokenizer(vocab=first).encode("lower newer")


def test_a_fifo_in_place_of_an_entry_is_passed_by_without_waiting(gpt2_folder, cache_dir):
    import os

    first = load(gpt2_folder / "gpt2_vocab.json")
    (entry,) = cache_dir.glob("*.vocab")
    entry.unlink()
    os.mkfifo(entry)
    assert fields_of(load(gpt2_folder / "gpt2_vocab.json")) == fields_of(first)


def _encode_all(tokenizer, texts):
    ids, ends = tokenizer.encode_documents(texts, dtype="int64")
    return ids.tolist(), ends.tolist()


TEXTS = ["hello world, it's 12345 times\n\n  ok", "字字 ünïcödé " * 40, "x" * 5000, "HTMLParser.parse(a_b)"]


def test_the_bulk_tables_are_kept_and_give_the_same_ids(gpt2_folder, cache_dir, kernel_docs_sample, monkeypatch):
    from bpecli.bulk import tables

    texts = TEXTS + [kernel_docs_sample[:200_000]]
    first = bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json")
    first.prepare_bulk()
    assert len(list(cache_dir.glob("*.tables"))) == 1
    expected = _encode_all(first, texts)

    def build(*args):
        raise AssertionError("a table was built")

    again = bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json")
    with monkeypatch.context() as building:
        building.setattr(tables.PairTable, "__init__", build)
        building.setattr(tables.PieceTable, "_place", build)
        again.prepare_bulk()
    assert _encode_all(again, texts) == expected


@pytest.mark.parametrize("damage", ["truncated", "other arrays", "a byte changed"])
def test_damaged_bulk_tables_are_built_again(gpt2_folder, cache_dir, damage):
    import numpy as np

    first = bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json")
    first.prepare_bulk()
    expected = _encode_all(first, TEXTS)
    (kept,) = cache_dir.glob("*.tables")
    data = kept.read_bytes()
    if damage == "truncated":
        kept.write_bytes(data[: len(data) // 2])
    elif damage == "other arrays":  # a whole entry, its checksum right, of arrays no table has
        kept.write_bytes(cache._entry_of({"pair_keys": np.zeros(3, dtype=np.int64)}))
    else:  # inside an array: the entry's checksum no longer matches
        kept.write_bytes(data[: len(data) // 2] + bytes([data[len(data) // 2] ^ 1]) + data[len(data) // 2 + 1 :])
    again = bpecli.Tokenizer.load(gpt2_folder / "gpt2_vocab.json")
    assert _encode_all(again, TEXTS) == expected
    again.prepare_bulk()
    assert kept.read_bytes() == data  # built and kept again


def test_what_a_killed_write_left_goes_with_the_next_write(gpt2_folder, cache_dir):
    import os

    no_process = (1 << 22) + 1  # past Linux's largest pid
    cache_dir.mkdir()
    left = cache_dir / f".{'0' * 32}.{no_process}.{'ab' * 8}.partial"  # as a kill -9 mid-write leaves it
    writing = cache_dir / f".{'1' * 32}.{os.getpid()}.{'cd' * 8}.partial"  # a live process's write
    elsewhere = cache_dir / f".{'2' * 32}.{no_process}.{'ef' * 8}.partial"  # a live write of another PID namespace
    others = cache_dir / ".notes.partial"
    for path in (left, writing, elsewhere, others):
        path.write_text("x")
    long_ago = time.time() - cache.STALE_SECONDS - 60
    for path in (left, writing, others):
        os.utime(path, (long_ago, long_ago))
    load(gpt2_folder / "gpt2_vocab.json")
    assert not left.exists() and writing.exists() and elsewhere.exists() and others.exists()
