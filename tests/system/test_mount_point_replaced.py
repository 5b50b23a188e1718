"""A tokenizer folder that cannot be renamed (a tmpfs mounted on it) has its files replaced one by
one: a kill -9 between any two of those steps leaves a folder bpecli loads as the old tokenizer or
the new one, whatever file it is loaded through, or refuses in one line; where bpecli loads it,
Hugging Face's tokenizers and transformers read the same tokenizer from it."""

import subprocess
from pathlib import Path

import pytest

from bpecli import BpecliError, Tokenizer
from bpecli.formats import TOKENIZER_FILES
from system.test_formats_folder import BPECLI, TARGETS, TEXT, killed_at, train_command


def hugging_face_ids(folder: Path) -> dict:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    return {"tokenizers": tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json")).encode(TEXT).ids,
            "transformers": transformers.AutoTokenizer.from_pretrained(str(folder)).encode(TEXT)}


@pytest.fixture(scope="module")
def two(fixtures, tmp_path_factory):
    """Two tokenizers trained by the CLI on different corpora, and the ids each reader gets of TEXT."""
    root = tmp_path_factory.mktemp("two")
    corpora = {"a": fixtures / "corpus.en", "b": fixtures / "tinystories_sample.txt"}
    ids = {}
    for name, corpus in corpora.items():
        subprocess.run(train_command(corpus, root / name), check=True)
        ids[name] = {target: Tokenizer.load(root / name / target).encode(TEXT, allowed_special="all") for target in TARGETS}
        ids[name].update(hugging_face_ids(root / name))
    assert all(ids["a"][reader] != ids["b"][reader] for reader in ids["a"])
    return corpora, ids


@pytest.mark.system
@pytest.mark.parametrize("at", range(1, 11))
def test_a_kill_at_each_step_of_an_in_place_replacement_leaves_one_tokenizer_or_a_refusal(two, tmp_path, at, mounted_tok):
    corpora, ids = two
    out = mounted_tok
    subprocess.run(train_command(corpora["a"], out), check=True)
    killed = killed_at(train_command(corpora["b"], out), at, tmp_path / "strace.log")
    seen = {}
    for target in TARGETS:
        try:
            got = Tokenizer.load(out / target).encode(TEXT, allowed_special="all")
        except BpecliError as e:
            assert "\n" not in str(e) and "mixes files of two tokenizers" in str(e), e
            seen[target] = "refused"
            continue
        seen[target] = next((name for name in ("a", "b") if ids[name][target] == got), f"WRONG {got}")
    assert len(set(seen.values())) == 1 and set(seen.values()) <= {"a", "b", "refused"}, (killed, seen)
    loaded = seen["."]
    if loaded != "refused":  # what bpecli loads is what Hugging Face reads from the folder
        assert hugging_face_ids(out) == {reader: ids[loaded][reader] for reader in ("tokenizers", "transformers")}
    if not killed:
        assert loaded == "b"
    cli = subprocess.run([*BPECLI, "encode", "-t", str(out / "tokenizer.json")], input=TEXT, capture_output=True, text=True)
    assert (cli.returncode == 1) == (loaded == "refused"), cli.stderr
    assert len(cli.stderr.splitlines()) == (1 if loaded == "refused" else 0) and "Traceback" not in cli.stderr
    subprocess.run(train_command(corpora["b"], out), check=True)  # the next run mends it
    assert {target: Tokenizer.load(out / target).encode(TEXT, allowed_special="all") for target in TARGETS} == \
        {target: ids["b"][target] for target in TARGETS}
    assert sorted(p.name for p in out.iterdir()) == sorted(TOKENIZER_FILES)  # no temporary folder stays
