"""The figures of a shard folder: totals per shard and split from the manifest, document lengths
from the document indexes, and how often each id occurs (one np.bincount per block of a
memory-mapped shard, in worker processes for a large folder): what `bpecli inspect DIR` prints,
its --json, and its --report page all read these."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, arg
from ..parallel import map_in_order
from ..shards.formats import load_npy, read_shard
from ..shards.layout import JOURNAL, MANIFEST, UNREADABLE, index_name, read_manifest
from ..shards.verification import checked_shard
from ..tokenizer import Tokenizer
from ..vocab import render_token

# Ids counted per np.bincount: its int64 copy of them stays in the caches (measured fastest).
COUNT_BLOCK = 1 << 18
# Ids a worker process counts per item; folders of fewer ids than WORKERS_FROM are counted here.
WORK_ITEM = 1 << 26
WORKERS_FROM = 1 << 27
# The most ids counted in an array indexed by id (32 MB of counts); a vocabulary with ids past it
# (a special token at 4e9) is counted by its ids' places among its sorted ids.
MAX_DENSE = 1 << 22
# Ids seen fewer than RARE times are rare; these bounds bucket ids by how often they occur.
RARE = 10
OCCURRENCE_BUCKETS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
# Points of the rank-frequency curve, spaced evenly on a log scale, and the ranks whose ids it names.
ZIPF_POINTS = 160
RANKS_SHOWN = (1, 10, 100, 1_000, 10_000, 100_000)


@dataclass(frozen=True)
class Slots:
    """Where each id is counted: in slot `id` (dense), or in its place among `ids` (sparse); and
    the bytes of each slot's token (0 for special tokens, and for every slot without the tokenizer)."""

    ids: np.ndarray  # the id of each slot
    dense: bool
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class _Counting:
    """What a worker needs to count ids: the folder and the slots."""

    folder: Path
    slots: Slots


def shard_figures(folder: str | Path, *, tokenizer: Tokenizer | None = None, top: int = 20, workers: int = 1) -> dict:
    """Every figure of a finished shard folder; the ids are shown as tokens, and bytes per token
    measured, when the tokenizer that wrote the shards is given.

    Example: shard_figures("shards/")["splits"] -> {"train": {"tokens": 9950, ...}, "val": {...}}
    """
    out = Path(folder)
    if not os.path.lexists(out / MANIFEST):  # (a link or a FIFO in its place: read_manifest says what it is)
        hint = " (an unfinished run: rerun the encode command to finish it)" if (out / JOURNAL).exists() else ""
        raise InputError(f"{out}: no {MANIFEST} here{hint}")
    manifest = read_manifest(out / MANIFEST, UNREADABLE)
    if tokenizer is not None:
        _check_tokenizer(out, manifest, tokenizer)
    shards = [dict(shard, split=_split_of(shard["file"])) for shard in manifest["shards"]]
    slots = _slots(manifest, tokenizer)
    inputs = _written_by_input(out, manifest, shards)
    by_split, by_shard, by_input = _count_ids(out, manifest, shards, slots, workers, inputs)
    measured = tokenizer is not None
    figures = {
        "kind": "shards",
        "folder": str(out),
        **{k: manifest.get(k) for k in ("total_tokens", "total_documents", "dtype", "shard_tokens", "eot", "bos", "inputs",
                                        "val_fraction")},
        "shard_format": manifest.get("shard_format", "npy"),
        "tokenizer": manifest["tokenizer"],
        # the tokenizer given was read from the very files the shards were written with (the same
        # tokenizer read from another of its formats has another fingerprint)
        "same_tokenizer_files": tokenizer.fingerprint == manifest["tokenizer"].get("fingerprint") if tokenizer else None,
        "shards": [{**{k: s[k] for k in ("file", "split", "tokens", "documents", "sha256")},
                    "bytes_per_token": _per_token(text, ordinary, measured)} for s, (ordinary, text) in zip(shards, by_shard)],
    }
    documents = {split: _document_lengths(out, [s for s in shards if s["split"] == split]) for split in _splits(manifest, shards)}
    figures["splits"] = {}
    for split in documents:
        counts = by_split.get(split, np.zeros(len(slots), dtype=np.int64))
        figures["splits"][split] = {
            "tokens": sum(s["tokens"] for s in shards if s["split"] == split),
            "documents": sum(s["documents"] for s in shards if s["split"] == split),
            "shards": sum(s["split"] == split for s in shards),
            "bytes_per_token": _per_token(int(counts @ slots.lengths), int(counts[slots.lengths > 0].sum()), measured),
            "distinct_ids": int(np.count_nonzero(counts)),
        }
    _check_documents(out, figures["splits"], documents)
    total = np.sum(list(by_split.values()), axis=0) if by_split else np.zeros(len(slots), dtype=np.int64)
    if tokenizer is not None and slots.dense:  # ids between the tokenizer's that are no token (cl100k_base has 100256)
        _check_known(out, total, slots, tokenizer, manifest)
    text_bytes = int(total @ slots.lengths)
    figures["bytes_per_token"] = _per_token(text_bytes, int(total[slots.lengths > 0].sum()), measured)
    figures["text_bytes"] = text_bytes if measured else None
    figures["document_lengths"] = _length_figures(documents)
    figures.update(_vocabulary_figures(total, slots, manifest, tokenizer, top))
    figures["by_input"] = [
        {"input": entry["path"], "input_bytes": size,
         "tokens": sum(_count_of(entry["written"], split, "tokens") or 0 for split in inputs),
         "documents": sum(_count_of(entry["written"], split, "documents") or 0 for split in inputs),
         "bytes_per_token": _per_token(text, ordinary, measured)}
        for entry, size, (ordinary, text) in zip(manifest["read"], [i.get("size") for i in manifest["inputs"]], by_input)
    ] if inputs is not None else None
    return figures


