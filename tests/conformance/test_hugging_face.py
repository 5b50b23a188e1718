"""Written tokenizer files load in Hugging Face tokenizers and transformers and give bpecli's ids;
Hugging Face's own files load in bpecli with Hugging Face's ids."""

import pytest

from bpecli import Tokenizer, train
from conftest import SAMPLE, hugging_face_file, texts


def test_hugging_face_tokenizer_json_gives_the_same_ids(trained, fixtures):
    tokenizers = pytest.importorskip("tokenizers")
    tok, out = trained
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in texts(fixtures):
        ids = theirs.encode(text).ids
        assert ids == tok.encode(text, allowed_special="all")
        assert theirs.decode(ids, skip_special_tokens=False) == text


def test_hugging_face_reads_vocab_and_merges(trained, fixtures):
    tokenizers = pytest.importorskip("tokenizers")
    tok, out = trained
    theirs = tokenizers.ByteLevelBPETokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
    text = (fixtures / "corpus.en").read_text(encoding="utf-8")[:20_000]
    assert theirs.encode(text).ids == tok.encode_ordinary(text)


def test_transformers_gpt2_tokenizer_reads_vocab_and_merges(trained, fixtures):
    """The README's call: transformers 5 takes the files as vocab= and merges= (vocab_file= it passes by)."""
    transformers = pytest.importorskip("transformers")
    tok, out = trained
    theirs = transformers.GPT2TokenizerFast(vocab=str(out / "vocab.json"), merges=str(out / "merges.txt"))
    text = (fixtures / "corpus.en").read_text(encoding="utf-8")[:20_000]
    assert theirs.encode(text) == tok.encode_ordinary(text)


def test_hugging_face_own_byte_level_save_loads_with_its_ids(gpt2_vocab, fixtures, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    theirs = tokenizers.ByteLevelBPETokenizer(str(gpt2_vocab), str(fixtures / "gpt2_merges.txt"))
    theirs.save(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path / "tokenizer.json")
    for text in texts(fixtures):
        text = text.replace("<|endoftext|>", "\n")  # plain text there; a special token here, as from vocab.json
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids


def test_hugging_face_byte_level_post_processor_changes_no_id_and_loads(trained, tmp_path):
    path = hugging_face_file(trained, tmp_path, post_processor={"type": "ByteLevel", "add_prefix_space": True,
                                                                "trim_offsets": False, "use_regex": True})
    assert Tokenizer.load(path).encode(SAMPLE, allowed_special="all") == trained[0].encode(SAMPLE, allowed_special="all")


def test_several_merges_making_one_token_load_as_transformers_tiktoken_converter_writes_them(tmp_path, gpt2_vocab, fixtures):
    """transformers writes every split of a token into two tokens, one after another: still the order of ids."""
    tokenizers = pytest.importorskip("tokenizers")
    lines = (fixtures / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    lines.insert(lines.index("Ġt he") + 1, "Ġth e")  # " the" (id 262) once more
    (tmp_path / "vocab.json").write_bytes(gpt2_vocab.read_bytes())
    (tmp_path / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    theirs = tokenizers.ByteLevelBPETokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    ours = Tokenizer.load(tmp_path / "vocab.json")
    for text in texts(fixtures):
        text = text.replace("<|endoftext|>", "\n")
        assert ours.encode(text, allowed_special="all") == theirs.encode(text).ids


# Characters whose classes are the same in every Unicode version the engines know (U+0558, new
# in Unicode 16, is a letter to the regex module and not to Oniguruma or tiktoken: issue #13).
_OLD_CHARACTERS = ["a", "B", "1", "23", "4567", " ", "  ", "\n", "\r\n", "\t", ".", "/", "'s", "'LL", "é", "中文",
                   "Ǆ", "ǅ", "ʰ", "\u0301", "\u00a0", "\u2003", "\u3000", "😀", "!", "_", "x\n", "٣", "Ⅻ", "²", "ß"]


@pytest.fixture(scope="module", params=["gpt2", "cl100k", "o200k"])
def preset_folder(request, gpt2, tmp_path_factory):
    """(preset, a Tokenizer of GPT-2's ranks with that preset's pattern, the folder it saved), saved
    once for the tests that load it in tokenizers and in transformers."""
    from bpecli import PATTERNS

    tok = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=PATTERNS[request.param])
    folder = tmp_path_factory.mktemp(request.param) / "tok"
    tok.save(folder)
    return request.param, tok, folder


def test_hugging_face_gives_our_ids_for_every_preset(preset_folder, kernel_docs_sample):
    """Oniguruma reads cl100k's possessive \\p{N}{1,3}+ as "one or more of {1,3}" ("2010" was
    "20" + "10" there): the tokenizer.json we write says it with an atomic group."""
    import random

    from bpecli import PATTERNS

    tokenizers = pytest.importorskip("tokenizers")
    preset, tok, folder = preset_folder
    theirs = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    rng = random.Random(0)
    texts = ["2010", "In 2010, 12345678 people"] + [d for d in kernel_docs_sample.split("<|endoftext|>") if d][:200]
    texts += ["".join(rng.choice(_OLD_CHARACTERS) for _ in range(rng.randint(1, 40))) for _ in range(1000)]
    for text in texts:
        assert theirs.encode(text, add_special_tokens=False).ids == tok.encode_ordinary(text), text[:80]
    assert Tokenizer.load(folder / "tokenizer.json").pattern == PATTERNS[preset]  # read back as the preset


def test_transformers_loads_a_saved_folder_with_our_ids_and_its_eos_token(preset_folder, kernel_docs_sample):
    transformers = pytest.importorskip("transformers")

    _, tok, folder = preset_folder
    theirs = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert (theirs.eos_token, theirs.eos_token_id) == ("<|endoftext|>", 50256)
    for text in [SAMPLE, "In 2010, 12345678 people"] + kernel_docs_sample.split("<|endoftext|>")[:30]:
        ids = theirs.encode(text)
        assert ids == tok.encode(text, allowed_special="all")
        assert theirs.decode(ids) == text


def test_transformers_loads_a_trained_folder_and_knows_its_separator(tmp_path, fixtures):
    transformers = pytest.importorskip("transformers")
    tok = train([fixtures / "tinystories_sample.txt"], vocab_size=400, special_tokens=["<|doc|>", "<|pad|>"])
    tok.save(tmp_path / "tok")
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    assert (theirs.eos_token, theirs.eos_token_id) == ("<|doc|>", 398)
    text = "Once upon a time<|doc|>there was a cat"
    assert theirs.encode(text) == tok.encode(text, allowed_special="all") and theirs.decode(tok.encode(text, allowed_special="all")) == text
