"""Written tokenizer files load in Hugging Face tokenizers and tiktoken and give bpecli's ids."""

import base64
import json
import os
import re
from pathlib import Path

import pytest

from bpecli import BpecliError, Tokenizer, train
from bpecli.folders import LEGACY_LOCK
from bpecli.formats import TOKENIZER_FILES

from conftest import hugging_face_file


@pytest.mark.parametrize("name", [".", "bpecli.json", "vocab.json", "tokenizer.json", "tokenizer.tiktoken"])
def test_every_written_file_loads_back_as_the_same_tokenizer(trained, name):
    tok, out = trained
    options = {"pattern": tok.pattern, "special_tokens": tok.special_tokens} if name.endswith(".tiktoken") else {}
    loaded = Tokenizer.load(out / name, **options)
    assert loaded.ranks == tok.ranks
    assert loaded.special_tokens == tok.special_tokens
    assert loaded.pattern == tok.pattern
    assert loaded.merges == tok.merges


def test_save_names_its_folder_as_each_caller_spells_it(trained, tmp_path):
    tok, _ = trained
    (tmp_path / "file").write_text("mine")
    with pytest.raises(BpecliError) as raised:
        tok.save(tmp_path / "file")
    assert str(raised.value).endswith("is a file; out_dir names a folder for the tokenizer files")
    assert raised.value.for_cli({"out_dir": "--out"}).endswith("is a file; --out names a folder for the tokenizer files")


def test_gpt2_files_load_with_their_special_token(gpt2):
    assert gpt2.vocab_size == 50257
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert len(gpt2.ranks) == 50256


def test_save_refuses_to_overwrite_without_force(trained, tmp_path):
    tok, _ = trained
    tok.save(tmp_path / "out")
    with pytest.raises(BpecliError, match="holds a tokenizer already; use force=True") as raised:
        tok.save(tmp_path / "out")
    assert raised.value.for_cli().endswith("holds a tokenizer already; use --force to replace its files")
    tok.save(tmp_path / "out", force=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(TOKENIZER_FILES)  # no temporary folder left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(BpecliError, match=r"holds files bpecli did not write \(notes.txt\)"):
        tok.save(tmp_path / "out", force=True)
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


def test_force_leaves_a_folder_or_link_with_a_name_of_bpecli_alone(trained, tmp_path):
    """bpecli writes files only: a folder or a link at one of its names is the user's, kept whole."""
    tok, _ = trained
    tok.save(tmp_path / "out")
    (tmp_path / "out" / "vocab.json").unlink()
    (tmp_path / "out" / "vocab.json").mkdir()
    (tmp_path / "out" / "vocab.json" / "theirs.txt").write_text("mine")
    for inside in (False, True):  # replaced beside it, or file by file (the folder a shell is in)
        with pytest.raises(BpecliError, match=r"holds files bpecli did not write \(vocab.json \(a folder\)\)"):
            _save_inside(tok, tmp_path / "out") if inside else tok.save(tmp_path / "out", force=True)
        assert (tmp_path / "out" / "vocab.json" / "theirs.txt").read_text() == "mine"
    (tmp_path / "out" / "vocab.json" / "theirs.txt").unlink()
    (tmp_path / "out" / "vocab.json").rmdir()
    (tmp_path / "target").write_text("theirs")
    (tmp_path / "out" / "vocab.json").symlink_to(tmp_path / "target")
    with pytest.raises(BpecliError, match=r"vocab.json \(a link\)"):
        tok.save(tmp_path / "out", force=True)
    assert (tmp_path / "out" / "vocab.json").is_symlink() and (tmp_path / "target").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "target"]  # no generation left beside it


def _save_inside(tok, folder):
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        tok.save(".", force=True)
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("x.tiktoken", "not base64 at all!\n", "error parsing line"),
        ("x.tiktoken", "YQ== 0\nYg 1\n", r"x.tiktoken:2: error parsing line 'Yg 1'"),  # padding missing
        ("x.tiktoken", "YQ== 0\nY=Q= 1\n", r"x.tiktoken:2: error parsing line"),
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


@pytest.mark.parametrize("rank", [-1, 2**31 - 1])
def test_ids_out_of_int32_range_are_clear_errors(tmp_path, rank):
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)] + [f"YWI= {rank}"]
    (tmp_path / "x.tiktoken").write_text("\n".join(lines) + "\n")
    with pytest.raises(BpecliError, match=rf"x.tiktoken: id {rank} is out of range: bpecli's ids are 0 to 2,147,483,646"):
        Tokenizer.load(tmp_path / "x.tiktoken")