def _per_token(text_bytes: int, ordinary: int, measured: bool) -> float | None:
    """Text bytes per ordinary token (special tokens such as eot aside); None unless measured."""
    return text_bytes / ordinary if measured and ordinary else None


def _split_of(file: str) -> str:
    """Example: "val_00003.npy" -> "val"; "train.bin" -> "train"; "shard_00000.npy" -> "shard" """
    return file.split("_", 1)[0].split(".", 1)[0]


def _splits(manifest: dict, shards: list[dict]) -> list[str]:
    """The folder's splits in the manifest's order (a split with no shards included)."""
    named = manifest.get("splits")
    if isinstance(named, dict) and named:
        return list(named)
    return list(dict.fromkeys(s["split"] for s in shards))


def _check_tokenizer(out: Path, manifest: dict, tokenizer: Tokenizer) -> None:
    """The tokenizer given must be the one the shards were written with: the same vocabulary size,
    the same tokens at the ids the manifest names (eot, bos), and, where the manifest says what
    every id decodes to (decoder_sha256), the same tokens at every id."""
    wrote = manifest["tokenizer"]
    if wrote.get("vocab_size") != tokenizer.vocab_size:
        raise InputError(f"{out} was written by a tokenizer of {wrote.get('vocab_size')} tokens, not this one of "
                         f"{tokenizer.vocab_size:,}; give the tokenizer it was encoded with (-t)")
    if "decoder_sha256" in manifest and manifest["decoder_sha256"] != tokenizer.vocab.decoder_sha256:
        raise InputError(f"{out} was written by another tokenizer of {tokenizer.vocab_size:,} tokens: this one decodes "
                         "its ids to other tokens; give the tokenizer it was encoded with (-t)")
    for key in ("eot", "bos"):
        named = manifest.get(key)
        if isinstance(named, dict) and named.get("token") is not None and tokenizer.special_ids.get(named.get("id", -1)) != named["token"]:
            raise InputError(f"{out}: its {key} {named['token']} is id {named.get('id')}, which this tokenizer gives "
                             "another token; give the tokenizer it was encoded with (-t)")


