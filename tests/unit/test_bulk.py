"""The bulk engine (bpecli.bulk): numpy BPE rounds against BPE one merge at a time, the piece and
pair tables, packing, and the cuts it makes; its ids against tiktoken's."""

import itertools
import re

import numpy as np
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from bpecli import Tokenizer
from bpecli.bulk import engine
from bpecli.bulk.engine import Learned
from bpecli.bulk.merge import bpe_long, bpe_pieces
from bpecli.bulk.packing import group
from bpecli.bulk.tables import NO_RANK
from bpecli.encoding.reference import merge_parts


def each_piece_ids(tables, pieces):
    """bpe_pieces' ids, piece by piece."""
    ids, counts = bpe_pieces(tables, pieces)
    return [tuple(part.tolist()) for part in np.split(ids, np.cumsum(counts)[:-1])]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=70) | st.text(min_size=1, max_size=20).map(str.encode), min_size=1, max_size=20))
def test_batch_bpe_equals_one_piece_at_a_time(gpt2, pieces):
    """bpe_pieces merges every piece in rounds with numpy; merge_parts one piece in Python."""
    expected = [tuple(gpt2.ranks[part] for part in merge_parts(piece, gpt2.ranks)) for piece in pieces]
    assert each_piece_ids(gpt2._text.tables, pieces) == expected


def test_the_piece_table_starting_afresh_changes_no_id(gpt2, tiktoken_gpt2, kernel_docs_sample, monkeypatch):
    monkeypatch.setattr(Learned, "LIMIT", 1000)  # far fewer pieces than the text has
    fresh = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    tables = []
    for start in (0, 130_000, 260_000):  # each past the limit: the next starts afresh
        batch = kernel_docs_sample[start : start + 130_000].split("<|endoftext|>")
        ids, _ = fresh.encode_documents(batch)
        assert ids.tolist() == [i for d in tiktoken_gpt2.encode_ordinary_batch(batch) for i in d]
        tables.append(fresh._text.bulk.learned.table)
    assert tables[0].count > 1000 and tables[1] is not tables[0] and tables[2] is not tables[1]


def test_the_long_pieces_starting_afresh_change_no_id(gpt2, tiktoken_gpt2, kernel_docs_sample, monkeypatch):
    """Pieces over 15 bytes (runs of letters with the spaces taken out) kept by their bytes, their
    ids in one array: past a few hundred ids both start afresh, and the pieces seen before and
    after, found or not, keep their ids."""
    monkeypatch.setattr(engine, "LONG_IDS_LIMIT", 300)
    fresh = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    squeezed = "".join(kernel_docs_sample[:200_000].split()).split("<|endoftext|>")
    learned = []
    for batch in (squeezed[:2], squeezed[1:4], squeezed[3:]):
        ids, _ = fresh.encode_documents(batch)
        assert ids.tolist() == [i for d in tiktoken_gpt2.encode_ordinary_batch(batch) for i in d]
        learned.append(fresh._text.bulk.learned.long_pieces)
    assert len(learned[0]) > 0 and learned[1] is not learned[0] and learned[2] is not learned[1]


def test_the_piece_table_growing_while_it_has_pieces_changes_no_id(gpt2, tiktoken_gpt2, kernel_docs_sample):
    """The second batch finds some pieces in the table and adds so many others that it grows."""
    fresh = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    documents = kernel_docs_sample[:300_000].split("<|endoftext|>")
    made_up = " ".join("".join(letters) for letters in itertools.islice(itertools.product("etaoinshrd", repeat=5), 40_000))
    for batch in (documents[:3], documents[3:] + [made_up]):
        size = fresh._text.bulk.learned.table.count
        ids, _ = fresh.encode_documents(batch)
        assert ids.tolist() == [i for d in tiktoken_gpt2.encode_ordinary_batch(batch) for i in d]
    assert size > 0 and len(fresh._text.bulk.learned.table.high) > 1 << 16  # it had pieces, and it grew


def test_the_pair_table_holds_every_cut_of_every_token(gpt2):
    """Built with numpy (long tokens in Python); the same as asking the ranks of every cut."""
    ranks, table = gpt2.ranks, gpt2._text.tables.pair_table
    expected = {}
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = ranks.get(token[:cut]), ranks.get(token[cut:])
            if left is not None and right is not None:
                expected[left * table.base + right] = rank
    keys = np.fromiter(expected, dtype=np.int64)
    assert table.lookup(keys).tolist() == list(expected.values())
    assert len(table.sorted_keys) == len(expected) + 1  # every key once, and the one larger than any
    others = np.setdiff1d(np.arange(0, table.base * table.base, 7919), keys)  # pairs that join to no token
    assert len(others) > 100_000 and (table.lookup(others) == NO_RANK).all()
    assert (table.lookup(np.full(3, -1)) == NO_RANK).all()  # what bpe_rounds asks beside a hole


