"""The numpy helpers, on examples checkable by hand."""

import numpy as np

from bpecli.arrays import sorted_distinct, spans, with_room, without_overlaps


def test_spans_and_distinct_values():
    assert spans(np.array([10, 3]), np.array([2, 3])).tolist() == [10, 11, 3, 4, 5]
    assert sorted_distinct(np.array([3, 1, 3])).tolist() == [1, 3]
    assert sorted_distinct(np.array([], dtype=np.int64)).tolist() == []


def test_overlapping_pairs_merge_first_third_fifth():
    nxt = np.arange(1, 12)  # 0 -> 1 -> 2 ...
    assert without_overlaps(np.array([0, 1, 2, 5]), nxt).tolist() == [0, 2, 5]
    assert without_overlaps(np.array([0, 1, 2, 3, 4, 8, 9]), nxt).tolist() == [0, 2, 4, 8]
    assert without_overlaps(np.array([4]), nxt).tolist() == [4]


def test_an_array_grows_at_least_twofold_and_keeps_its_items():
    array = np.array([1, 2])
    assert with_room(array, 2) is array
    assert with_room(array, 3).tolist() == [1, 2, 0, 0]
    assert with_room(array, 9, fill=-1).tolist() == [1, 2] + [-1] * 7
