"""Messages that say what is true: a journal or manifest that no longer parses is named as
damaged (never as a stranger's file); a journal whose part list was extended says it may be the
journal that changed; a pattern error names where the pattern came from only where that is known;
an unknown id is said one way, from ids and from a shard alike."""

import io
import json

import numpy as np
import pytest

from bpecli.errors import BpecliError, InputError, OutputError
from bpecli.inputs import parts as input_parts
from bpecli.pretokenize import splitter
from bpecli.shards import write_shards

from conftest import Interrupt


JOURNAL = ".bpecli-progress.json"


@pytest.fixture
def interrupted(gpt2, kernel_docs_sample, tmp_path, monkeypatch):
    corpus = tmp_path / "docs.txt"
    corpus.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 14)

    def write(out, **options):
        return write_shards(gpt2, [str(corpus)], out, shard_tokens=5000, eot=50256, **options)

    with pytest.raises(KeyboardInterrupt):
        write(tmp_path / "cut", progress=Interrupt(after=8))
    assert (tmp_path / "cut" / JOURNAL).exists()
    return write, tmp_path / "cut"


@pytest.mark.parametrize("name", [JOURNAL, "manifest.json"])
@pytest.mark.parametrize("damage", ["", '{"settings": {"format_'])
def test_a_state_file_that_no_longer_parses_is_named_damaged_and_nothing_is_removed(interrupted, name, damage):
    write, cut = interrupted
    (cut / JOURNAL).unlink()
    (cut / name).write_text(damage)
    before = sorted(p.name for p in cut.iterdir())
    for force in (False, True):
        with pytest.raises(OutputError) as error:
            write(cut, force=force)
        said = str(error.value)
        assert f"{name}: damaged " in said and "no record of writing" not in said, said
        assert "remove the folder" in said and said.endswith("choose another out_dir"), said
        assert sorted(p.name for p in cut.iterdir()) == before


def test_a_journal_with_more_parts_than_were_read_may_be_the_journal_that_changed(interrupted):
    write, cut = interrupted
    journal = json.loads((cut / JOURNAL).read_text())
    journal["parts"] = [journal["parts"][0], "0" * 64, *journal["parts"][2:]]  # a part's checksum edited
    (cut / JOURNAL).write_text(json.dumps(journal))
    with pytest.raises(InputError, match=r"changed since the interrupted run wrote shards from it \(or its journal is damaged\)"):
        write(cut)


def test_a_pattern_error_names_no_source_it_does_not_know():
    with pytest.raises(BpecliError) as error:
        splitter(r"(?:a|aa)+$|[\s\S]")("a" * 40 + "b")
    assert "tokenizer's pattern" not in str(error.value) and "ran for over" in str(error.value)
    with pytest.raises(BpecliError, match=r"\(from bpecli.json\) ran for over"):
        splitter(r"(?:a|aa)+$|[\s\S]", source="from bpecli.json")("a" * 40 + "b")


def test_an_unknown_id_is_said_alike_from_ids_and_from_an_array(gpt2):
    said = set()
    for ids in ([31373, 99999], np.array([31373, 99999], dtype=np.uint32)):
        with pytest.raises(BpecliError) as error:
            gpt2.decode(ids)
        said.add(str(error.value))
    assert said == {"id 99999 is not in the vocabulary (0..50256)"}


def test_an_unknown_id_says_what_it_is_and_where(gpt2, tmp_path):
    """Within the ids' range, no token has it; a string is no id at all; decode names the input and
    which id it is, in text and in a shard alike."""
    from bpecli import Tokenizer
    from bpecli.cli.ids import write_decoded

    gapped = Tokenizer({bytes([b]): b for b in range(256)}, special_tokens={"<|end|>": 1000}, pattern=gpt2.pattern)
    with pytest.raises(BpecliError, match=r"^id 500 is not in the vocabulary \(0\.\.1000, where no token has that id\)$"):
        gapped.decode([72, 500])
    with pytest.raises(BpecliError, match="^'72' is no token id \\(ids are integers\\)$"):
        gpt2.decode(["72"])
    for blocks in ([[31373, 995], [31373, 99999]], [np.array([31373, 995, 31373, 99999], dtype=np.uint32)]):
        with pytest.raises(BpecliError, match=r"^ids.txt: id 99999 is not in the vocabulary \(0\.\.50256\), at id 4$"):
            write_decoded(gpt2, blocks, "strict", io.BytesIO(), "ids.txt")


def test_train_that_cannot_write_its_files_removes_the_parents_it_made(gpt2, tmp_path, monkeypatch):
    from bpecli.formats import folder

    def full(vocab, where):
        (where / "vocab.json").write_text("{")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(folder, "_write_all", full)
    with pytest.raises(OutputError, match="No space left on device"):
        gpt2.save(tmp_path / "new" / "deeper" / "tok")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(OutputError):
        gpt2.save(tmp_path / "kept" / "made" / "tok")
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and list((tmp_path / "kept").iterdir()) == []
