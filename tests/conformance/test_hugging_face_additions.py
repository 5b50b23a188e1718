"""Hugging Face tokenizer.json files that add to the text: ByteLevel's add_prefix_space, and
post-processors that add tokens (RobertaProcessing, BertProcessing, TemplateProcessing in a Sequence
with ByteLevel, as Llama 3 files carry). The files are built here by tokenizers itself, and bpecli's
ids are compared with tokenizers' and transformers' own, with and without add_special_tokens; then
bpecli trains such files (add_prefix_space, bos/eos) and transformers loads them."""

import json

import pytest

from bpecli import Tokenizer
from bpecli.errors import BpecliError
from bpecli.pretokenize import PATTERNS

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


def test_loaded_files_give_tokenizers_ids_with_and_without_added_tokens(built):
    theirs, path = built
    ours = Tokenizer.load(path)
    for text in TEXTS:
        for add in (True, False):
            expected = theirs.encode(text, add_special_tokens=add).ids
            assert ours.encode(text, allowed_special="all", add_special_tokens=add) == expected, (text[:40], add)
    # the default is Hugging Face's: the template's tokens are added
    assert ours.encode("hello", allowed_special="all") == theirs.encode("hello").ids
    assert ours.encode_ordinary("hello world") == theirs.encode("hello world").ids
    assert ours.encode_batch(TEXTS[:8], allowed_special="all", add_special_tokens=False) == \
        [e.ids for e in theirs.encode_batch(TEXTS[:8], add_special_tokens=False)]


def test_pairs_give_tokenizers_ids(built):
    theirs, path = built
    ours = Tokenizer.load(path)
    for first, second in [("hello world", "the cat"), ("", "x"), (" a", "\nb"), ("hi", "")]:
        for add in (True, False):
            expected = theirs.encode(first, second, add_special_tokens=add).ids
            assert ours.encode_pair(first, second, allowed_special="all", add_special_tokens=add) == expected


def test_documents_get_the_prefix_space_as_each_text_does(built):
    """encode_documents (the shards' path) adds the space, never the template: shards take bos/eot."""
    theirs, path = built
    ours = Tokenizer.load(path)
    documents = ["hello world", " hello", "", "\nthe cat", "Ünïcode"]
    for given in (documents, [d.encode() for d in documents]):
        ids, ends = ours.encode_documents(given, eot=None, dtype="int64")
        expected = [theirs.encode(d, add_special_tokens=False).ids for d in documents]
        assert ids.tolist() == [i for e in expected for i in e]
        assert ends.tolist() == [sum(map(len, expected[: n + 1])) for n in range(len(expected))]


def test_transformers_autotokenizer_of_such_files_gives_the_same_ids(built, tmp_path):
    transformers = pytest.importorskip("transformers")
    theirs, path = built
    folder = tmp_path / "hf"
    transformers.PreTrainedTokenizerFast(tokenizer_object=theirs).save_pretrained(str(folder))
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    ours = Tokenizer.load(path)
    for text in TEXTS[:-1]:
        for add in (True, False):
            assert ours.encode(text, allowed_special="all", add_special_tokens=add) == \
                auto(text, add_special_tokens=add)["input_ids"], (text, add)
    assert ours.encode_pair("hello", "world") == auto("hello", "world")["input_ids"]


def test_saved_again_they_give_the_same_ids_in_tokenizers_and_bpecli(built, tmp_path):
    theirs, path = built
    ours = Tokenizer.load(path)
    out = ours.save(tmp_path / "out")
    again = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    for reloaded in (Tokenizer.load(out), Tokenizer.load(out / "tokenizer.json")):
        assert (reloaded.add_prefix_space, reloaded.template) == (ours.add_prefix_space, ours.template)
    for text in TEXTS:
        for add in (True, False):
            assert again.encode(text, add_special_tokens=add).ids == theirs.encode(text, add_special_tokens=add).ids
    assert again.encode("a b", "c").ids == theirs.encode("a b", "c").ids
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoTokenizer.from_pretrained(str(out))  # with the config bpecli wrote
    for text in TEXTS[:-1]:
        for add in (True, False):
            assert auto(text, add_special_tokens=add)["input_ids"] == theirs.encode(text, add_special_tokens=add).ids


