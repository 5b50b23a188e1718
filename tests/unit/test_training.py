"""The merge loop: a hand-checkable golden example, the CS336 reference, and a naive twin."""

from collections import Counter
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli import train, train_bpe
from bpecli.parallel import threads as threads_module
from bpecli.training import merges as merges_module, pairs as pairs_module, words as words_module
from bpecli.training.pairs import _descending, tie_break_key


def naive_train_bpe(counts: dict[str, int], n_merges: int) -> list[tuple[bytes, bytes]]:
    """The textbook loop: recount every pair every merge; ties to the greatest pair of bytes."""
    words = {tuple(bytes([b]) for b in w.encode()): n for w, n in counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        words = apply_merge(words, best)
    return merges


def apply_merge(words: dict[tuple, int], best: tuple[bytes, bytes]) -> dict[tuple, int]:
    """Every word with the pair best merged, left to right."""
    merged: dict[tuple, int] = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if word[i : i + 2] == best:
                out.append(best[0] + best[1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        merged[tuple(out)] = merged.get(tuple(out), 0) + n
    return merged


def test_golden_example_by_hand():
    merges = train_bpe({"aaabdaaabac": 1}, vocab_size=259)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]


def test_tie_break_prefers_the_greatest_pair_of_byte_strings():
    assert tie_break_key(b"b", b"a") < tie_break_key(b"a", b"z")
    assert tie_break_key(b"ab", b"c") < tie_break_key(b"a", b"bc")  # b"ab" > b"a"
    assert tie_break_key(b"a", b"bc") < tie_break_key(b"a", b"b")
    # the merge loop makes a new token's key from its parts' keys
    for left, right in [(b"a", b"b"), (b"ab", b"\xff\x00"), (b"\x00", b"")]:
        assert _descending(left)[:-2] + _descending(right) == _descending(left + right)
    # Equal counts: the greater pair wins.
    assert train_bpe({"ab": 1, "cd": 1}, vocab_size=257) == [(b"c", b"d")]


@pytest.fixture(params=["numpy", "python"])
def merge_steps(request, monkeypatch):
    """Every merge as numpy calls, or every merge as Python steps (words.FEW picks per merge)."""
    monkeypatch.setattr(words_module, "FEW", 0 if request.param == "numpy" else 1 << 62)


def test_fast_trainer_matches_the_naive_one(merge_steps):
    counts = {
        "low": 5, " lower": 2, " newest": 6, " widest": 3, "aaaa": 4, " aaa": 2, "abab": 3, "ababab": 1,
        " ünïcödé": 2, " 日本語": 3, "  ": 7, "!!!!": 2,
    }
    assert train_bpe(counts, vocab_size=256 + 40) == naive_train_bpe(counts, 40)


def test_id_layout_bytes_then_merges_then_specials(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the cat<|endoftext|>the hat<|endoftext|>the mat", encoding="utf-8")
    tok = train([text], vocab_size=262, special_tokens=["<|endoftext|>", "<pad>"])
    assert all(tok.ranks[bytes([b])] == b for b in range(256))
    assert sorted(tok.ranks.values())[256:] == [256, 257, 258, 259]
    assert tok.special_tokens == {"<|endoftext|>": 260, "<pad>": 261}
    assert len(tok.merges) == 4


def test_merges_never_cross_a_special_token(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("ab<|endoftext|>ab<|endoftext|>ab", encoding="utf-8")
    tok = train([text], vocab_size=300, special_tokens=["<|endoftext|>"])
    assert tok.merges == [(b"a", b"b")]


def test_worker_count_does_not_change_the_result(fixtures, tmp_path):
    one = train([fixtures / "tinystories_sample.txt", fixtures / "corpus.en"], vocab_size=400,
                special_tokens=["<|endoftext|>"], workers=1)
    two = train([fixtures / "tinystories_sample.txt", fixtures / "corpus.en"], vocab_size=400,
                special_tokens=["<|endoftext|>"], workers=2)
    one.save(tmp_path / "one")
    two.save(tmp_path / "two")
    for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer.tiktoken", "bpecli.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(st.sampled_from("aab c"), min_size=1, max_size=9), st.integers(1, 5), max_size=12),
       st.integers(1, 30))
def test_fast_trainer_matches_the_naive_one_on_any_small_corpus(counts, n_merges):
    """Repeated letters make overlapping pairs ("aaa"), the case the merge step must get right;
    both ways of merging (numpy calls, Python steps) are run, the first with the byte pairs
    numbered in blocks of 5 positions, which cut through words, and with every merge a numpy
    pass, which takes the merges known to come next with it (side by side ones among them)."""
    naive = naive_train_bpe(counts, n_merges)
    for few, block in ((0, 5), (1 << 62, words_module.BYTE_PAIR_BLOCK)):
        with patch.object(words_module, "FEW", few), patch.object(words_module, "BYTE_PAIR_BLOCK", block):
            assert train_bpe(counts, vocab_size=256 + n_merges) == naive


def test_training_without_special_tokens_counts_in_parallel_with_the_same_merges(tmp_path, fixtures):
    from bpecli.parallel import available_cpus

    path = tmp_path / "t.txt"
    path.write_text((fixtures / "corpus.en").read_text(encoding="utf-8"), encoding="utf-8")
    one = train([path], vocab_size=400, workers=1)
    two = train([path], vocab_size=400, workers=2)
    assert one.merges == two.merges
    if available_cpus() < 2:
        pytest.skip("one CPU: the pool is one process")


def naive_pair_counts(counts: dict[str, int], merges: list[tuple[bytes, bytes]]) -> Counter:
    """The pair counts after applying merges, recounted from scratch."""
    words = {tuple(bytes([b]) for b in w.encode()): n for w, n in counts.items()}
    for best in merges:
        words = apply_merge(words, best)
    pairs: Counter = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            pairs[pair] += n
    return pairs


@pytest.mark.parametrize("min_frequency", [2, 3, 5, 8])
def test_min_frequency_stops_where_the_best_pair_gets_rarer(min_frequency):
    counts = {"low": 5, " lower": 2, " newest": 6, " widest": 3, "aaaa": 4, "abab": 3, " 日本語": 1, "xyz": 1}
    every = train_bpe(counts, vocab_size=400)
    stopped = train_bpe(counts, vocab_size=400, min_frequency=min_frequency)
    assert stopped == every[: len(stopped)] and len(stopped) < len(every)
    # every merge made was at least that frequent, and the best pair left is rarer
    for done in range(len(stopped)):
        assert naive_pair_counts(counts, stopped[:done])[stopped[done]] >= min_frequency
    assert max(naive_pair_counts(counts, stopped).values()) < min_frequency


def test_the_best_pair_is_found_across_blocks_and_ties_keep_their_order():
    """Pairs of one count in many blocks of the blocked maximum: the greatest pair of bytes goes
    first; a pair that falls leaves the ties; a pair made later at that count joins them."""
    import numpy as np

    from bpecli.training.pairs import BLOCK, _Pairs

    pairs = _Pairs()
    token_bytes = pairs.token_bytes
    n = 3 * BLOCK
    left, right = np.arange(n) % 256, np.arange(n) // 256
    ids = pairs.add(left, right, np.full(n, 7)) + np.arange(n)
    by_key = sorted(ids.tolist(), key=lambda p: (token_bytes[left[p - 1]], token_bytes[right[p - 1]]))
    assert pairs.best() == by_key[-1]
    pairs.count[by_key[-1]] = 0
    pairs.count[by_key[-2]] -= 1  # falls to 6
    assert pairs.best() == by_key[-3]
    late = pairs.add(np.array([255]), np.array([255]), np.array([7]))  # (b"\xff", b"\xff") beats all
    assert pairs.best() == late
    pairs.count[pairs.count > 0] = 0
    assert pairs.best() is None


def test_fast_trainer_matches_the_naive_one_over_hundreds_of_merges(fixtures, merge_steps):
    words = Counter(fixtures.joinpath("corpus.en").read_text(encoding="utf-8")[:20000].split(" "))
    counts = {" " + w: n for w, n in words.items() if w}
    assert train_bpe(counts, vocab_size=256 + 300) == naive_train_bpe(counts, 300)


def test_merges_known_to_come_next_share_a_pass_and_stay_those_made_one_at_a_time(fixtures, monkeypatch):
    """While the best pair is unmerged, the pairs that will merge after it may be known; they merge
    in the same numpy pass (merges._merges_from). On real text many merges do, and the merges are
    those made one at a time."""
    words = Counter(fixtures.joinpath("corpus.en").read_text(encoding="utf-8").split(" "))
    counts = {" " + w: n for w, n in words.items() if w}
    passes = []
    merge = words_module._Words.merge

    def counted(self, batch, pairs):
        passes.append(len(batch))
        merge(self, batch, pairs)

    monkeypatch.setattr(words_module._Words, "merge", counted)
    together = train_bpe(counts, vocab_size=256 + 1000)
    assert sum(n for n in passes if n > 1) > len(together) // 4
    monkeypatch.setattr(merges_module, "_merges_from", lambda best, *_: [best])
    assert train_bpe(counts, vocab_size=256 + 1000) == together


def test_a_pair_the_pass_would_make_at_the_next_count_ends_the_pass(monkeypatch):
    """Once (a, b) merges, (z, ab) counts as much as (z, aa), the next best pair before it, and
    goes first (the greater pair of bytes): the pass that merges (a, b) must stop before (z, aa),
    as (z, a), the pair (z, ab) comes from, has that count too (pairs._Pairs.none_beside)."""
    counts = {"aa": 100, "zab": 5, "ab": 5, "zaa": 5}
    monkeypatch.setattr(words_module, "FEW", 0)  # every merge a numpy pass, which may take others with it
    expected = [(b"a", b"a"), (b"a", b"b"), (b"z", b"ab"), (b"z", b"aa")]
    assert naive_train_bpe(counts, 4) == expected
    assert train_bpe(counts, vocab_size=256 + 4) == expected


def test_merges_past_32767_tokens_key_their_pairs_in_32_bits(monkeypatch, fixtures, merge_steps):
    """New pairs are grouped by 16-bit keys while the token ids allow it; unused tokens in front
    push the ids of the merges past that, as a vocabulary of 33,000 would."""
    padded_init = pairs_module._Pairs.__init__

    def with_unused_tokens(self, *args):
        padded_init(self, *args)
        for i in range(40_000):
            token = b"\xff" * 20 + i.to_bytes(4, "big")  # never in a word
            self.token_bytes.append(token)
            self.descending.append(pairs_module._descending(token))

    monkeypatch.setattr(pairs_module._Pairs, "__init__", with_unused_tokens)
    words = Counter(fixtures.joinpath("corpus.en").read_text(encoding="utf-8")[:5000].split(" "))
    counts = {" " + w: n for w, n in words.items() if w}
    assert train_bpe(counts, vocab_size=256 + 100) == naive_train_bpe(counts, 100)


def test_without_special_tokens_the_literal_endoftext_is_text_to_train_on(tmp_path):
    """As Hugging Face's BpeTrainer and the CS336 reference count it: only the special tokens given
    cut the corpus."""
    import regex

    from bpecli.pretokenize import PATTERNS

    text = "hello<|endoftext|>world <|endoftext|> and more<|endoftext|>text " * 50
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text)
    counts = Counter(regex.findall(PATTERNS["gpt2"], text))
    assert train([str(corpus)], vocab_size=256 + 30, special_tokens=[]).merges == naive_train_bpe(counts, 30)


def test_two_threads_share_the_large_steps_and_merge_as_one(fixtures, monkeypatch):
    """train_bpe(num_threads=2) cuts each large gather and scatter of the merge loop between two
    threads; with every step cut, however small, the merges are still the textbook loop's."""
    monkeypatch.setattr(threads_module, "LEAST_SLICE", 1)
    monkeypatch.setattr(threads_module, "available_cpus", lambda: 2)
    shared = []
    in_slices = threads_module.Threads.in_slices

    def counted(self, n, work):
        shared.append(self.count > 1 and n >= 2)
        in_slices(self, n, work)

    monkeypatch.setattr(threads_module.Threads, "in_slices", counted)
    words = Counter(fixtures.joinpath("corpus.en").read_text(encoding="utf-8")[:20000].split(" "))
    counts = {" " + w: n for w, n in words.items() if w}
    assert train_bpe(counts, vocab_size=256 + 300, num_threads=2) == naive_train_bpe(counts, 300)
    assert sum(shared) > 100