def _slots(manifest: dict, tokenizer: Tokenizer | None) -> Slots:
    """Where each id a shard may hold is counted: the tokenizer's ids and the manifest's eot and
    bos; without the tokenizer, 0 up to the manifest's vocabulary size."""
    named = [m["id"] for m in (manifest.get("eot"), manifest.get("bos")) if isinstance(m, dict) and isinstance(m.get("id"), int)]
    dtype_top = 1 << 16 if manifest["dtype"] == "uint16" else 1 << 32
    if tokenizer is not None:
        ids = np.unique(np.fromiter([*tokenizer.decoder, *named], dtype=np.int64))
    else:
        size = manifest["tokenizer"].get("vocab_size")
        # (read_manifest: no id the manifest names is past its max_id)
        bound = manifest["max_id"] + 1 if "max_id" in manifest else max([size if isinstance(size, int) else 0, *(i + 1 for i in named)])
        if not 0 < bound <= min(dtype_top, MAX_DENSE):
            raise InputError(f"the manifest names ids up to {bound - 1:,}: too many to count without the tokenizer, or "
                             f"more than {manifest['dtype']} holds; give the tokenizer ({arg('tokenizer')}), or encode again with {arg('force', True)}")
        ids = np.arange(bound, dtype=np.int64)
    if len(ids) == 0 or ids[0] < 0 or ids[-1] >= dtype_top:
        raise InputError(f"the tokenizer's ids do not fit {manifest['dtype']} shards; give the tokenizer the shards "
                         "were encoded with (-t)")
    dense = ids[-1] < MAX_DENSE
    slots = np.arange(ids[-1] + 1, dtype=np.int64) if dense else ids
    lengths = np.zeros(len(slots), dtype=np.int64)
    if tokenizer is not None:
        ranks = np.fromiter(tokenizer.ranks.values(), dtype=np.int64, count=len(tokenizer.ranks))
        where = ranks if dense else np.searchsorted(slots, ranks)
        lengths[where] = np.fromiter(map(len, tokenizer.ranks), dtype=np.int64, count=len(tokenizer.ranks))
    return Slots(slots, dense, lengths)


def _check_known(out: Path, counts: np.ndarray, slots: Slots, tokenizer: Tokenizer, manifest: dict) -> None:
    """Every id counted is a token of the tokenizer (or the manifest's eot or bos)."""
    known = np.zeros(len(slots), dtype=bool)
    known[np.fromiter(tokenizer.decoder, dtype=np.int64, count=len(tokenizer.decoder))] = True
    for named in (manifest.get("eot"), manifest.get("bos")):
        if isinstance(named, dict) and isinstance(named.get("id"), int) and 0 <= named["id"] < len(known):
            known[named["id"]] = True
    unknown = np.flatnonzero(counts * ~known)
    if len(unknown):
        raise InputError(f"{out}: id {int(unknown[0]):,} occurs {int(counts[unknown[0]]):,} times, and the tokenizer has no "
                         "such token; the shards are damaged or of another tokenizer")


def _written_by_input(out: Path, manifest: dict, shards: list[dict]) -> dict[str, list[int]] | None:
    """For each split, the number of tokens each input gave it, in input order (the order they
    are in the split's shards), if the manifest records them (a run that was never interrupted)."""
    read = manifest.get("read")
    if not isinstance(read, list) or not read or not all(isinstance(e, dict) and isinstance(e.get("written"), dict) for e in read):
        return None
    if len(read) != len(manifest["inputs"]):
        raise InputError(f"{out / MANIFEST}: damaged (its inputs and what was read of them differ in number); "
                         f"encode again with {arg('force', True)}")
    splits = dict.fromkeys(s["split"] for s in shards)
    found: dict[str, list[int]] = {}
    for split in splits:
        tokens = [_count_of(e["written"], split, "tokens") for e in read]
        documents = [_count_of(e["written"], split, "documents") for e in read]
        if (None in tokens or None in documents or sum(n or 0 for n in tokens) != sum(s["tokens"] for s in shards if s["split"] == split)
                or sum(n or 0 for n in documents) != sum(s["documents"] for s in shards if s["split"] == split)):
            raise InputError(f"{out / MANIFEST}: damaged (the tokens it says each input gave {split} do not add up to its "
                             f"shards'); encode again with {arg('force', True)}")
        found[split] = [n or 0 for n in tokens]
    return found