def test_special_tokens_that_are_not_the_last_ids_keep_their_ids_in_tokenizers(tmp_path):
    """Hugging Face numbers an added token the model's vocab does not list after the vocab: a
    special token below the ordinary ids, or past a gap (cl100k's 100256), goes into it too."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    for specials in ({"<|endoftext|>": 258}, {"<s>": 257, "<|x|>": 300}):
        out = Tokenizer(ranks, specials, PATTERNS["gpt2"]).save(tmp_path / str(len(specials)))
        theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
        for token, rank in specials.items():
            assert theirs.encode(f"ab{token}ab").ids == [256, rank, 256]
            assert Tokenizer.load(out / "tokenizer.json").encode(f"ab{token}ab", allowed_special="all") == [256, rank, 256]


def test_a_prefix_space_after_a_split_is_refused_in_one_line(tmp_path):
    """After a Split, ByteLevel's add_prefix_space puts a space before every piece ("hello," ->
    " hello", " ,"): not what bpecli does, so the file is refused rather than read wrong."""
    theirs = _build(tmp_path / "t.json", pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)]), None)
    assert theirs.encode("hello,").tokens[1].startswith("Ġ")  # what would be missed
    with pytest.raises(BpecliError, match=r"ByteLevel pre-tokenizer sets add_prefix_space=true after a Split") as caught:
        Tokenizer.load(tmp_path / "t.json")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("processor, message", [
    ({"type": "Unheard", "sep": ["</s>", 1]}, r"its post_processor \(Unheard\) adds tokens bpecli does not add"),
    ({"type": "Sequence", "processors": [{"type": "BertProcessing", "sep": ["</s>", 1], "cls": ["<s>", 0]},
                                         {"type": "BertProcessing", "sep": ["</s>", 1], "cls": ["<s>", 0]}]},
     r"holds 2 steps that add tokens"),
    ({"type": "BertProcessing", "sep": ["</s>", 1], "cls": ["<s>", 7]}, r"adds id 7, which is no special token's"),
    ({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<q>", "type_id": 0}},
                                              {"Sequence": {"id": "A", "type_id": 0}}], "pair": None,
      "special_tokens": {}}, r"uses '<q>', which its special_tokens do not give ids for"),
])
def test_post_processors_bpecli_cannot_reproduce_are_refused_by_name(tmp_path, processor, message):
    _build(tmp_path / "t.json", pre_tokenizers.ByteLevel(), None)
    with pytest.raises(BpecliError, match=message):
        Tokenizer.load(_edited(tmp_path / "t.json", tmp_path, post_processor=processor))


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_trained_with_prefix_space_and_bos_eos_gives_bpecli_ids_in_tokenizers_and_transformers(tmp_path, pattern):
    transformers = pytest.importorskip("transformers")
    from bpecli import train

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "<|endoftext|>hello again, world\n", encoding="utf-8")
    ours = train([str(corpus)], vocab_size=330, special_tokens=["<|endoftext|>"], pattern=pattern,
                 add_prefix_space=True, bos="<s>", eos="</s>")
    out = ours.save(tmp_path / "tok")
    document = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert document["post_processor"]["type"] == "TemplateProcessing"
    if pattern == "gpt2":  # written where users look for it
        assert document["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                             "use_regex": True}
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(str(out))
    assert (auto.bos_token, auto.eos_token) == ("<s>", "</s>")
    bos, eos = ours.special_tokens["<s>"], ours.special_tokens["</s>"]
    assert ours.encode("hello") == [bos, *ours.encode("hello", add_special_tokens=False), eos]
    assert ours.encode("hello", add_special_tokens=False) == ours.encode(" hello", add_special_tokens=False)
    for text in [*TEXTS[:-1], "<|endoftext|>hello", "a<|endoftext|>b"]:
        for add in (True, False):
            expected = theirs.encode(text, add_special_tokens=add).ids
            assert ours.encode(text, allowed_special="all", add_special_tokens=add) == expected, (text, add)
            assert auto(text, add_special_tokens=add)["input_ids"] == expected, (text, add)
    assert ours.encode_pair("hi", "there") == theirs.encode("hi", "there").ids == auto("hi", "there")["input_ids"]
    assert Tokenizer.load(out).encode("hello there") == ours.encode("hello there")


def test_what_the_ranks_file_cannot_carry_is_said_in_bpecli_json(tmp_path):
    ranks = {bytes([b]): b for b in range(256)}
    from bpecli.vocab import Template

    out = Tokenizer(ranks, {"<s>": 256}, PATTERNS["gpt2"], add_prefix_space=True, template=Template((256, "A"))).save(tmp_path / "t")
    document = json.loads((out / "bpecli.json").read_text(encoding="utf-8"))
    assert document["format_version"] == 2  # a bpecli that knows neither refuses the folder
    said = document["ranks_file_lacks"]
    assert "tokenizer.tiktoken" in said and "<s>=256" in said and "' ' + text" in said
    plain = Tokenizer(ranks, {"<s>": 256}, PATTERNS["gpt2"]).save(tmp_path / "plain")
    assert json.loads((plain / "bpecli.json").read_text(encoding="utf-8"))["format_version"] == 1


def test_a_prefix_space_after_normalizing_is_written_as_tokenizers_reads_it(tmp_path):
    """With another pattern than GPT-2's the space is the normalizer's last steps, after NFKC: a
    text that NFKC makes start with a space (U+3000) gets no second one, in bpecli as in tokenizers."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b" a"] = 256
    ours = Tokenizer(ranks, {"<s>": 257}, PATTERNS["cl100k"], normalize=("nfkc",), add_prefix_space=True)
    theirs = tokenizers.Tokenizer.from_file(str(ours.save(tmp_path / "t") / "tokenizer.json"))
    again = Tokenizer.load(tmp_path / "t" / "tokenizer.json")
    assert (again.normalize, again.add_prefix_space) == (("nfkc",), True)
    for text in ["a", "\u3000a", " a", "ａ b", "", "x<s>a", "<s>", "\n\na", "a\u3000"]:
        expected = theirs.encode(text).ids
        assert ours.encode(text, allowed_special="all") == expected == again.encode(text, allowed_special="all"), text


