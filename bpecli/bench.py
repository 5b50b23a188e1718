"""Timings as data: encode and decode throughput of a tokenizer, and of a peer built from the same
ranks in the same run, with the ratio and an exactness check. The CLI prints them."""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from itertools import chain
from pathlib import Path

import numpy as np

from .bulk import join_encoded
from .errors import BpecliError, InputError, arg
from .inputs.documents import read_records, read_text
from .inputs.sources import input_kind, redact
from .parallel import map_in_order
from .pretokenize import document_separators, special_splitter, split_documents
from .tokenizer import Tokenizer

# tiktoken and tokenizers, the peers, are imported when asked for: they are optional extras.

PEERS = ("tiktoken", "tokenizers")


def peer_encoder(name: str, tok: Tokenizer, workers: int):
    """(encode documents -> list of id lists, decode ids -> str) of a peer built from tok's ranks."""
    if name == "tiktoken":
        try:
            import tiktoken
        except ModuleNotFoundError:  # not installed; one that cannot load says why itself
            raise BpecliError("tiktoken is not installed; pip install tiktoken (bpecli's bench extra has it)") from None
        enc = tiktoken.Encoding("bpecli-peer", pat_str=tok.pattern, mergeable_ranks=tok.ranks, special_tokens=tok.special_tokens)
        if tok.add_prefix_space:  # tiktoken has no such option: its user puts the space in, as bpecli.json says
            return (lambda docs: enc.encode_ordinary_batch([" " + d if d[:1] not in ("", " ") else d for d in docs],
                                                           num_threads=workers)), enc.decode
        return (lambda docs: enc.encode_ordinary_batch(docs, num_threads=workers)), enc.decode
    if name == "tokenizers":
        try:
            import tokenizers
        except ModuleNotFoundError:  # not installed; one that cannot load says why itself
            raise BpecliError("tokenizers is not installed; pip install tokenizers (bpecli's bench extra has it)") from None
        from .formats.hugging_face import write_tokenizer_json

        # its threads are rayon's, sized once, from this variable, when it first encodes a batch in
        # this process: `workers` of them, as tiktoken's num_threads
        os.environ["RAYON_NUM_THREADS"] = str(workers)

        with tempfile.TemporaryDirectory() as folder:
            write_tokenizer_json(tok.vocab, Path(folder) / "tokenizer.json")
            hf = tokenizers.Tokenizer.from_str((Path(folder) / "tokenizer.json").read_text(encoding="utf-8"))

        def encode(docs):
            return [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]

        return encode, lambda ids: hf.decode(ids, skip_special_tokens=False)
    raise BpecliError(f"{arg('against')} {name!r}: expected one of {', '.join(PEERS)}")


