"""Written tokenizer files load in Hugging Face tokenizers and tiktoken and give bpecli's ids."""

import json

import pytest

from bpecli.files import TOKENIZER_FILES

from bpecli import BpecliError, Tokenizer, train

SAMPLE = "Hello world! It's 2026; naïve café, 日本語, emoji 🎉.\n\n  indented\tline<|endoftext|>next doc"


@pytest.fixture(scope="module")
def trained(fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "tok"
    tok = train([fixtures / "corpus.en", fixtures / "tinystories_sample.txt"], vocab_size=700,
                special_tokens=["<|endoftext|>"])
    tok.save(out)
    return tok, out


def texts(fixtures):
    return [SAMPLE] + [(fixtures / n).read_text(encoding="utf-8") for n in ("corpus.en", "german.txt", "tinystories_sample.txt")]


def test_hugging_face_tokenizer_json_gives_the_same_ids(trained, fixtures):
    tokenizers = pytest.importorskip("tokenizers")
    tok, out = trained
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in texts(fixtures):
        ids = theirs.encode(text).ids
        assert ids == tok.encode(text)
        assert theirs.decode(ids, skip_special_tokens=False) == text


def test_hugging_face_reads_vocab_and_merges(trained, fixtures):
    tokenizers = pytest.importorskip("tokenizers")
    tok, out = trained
    theirs = tokenizers.ByteLevelBPETokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
    text = (fixtures / "corpus.en").read_text(encoding="utf-8")[:20_000]
    assert theirs.encode(text).ids == tok.encode(text, special=False)


def test_tiktoken_reads_the_ranks_file(trained, fixtures):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    tok, out = trained
    meta = json.loads((out / "bpecli.json").read_text())
    theirs = tiktoken.Encoding("trained", pat_str=meta["pattern"], special_tokens=meta["special_tokens"],
                               mergeable_ranks=load_tiktoken_bpe(str(out / "tokenizer.tiktoken")))
    for text in texts(fixtures):
        assert theirs.encode(text, allowed_special="all") == tok.encode(text)


@pytest.mark.parametrize("name", [".", "bpecli.json", "vocab.json", "tokenizer.json", "tokenizer.tiktoken"])
def test_every_written_file_loads_back_as_the_same_tokenizer(trained, name):
    tok, out = trained
    options = {"pattern": tok.pattern, "special_tokens": tok.special_tokens} if name.endswith(".tiktoken") else {}
    loaded = Tokenizer.load(out / name, **options)
    assert loaded.ranks == tok.ranks
    assert loaded.special_tokens == tok.special_tokens
    assert loaded.pattern == tok.pattern
    assert loaded.merges == tok.merges


def test_gpt2_files_load_with_their_special_token(gpt2):
    assert gpt2.vocab_size == 50257
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert len(gpt2.ranks) == 50256


def test_save_refuses_to_overwrite_without_force(trained, tmp_path):
    tok, _ = trained
    tok.save(tmp_path / "out")
    with pytest.raises(BpecliError, match="holds a tokenizer already; use --force"):
        tok.save(tmp_path / "out")
    tok.save(tmp_path / "out", force=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(TOKENIZER_FILES)  # no temporary folder left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(BpecliError, match=r"holds files bpecli did not write \(notes.txt\)"):
        tok.save(tmp_path / "out", force=True)
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("x.tiktoken", "not base64 at all!\n", "error parsing line"),
        ("x.tiktoken", "YQ== 0\n", "byte tokens are missing"),
        ("tokenizer.json", "{broken", "not valid JSON"),
        ("tokenizer.json", '{"model": {"type": "WordPiece", "vocab": {}}}', "byte-level BPE only"),
        ("bpecli.json", '{"format_version": 99, "pattern": "gpt2"}', "format_version 99"),
        ("vocab.json", '{"a": 0}', "expected merges.txt"),
        ("vocab.json", "[1, 2]", "not a tokenizer file"),
    ],
)
def test_corrupt_tokenizer_files_are_clear_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(BpecliError, match=message):
        Tokenizer.load(path)
