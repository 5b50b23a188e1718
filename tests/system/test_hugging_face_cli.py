"""The command line trains tokenizer.json files that add to the text (add_prefix_space, bos/eos),
encodes with and without the added tokens, and transformers loads the files with bpecli's ids."""

import subprocess
import sys

import pytest

from conformance.test_hugging_face_additions import CORPUS

def _bpecli(*args, input=None):
    return subprocess.run([sys.executable, "-m", "bpecli", *args], input=input, capture_output=True, text=True)


@pytest.mark.system
def test_cli_trains_and_encodes_with_and_without_added_tokens(tmp_path):
    transformers = pytest.importorskip("transformers")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS), encoding="utf-8")
    done = _bpecli("train", str(corpus), "--vocab-size", "320", "--out", str(tmp_path / "tok"), "-q",
                   "--add-prefix-space", "--bos", "<s>", "--eos", "</s>")
    assert done.returncode == 0, done.stderr
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    text = "hello world\nthe cat"
    for flags, add in (([], True), (["--add-special-tokens"], True), (["--no-add-special-tokens"], False)):
        done = _bpecli("encode", "-t", str(tmp_path / "tok"), *flags, input=text)
        assert done.returncode == 0, done.stderr
        assert list(map(int, done.stdout.split())) == auto(text, add_special_tokens=add)["input_ids"]
    # shards: the template's tokens are each document's bos and eot
    (tmp_path / "docs.jsonl").write_text('{"text": "hello"}\n{"text": "the cat"}\n', encoding="utf-8")
    done = _bpecli("encode", "-t", str(tmp_path / "tok"), str(tmp_path / "docs.jsonl"), "--out", str(tmp_path / "shards"), "-q")
    assert done.returncode == 0, done.stderr
    import numpy as np

    shard = np.load(sorted((tmp_path / "shards").glob("*.npy"))[0])
    assert shard.tolist() == auto("hello")["input_ids"] + auto("the cat")["input_ids"]
