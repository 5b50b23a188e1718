"""A long document with no newline to cut at (one minified JSONL line of text) is cut between a
letter and a space, where every preset pattern ends a piece: its ids are tiktoken's, and train,
encode --out and plain encode of a 20 MB such line stay within the memory the README states."""

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
import regex

from bpecli.pretokenize import PATTERNS, safe_blocks

LINE = "Hello world, it's 2026: naïve cafés -- don't   stop (x+y)/2 THE End's DONE'S  \t tabs ok "


@pytest.fixture(scope="module")
def line(tmp_path_factory):
    """One JSONL line of 21 MB of "hello world " with no newline in it."""
    path = tmp_path_factory.mktemp("line") / "line.jsonl"
    path.write_text(json.dumps({"text": "hello world " * 1_750_000}) + "\n")
    return path


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_a_line_cut_at_word_cuts_splits_into_the_pieces_of_the_whole(name):
    text = LINE * 200
    blocks = safe_blocks(text, 1000)
    assert len(blocks) > 10 and "".join(blocks) == text
    pattern = regex.compile(PATTERNS[name])
    assert [piece for block in blocks for piece in pattern.findall(block)] == pattern.findall(text)
    data = text.encode()
    assert b"".join(safe_blocks(data, 1000)) == data and len(safe_blocks(data, 1000)) > 10


def test_a_long_line_encodes_in_blocks_to_tiktokens_ids(gpt2, tiktoken_gpt2):
    text = LINE * 100_000  # 8.5 MB with no newline: past the 4 MiB blocks of the bulk engine
    ids, _ = gpt2.encode_documents([text.encode()])
    assert ids.tolist() == tiktoken_gpt2.encode_ordinary(text)
    assert gpt2.encode(text) == tiktoken_gpt2.encode_ordinary(text)


# letters (ASCII and not), marks, digits, apostrophes, ASCII punctuation, a few spaces and others
_PIECES = st.sampled_from(["a", "Z", "é", "ſ", "\u0301", "ß", "7", "'", "'s", "'LL", ".", "/", "-", "_", "`", "(", "!", "~",
                           "\"", "#", " ", "\t", "字", "😀", "Ⅻ", "\n", "\nb", "\u2028", "\x85", "\xa0", "\r\n"])


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@settings(max_examples=150, deadline=None)
@given(text=st.lists(_PIECES, min_size=1, max_size=400).map("".join), size=st.integers(1, 40))
@example(text="ab'sc" * 50, size=4)  # o200k's letters take 's: no cut before an apostrophe
@example(text="ab\u2028\ncd" * 20, size=3)  # U+2028's last byte is no space to a bytes regex
def test_text_without_spaces_cut_at_word_cuts_splits_into_the_pieces_of_the_whole(name, text, size):
    """Text with few or no spaces is cut after a letter before punctuation too; text with
    newlines after a newline, but not after one that follows a space."""
    pattern = regex.compile(PATTERNS[name])
    for whole in (text, text.encode()):
        blocks = safe_blocks(whole, size)
        assert (b"" if isinstance(whole, bytes) else "").join(blocks) == whole
        pieces = [p for block in blocks for p in (pattern.findall(block.decode()) if isinstance(block, bytes) else pattern.findall(block))]
        assert pieces == pattern.findall(text)


def test_text_without_spaces_is_cut_into_blocks():
    text = "Thisdirectoryattemptstodocument,andtherelativestabilityoftheseinterfaces.Duetothe" * 1000
    assert len(safe_blocks(text, 1000)) > 50 and len(safe_blocks(text.encode(), 1000)) > 50
