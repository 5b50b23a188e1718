"""bpecli.write_shards as a Python pipeline uses it: the corpus files in, a shard folder out, the
ids those of tiktoken's GPT-2 for each document followed by <|endoftext|>, and a rerun after an
interruption resumes rather than starts over."""

import json

import numpy as np
import pytest

import bpecli

EOT_ID = 50256


@pytest.fixture
def corpus(tmp_path, fixtures):
    """Three JSONL files of real text, four lines a record."""
    lines = (fixtures / "corpus.en").read_text(encoding="utf-8").splitlines(keepends=True)
    paragraphs = ["".join(lines[at : at + 4]) for at in range(0, len(lines), 4)]
    paths = []
    for n in range(3):
        path = tmp_path / f"part{n}.jsonl"
        path.write_text("".join(json.dumps({"text": p}) + "\n" for p in paragraphs[n::3]), encoding="utf-8")
        paths.append(path)
    return paths


def documents(paths) -> list[str]:
    return [json.loads(line)["text"] for path in paths for line in path.read_text(encoding="utf-8").splitlines()]


def expected(tiktoken_gpt2, texts, eot=True) -> list[int]:
    ids = []
    for text in texts:
        ids += tiktoken_gpt2.encode_ordinary(text) + ([EOT_ID] if eot else [])
    return ids


def read(run) -> list[int]:
    return np.concatenate([np.load(path) for path in run.shards]).tolist()


def test_a_pipeline_writes_shards_with_tiktokens_ids(tmp_path, corpus, gpt2_vocab, tiktoken_gpt2):
    run = bpecli.write_shards(str(gpt2_vocab), corpus, tmp_path / "shards", shard_tokens=5_000)
    assert run.status == "written" and run.kept_shards == 0
    assert read(run) == expected(tiktoken_gpt2, documents(corpus))
    assert run.manifest == json.loads((tmp_path / "shards" / "manifest.json").read_text())
    assert run.manifest["dtype"] == "uint16" and len(run.shards) > 3
    assert len(repr(run)) < 300  # the manifest stays out of it

    again = bpecli.write_shards(str(gpt2_vocab), corpus, tmp_path / "shards", shard_tokens=5_000)
    assert again.status == "complete" and again.manifest == run.manifest


def test_an_interrupted_run_resumes_with_the_same_ids(tmp_path, corpus, gpt2, tiktoken_gpt2):
    class Interrupt(Exception):
        pass

    class StopAfterFirstPart:
        def __init__(self, description, total, unit):
            pass

        def update(self, n):
            raise Interrupt

        def set_postfix_str(self, text):
            pass

        def close(self):
            pass

    with pytest.raises(Interrupt):
        bpecli.write_shards(gpt2, corpus, tmp_path / "shards", shard_tokens=2_000, progress=StopAfterFirstPart)
    assert not (tmp_path / "shards" / "manifest.json").exists()
    run = bpecli.write_shards(gpt2, corpus, tmp_path / "shards", shard_tokens=2_000)
    assert run.status == "resumed" and run.kept_shards > 0
    assert read(run) == expected(tiktoken_gpt2, documents(corpus))


def test_options_by_their_library_names(tmp_path, corpus, gpt2, tiktoken_gpt2):
    run = bpecli.write_shards(gpt2, corpus[0], tmp_path / "shards", eot=None, bos="<|endoftext|>", dtype="uint32",
                              val_fraction=0.3)
    assert {path.name.split("_")[0] for path in run.shards} == {"train", "val"}
    assert all(np.load(path).dtype == np.uint32 for path in run.shards)
    # every document, each after its bos, in one split or the other
    found = sorted(tuple(doc) for doc in _split_before(read(run), EOT_ID))
    assert found == sorted(tuple(tiktoken_gpt2.encode_ordinary(text)) for text in documents(corpus[:1]))


def _split_before(ids, marker):
    docs = []
    for i in ids:
        if i == marker:
            docs.append([])
        else:
            docs[-1].append(i)
    return docs


@pytest.mark.parametrize(
    "options, words",
    [({"eot": "<|nope|>"}, "eot '<|nope|>' is neither a special token"), ({"bos": 60_000}, "bos 60000 is not an id"),
     ({"errors": "ignore"}, "errors 'ignore': expected strict or replace"), ({"shard_format": "bin"}, "shard_format 'bin'")],
)
def test_a_bad_option_is_an_error_that_names_it(tmp_path, corpus, gpt2, options, words):
    with pytest.raises(bpecli.BpecliError, match=words):
        bpecli.write_shards(gpt2, corpus, tmp_path / "shards", **options)
    assert not (tmp_path / "shards").exists()


def test_no_inputs_is_an_error(tmp_path, gpt2):
    with pytest.raises(bpecli.BpecliError, match="inputs is empty"):
        bpecli.write_shards(gpt2, [], tmp_path / "shards")