def test_a_template_without_a_pair_form_puts_pairs_one_after_the_other_as_tokenizers_does(tmp_path):
    from bpecli.vocab import Template

    ranks = {bytes([b]): b for b in range(256)}
    ours = Tokenizer(ranks, {"<s>": 256}, PATTERNS["gpt2"], template=Template((256, "A")))
    theirs = tokenizers.Tokenizer.from_file(str(ours.save(tmp_path / "t") / "tokenizer.json"))
    reference = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 256)])  # no pair given
    assert json.loads(theirs.post_processor.__getstate__())["pair"] == json.loads(reference.__getstate__())["pair"]
    assert ours.encode_pair("ab", "c") == theirs.encode("ab", "c").ids == [97, 98, 99]
    assert ours.encode("ab") == theirs.encode("ab").ids == [256, 97, 98]


def test_bench_against_tiktoken_puts_in_the_prefix_space_a_tiktoken_user_must_add(tmp_path):
    pytest.importorskip("tiktoken")
    from bpecli.bench import bench

    ranks = {bytes([b]): b for b in range(256)}
    ranks[b" h"] = 256
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello there<|endoftext|>hi\n", encoding="utf-8")
    ours = Tokenizer(ranks, {"<|endoftext|>": 257}, PATTERNS["gpt2"], add_prefix_space=True)
    assert bench(ours, str(corpus), against="tiktoken", repeat=1)["identical"] is True
    assert bench(ours, str(corpus), against="tokenizers", repeat=1)["identical"] is True


@pytest.mark.parametrize("prefix", [False, True])
def test_roberta_files_with_a_mask_that_takes_the_space_before_it_give_hugging_faces_ids(tmp_path, prefix):
    """RoBERTa's (and BART's) files: <s> <pad> </s> <unk> first, RobertaProcessing, and <mask> with
    lstrip, which takes the whitespace before it (" <mask>" is one token)."""
    transformers = pytest.importorskip("transformers")
    theirs = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    theirs.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    theirs.train_from_iterator(CORPUS, trainer)
    theirs.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True),
                               tokenizers.AddedToken("<r>", lstrip=False, rstrip=True, normalized=False, special=True)])
    theirs.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    theirs.save(str(tmp_path / "roberta.json"))
    ours = Tokenizer.load(tmp_path / "roberta.json")
    assert ours.vocab.strips == {"<mask>": (True, False), "<r>": (False, True)}
    folder = tmp_path / "hf"
    transformers.PreTrainedTokenizerFast(tokenizer_object=theirs).save_pretrained(str(folder))
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    saved = tokenizers.Tokenizer.from_file(str(ours.save(tmp_path / "again") / "tokenizer.json"))
    again = Tokenizer.load(tmp_path / "again")
    texts = ["hello <mask> world", "hello<mask>", " \n\t<mask>", "<mask>", "a\u3000<mask>b", "a\x1c<mask>", "x <mask> <mask>",
             "the <r>  cat", "<r>\n", "a <r> <mask> b", "hello world"]
    for text in texts:
        for add in (True, False):
            expected = theirs.encode(text, add_special_tokens=add).ids
            assert ours.encode(text, allowed_special="all", add_special_tokens=add) == expected, (text, add)
            assert auto(text, add_special_tokens=add)["input_ids"] == expected, (text, add)
            assert saved.encode(text, add_special_tokens=add).ids == expected, (text, add)
            assert again.encode(text, allowed_special="all", add_special_tokens=add) == expected, (text, add)


