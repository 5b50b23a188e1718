"""BPE of one piece in Python: the reference the numpy paths are held to."""

import numpy as np

from bpecli.encoding.reference import NUMPY_PIECE, merge_parts


def test_golden_pieces_merge_as_gpt2_does(gpt2):
    assert merge_parts(b"hello", gpt2.ranks) == [b"hello"]
    assert merge_parts(b" tokenizer", gpt2.ranks) == [b" token", b"izer"]


def test_long_pieces_merge_here_as_in_the_bulk_engines_linked_list(gpt2):
    """Up to NUMPY_PIECE bytes a piece merges here, beyond it in bulk.merge.bpe_long: the two meet."""
    from bpecli.bulk.merge import bpe_long

    for piece in [b"a" * 200, b"ab" * 100, "é".encode() * 90, b" hello" * 30, bytes(range(256)),
                  b"abcdefghij" * (NUMPY_PIECE // 10 + 1), b"=" * NUMPY_PIECE]:
        ids, _ = bpe_long(gpt2._text.tables, np.frombuffer(piece, dtype=np.uint8), np.zeros(1, dtype=np.int64),
                          np.array([len(piece)]))
        assert [gpt2.ranks[part] for part in merge_parts(piece, gpt2.ranks)] == ids.tolist()
    assert merge_parts(b"x", gpt2.ranks) == [b"x"] and merge_parts(b"", gpt2.ranks) == []


def test_ranks_from_max_rank_on_are_left_out(gpt2):
    assert merge_parts(b"hello", gpt2.ranks, max_rank=gpt2.ranks[b"hello"]) == [b"hell", b"o"]
    assert merge_parts(b" hello" * 30, gpt2.ranks, max_rank=300) == merge_parts(b" hello" * 30, {
        token: rank for token, rank in gpt2.ranks.items() if rank < 300})


def test_piece_ids_are_the_token_or_its_merged_parts(gpt2):
    from bpecli.encoding.reference import piece_ids

    assert piece_ids(b" tokenizer", gpt2.ranks) == (11241, 7509)
    assert piece_ids(b"hello", gpt2.ranks) == (gpt2.ranks[b"hello"],)
