"""Saving and loading a tokenizer folder in this process: links and modes kept, leftovers of killed
runs removed, a folder replaced while it is read refused."""

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from bpecli import BpecliError, Tokenizer, train
from bpecli.formats import TOKENIZER_FILES


# Where a reader may load a tokenizer folder from, as bpecli's -t takes them.
TARGETS = [".", "vocab.json", "tokenizer.tiktoken"]


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def small(fixtures):
    return (train([fixtures / "tinystories_sample.txt"], vocab_size=300, special_tokens=["<|endoftext|>"]),
            train([fixtures / "corpus.en"], vocab_size=300, special_tokens=["<|endoftext|>"]))


def test_a_link_to_the_folder_stays_a_link_and_the_folder_keeps_its_mode(small, tmp_path):
    first, second = small
    real = tmp_path / "real" / "tok"
    first.save(real)
    real.chmod(0o750)
    link = tmp_path / "link"
    link.symlink_to(real)
    second.save(link, force=True)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert Tokenizer.load(link).ranks == second.ranks
    assert real.stat().st_mode & 0o777 == 0o750
    assert listing(tmp_path / "real") == ["tok"] and listing(real) == sorted(TOKENIZER_FILES)


def test_the_working_folder_is_replaced_in_place(small, tmp_path, monkeypatch):
    """A shell in the folder stays in the folder that holds the new files (a swap would leave it
    in the removed one)."""
    first, second = small
    first.save(tmp_path / "tok")
    monkeypatch.chdir(tmp_path / "tok")
    inode = os.stat(".").st_ino
    second.save(".", force=True)
    assert os.stat(".").st_ino == inode and Tokenizer.load(".").ranks == second.ranks
    assert listing(tmp_path / "tok") == sorted(TOKENIZER_FILES)


def test_leftovers_of_killed_runs_go_but_not_a_live_runs_nor_a_users_file(small, tmp_path):
    first, second = small
    first.save(tmp_path / "tok")
    left = tmp_path / ".tok.abcd1234.bpecli-tmp"  # a run killed midway: bpecli's files only
    shutil.copytree(tmp_path / "tok", left)
    aside = tmp_path / ".tok.abcd1234-old.bpecli-tmp"
    aside.mkdir()
    theirs = tmp_path / ".tok.efgh5678.bpecli-tmp"  # someone's file in it: kept
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    live = tmp_path / ".tok.ijkl9012.bpecli-tmp"  # a run still writing it: kept
    live.mkdir()
    held = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        second.save(tmp_path / "tok", force=True)
    finally:
        os.close(held)
    assert listing(tmp_path) == [theirs.name, live.name, "tok"]
    assert (theirs / "notes.txt").read_text() == "mine"


def test_a_folder_whose_ranks_file_is_another_tokenizers_is_refused(small, tmp_path):
    first, second = small
    first.save(tmp_path / "one")
    second.save(tmp_path / "two")
    shutil.copy(tmp_path / "two" / "tokenizer.tiktoken", tmp_path / "one")
    for target in TARGETS:
        with pytest.raises(BpecliError, match=r"one/bpecli.json: tokenizer.tiktoken is not the file written with it "
                                              r"\(.*\); the folder mixes files of two tokenizers"):
            Tokenizer.load(tmp_path / "one" / target)


def test_a_folder_replaced_while_it_is_read_is_an_error_not_a_mix(small, tmp_path):
    from bpecli.folders import Generation

    first, second = small
    first.save(tmp_path / "tok")
    with Generation(tmp_path / "tok") as generation:
        generation.read("bpecli.json")
        second.save(tmp_path / "tok", force=True)  # the generation open here is removed
        with pytest.raises(BpecliError, match="tok was replaced while bpecli read it; run again"):
            generation.read("tokenizer.tiktoken")
    first.save(tmp_path / "tok", force=True)
    with Generation(tmp_path / "tok") as generation:
        os.rename(tmp_path / "tok", tmp_path / "aside")  # swapped out, its files going one by one
        os.mkdir(tmp_path / "tok")
        os.unlink(tmp_path / "aside" / "tokenizer.tiktoken")
        with pytest.raises(BpecliError, match="tok was replaced while bpecli read it; run again"):
            generation.read("tokenizer.tiktoken")


def test_the_fingerprint_is_of_the_files_loaded_not_of_their_replacement(small, tmp_path):
    first, second = small
    first.save(tmp_path / "tok")
    loaded = Tokenizer.load(tmp_path / "tok")
    expected = Tokenizer.load(tmp_path / "tok").fingerprint
    second.save(tmp_path / "tok", force=True)
    assert loaded.fingerprint == expected != Tokenizer.load(tmp_path / "tok").fingerprint


def test_where_files_cannot_be_opened_by_a_folders_descriptor_they_load_by_path(small, tmp_path, monkeypatch):
    first, _ = small
    first.save(tmp_path / "tok")
    monkeypatch.setattr(os, "supports_dir_fd", set())
    for target in TARGETS:
        assert Tokenizer.load(tmp_path / "tok" / target).ranks == first.ranks
    with pytest.raises(BpecliError, match="no such tokenizer file"):
        Tokenizer.load(tmp_path / "nothing")


def test_a_new_folder_removes_what_a_run_killed_before_its_rename_left(small, tmp_path):
    first, _ = small
    left = tmp_path / ".tok.abcd1234.bpecli-tmp"
    left.mkdir()
    (left / "vocab.json").write_text("{}")
    first.save(tmp_path / "tok")
    assert listing(tmp_path) == ["tok"]