def bench(
    tok: Tokenizer, corpus: str, *, against: str | None = None, workers: int = 1, repeat: int = 3
) -> dict:
    """Encode the corpus's documents `repeat` times (a cold cache each time) and decode the ids;
    medians, throughputs, peak memory, and the same for the peer with the ratio.

    Example: bench(gpt2, "docs.txt", against="tiktoken") -> {"bpecli": {...}, "tiktoken": {...},
    "ratio": 1.4, "identical": True}
    """
    if repeat < 1:
        raise BpecliError(f"{arg('repeat')} must be at least 1")
    if input_kind(corpus)[0] == "text":
        text = read_text(corpus)
        documents = [d for d in _split(tok, text) if d]
        n_bytes = len(text.encode("utf-8"))
    else:  # JSONL, Parquet: their records' text, as training and shards read them
        documents = [d for _, d in read_records(corpus) if d]
        n_bytes = sum(len(d.encode("utf-8")) for d in documents)
    if not documents:
        raise InputError(f"{redact(corpus)}: holds no text to time (empty, or nothing but special tokens)")
    runners = {"bpecli": (lambda docs: _encode_ours(tok, docs, workers), tok.decode)}
    if against:
        runners[against] = peer_encoder(against, tok, workers)
    timings: dict[str, dict] = {name: {"encode": [], "decode": []} for name in runners}
    results: dict[str, tuple] = {}
    for _ in range(repeat):  # interleaved, so that noise on a shared machine hits both alike
        for name, (encode, decode) in runners.items():
            results.pop(name, None)  # one side's ids in memory at a time, besides the other's
            tok.clear_cache()
            started = time.perf_counter()
            encoded = encode(documents)
            timings[name]["encode"].append(time.perf_counter() - started)
            ids, ends = encoded if name == "bpecli" else _flatten(encoded)
            del encoded
            flat = ids if name == "bpecli" else ids.tolist()  # each side's own kind of id list
            started = time.perf_counter()
            decode(flat)
            timings[name]["decode"].append(time.perf_counter() - started)
            del flat
            results[name] = ids, ends
    report: dict = {"corpus": redact(corpus), "bytes": n_bytes, "documents": len(documents), "workers": workers, "repeat": repeat}
    for name, times in timings.items():
        n_tokens = len(results[name][0])
        encode_s, decode_s = statistics.median(times["encode"]), statistics.median(times["decode"])
        report[name] = {
            "encode_seconds": encode_s,
            "encode_mb_per_s": n_bytes / encode_s / 1e6,
            "encode_tokens_per_s": n_tokens / encode_s,
            "decode_seconds": decode_s,
            "decode_mb_per_s": n_bytes / decode_s / 1e6,
            "tokens": n_tokens,
            "runs": times["encode"],
        }
    # ru_maxrss is in KiB on Linux, in bytes on macOS; one process ran both sides
    report["peak_memory_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    if against:
        report["peer"] = against
        report["ratio"] = report["bpecli"]["encode_mb_per_s"] / report[against]["encode_mb_per_s"]
        report["identical"], report["first_difference"] = _compare(results["bpecli"], results[against])
    return report


def _flatten(id_lists: list[list[int]]):
    """A peer's ids per document as (all ids, where each document's ids end), like ours."""
    sizes = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    ids = np.fromiter(chain.from_iterable(id_lists), dtype=np.int64, count=int(sizes.sum()))
    return ids, np.cumsum(sizes)


def _split(tok: Tokenizer, text: str) -> list[str]:
    """The documents of a text input, as write_shards cuts them."""
    return split_documents(text, special_splitter(document_separators(tok.special_tokens)))


def _compare(ours: tuple, theirs: tuple) -> tuple[bool, dict | None]:
    """(identical, None), or (False, where the first difference is: document, token, ids there)."""
    (a, a_ends), (b, b_ends) = ours, theirs
    if len(a) == len(b) and np.array_equal(a, b) and np.array_equal(a_ends, b_ends):
        return True, None
    common = min(len(a), len(b))
    differ = np.flatnonzero(a[:common] != b[:common])
    at = int(differ[0]) if len(differ) else common
    document = int(np.searchsorted(a_ends, at, "right"))
    start = int(a_ends[document - 1]) if document else 0
    return False, {"document": document, "token": at - start, "bpecli": a[at : at + 5].tolist(), "peer": b[at : at + 5].tolist()}


# ---- our side: documents encoded by `workers` processes ------------------------------------------

def _setup(tok: Tokenizer, documents: list[str]) -> tuple[Tokenizer, list[str]]:
    return tok, documents  # forked workers share them, unpickled


def _encode_share(shared: tuple[Tokenizer, list[str]], share: tuple[int, int]):
    tok, documents = shared
    start, end = share
    return tok.encode_documents(documents[start:end], dtype="int64")


def _encode_ours(tok: Tokenizer, documents: list[str], workers: int):
    """(all ids, where each document's ids end), by `workers` processes, each given a range of
    documents to encode (never the text)."""
    if workers <= 1:
        return tok.encode_documents(documents, dtype="int64")
    tok.prepare_bulk()
    step = -(-len(documents) // (4 * workers))
    shares = [(i, min(i + step, len(documents))) for i in range(0, len(documents), step)]
    return join_encoded(list(map_in_order(_encode_share, shares, workers=workers, setup=_setup, args=(tok, documents))))
