"""numpy helpers every stage uses: the positions of many spans, the distinct values of an array,
the pairs BPE merges in a run of overlapping ones, an array grown to hold more."""

from __future__ import annotations

import numpy as np


def spans(starts, sizes):
    """Every position of the spans [start, start + size).

    Example: [10, 3], [2, 3] -> [10, 11, 3, 4, 5]
    """
    return np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))


def sorted_distinct(values):
    """The distinct values, sorted (np.unique hashes or does more work than a sort and a compare;
    values that come in order already, as positions often do, are not sorted again).

    Example: [3, 1, 3] -> [1, 3]
    """
    if len(values) > 1 and not (values[1:] >= values[:-1]).all():
        values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def without_overlaps(at, nxt=None):
    """Of pairs starting at positions `at` (ascending) of a linked list (nxt: the next position;
    None: at + 1), the ones merged left to right: in a run of overlapping pairs ("a a a a"), the
    first, third...

    Example: at [0, 1, 2, 5], nxt 0 -> 1 -> 2 -> 3 -> ... -> [0, 2, 5]
    """
    if len(at) < 2:
        return at
    overlapped = np.zeros(len(at), dtype=bool)
    overlapped[1:] = (at[:-1] + 1 if nxt is None else nxt[at[:-1]]) == at[1:]
    run_start = np.maximum.accumulate(np.where(overlapped, 0, np.arange(len(at))))
    return at[(np.arange(len(at)) - run_start) % 2 == 0]


def with_room(array, size: int, fill: int = 0):
    """array, or a copy with room for size items (at least twice as long), the new ones fill.

    Example: [1, 2], 3 -> [1, 2, 0, 0]; [1, 2], 2 -> the same array
    """
    if size <= len(array):
        return array
    grown = np.full(max(size, 2 * len(array)), fill, dtype=array.dtype)
    grown[: len(array)] = array
    return grown
