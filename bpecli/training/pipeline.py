"""train(): a corpus -> a Tokenizer, as a numbered recipe: check the settings, cut the inputs into
parts, count their pre-tokens in parallel, merge, and build the vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError
from ..inputs.parts import PART_BYTES, document_parts
from ..inputs.sources import input_bytes, input_pairs
from ..normalize import check as check_normalize
from ..parallel import parallelism
from ..pretokenize import SAFE_CUT, is_preset, resolve_pattern
from ..progress import progress_bar
from ..tokenizer import Tokenizer
from ..vocab import Template, check_special_tokens
from .counting import count_pretokens
from .merges import merges_wanted, train_bpe

# A training part of the corpus is at most this big: a worker holds its text, documents and counts.
MAX_PART_BYTES = 16 << 20


def counting_part_bytes(total_bytes: int, parallel: int) -> int:
    """Parts of about a quarter of a worker's share: few counts to add up in this process and few
    tasks to send, enough parts to keep every worker busy (they need not be the same on every run,
    as shards' do), and at most MAX_PART_BYTES, which bounds a worker's memory."""
    return min(max(PART_BYTES, total_bytes // (4 * max(1, parallel)) + 1), MAX_PART_BYTES)


def train(
    inputs: list[str | Path | tuple[str, str]],
    *,
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
    workers: int = 1,
    scheduler: str | None = None,
    min_frequency: int = 0,
    errors: str = "strict",
    text_column: str = "text",
    normalize: tuple[str, ...] | list[str] = (),
    add_prefix_space: bool = False,
    bos: str | None = None,
    eos: str | None = None,
    progress=None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer on the documents of inputs, as `bpecli train` does: text
    (.txt, documents split at the special tokens), .jsonl and .parquet files (a document per
    record, in text_column), compressed or not; paths, URIs (s3://...) or (path, label) pairs.
    Byte b gets id b, merge i id 256 + i, and the special tokens the last ids in the order given;
    vocab_size counts all three. Pre-tokens are counted by `workers` processes, or by the workers
    of the Dask cluster whose address scheduler gives; the result is the same either way.
    normalize names the steps applied to every document first ("nfc", "nfd", "nfkc", "nfkd",
    "lowercase"), which encode then applies too. Training stops early when the best pair occurs
    fewer than min_frequency times. errors: invalid UTF-8 stops ("strict") or becomes U+FFFD
    ("replace"). add_prefix_space puts a space before each document that does not start with one,
    in counting and in encode, as Hugging Face's ByteLevel(add_prefix_space=True). bos and eos are
    special tokens (added to special_tokens if not there) that encode puts before and after each
    text, as a Hugging Face TemplateProcessing does. progress, if given, makes a bar for each
    stage: progress(description, total, unit) -> an object with update(n) and close(), such as tqdm.

    Example: train(["corpus.txt"], vocab_size=1000, special_tokens=["<|endoftext|>"]).save("tok")
    """
    # 1. Check the settings, before the long count.
    special_tokens = list(dict.fromkeys([*special_tokens, *(t for t in (bos, eos) if t is not None)]))
    check_special_tokens(dict.fromkeys(special_tokens, 0))
    n_merges = merges_wanted(vocab_size, special_tokens)
    pattern = resolve_pattern(pattern)
    normalize = check_normalize(normalize)
    # 2. Cut the inputs into parts of whole documents (text without special tokens also where the
    #    preset patterns surely start a piece), sized for the workers.
    pairs = input_pairs(inputs)
    safe_cut = SAFE_CUT if is_preset(pattern) and not add_prefix_space else None  # (a prefix needs whole documents)
    total_bytes = input_bytes(pairs)
    part_bytes = counting_part_bytes(total_bytes, parallelism(workers, scheduler))
    separators = sorted(set(special_tokens))  # not document_separators: see its docstring
    parts = document_parts(pairs, separators=separators, text_column=text_column, safe_cut=safe_cut,
                           part_bytes=part_bytes)
    # 3. Count the pre-tokens of every part, in parallel.
    with progress_bar(progress, "counting", total_bytes, "B") as bar:
        counts = count_pretokens(parts, pattern=pattern, separators=separators, text_column=text_column,
                                 workers=workers, scheduler=scheduler, errors=errors, normalize=normalize,
                                 add_prefix_space=add_prefix_space, progress=bar)
    if not counts:
        raise InputError(f"{', '.join(label for _, label in pairs)}: the corpus is empty (no text outside special tokens)")
    # 4. Merge.
    with progress_bar(progress, "merging", n_merges, "merge") as bar:
        merges = train_bpe(counts, vocab_size=vocab_size, special_tokens=special_tokens, min_frequency=min_frequency,
                           num_threads=parallelism(workers), progress=bar)
    # 5. The vocabulary: the 256 bytes, the merges in order, the special tokens last.
    ranks = {bytes([b]): b for b in range(256)}
    for left, right in merges:
        ranks[left + right] = len(ranks)
    specials = {token: len(ranks) + i for i, token in enumerate(special_tokens)}
    template = None
    if bos is not None or eos is not None:  # single: <bos> A <eos>; pair: that, then <bos> B <eos>
        before: list[int | str] = [specials[bos]] if bos is not None else []
        after: list[int | str] = [specials[eos]] if eos is not None else []
        single = (*before, "A", *after)
        template = Template(single=single, pair=(*single, *before, "B", *after))
    return Tokenizer(ranks=ranks, special_tokens=specials, pattern=pattern, trained_merges=tuple(merges), normalize=normalize,
                     add_prefix_space=add_prefix_space, template=template)