def _count_of(written: dict, split: str, key: str) -> int | None:
    """A count in a manifest's "written" entry (0 for a split it does not name); None if malformed."""
    entry = written.get(split, {})
    value = entry.get(key, 0) if isinstance(entry, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _count_ids(out: Path, manifest: dict, shards: list[dict], slots: Slots, workers: int, inputs: dict[str, list[int]] | None
               ) -> tuple[dict[str, np.ndarray], list[tuple[int, int]], list[tuple[int, int]]]:
    """How often each id occurs in each split (counts by slot), and the ordinary tokens and text
    bytes of each shard and, when inputs says where each input's tokens are, of each input. Each
    shard is checked first to be what the manifest says (its dtype and length), and each block of
    it to hold only ids of the slots before anything is counted."""
    items: list[tuple] = []
    offsets: dict[str, int] = {}
    for number, shard in enumerate(shards):
        ids = checked_shard(out / shard["file"], shard, manifest)
        offset = offsets.get(shard["split"], 0)
        offsets[shard["split"]] = offset + len(ids)
        for start in range(0, len(ids), WORK_ITEM):
            end = min(start + WORK_ITEM, len(ids))
            ranges = _input_ranges(inputs[shard["split"]], offset, start, end) if inputs is not None else []
            items.append((number, shard["file"], start, end, ranges))
    by_split: dict[str, np.ndarray] = {}
    by_shard = [[0, 0] for _ in shards]
    by_input = [[0, 0] for _ in manifest["inputs"]] if inputs is not None else []
    ordinary = slots.lengths > 0
    many = sum(s["tokens"] for s in shards) >= WORKERS_FROM
    found = map_in_order(_count_item, items, workers=workers if many else 1, setup=_Counting, args=(out, slots))
    for (number, *_), (counts, per_input) in zip(items, found):
        split = shards[number]["split"]
        if split in by_split:
            by_split[split] += counts
        else:
            by_split[split] = counts
        by_shard[number][0] += int(counts[ordinary].sum())
        by_shard[number][1] += int(counts @ slots.lengths)
        for index, n, text in per_input:
            by_input[index][0] += n
            by_input[index][1] += text
    return by_split, [(n, text) for n, text in by_shard], [(n, text) for n, text in by_input]


def _input_ranges(tokens: list[int], offset: int, start: int, end: int) -> list[tuple[int, int, int]]:
    """(start, end, input) for each input's part of positions start..end of a shard that begins
    at offset in its split. Example: tokens [5, 5], offset 0, 3..8 -> [(3, 5, 0), (5, 8, 1)]"""
    bounds = np.cumsum([0, *tokens]) - offset
    out = []
    for index, (low, high) in enumerate(zip(bounds[:-1], bounds[1:])):
        low, high = max(int(low), start), min(int(high), end)
        if low < high:
            out.append((low, high, index))
    return out


def _count_item(state: _Counting, item: tuple) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """The counts (by slot) of the ids in one range of one shard, a block at a time, and for each
    input's part of it, its ordinary tokens and text bytes. An id of no slot is an error that says
    where, raised before anything is sized from it."""
    _, file, start, end, ranges = item
    ids = read_shard(state.folder / file)
    slots = state.slots
    counts = np.zeros(len(slots), dtype=np.int64)
    per_input = {index: [0, 0] for _, _, index in ranges}
    ordinary = slots.lengths > 0
    for at in range(start, end, COUNT_BLOCK):
        stop = min(at + COUNT_BLOCK, end)
        block = ids[at:stop]
        if slots.dense:
            too_high = len(block) > 0 and int(block.max()) >= len(slots)  # (max first: the common case needs no mask)
            bad = np.flatnonzero(block >= len(slots)) if too_high else np.zeros(0, dtype=np.int64)
            where = block
        else:  # an id's place among the sorted ids, which must be the id itself
            where = np.minimum(np.searchsorted(slots.ids, block), len(slots) - 1)
            bad = np.flatnonzero(slots.ids[where] != block)
        if len(bad):
            raise InputError(f"{state.folder / file}: id {int(block[bad[0]]):,} at position {at + int(bad[0]):,} is outside the "
                             "vocabulary; the shard is damaged or of another tokenizer")
        found = np.bincount(where, minlength=len(slots))
        counts += found
        for low, high, index in ranges:
            low, high = max(low, at), min(high, stop)
            if low >= high:
                continue
            if high - low == len(block):  # the whole block: its counts say it
                per_input[index][0] += int(found[ordinary].sum())
                per_input[index][1] += int(found @ slots.lengths)
            else:
                part = slots.lengths[where[low - at : high - at]]
                per_input[index][0] += int(np.count_nonzero(part))
                per_input[index][1] += int(part.sum())
    return counts, [(index, n, text) for index, (n, text) in per_input.items()]


def _document_lengths(out: Path, shards: list[dict]) -> np.ndarray:
    """The length in tokens of every document of one split, from the document indexes (where each
    document starts in its shard; a document may go on into the next shards)."""
    starts, offset = [], 0
    for shard in shards:
        path = out / index_name(shard["file"])  # beside its shard, whatever else a manifest says
        try:
            found = load_npy(path, "document index")
        except InputError as e:
            raise InputError(f"{e.args[0]}; the folder is damaged: encode again with {arg('force', True)}") from None
        if found.ndim != 1 or found.dtype.kind not in "iu" or (len(found) and (
                found[0] < 0 or found[-1] >= shard["tokens"] or np.any(np.diff(found) < 0))):
            raise InputError(f"{path}: not the positions of documents in {shard['file']}; the folder is damaged: "
                             f"encode again with {arg('force', True)}")
        starts.append(np.asarray(found, dtype=np.int64) + offset)
        offset += shard["tokens"]
    starts_all = np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)
    if len(starts_all) and starts_all[0] != 0:
        raise InputError(f"{out / index_name(shards[0]['file'])}: the first document does not start at the first token; "
                         f"the folder is damaged: encode again with {arg('force', True)}")
    return np.diff(np.append(starts_all, offset))