def test_a_file_inside_a_trained_folder_loads_with_the_folder_settings(tmp_path, fixtures):
    """-t DIR/vocab.json or DIR/tokenizer.tiktoken keep the folder's pattern and special tokens."""
    out = tmp_path / "tok"
    tok = train([fixtures / "corpus.en"], vocab_size=400, special_tokens=["<|doc|>"], pattern="cl100k")
    tok.save(out)
    text = "Year 2026: it's <|doc|> here"
    for name in TOKENIZER_FILES:
        loaded = Tokenizer.load(out / name)
        assert loaded.pattern == tok.pattern and loaded.special_tokens == {"<|doc|>": 399}, name
        assert loaded.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all"), name


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"normalizer": {"type": "Strip", "strip_left": True, "strip_right": True}},
         r"its normalizer \(Strip\) is one bpecli does not apply"),
        ({"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Replace"}]}},
         r"its normalizer \(Replace\)"),
        ({"post_processor": {"type": "TemplateProcessing", "single": [], "pair": [], "special_tokens": {}}},
         r"its post_processor: the template's single form should hold A once"),
        ({"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}}, r"its decoder \(WordPiece\)"),
        ({"dropout": 0.1}, "dropout=0.1"),
        ({"continuing_subword_prefix": "##"}, "continuing_subword_prefix='##'"),
        ({"added": {"single_word": True}}, "sets single_word"),
        ({"pre_tokenizer": {"type": "Whitespace"}}, r"its pre-tokenizer \(Whitespace\) is not a byte-level one"),
        ({"merges": ["Ġ Ġ", "ĠĠĠĠ"]}, r"merge 1 \('ĠĠĠĠ'\) is not a pair of tokens"),
        ({"merges": [["Ġ", "Ġ", "Ġ"]]}, r"merge 0 .* is not a pair of tokens"),
    ],
)
def test_hugging_face_parts_bpecli_does_not_apply_are_refused_by_name(trained, tmp_path, changes, message):
    with pytest.raises(BpecliError, match=message):
        Tokenizer.load(hugging_face_file(trained, tmp_path, **changes))


def test_an_unreadable_merges_file_is_a_clear_error(tmp_path, gpt2_vocab):
    (tmp_path / "vocab.json").write_bytes(gpt2_vocab.read_bytes())
    (tmp_path / "merges.txt").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(BpecliError, match="merges.txt: not UTF-8 \\(byte 0xff at offset 0\\)"):
        Tokenizer.load(tmp_path / "vocab.json")


