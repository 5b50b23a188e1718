"""Pre-tokenizer patterns, splitting on special tokens, and counting pre-tokens in a process pool."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from contextlib import contextmanager
from multiprocessing import get_all_start_methods, get_context

import regex

from .corpus import Chunk, read_chunk
from .errors import BpecliError

# The exact patterns tiktoken uses for its gpt2 / r50k, cl100k_base and o200k_base encodings.
PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}


def resolve_pattern(name_or_regex: str) -> str:
    """A preset name gives its pattern; anything else must be a valid regex.

    Example: resolve_pattern("gpt2") -> "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++|..."
    """
    pattern = PATTERNS.get(name_or_regex, name_or_regex)
    try:
        regex.compile(pattern)
    except regex.error as e:
        raise BpecliError(f"invalid --pattern regex {pattern!r}: {e}") from None
    return pattern


def special_splitter(special_tokens: Iterable[str]) -> regex.Pattern | None:
    """A regex that captures any special token, longest first so that overlapping ones split right."""
    ordered = sorted(set(special_tokens), key=len, reverse=True)
    if not ordered:
        return None
    return regex.compile("(" + "|".join(regex.escape(t) for t in ordered) + ")")


def split_documents(text: str, splitter: regex.Pattern | None) -> list[str]:
    """The text between special tokens (the tokens themselves dropped).

    Example: "a<|endoftext|>b" -> ["a", "b"]
    """
    if splitter is None:
        return [text]
    return splitter.split(text)[::2]


# Per-process state built once by the pool initializer (never shipped with each task).
_worker: dict = {}


def _init_worker(pattern: str, special_tokens: list[str], errors: str) -> None:
    _worker["findall"] = regex.compile(pattern).findall
    _worker["splitter"] = special_splitter(special_tokens)
    _worker["errors"] = errors


def _count_chunk(chunk: Chunk) -> tuple[Counter, int]:
    text = read_chunk(chunk, _worker["errors"])
    findall = _worker["findall"]
    counts: Counter = Counter()
    for document in split_documents(text, _worker["splitter"]):
        counts.update(findall(document))
    return counts, chunk.end - chunk.start


def count_pretokens(
    chunks: list[Chunk],
    *,
    pattern: str,
    special_tokens: list[str],
    workers: int = 1,
    errors: str = "strict",
    progress=None,
) -> Counter:
    """Pre-token frequencies over all chunks, counted by `workers` processes.

    Example: one chunk "low low<|endoftext|>lower" -> {"low": 1, " low": 1, "lower": 1}
    """
    init_args = (pattern, special_tokens, errors)
    total: Counter = Counter()
    with _chunk_counter(workers if len(chunks) > 1 else 1, init_args) as count_all:
        for counts, n_bytes in count_all(chunks):
            total.update(counts)
            if progress is not None:
                progress.update(n_bytes)
    return total


@contextmanager
def _chunk_counter(workers: int, init_args: tuple):
    """A function mapping _count_chunk over chunks: in this process for one worker, else a pool."""
    if workers <= 1:
        _init_worker(*init_args)
        yield lambda chunks: map(_count_chunk, chunks)
        return
    # fork shares the parent's imported modules for free; spawn where there is no fork.
    method = "fork" if "fork" in get_all_start_methods() else "spawn"
    with get_context(method).Pool(workers, initializer=_init_worker, initargs=init_args) as pool:
        yield lambda chunks: pool.imap_unordered(_count_chunk, chunks)