def _check_documents(out: Path, splits: dict, documents: dict[str, np.ndarray]) -> None:
    for split, lengths in documents.items():
        if len(lengths) != splits[split]["documents"]:
            raise InputError(f"{out}: the document indexes of {split} hold {len(lengths):,} documents, the manifest "
                             f"{splits[split]['documents']:,}; the folder is damaged: encode again with {arg('force', True)}")


def _length_figures(documents: dict[str, np.ndarray]) -> dict:
    """Documents by length in tokens: buckets that double (1, 2-3, 4-7, ...), per split, and the
    quantiles of all of them together."""
    every = np.concatenate(list(documents.values())) if documents else np.zeros(0, dtype=np.int64)
    top = int(every.max()) if len(every) else 1
    edges = [1 << k for k in range(max(1, top.bit_length()) + 1)]
    buckets: list[dict] = [{"from": low, "to": high - 1,
                "documents": {split: int(np.count_nonzero((lengths >= low) & (lengths < high))) for split, lengths in documents.items()}}
               for low, high in zip(edges, edges[1:])]
    while buckets and not any(buckets[0]["documents"].values()):
        buckets.pop(0)
    if not len(every):
        return {"documents": 0, "buckets": []}
    quantiles = np.quantile(every, [0.5, 0.9, 0.99])
    return {"documents": int(len(every)), "mean": float(every.mean()), "min": int(every.min()),
            "median": float(quantiles[0]), "p90": float(quantiles[1]), "p99": float(quantiles[2]), "max": top,
            "by_split": {split: {"documents": int(len(lengths)), "mean": float(lengths.mean()) if len(lengths) else None,
                                 "median": float(np.median(lengths)) if len(lengths) else None}
                         for split, lengths in documents.items()},
            "buckets": buckets}