def test_clear_cache_makes_the_next_encode_cold(gpt2):
    tok = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    texts = ["hello world " * 10, "internationalization"]  # a short piece for the table, a long one for the dict
    first = tok.encode_documents(texts)[0].tolist()
    assert tok._text.bulk.learned.table.count > 0 and tok._text.bulk.learned.long_pieces
    tok.clear_cache()
    seeded = tok._text.bulk.seed[1].count  # the tokens of up to 15 bytes, there from the start
    assert tok._text.bulk.learned.table.count == seeded and not tok._text.bulk.learned.long_pieces
    assert tok.encode_documents(texts)[0].tolist() == first


def test_pieces_that_are_tokens_need_no_bpe_from_the_first_encode(gpt2, monkeypatch):
    """Each thread's table of pieces starts with the vocabulary's tokens of up to 15 bytes: a text
    of whole-token pieces is encoded without BPE, cold."""
    from bpecli.bulk import engine

    tok = Tokenizer(ranks=gpt2.ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    text = " hello world, the internationalization of tokenizers" * 3
    expected = gpt2.encode(text)
    monkeypatch.setattr(engine, "bpe_packed", lambda *args: pytest.fail("BPE of a piece that is a token"))
    assert tok.encode_documents([" hello world, the international"])[0].tolist() == gpt2.encode(" hello world, the international")
    monkeypatch.undo()
    assert tok.encode_documents([text])[0].tolist() == expected


def _tokens_across_characters(tok) -> list[str]:
    """Tokens that hold a non-ASCII character and another (GPT-2's ドラゴン, ' Pokémon', 'ón')."""
    texts = []
    for token in tok.ranks:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(text) >= 2 and any(ord(c) > 127 for c in text):
            texts.append(text)
    return texts


def test_cuts_where_no_token_spans_change_no_id(gpt2, tiktoken_gpt2):
    """encode_documents cuts pieces where no token can hold the bytes on either side; runs of
    CJK and accented letters around tokens that do span characters still get tiktoken's ids."""
    _cuts_change_no_id(gpt2, tiktoken_gpt2)


def test_cuts_change_no_id_with_cl100k_base(cl100k_file):
    """The same with cl100k_base, whose tokens hold many runs of CJK characters and parts of them:
    a cut needs the two bytes beside it to be no token, and no three-byte run with the byte
    before or after them to be inside one."""
    tiktoken = pytest.importorskip("tiktoken")
    ours = Tokenizer.load(cl100k_file)
    _cuts_change_no_id(ours, tiktoken.Encoding("cl100k_base", pat_str=ours.pattern, mergeable_ranks=ours.ranks, special_tokens={}))


def _cuts_change_no_id(ours, theirs):
    fragments = _tokens_across_characters(ours) + list("日本語のテキストと中文文本系统管理员éñü한국어") + ["CPU", " the", "s", "'"]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(st.sampled_from(fragments), max_size=30).map("".join), min_size=1, max_size=8))
    def check(documents):
        ids, ends = ours.encode_documents(documents)
        expected = theirs.encode_ordinary_batch(documents)
        assert ids.tolist() == [i for d in expected for i in d]
        assert ends.tolist() == list(itertools.accumulate(map(len, expected)))

    check()


_LONG_PARTS = st.sampled_from(["a", "aa", "b", "ab", "the", "re", "ing", " ", "é", "中", "!", "\n", "0", "ll", "ation"])


def test_rounds_of_thousands_of_pieces_of_every_size_equal_one_merge_at_a_time(gpt2, kernel_docs_sample):
    """Text without spaces gives letter runs of 2 to hundreds of bytes: tables of many widths,
    whose rows finish at many different rounds."""
    words = sorted(set(re.findall(r"[A-Za-z]+", "".join(kernel_docs_sample[:300_000].split()))))
    pieces = [w.encode() for w in words if len(w) > 1][:3000]
    assert max(map(len, pieces)) > 100
    expected = [tuple(gpt2.ranks[part] for part in merge_parts(piece, gpt2.ranks)) for piece in pieces]
    assert each_piece_ids(gpt2._text.tables, pieces) == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_LONG_PARTS, min_size=1, max_size=300).map("".join).map(str.encode), min_size=1, max_size=6))
def test_long_piece_rounds_equal_one_merge_at_a_time(gpt2, pieces):
    """bpe_long merges all the pairs of a rank at once, but for those near a merge that makes a
    lower pair; the result must be BPE's, one merge at a time."""
    sizes = np.array([len(p) for p in pieces])
    ids, counts = bpe_long(gpt2._text.tables, np.frombuffer(b"".join(pieces), dtype=np.uint8), np.cumsum(sizes) - sizes, sizes)
    expected = [[gpt2.ranks[part] for part in merge_parts(piece, gpt2.ranks)] for piece in pieces]
    assert ids.tolist() == [i for e in expected for i in e] and counts.tolist() == [len(e) for e in expected]