def test_train_and_inspect_say_what_the_tokenizer_adds_and_what_tiktoken_files_lack(tmp_path):
    from typer.testing import CliRunner

    from bpecli.cli import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS), encoding="utf-8")
    out = tmp_path / "tok"
    done = CliRunner().invoke(app, ["train", str(corpus), "--vocab-size", "300", "--out", str(out), "--json",
                                    "--add-prefix-space", "--bos", "[INST]"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert (summary["add_prefix_space"], summary["template"]) == (True, "[INST] TEXT")
    note = [line for line in done.stderr.splitlines() if line.startswith("bpecli: note: tokenizer.tiktoken")]
    assert len(note) == 1 and "[INST]=" in note[0] and "' ' + text" in note[0]
    shown = CliRunner().invoke(app, ["inspect", str(out)])
    assert shown.exit_code == 0 and "template [INST] TEXT" in shown.stdout and "add prefix space" in shown.stdout


@pytest.mark.parametrize("workers", [1, 2])
def test_training_with_a_prefix_space_counts_each_documents_first_word_as_encode_splits_it(tmp_path, workers):
    """Each document's first word is counted with the space encode will put before it, as Hugging
    Face's trainer counts it with ByteLevel(add_prefix_space=True): " ab", never "ab"."""
    from bpecli import train

    documents = ["ab", "ab", " ab", "cab"]
    corpus = tmp_path / "c.txt"
    corpus.write_text("<|endoftext|>".join(documents), encoding="utf-8")
    ours = train([str(corpus)], vocab_size=259, special_tokens=["<|endoftext|>"], add_prefix_space=True, workers=workers)
    assert ours.merges == [(b"a", b"b"), (b" ", b"ab")]  # without the space: (b"c", b"ab")
    theirs = tokenizers.Tokenizer(models.BPE())
    theirs.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    theirs.train_from_iterator(documents, trainers.BpeTrainer(
        vocab_size=258, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    assert [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
            for m in json.loads(theirs.to_str())["model"]["merges"]] == [("a", "b"), ("Ġ", "ab")]


def test_shards_take_the_templates_tokens_as_bos_and_eot_or_say_why_they_cannot(tmp_path):
    """encode --out writes what Hugging Face's encode gives each document; a template with two
    tokens before the text has no single --bos, and says so in one line."""
    import numpy as np
    from typer.testing import CliRunner

    from bpecli.cli import app
    from bpecli.vocab import Template

    ranks = {bytes([b]): b for b in range(256)}
    specials = {"<a>": 256, "<b>": 257, "</s>": 258}
    two = Tokenizer(ranks, specials, PATTERNS["gpt2"], template=Template((256, 257, "A", 258))).save(tmp_path / "two")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"text": "hi"}\n{"text": "yo"}\n', encoding="utf-8")

    def encode(*args):
        return CliRunner().invoke(app, ["encode", "-t", str(two), str(corpus), "--workers", "1", "-q", *map(str, args)])

    refused = encode("--out", tmp_path / "refused")
    assert refused.exit_code == 1 and "puts 2 tokens before each text" in refused.output
    assert len(refused.output.strip().splitlines()) == 1 and not (tmp_path / "refused").exists()
    given = encode("--out", tmp_path / "given", "--bos", "<b>")
    assert given.exit_code == 0, given.output
    assert np.load(sorted((tmp_path / "given").glob("*.npy"))[0]).tolist() == [257, 104, 105, 258, 257, 121, 111, 258]
    plain = encode("--out", tmp_path / "plain", "--no-add-special-tokens", "--eot", "none")
    assert plain.exit_code == 0, plain.output
    assert np.load(sorted((tmp_path / "plain").glob("*.npy"))[0]).tolist() == [104, 105, 121, 111]
    lines = encode()
    assert lines.exit_code == 0 and lines.stdout.splitlines() == ["256 257 104 105 258", "256 257 121 111 258"]