def _vocabulary_figures(counts: np.ndarray, slots: Slots, manifest: dict, tokenizer: Tokenizer | None, top: int) -> dict:
    """Vocabulary use (ids never seen, rare ids, how many ids cover most tokens), the most
    frequent ids, and the rank-frequency curve; counts are by slot."""
    if tokenizer is not None:  # the tokenizer's ids (a dense count has slots for ids that are none)
        ids = np.fromiter(tokenizer.decoder, dtype=np.int64, count=len(tokenizer.decoder))
        vocabulary = np.sort(ids) if slots.dense else np.searchsorted(slots.ids, np.sort(ids))
    else:  # without the tokenizer, its ids are taken to be 0..vocab_size-1
        size = manifest["tokenizer"].get("vocab_size")
        vocabulary = np.arange(min(len(slots), size if isinstance(size, int) and size > 0 else len(slots)))
    seen = counts[vocabulary]
    total = int(counts.sum())
    never = vocabulary[seen == 0]
    ordered = np.sort(counts[counts > 0])[::-1]
    covered = np.cumsum(ordered)
    occurrence: list[dict] = [{"from": low, "to": high - 1, "ids": int(np.count_nonzero((seen >= low) & (seen < high)))}
                              for low, high in zip(OCCURRENCE_BUCKETS, (*OCCURRENCE_BUCKETS[1:], 1 << 62))]
    while len(occurrence) > 2 and occurrence[-1]["ids"] == 0:
        occurrence.pop()
    occurrence[-1]["to"] = None  # the last bucket is open
    by_rank = np.argsort(-counts, kind="stable")
    ranks = np.unique(np.geomspace(1, max(1, len(ordered)), ZIPF_POINTS).astype(np.int64)) if len(ordered) else np.zeros(0, dtype=np.int64)

    def entry(slot: int, with_count: bool = True) -> dict:
        return _entry(int(slots.ids[slot]), int(counts[slot]) if with_count else None, tokenizer, total)

    return {
        "vocabulary": {
            "ids": int(len(vocabulary)),
            "seen": int(np.count_nonzero(seen)),
            "never_seen": int(len(never)),
            "rare": int(np.count_nonzero((seen > 0) & (seen < RARE))),
            "rare_below": RARE,
            "by_occurrences": occurrence,
            "ids_covering": {f"{share:.0%}": int(np.searchsorted(covered, share * total) + 1) if total else 0
                             for share in (0.5, 0.9, 0.99)},
            "never_seen_first": [entry(int(slot), with_count=False) for slot in never[:top]],
        },
        "most_frequent": [entry(int(slot)) for slot in by_rank[:top] if counts[slot]],
        "zipf": [{"rank": int(r), "count": int(ordered[r - 1])} for r in ranks],
        "at_ranks": [{"rank": r, **entry(int(by_rank[r - 1]))} for r in RANKS_SHOWN if r <= len(ordered)],
    }


def _entry(token_id: int, count: int | None, tokenizer: Tokenizer | None, total: int = 0) -> dict:
    """An id as the figures list it: with its count and share, and its token if known."""
    entry: dict = {"id": token_id}
    if count is not None:
        entry.update(count=count, share=count / total if total else 0.0)
    if tokenizer is not None and token_id in tokenizer.decoder:
        special = tokenizer.special_ids.get(token_id)
        entry["token"] = special if special is not None else render_token(tokenizer.decoder[token_id])
    return entry
