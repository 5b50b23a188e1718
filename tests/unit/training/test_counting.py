"""Pre-token counts as arrays: counted by workers, added up in one table, equal to the regex's counts."""

from collections import Counter

import numpy as np
import pytest

from bpecli.training import counting
from bpecli.inputs import parts as input_parts
from bpecli.training.counting import PieceCounts, Total, count_pretokens
from bpecli.pretokenize import PATTERNS, compiled
from bpecli.pretokenize.gpt2 import gpt2_piece_starts

PIECES = [b"a", b" b", b"", b"x" * 15, b"y" * 16, "字字".encode(), b"\x00\xff" * 20]


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_counting_pretokens_equals_the_regex(name, tmp_path, kernel_docs_sample, monkeypatch):
    """Training counts pre-tokens with the vectorised pre-tokenizer where there is one."""
    path = tmp_path / "corpus.txt"
    text = kernel_docs_sample[:500_000] + " it'S  \r\n\t(x) 12345 字字 HTMLParser\n/x" + " " * 40 + "y" * 70
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(input_parts, "PART_BYTES", 1 << 16)  # many parts
    parts = input_parts.document_parts([(str(path), "corpus.txt")], separators=["<|endoftext|>"])
    counts = count_pretokens(parts, pattern=PATTERNS[name], separators=["<|endoftext|>"], workers=2)
    expected = Counter(p.encode() for d in text.split("<|endoftext|>") for p in compiled(PATTERNS[name]).findall(d))
    assert counts.to_dict() == expected


def test_a_part_counts_the_same_with_the_pieces_of_earlier_parts_kept(kernel_docs_sample, monkeypatch):
    """A worker numbers pieces once for all its parts (counting.Numbered); each part's counts are
    its own, and past Numbered.LIMIT pieces the worker starts afresh."""
    first, second = ([d.encode() for d in kernel_docs_sample[a : a + 200_000].split("<|endoftext|>")] for a in (0, 200_000))
    numbered = counting.Numbered()
    counting.count_pieces(first, gpt2_piece_starts, numbered)
    kept = numbered.size
    counts = counting.count_pieces(second, gpt2_piece_starts, numbered)
    assert counts.to_dict() == counting.count_pieces(second, gpt2_piece_starts).to_dict()
    assert kept < numbered.size < kept + len(counts)  # some of the second part's pieces were known
    monkeypatch.setattr(counting.Numbered, "LIMIT", 100)
    counter = counting._setup(PATTERNS["gpt2"], ["<|endoftext|>"], "text", "strict", ())
    before = counter.numbered
    counting.count_pieces(first, gpt2_piece_starts, before)
    assert counter.numbered is not before and counter.numbered.size == 0


def test_a_custom_pattern_counts_through_the_regex(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("ab ab  cd\nab", encoding="utf-8")
    parts = input_parts.document_parts([(str(path), "corpus.txt")], separators=[])
    counts = count_pretokens(parts, pattern=r"\s+|\S+", separators=[], workers=1)
    assert counts.to_dict() == {b"ab": 3, b" ": 1, b"  ": 1, b"cd": 1, b"\n": 1}


def test_counts_round_trip_through_a_mapping_long_pieces_included():
    mapping = {p: i + 1 for i, p in enumerate(PIECES) if p}
    counts = PieceCounts.of_mapping(mapping)
    assert counts.to_dict() == mapping
    assert len(counts) == len(mapping) and counts.total() == sum(mapping.values())
    assert len(counts.long_counts) == 2  # the pieces over 15 bytes travel as one buffer


def test_the_total_adds_equal_pieces_and_keeps_the_rest():
    total = Total()
    total.add(PieceCounts.of_mapping({b"a": 1, b"y" * 16: 2, b"b": 5}))
    total.add(PieceCounts.of_mapping({b"a": 3, b"y" * 16: 4, b"c": 1}))
    assert total.result().to_dict() == {b"a": 4, b"b": 5, b"c": 1, b"y" * 16: 6}


def test_the_total_equals_a_counter_over_many_parts():
    rng = np.random.default_rng(0)
    words = [bytes(rng.integers(97, 100, rng.integers(1, 20))) for _ in range(3000)]
    expected: Counter = Counter()
    total = Total()
    for start in range(0, 3000, 170):
        chunk = Counter(words[start : start + 400])
        expected.update(chunk)
        total.add(PieceCounts.of_mapping(chunk))
    assert total.result().to_dict() == expected


def test_counting_stays_exact_when_the_hash_collides(monkeypatch):
    """Pieces are grouped by a 64-bit hash; if two pieces share one, exact keys settle it. Force
    that with a hash that is the same for everything."""
    data = b"-------  -------- x'll 12 abcdefghijklmnopq abcdefghijklmnopq --------"
    bounds = gpt2_piece_starts(data)
    pieces = [data[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    monkeypatch.setattr(counting, "piece_hash", lambda low, high: low & 0)
    from bpecli.bulk import packing

    monkeypatch.setattr(packing, "piece_hash", lambda low, high: low & 0)
    once = PieceCounts.of_spans(data, bounds)
    assert once.to_dict() == Counter(pieces)
    total = Total()
    total.add(once)
    total.add(once)
    assert total.result().to_dict() == {p: 2 * n for p, n in Counter(pieces).items()}


def test_training_through_the_regex_gives_the_vectorised_merges(tmp_path, kernel_docs_sample):
    """A custom pattern that finds the gpt2 pieces (gpt2's, in a group) counts with the regex,
    one document at a time, and trains the preset's merges."""
    from bpecli.training import train

    path = tmp_path / "corpus.txt"
    path.write_text(kernel_docs_sample[:300_000], encoding="utf-8")
    custom = "(?:" + PATTERNS["gpt2"] + ")"
    assert counting.vectorised_splitter(custom) is None
    by_regex = train([path], vocab_size=600, special_tokens=["<|endoftext|>"], pattern=custom, workers=2)
    assert by_regex.merges == train([path], vocab_size=600, special_tokens=["<|endoftext|>"], workers=2).merges


def test_counting_holds_per_distinct_state_not_a_number_per_occurrence(kernel_docs_sample, monkeypatch):
    """A worker's memory while it counts a part is bounded by the part's distinct pieces, never by
    its occurrences: eight copies of a text take about the memory of two (numpy's arrays are traced)."""
    import tracemalloc

    monkeypatch.setattr(counting, "FLUSH_PIECES", 1 << 16)
    documents = [d.encode() for d in kernel_docs_sample[:2_000_000].split("<|endoftext|>")]

    def peak(copies: int) -> int:
        numbered = counting.Numbered()
        counting.count_pieces(documents, gpt2_piece_starts, numbered)  # every distinct piece numbered first
        tracemalloc.start()
        counts = counting.count_pieces(documents * copies, gpt2_piece_starts, numbered)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert counts.total() == copies * counting.count_pieces(documents, gpt2_piece_starts).total()
        return top

    two, eight = peak(2), peak(8)  # (one copy's peak is lower: its last batch is smaller)
    assert eight - two < 2_000_000, (two, eight)  # holding a number per piece, it grew by some 40 MB
