"""The merge loop: pre-token counts -> merges, best first. The words (words.py) and the pairs
(pairs.py) are numbered once; then the best pair merges, with the pairs known to merge right after
it in the same pass, until the vocabulary is full."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import BpecliError, arg
from ..parallel.threads import Threads
from ..vocab import MAX_ID
from .counting import PieceCounts
from .pairs import _Pairs
from .words import _Words, number_byte_pairs

_MAX_VOCAB = MAX_ID + 1  # ids 0 to MAX_ID


def merges_wanted(vocab_size: int, special_tokens: Sequence[str]) -> int:
    """How many merges a vocabulary of vocab_size leaves room for; an error if it is too small."""
    n_merges = vocab_size - 256 - len(special_tokens)
    if vocab_size > _MAX_VOCAB:
        raise BpecliError(f"{arg('vocab_size')} {vocab_size:,} is too large: ids are 32-bit, so at most {_MAX_VOCAB:,}")
    if n_merges < 0:
        raise BpecliError(
            f"{arg('vocab_size')} {vocab_size} is too small: it must hold the 256 byte tokens "
            f"and {len(special_tokens)} special token{'s' * (len(special_tokens) != 1)}, so at least {256 + len(special_tokens)}"
        )
    return n_merges


def train_bpe(
    counts: PieceCounts | Mapping[str, int] | Mapping[bytes, int],
    *,
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    min_frequency: int = 0,
    num_threads: int = 1,
    progress=None,
) -> list[tuple[bytes, bytes]]:
    """The merges of a byte-level BPE trained on pre-token counts, best first.

    counts: {piece: count}, pieces as str or bytes (the pre-tokens of a corpus, counted). vocab_size
    counts the 256 bytes, the merges and the special tokens. Ties go to the lexicographically
    greatest pair of byte strings, as in the CS336 reference. num_threads: how many threads share
    the large steps of the merge loop (no more than the CPUs); the merges are the same for any number.
    Example: {"aaabdaaabac": 1} with vocab_size 259 -> [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    """
    n_merges = merges_wanted(vocab_size, special_tokens)
    if not isinstance(counts, PieceCounts):
        counts = PieceCounts.of_mapping(counts)
    # 1. The words, end to end; 2. every pair of bytes in them numbered and counted.
    words = _Words.of(counts)
    pairs = _Pairs(n_merges)
    number_byte_pairs(words, pairs)
    # 3. Merge the best pair (and those known to follow it), n_merges times or until no pair is frequent enough.
    with Threads(num_threads) as words.threads:
        return _merge_loop(words, pairs, n_merges, min_frequency, progress)


def _merge_loop(words: _Words, pairs: _Pairs, n_merges: int, min_frequency: int, progress) -> list[tuple[bytes, bytes]]:
    """train_bpe's step 3 over the words and pairs numbered: the merges, best first."""
    fewest = max(min_frequency, 1)
    while len(pairs.merges) < n_merges:
        best = pairs.best()
        if best is None or pairs.items.count[best] < fewest:
            break
        # (most merges of a large vocabulary are few, merged by Python steps alone)
        batch = [best] if words.is_few(best) else _merges_from(best, pairs, n_merges - len(pairs.merges), fewest)
        words.merge(batch, pairs)
        if progress is not None:
            progress.update(len(batch))
    return pairs.merges


def _merges_from(best: int, pairs: _Pairs, room: int, fewest: int) -> list[int]:
    """best (made at more than FEW positions) and the pairs that will merge right after it, known
    before it merges, to merge in one pass: a merge by numpy calls costs about the same however few
    its positions. A pair joins while it takes no token of the pass's pairs, none is (a, a), and no
    pair of its count could come first (_Pairs.none_beside); why that makes one pass merge them as
    one after another would: docs/design.md, "Merges known to come next"."""
    items = pairs.items
    left, right, count = items.left, items.right, items.count
    if left[best] == right[best]:
        return [best]
    batch, lefts, rights = [best], {left[best]}, {right[best]}
    while len(batch) < room:
        count[batch[-1]] = 0  # out of the ranking: it merges in this pass
        after = pairs.best()
        if after is None or count[after] < fewest:
            break
        c, d = left[after], right[after]
        if c == d or c in rights or d in lefts or not pairs.none_beside(lefts, rights):
            break
        batch.append(after)
        lefts.add(c)
        rights.add(d)
    return batch
