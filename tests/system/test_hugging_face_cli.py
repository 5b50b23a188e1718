"""Hugging Face tokenizer.json files that add to the text: ByteLevel's add_prefix_space, and
post-processors that add tokens (RobertaProcessing, BertProcessing, TemplateProcessing in a Sequence
with ByteLevel, as Llama 3 files carry). The files are built here by tokenizers itself, and bpecli's
ids are compared with tokenizers' and transformers' own, with and without add_special_tokens; then
bpecli trains such files (add_prefix_space, bos/eos) and transformers loads them."""

import json
import subprocess
import sys

import pytest

tokenizers = pytest.importorskip("tokenizers")

from tokenizers import Regex, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402

# Llama 3's pattern, as its tokenizer.json writes it for Oniguruma
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = ["hello world, the cat sat on the mat. hello there", "Ünïcode wörld 123 4567", "  indented\n\tcode() {}\n"] * 40

TEXTS = ["", " ", "  ", "hello", " hello", "  two spaces", "\nhello world", "\n", "hello\n", "a<s>b", "<s>hello",
         "hello</s>", "<s>", " <s> x", "Ünïcode wörld 123", "x" * 5, "the cat. the mat!\n\nhello   there  ",
         "hello world " * 7000]  # the last one long enough for the vectorised path


def _build(path, pre_tokenizer, post_processor):
    """A byte-level BPE trained by tokenizers with <s> and </s> as its first ids, as its trainer
    lays them out, saved to path; and the tokenizers object."""
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = post_processor
    tok.save(str(path))
    return tok

KINDS = {
    "roberta": lambda: (pre_tokenizers.ByteLevel(add_prefix_space=True),
                        processors.RobertaProcessing(("</s>", 1), ("<s>", 0))),
    "bert": lambda: (pre_tokenizers.ByteLevel(add_prefix_space=False),
                     processors.BertProcessing(("</s>", 1), ("<s>", 0))),
    "llama3": lambda: (pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_REGEX), "isolated"),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
                       processors.Sequence([processors.ByteLevel(trim_offsets=False),
                                            processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s>:1 $B:1",
                                                                          special_tokens=[("<s>", 0)])])),
    "prefix_only": lambda: (pre_tokenizers.ByteLevel(add_prefix_space=True), None),
    "template_both_ends": lambda: (pre_tokenizers.ByteLevel(add_prefix_space=True),
                                   processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                                 special_tokens=[("<s>", 0), ("</s>", 1)])),
}


@pytest.fixture(params=sorted(KINDS))
def built(request, tmp_path):
    path = tmp_path / f"{request.param}.json"
    return _build(path, *KINDS[request.param]()), path


def _edited(path, tmp_path, **changes):
    document = json.loads(path.read_text(encoding="utf-8"))
    document.update(changes)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document), encoding="utf-8")
    return edited


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