def test_a_merges_line_without_exactly_one_space_is_named(tmp_path, gpt2_vocab, fixtures):
    """A line of two spaces next to a line of none (the same number of spaces in all) is still found."""
    lines = (fixtures / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    lines[5], lines[6] = lines[5].replace(" ", ""), lines[6] + " x"
    (tmp_path / "vocab.json").write_bytes(gpt2_vocab.read_bytes())
    (tmp_path / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(BpecliError, match=r"merges.txt:6: error parsing line"):
        Tokenizer.load(tmp_path / "vocab.json")


def test_merges_listed_out_of_the_order_of_their_ids_are_refused(tmp_path, gpt2_vocab, fixtures):
    """Hugging Face merges in the order merges.txt lists them, bpecli (as tiktoken) in the order of
    the ids they make: GPT-2's files with two merges swapped give Hugging Face other ids, so
    neither vocab.json + merges.txt nor the tokenizer.json made of them loads."""
    tokenizers = pytest.importorskip("tokenizers")
    lines = (fixtures / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    first, second = lines.index("h e"), lines.index("e r")  # "he" (id 258), later "er" (id 263)
    lines[first], lines[second] = lines[second], lines[first]
    (tmp_path / "vocab.json").write_bytes(gpt2_vocab.read_bytes())
    (tmp_path / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    theirs = tokenizers.ByteLevelBPETokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    original = tokenizers.ByteLevelBPETokenizer(str(gpt2_vocab), str(fixtures / "gpt2_merges.txt"))
    assert theirs.encode(" there").ids != original.encode(" there").ids == [612]  # the order matters to Hugging Face
    with pytest.raises(BpecliError, match=r"merges.txt: merge 4 \('i n'\) makes id 259, but merge 3 before it \('e r'\) makes id 263"):
        Tokenizer.load(tmp_path / "vocab.json")
    theirs.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(BpecliError, match=r"tokenizer.json: merge \d+ .* in the order of ids, as tiktoken does"):
        Tokenizer.load(tmp_path / "tokenizer.json")



@pytest.mark.parametrize("kept", [25_000, 0, 49_999])  # of GPT-2's 50,000
def test_merges_cut_short_are_refused_never_read_as_special_tokens(tmp_path, gpt2_vocab, fixtures, kept):
    """Tokens of vocab.json that no merge makes were taken as special tokens and matched in text:
    GPT-2's files with merges.txt cut short gave "Hell o" where Hugging Face gives "Hello"."""
    lines = (fixtures / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "vocab.json").write_bytes(gpt2_vocab.read_bytes())
    (tmp_path / "merges.txt").write_text("".join(line + "\n" for line in lines[:kept]), encoding="utf-8")
    with pytest.raises(BpecliError, match=r"vocab.json: no merge makes [\d,]+ of its tokens .* cut short"):
        Tokenizer.load(tmp_path / "vocab.json")


def test_tokens_no_merge_makes_that_no_lost_merge_explains_are_special(tmp_path, gpt2_vocab, fixtures):
    """Spelled as special tokens are, or (Falcon's >>TITLE<<) of no two tokens of lower ids; a token
    two lower ones make, only when the caller names it."""
    vocab = json.loads(gpt2_vocab.read_text(encoding="utf-8"))
    vocab = {">>TITLE<<": 0, **{token: rank + 1 for token, rank in vocab.items()}}
    vocab.update({"<pad>": 50258, "[MASK]": 50259})
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_bytes((fixtures / "gpt2_merges.txt").read_bytes())
    assert Tokenizer.load(tmp_path / "vocab.json").special_tokens == {
        ">>TITLE<<": 0, "<|endoftext|>": 50257, "<pad>": 50258, "[MASK]": 50259}
    vocab["Ġworldworld"] = 50260  # "Ġworld" and "world" make it: as a merges.txt cut short would leave it
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(BpecliError, match="no merge makes 1 of its tokens .'Ġworldworld'.*--special-ids"):
        Tokenizer.load(tmp_path / "vocab.json")
    named = {">>TITLE<<": 0, "<|endoftext|>": 50257, "Ġworldworld": 50260}
    assert Tokenizer.load(tmp_path / "vocab.json", special_tokens=named).special_tokens == named

def test_a_pattern_stored_in_a_file_is_named_as_from_that_file(trained, tmp_path):
    for name in TOKENIZER_FILES:
        (tmp_path / name).write_bytes((trained[1] / name).read_bytes())
    meta = json.loads((tmp_path / "bpecli.json").read_text())
    meta["pattern"] = "(unclosed"
    (tmp_path / "bpecli.json").write_text(json.dumps(meta))
    with pytest.raises(BpecliError, match=r"invalid regex '\(unclosed' \(from .*bpecli.json\)"):
        Tokenizer.load(tmp_path)


@pytest.mark.parametrize("pattern, written", [
    (r"\p{N}{1,3}+| ?\p{L}++|\s+", r"(?>\p{N}{1,3})| ?\p{L}++|\s+"),
    (r"(ab){1,2}+|[a-z]{3,}+|x{2}|[]a]{1}+|\x{41}{2}+|\S|\s", r"(?>(ab){1,2})|(?>[a-z]{3,})|x{2}|(?>[]a]{1})|(?>\x{41}{2})|\S|\s"),
])
def test_possessive_intervals_become_atomic_groups_for_oniguruma(pattern, written):
    from bpecli.formats.hugging_face import hugging_face_regex

    assert hugging_face_regex(pattern) == written


def test_a_second_save_into_a_folder_being_replaced_is_refused(trained, tmp_path):
    """A run replacing a folder holds a lock on the folder itself: a second one is refused."""
    import fcntl
    import os

    tok, _ = trained
    tok.save(tmp_path / "out")
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    held = os.open(tmp_path / "out", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(BpecliError, match="another bpecli is writing"):
            tok.save(tmp_path / "out", force=True)
    finally:
        os.close(held)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    (tmp_path / "out" / LEGACY_LOCK).write_text("")  # the lock file of an older bpecli is its own too
    tok.save(tmp_path / "out", force=True)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(TOKENIZER_FILES)
    with pytest.raises(BpecliError, match="holds a tokenizer already"):
        tok.save(tmp_path / "out")


# ---- hostile and odd tokenizer files: one clear line each, never a traceback ------------------

def _cli_error(path) -> str:
    """The one line `bpecli encode -t path` fails with."""
    from typer.testing import CliRunner

    from bpecli.cli import app

    result = CliRunner().invoke(app, ["encode", "-t", str(path)], input="hi")
    assert result.exit_code == 1 and not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpecli: error: "), result.output
    return lines[0]


def _byte_ranks(extra: str = "") -> str:
    return "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)) + extra


def _folder_with(trained, tmp_path, **changes):
    """A copy of the trained folder with bpecli.json changed."""
    folder = tmp_path / "tok"
    folder.mkdir()
    for name in TOKENIZER_FILES:
        (folder / name).write_bytes((trained[1] / name).read_bytes())
    meta = json.loads((folder / "bpecli.json").read_text())
    meta.update(changes)
    (folder / "bpecli.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize("ranks_file", ["/etc/passwd", "../secret.tiktoken", "sub/x.tiktoken", "..", "", 7, None])
def test_ranks_file_names_a_file_of_the_folder_only(trained, tmp_path, ranks_file):
    (tmp_path / "secret.tiktoken").write_text(_byte_ranks())
    folder = _folder_with(trained, tmp_path, ranks_file=ranks_file)
    assert "is not the name of a file in this folder" in _cli_error(folder)


def test_an_error_never_shows_the_content_of_a_file_a_ranks_file_links_to(trained, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("aws_secret_access_key AKIAEXAMPLESECRET\n")
    folder = _folder_with(trained, tmp_path)
    (folder / "tokenizer.tiktoken").unlink()
    (folder / "tokenizer.tiktoken").symlink_to(secret)
    meta = json.loads((folder / "bpecli.json").read_text())
    del meta["files"]  # as an older bpecli wrote it: no record to compare with
    (folder / "bpecli.json").write_text(json.dumps(meta))
    line = _cli_error(folder)
    assert "tokenizer.tiktoken:1: error parsing line (expected 'base64 rank')" in line and "AKIA" not in line
    merges = tmp_path / "plain"
    merges.mkdir()
    (merges / "vocab.json").write_bytes((trained[1] / "vocab.json").read_bytes())
    (merges / "merges.txt").symlink_to(secret)
    line = _cli_error(merges / "vocab.json")
    assert "merges.txt: merge 1 names a token which the vocabulary lacks" in line and "AKIA" not in line


def test_a_ranks_file_is_bounded_in_size(trained, tmp_path):
    from bpecli.folders import MAX_FILE_BYTES

    folder = _folder_with(trained, tmp_path, ranks_file="big.tiktoken")
    with open(folder / "big.tiktoken", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    assert "big.tiktoken: is 268,435,457 bytes, more than the 256 MiB" in _cli_error(folder)


@pytest.mark.parametrize("changes, message", [
    ({"format_version": True}, "format_version true is not 1"),  # Python counts true as 1
    ({"special_tokens": ["<|endoftext|>"]}, "'special_tokens' should map each special token to its id"),
    ({"special_tokens": {"<|endoftext|>": True}}, "'special_tokens' should map each special token to its id"),
    ({"special_tokens": {"": 699}}, "bpecli.json: a special token must be non-empty text"),
    ({"special_tokens": {"\ud800": 699}}, r"bpecli.json: special token '\\ud800' is not text: '\\ud800' .character 0. is a lone surrogate"),
    ({"vocab_size": 800}, "says 800 tokens, but tokenizer.tiktoken and its special tokens have 700"),
    ({"files": {"tokenizer.tiktoken": "yes"}}, "its record of tokenizer.tiktoken .in 'files'. is missing or damaged"),
    ({"files": {"tokenizer.tiktoken": {"bytes": 1, "crc32": "0"}}}, "tokenizer.tiktoken is not the file written with it"),
    ({"normalize": "nfkc"}, "'normalize' should be a list of steps"),
    ({"pattern": ["gpt2"]}, r"the pattern \['gpt2'\] .from .*bpecli.json. is not text"),
])
def test_a_damaged_bpecli_json_is_named(trained, tmp_path, changes, message):
    assert re.search(message, _cli_error(_folder_with(trained, tmp_path, **changes)))


def _nested(depth: int) -> str:
    return '{"model": {"type": "BPE", "vocab": {}, "merges": ' + "[" * depth + "]" * depth + "}}"


@pytest.mark.parametrize("name, content, message", [
    ("tokenizer.json", _nested(100_000), r"tokenizer.json: nested too deeply"),
    ("vocab.json", "[" * 100_000, r"vocab.json: nested too deeply"),
    ("tokenizer.json", '{"model": {"vocab": {"a": ' + "9" * 5000 + "}}}", r"tokenizer.json:1: a number of 5,000 digits"),
    ("vocab.json", '{\n"a": 0,\n"b": -' + "1" * 5000 + "}", r"vocab.json:3: a number of 5,000 digits"),
    ("x.tiktoken", _byte_ranks("YWI= " + "7" * 5000 + "\n"), r"x.tiktoken:257: a rank of 5,000 characters is out of range"),
])
def test_deep_nesting_and_long_numbers_are_one_line(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    if name == "vocab.json":
        (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    assert re.search(message, _cli_error(tmp_path / name))


def test_a_bpecli_json_nested_deeply_is_one_line(trained, tmp_path):
    folder = _folder_with(trained, tmp_path)
    (folder / "bpecli.json").write_text('{"format_version": 1, "pattern": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "bpecli.json: nested too deeply" in _cli_error(folder)


def _special(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / "tokenizer.json")  # no writer: a reader that waits for one would hang
        return tmp_path / "tokenizer.json"
    if kind == "loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        return tmp_path / "a"
    if kind == "folder of nothing":
        return tmp_path
    if kind == "ranks of another name":
        (tmp_path / "mine.tiktoken").write_text("YQ== 0\n")
        return tmp_path
    if kind == "bpecli.json a folder":
        (tmp_path / "bpecli.json").mkdir()
        return tmp_path
    if kind == "huge":
        from bpecli.folders import MAX_FILE_BYTES

        with open(tmp_path / "tokenizer.json", "wb") as f:
            f.truncate(MAX_FILE_BYTES + 1)
        return tmp_path / "tokenizer.json"
    return Path(kind)


@pytest.mark.parametrize("kind, message", [
    ("/dev/zero", "/dev/zero: is a device, not a file bpecli reads"),
    ("fifo", "tokenizer.json: is a FIFO, not a file bpecli reads"),
    ("loop", "a: cannot read .a loop of symbolic links."),
    ("folder of nothing", r"no tokenizer here \(expected bpecli.json, tokenizer.json, vocab.json or tokenizer.tiktoken\)$"),
    ("ranks of another name", r"or tokenizer.tiktoken\); name the ranks file itself \(\S+/mine.tiktoken\)$"),
    ("bpecli.json a folder", "bpecli.json: is a folder, not a file bpecli reads"),
    ("huge", r"tokenizer.json: is 268,435,457 bytes, more than the 256 MiB of the largest such file bpecli reads"),
])
def test_what_is_no_tokenizer_file_is_named_without_waiting_or_reading_it_all(tmp_path, kind, message):
    assert re.search(message, _cli_error(_special(tmp_path, kind)))


@pytest.mark.parametrize("content, message", [
    ("3", "not a tokenizer file .expected a JSON object, found a number."),
    ("null", "found null"),
    ('"vocab"', "found text"),
    ("\ufeff\xff{}", "not UTF-8 .byte 0xff at offset 3."),
])
def test_json_that_is_not_an_object_is_named(tmp_path, content, message):
    (tmp_path / "tokenizer.json").write_bytes(content.encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    assert re.search(message, _cli_error(tmp_path / "tokenizer.json"))


def test_a_byte_order_mark_before_json_changes_nothing(trained, tmp_path):
    text = (trained[1] / "tokenizer.json").read_text(encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text("\ufeff" + text, encoding="utf-8")
    assert Tokenizer.load(tmp_path / "tokenizer.json").ranks == trained[0].ranks


@pytest.mark.parametrize("extra, message", [
    ("YWI= 1_0\n", r"x.tiktoken:257: error parsing line 'YWI= 1_0'"),  # int() would take it as 10
    ("YWI= 300 1\n", r"x.tiktoken:257: error parsing line"),
    ("YWI= +300\n", r"x.tiktoken:257: error parsing line"),
    ("YWI= \u0663\n", r"x.tiktoken: byte 0xd9 at offset 2,\d+ is not ASCII"),  # an Arabic-Indic 3
    ("YWI= 300\nYWI= 301\n", r"x.tiktoken:258: the token of line 257 is listed again"),
    ("YWI= 255\n", r"x.tiktoken: tokens b'\\xff' and b'ab' share id 255"),
])
def test_odd_tiktoken_lines_are_named(tmp_path, extra, message):
    (tmp_path / "x.tiktoken").write_text(_byte_ranks(extra), encoding="utf-8")
    assert re.search(message, _cli_error(tmp_path / "x.tiktoken"))


def test_tiktoken_lines_ending_in_crlf_read_as_the_same_ranks(tmp_path):
    (tmp_path / "lf.tiktoken").write_text(_byte_ranks("YWI= 256\n"))
    (tmp_path / "crlf.tiktoken").write_bytes(_byte_ranks("YWI= 256\n").replace("\n", "\r\n").encode())
    assert Tokenizer.load(tmp_path / "crlf.tiktoken").ranks == Tokenizer.load(tmp_path / "lf.tiktoken").ranks


@pytest.mark.parametrize("changes, message", [
    ({"model": {"type": "BPE", "vocab": ["a"]}}, "its model's vocab is a list, not an object of token: id"),
    ({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": {"a b": 1}}}, "its model's merges is an object, not a list"),
    ({"model": {"type": ["BPE"], "vocab": {}}}, r"holds a \['BPE'\] model"),
    ({"model": None}, 'a Hugging Face tokenizer.json without its "model" object'),
    ({"added_tokens": {"<|endoftext|>": 699}}, "its added_tokens is an object, not a list"),
    ({"added_tokens": [{"content": "<|endoftext|>", "id": True}]}, "an entry of added_tokens lacks its content or id"),
    ({"added_tokens": [{"content": "<|x|>", "id": 699}, {"content": "<|x|>", "id": 700}]}, "added token '<|x|>' is listed twice"),
    ({"normalizer": ["NFC"]}, r"its normalizer holds a list where a step such as \{\"type\": \"ByteLevel\"\} belongs"),
    ({"normalizer": {"type": "Sequence", "normalizers": "NFC"}}, "its normalizer is a Sequence whose normalizers is text, not a list"),
    ({"pre_tokenizer": "ByteLevel"}, "its pre_tokenizer holds text where a step"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": "Regex x",
                                                              "behavior": "Isolated", "invert": False},
                                                             {"type": "ByteLevel", "use_regex": False}]}},
     "its Split pre-tokenizer is not a regex"),
    ({"decoder": 5}, "its decoder holds a number where a step"),
    ({"post_processor": {"type": "Sequence", "processors": [None]}}, "its post_processor holds null where a step"),
])
def test_odd_types_in_a_tokenizer_json_are_named(trained, tmp_path, changes, message):
    assert re.search(message, _cli_error(hugging_face_file(trained, tmp_path, **changes)))


@pytest.mark.parametrize("where, message", [
    (0, r"merge 1 \('Ġ t'\) names 'Ġ', which the vocabulary lacks"),  # a part
    (1, r"merge 2 \('Ġ a'\) names 'Ġa', which the vocabulary lacks"),  # what it makes
])
def test_merges_naming_tokens_the_vocabulary_lacks_are_refused(tmp_path, gpt2_vocab, fixtures, where, message):
    """Hugging Face refuses them too (and panics when the token made is missing): the vocabulary
    and the merges are of two tokenizers."""
    vocab = json.loads(gpt2_vocab.read_text(encoding="utf-8"))
    del vocab[["Ġ", "Ġa"][where]]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_bytes((fixtures / "gpt2_merges.txt").read_bytes())
    assert re.search(message, _cli_error(tmp_path / "vocab.json"))


@pytest.mark.parametrize("change, message", [
    ({"Ġt": True}, r"vocab.json: the id of 'Ġt' is true, not a whole number"),  # Python counts true as 1
    ({"Ġt": 1.0}, r"the id of 'Ġt' is 1.0, not a whole number"),
    ({"Ġa": 256}, r"tokens b' t' and b' a' share id 256; each token has an id of its own"),
])
def test_odd_ids_in_a_vocab_json_are_named(tmp_path, gpt2_vocab, fixtures, change, message):
    vocab = json.loads(gpt2_vocab.read_text(encoding="utf-8"))
    vocab.update(change)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_bytes((fixtures / "gpt2_merges.txt").read_bytes())
    assert re.search(message, _cli_error(tmp_path / "vocab.json"))
