"""BPE of one piece in Python: the reference the numpy paths are held to."""

from bpecli.encoding.reference import _merge_parts_heap, _merge_parts_scan, merge_parts


def test_golden_pieces_merge_as_gpt2_does(gpt2):
    assert merge_parts(b"hello", gpt2.ranks) == [b"hello"]
    assert merge_parts(b" tokenizer", gpt2.ranks) == [b" token", b"izer"]


def test_heap_merge_equals_scan_merge(gpt2):
    for piece in [b"a" * 200, b"ab" * 100, "é".encode() * 90, b" hello" * 30, bytes(range(256)), b"x", b""]:
        assert _merge_parts_heap(piece, gpt2.ranks) == _merge_parts_scan(piece, gpt2.ranks)
        assert _merge_parts_heap(piece, gpt2.ranks, 300) == _merge_parts_scan(piece, gpt2.ranks, 300)


def test_piece_ids_are_the_token_or_its_merged_parts(gpt2):
    from bpecli.encoding.reference import piece_ids

    assert piece_ids(b" tokenizer", gpt2.ranks) == (11241, 7509)
    assert piece_ids(b"hello", gpt2.ranks) == (gpt2.ranks[b"hello"],)