def test_runs_of_one_byte_merge_in_the_linked_list_as_one_merge_at_a_time(gpt2):
    """Runs of one byte past RUN_PIECE go to bpe_long (which halves a run a round) beside the
    other pieces: the ids are BPE's, piece by piece."""
    pieces = [ch * k for ch in (b"=", b"a", b" ", b"\xe2") for k in (2, 255, 256, 257, 300, 1000, 1024)] + [b"ab" * 200]
    expected = [tuple(gpt2.ranks[part] for part in merge_parts(piece, gpt2.ranks)) for piece in pieces]
    assert each_piece_ids(gpt2._text.tables, pieces) == expected


def test_long_piece_rounds_keep_the_pairs_that_wait_behind_a_lower_merge():
    """In "aa aa aa aa aa", (aa, aa) merges at 0 and 4 only (a run of overlapping pairs), and the
    first makes (aaaa, aa), a lower pair, so 4 waits: the pair at 6, left out as overlapping 4,
    waits too, and merges once the lower pairs have (BPE: [aaaaaa, aaaa], not [aaaaaaaa, aa])."""
    ranks = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"aaa": 257, b"aaaaa": 262, b"aaaaaa": 263, b"aaaa": 264,
                                                  b"aaaaaaa": 265, b"aaaaaaaa": 266}
    piece = b"h" * 1100 + b"a" * 10  # longer than ROUNDS_PIECE: bpe_long
    ids, _ = bpe_long(Tokenizer(ranks=ranks, pattern="gpt2")._text.tables, np.frombuffer(piece, dtype=np.uint8),
                      np.zeros(1, dtype=np.int64), np.array([len(piece)]))
    assert ids.tolist()[-2:] == [263, 264] == [ranks[p] for p in merge_parts(piece, ranks)][-2:]


def test_rounds_stop_merging_a_piece_where_a_merge_makes_a_lower_pair():
    """Vocabularies where "aba" (or "bab") ranks below "ab": in "abab", merging the first "ab"
    makes (ab, a), which BPE merges next, so the second "ab" never merges ([aba, b], not [ab, ab]);
    in "babab", (b, ab) and then (bab, a)."""
    pieces = [bytes(p) for n in range(3, 9) for p in itertools.product(b"ab", repeat=n)]  # numpy rounds, not Python
    for extra, piece, parts in (({b"aba": 256, b"ab": 257}, b"abab", [b"aba", b"b"]),
                                ({b"bab": 256, b"baba": 257, b"ab": 258}, b"babab", [b"baba", b"b"])):
        ranks = {bytes([b]): b for b in range(256)} | extra
        assert merge_parts(piece, ranks) == parts
        expected = [tuple(ranks[part] for part in merge_parts(p, ranks)) for p in pieces]
        assert each_piece_ids(Tokenizer(ranks=ranks, pattern="gpt2")._text.tables, pieces) == expected


def test_group_puts_equal_values_together_even_when_their_slots_collide():
    """Small values share their top bits, so all want one slot of the hash table and probe on."""
    rng = np.random.default_rng(0)
    for values in (np.array([1, 2, 3, 1, 3, 3], dtype=np.uint64), rng.integers(0, 50, 1000).astype(np.uint64),
                   rng.integers(0, 2**63, 5000).astype(np.uint64)):
        first, number = group(values)
        assert (values[first][number] == values).all()
        assert len(first) == len(np.unique(values))


def test_the_piece_table_grows_to_at_most_four_slots_a_piece():
    """A worker's table of pieces is most of its memory: growing keeps it between a quarter and a
    half full, and every piece is still found with its value."""
    from bpecli.bulk.packing import pack_spans, piece_hash
    from bpecli.bulk.tables import PieceTable

    rng = np.random.default_rng(3)
    pieces = np.unique(rng.integers(1 << 40, 1 << 56, 300_000))
    data = pieces.astype("<u8").tobytes()
    low, high = pack_spans(data, np.arange(len(pieces)) * 8, np.full(len(pieces), 7))
    table = PieceTable()
    for at in range(0, len(pieces), 50_000):
        part = slice(at, at + 50_000)
        table.insert(low[part], high[part], piece_hash(low[part], high[part]), np.arange(len(pieces))[part])
        assert 2 * table.count <= len(table.high) <= 4 * table.count
    slots = table.find(low, high, piece_hash(low, high))
    assert (table.value[slots] == np.arange(len(pieces))).all()
