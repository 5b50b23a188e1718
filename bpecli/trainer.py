"""Pre-token counts -> merges: word table, pair counts, pair -> words index, lazy max-heap."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .corpus import file_chunks
from .errors import BpecliError, InputError
from .pretokenize import count_pretokens, resolve_pattern
from .tokenizer import Tokenizer


def tie_break_key(left: bytes, right: bytes) -> bytes:
    """A key whose ascending order is the descending order of (left, right) as byte strings.

    The heap is a min-heap, so among pairs of equal count the lexicographically greatest pair of
    byte strings must sort first.
    Example: tie_break_key(b"b", b"a") < tie_break_key(b"a", b"z") < tie_break_key(b"a", b"")
    """
    return _descending(left) + _descending(right)


def _descending(token: bytes) -> bytes:
    """Each byte b becomes 255 - b, and 256 (which no byte takes) ends the token, so that a
    token sorts after every token it is a prefix of; each number as 2 bytes, big-endian (bytes
    compare like the tuple of those numbers, in a third of a tuple's memory)."""
    return b"".join((255 - x).to_bytes(2, "big") for x in token) + b"\x01\x00"


def merges_wanted(vocab_size: int, special_tokens: list[str]) -> int:
    """How many merges a vocabulary of vocab_size leaves room for; an error if it is too small."""
    n_merges = vocab_size - 256 - len(special_tokens)
    if n_merges < 0:
        raise BpecliError(
            f"--vocab-size {vocab_size} is too small: it must hold the 256 byte tokens "
            f"and {len(special_tokens)} special token(s), so at least {256 + len(special_tokens)}"
        )
    return n_merges


def train_bpe(
    counts: Mapping[str, int] | Mapping[bytes, int],
    *,
    vocab_size: int,
    special_tokens: list[str] = (),
    min_frequency: int = 0,
    progress=None,
) -> list[tuple[bytes, bytes]]:
    """The merges of a byte-level BPE trained on pre-token counts, best first.

    vocab_size counts the 256 bytes, the merges and the special tokens. Ties go to the
    lexicographically greatest pair of byte strings.
    Example: {"aaabdaaabac": 1} with vocab_size 259 -> [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    """
    n_merges = merges_wanted(vocab_size, special_tokens)

    # 1. The word table: each distinct pre-token once, with its count. A word is a str whose
    #    characters are token ids (chr(id)): str.replace then merges a pair, left to right and
    #    without overlaps, in C, and a pair is a 2-character str.
    words: list[str] = []
    freqs: list[int] = []
    for piece, n in counts.items():
        encoded = piece.encode("utf-8") if isinstance(piece, str) else piece
        if len(encoded) > 1:  # a single byte holds no pair
            words.append(encoded.decode("latin-1"))  # byte b -> chr(b)
            freqs.append(n)

    # 2. Pair counts and the pair -> words index, built once.
    pair_counts, where = _initial_pairs(words, freqs)

    # 3. A max-heap of (count, tie-break) as a min-heap of (-count, key); stale entries are
    #    re-checked against pair_counts when popped.
    token_bytes = [bytes([i]) for i in range(256)]
    descending = [_descending(t) for t in token_bytes]  # tie_break_key in parts, per token
    heap = [(-n, descending[ord(p[0])] + descending[ord(p[1])], p) for p, n in pair_counts.items()]
    heapq.heapify(heap)

    # 4. Merge, updating only the pairs that touch a merged occurrence.
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < n_merges:
        best = _pop_best(heap, pair_counts)
        if best is None or best[0] < max(min_frequency, 1):
            break
        _, pair = best
        a, b = ord(pair[0]), ord(pair[1])
        new_char = chr(len(token_bytes))
        merges.append((token_bytes[a], token_bytes[b]))
        token_bytes.append(token_bytes[a] + token_bytes[b])
        descending.append(_descending(token_bytes[-1]))
        gained_pairs = set()
        for w in where.pop(pair):
            word = words[w]
            merged = word.replace(pair, new_char)
            if len(merged) == len(word):  # the index may name a word twice, or one that lost the pair
                continue
            words[w] = merged
            n = freqs[w]
            # Lost pairs never hold new_char and gained ones always do, so counts that fall
            # are left to the lazy heap and only the gained pairs are pushed.
            if len(word) - len(merged) == 1:  # one occurrence, by far the common case: no lists
                j = word.find(pair)
                if j:
                    pair_counts[word[j - 1 : j + 1]] -= n
                    new_pair = merged[j - 1 : j + 1]
                    pair_counts[new_pair] += n
                    where[new_pair].append(w)
                    gained_pairs.add(new_pair)
                if j + 2 < len(word):
                    pair_counts[word[j + 1 : j + 3]] -= n
                    new_pair = merged[j : j + 2]
                    pair_counts[new_pair] += n
                    where[new_pair].append(w)
                    gained_pairs.add(new_pair)
                continue
            for lost in _pairs_around(word, pair):
                pair_counts[lost] -= n
            gained = _pairs_around(merged, new_char)
            for new_pair in gained:
                pair_counts[new_pair] += n
                where[new_pair].append(w)
            gained_pairs.update(gained)
        del pair_counts[pair]
        for gained in gained_pairs:
            key = descending[ord(gained[0])] + descending[ord(gained[1])]
            heapq.heappush(heap, (-pair_counts[gained], key, gained))
        if progress is not None:
            progress.update(1)
    return merges


def _initial_pairs(words: list[str], freqs: list[int]) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Count every adjacent pair of byte-level words (weighted by word count) and index the words
    that hold each pair, with numpy rather than a Python loop over millions of positions.

    Example: (["aab", "ab"], [1, 5]) -> ({"aa": 1, "ab": 6}, {"aa": [0], "ab": [0, 1]})
    """
    pair_counts: dict[str, int] = defaultdict(int)
    where: dict[str, list[int]] = defaultdict(list)
    if not words:
        return pair_counts, where
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    flat = np.frombuffer("".join(words).encode("latin-1"), dtype=np.uint8).astype(np.int64)
    owner = np.repeat(np.arange(len(words), dtype=np.int64), lengths)
    is_start = np.ones(len(flat), dtype=bool)
    is_start[np.cumsum(lengths) - 1] = False  # no pair starts at a word's last byte
    starts = np.flatnonzero(is_start)
    keys = flat[starts] * 256 + flat[starts + 1]
    owners = owner[starts]
    totals = np.bincount(keys, weights=np.asarray(freqs, dtype=np.float64)[owners], minlength=65536)
    for key in np.flatnonzero(totals).tolist():
        pair_counts[chr(key >> 8) + chr(key & 255)] = int(totals[key])
    held = np.sort(keys * len(words) + owners)
    held = held[np.concatenate(([True], held[1:] != held[:-1]))]  # each (pair, word) once, by pair
    held_keys = held // len(words)
    cuts = np.flatnonzero(np.diff(held_keys)) + 1
    bounds = np.concatenate(([0], cuts, [len(held)]))
    # one int object per word, shared by every list (tolist() would make one per entry)
    owners_of = np.array(list(range(len(words))), dtype=object)[held % len(words)]
    del held, keys, owners, flat, owner, starts
    for lo, hi, key in zip(bounds[:-1].tolist(), bounds[1:].tolist(), held_keys[bounds[:-1]].tolist()):
        where[chr(key >> 8) + chr(key & 255)] = owners_of[lo:hi].tolist()
    return pair_counts, where


def _pop_best(heap: list, pair_counts: dict[str, int]) -> tuple[int, str] | None:
    """The pair with the highest current count (ties broken by the key), or None if none is left."""
    while heap:
        neg, key, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if current == -neg:
            return current, pair
        if 0 < current < -neg:  # the count fell since this entry was pushed; a rise pushes anew
            heapq.heappush(heap, (-current, key, pair))
    return None


def _pairs_around(word: str, part: str) -> list[str]:
    """The pairs of word that overlap an occurrence of part (1 or 2 characters), each position once.

    Example: _pairs_around("xababy", "ab") -> ["xa", "ab", "ba", "ab", "by"]
    """
    width = len(part)
    last = len(word) - 2  # the last position a pair can start at
    pairs = []
    counted = -1  # the last pair position taken, so that pairs between occurrences count once
    j = word.find(part)
    while j != -1:
        for start in range(max(j - 1, counted + 1), min(j + width - 1, last) + 1):
            pairs.append(word[start : start + 2])
        counted = min(j + width - 1, last)
        j = word.find(part, j + width)
    return pairs


def train(
    inputs: list[str | Path],
    *,
    vocab_size: int,
    special_tokens: list[str] = (),
    pattern: str = "gpt2",
    workers: int = 1,
    min_frequency: int = 0,
    errors: str = "strict",
    progress: bool = False,
) -> Tokenizer:
    """Train a byte-level BPE on text files: byte b has id b, merge i id 256 + i, and the special
    tokens take the last ids in the order given.

    Example: train(["corpus.txt"], vocab_size=1000, special_tokens=["<|endoftext|>"]).save("tok")
    """
    special_tokens = list(dict.fromkeys(special_tokens))
    n_merges = merges_wanted(vocab_size, special_tokens)  # fail before the long count
    pattern = resolve_pattern(pattern)
    paths = [str(p) for p in inputs]
    # Several chunks a worker keep both busy when chunks differ in size; one when counting alone.
    chunks = [c for p in paths for c in file_chunks(p, 4 * workers if workers > 1 else 1, special_tokens)]
    total_bytes = sum(c.end - c.start for c in chunks)
    with tqdm(total=total_bytes, unit="B", unit_scale=True, desc="counting", disable=not progress) as bar:
        counts = count_pretokens(
            chunks, pattern=pattern, special_tokens=special_tokens, workers=workers, errors=errors, progress=bar
        )
    if not counts:
        raise InputError(f"{', '.join(paths)}: the corpus is empty (no text outside special tokens)")
    with tqdm(total=n_merges, unit="merge", desc="merging", disable=not progress) as bar:
        merges = train_bpe(
            counts, vocab_size=vocab_size, special_tokens=special_tokens, min_frequency=min_frequency, progress=bar
        )
    ranks = {bytes([b]): b for b in range(256)}
    for left, right in merges:
        ranks[left + right] = len(ranks)
    specials = {token: len(ranks) + i for i, token in enumerate(special_tokens)}
    return Tokenizer(ranks=ranks, special_tokens=specials, pattern=pattern)
