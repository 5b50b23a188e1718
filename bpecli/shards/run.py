"""write_shards: encode a corpus into a shard folder, atomically and resumably; and the ids a run
writes around each document (eot, bos)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import BpecliError, OutputError, arg
from ..folders import locked
from ..inputs.documents import parse_id, shown
from ..inputs.parts import document_parts
from ..inputs.sources import check_apart, input_bytes, input_pairs
from ..pretokenize import DEFAULT_EOT, document_separators
from ..progress import progress_bar
from ..tokenizer import Tokenizer
from .encode import encode_in_order, parts_from
from .formats import resolve_dtype
from .journal import ResumeMismatch, clear, prepare
from .layout import SHARD_SUFFIX, UNBOUNDED, check_unchanged, settings_of, splits_of
from .writer import ShardWriter


@dataclass(frozen=True)
class ShardRun:
    """What a call of write_shards did. out_dir: the shard folder; manifest: its manifest.json as
    a dict (the shards with their tokens, documents and sha256, the totals, the settings);
    status: "written", "resumed" (kept_shards came from a run that was stopped) or "complete"
    (found finished and left alone); seconds: how long it took; n_bytes: the input bytes read.

    Example: ShardRun(out_dir=PosixPath('shards'), status='written', kept_shards=0, ...).manifest["total_tokens"]
    """

    out_dir: Path
    manifest: dict = field(repr=False)
    status: str = "written"
    kept_shards: int = 0
    seconds: float = 0.0
    n_bytes: int = 0  # read by this run (decompressed), not by the run it resumed
    n_tokens: int = 0  # written by this run

    @property
    def shards(self) -> list[Path]:
        """The paths of the shards, in order (train_* and val_* ones with a validation split)."""
        return [self.out_dir / shard["file"] for shard in self.manifest["shards"]]


def resolve_eot(tokenizer: Tokenizer, eot: str | None) -> int | None:
    """The id written after every document: None (the default) means the tokenizer's
    <|endoftext|> if it has one; "none" means nothing; else a special token or an id.

    Example (GPT-2): None -> 50256; "none" -> None; "50256" -> 50256
    """
    if eot is None:
        return tokenizer.special_tokens.get(DEFAULT_EOT)
    return resolve_token(tokenizer, eot, "eot")


def no_eot_error() -> BpecliError:
    """The error where no eot was named and the tokenizer has no <|endoftext|>: the shards would
    run every document into the next with nothing between them, which a caller must ask for."""
    return BpecliError(f"this tokenizer has no {DEFAULT_EOT} to write after each document, so the shards would run "
                       f"documents together: name the token with {arg('eot')} (a special token or an id), or use "
                       f"{arg('eot', 'none')} to write them back to back")


def resolve_token(tokenizer: Tokenizer, token: str | None, name: str = "bos") -> int | None:
    """The id of a token written around every document: None or "none" is nothing; else a
    special token or an id of the tokenizer. name is the argument it was given as, for the error."""
    if token is None or token == "none":
        return None
    if token in tokenizer.special_tokens:
        return tokenizer.special_tokens[token]
    number = parse_id(token)  # ASCII digits only: "٣" is no id
    if number is not None and number in tokenizer.decoder:
        return number
    known = ", ".join(tokenizer.special_tokens) or "none"
    raise BpecliError(f"{arg(name)} {shown(token)} is neither a special token of this tokenizer ({known}) nor an id in it")


def write_shards(
    tokenizer: Tokenizer,
    inputs: list[str | Path | tuple[str, str]],
    out_dir: str | Path,
    *,
    shard_tokens: int = 100_000_000,
    workers: int = 1,
    scheduler: str | None = None,
    eot: int | None = None,
    text_column: str = "text",
    dtype: str = "auto",
    errors: str = "strict",
    force: bool = False,
    shard_format: str = "npy",
    bos: int | None = None,
    val_fraction: float | None = None,
    progress=None,
) -> ShardRun:
    """Encode the documents of inputs (paths, or (path, label) pairs) into shards in out_dir:
    .npy files, llm.c's .bin with shard_format="llmc", or nanoGPT's raw train.bin with "nanogpt".

    Every document is encoded on its own (special tokens in it count as text), preceded by bos
    and followed by eot (either may be None). With val_fraction, about that fraction of the
    documents goes to val_* shards and the rest to train_* (see encode.in_validation). The result
    depends only on the inputs, the tokenizer and these options, never on workers nor on where
    they run (a Dask cluster's, given its scheduler: see parallel.map_in_order). progress, if
    given, makes the bar: progress("encoding", total bytes, "B") (see progress.progress_bar).
    """
    if shard_tokens < 1:
        raise BpecliError(f"{arg('shard_tokens')} must be at least 1")
    if shard_format not in SHARD_SUFFIX:
        raise BpecliError(f"{arg('shard_format')} {shard_format!r}: expected npy, llmc or nanogpt")
    if val_fraction is not None and not 0 < val_fraction < 1:
        raise BpecliError(f"{arg('val_fraction')} {val_fraction}: expected a fraction between 0 and 1, e.g. 0.005")
    if shard_format == "nanogpt":
        shard_tokens = UNBOUNDED
    if shard_format == "llmc" and shard_tokens > np.iinfo(np.int32).max:
        raise BpecliError(f"{arg('shard_tokens')}: llm.c's header counts tokens in an int32, so at most 2,147,483,647")
    started = time.perf_counter()
    out = Path(out_dir)
    pairs = input_pairs(inputs)
    check_apart(out, [label for _, label in pairs])
    settings = settings_of(tokenizer, pairs, shard_tokens, eot, text_column, resolve_dtype(tokenizer, dtype), shard_format)
    settings.update(bos=None if bos is None else {"id": bos, "token": tokenizer.special_ids.get(bos)},
                    val_fraction=val_fraction)
    made = _make_folder(out)
    # the folder locked is the one out leads to (out may be a link to a folder on a larger disk)
    with locked(Path(os.path.realpath(out))), _unmade_on_failure(out, made):
        found = prepare(out, settings, force)
        if isinstance(found, dict):
            return ShardRun(out, found, "complete")
        while True:
            try:
                manifest, n_bytes, n_tokens = _encode(tokenizer, pairs, out, settings, found, (workers, scheduler),
                                            (eot, bos, val_fraction, shard_format, text_column, errors), progress, started)
                break
            except ResumeMismatch:
                if not (force and found):
                    raise
                clear(out, keep=set())  # the kept shards are not what this run writes: rebuilt from nothing
                found = []
        kept = found
    return ShardRun(out, manifest, "resumed" if kept else "written", len(kept), time.perf_counter() - started, n_bytes,
                    n_tokens)


def _encode(tokenizer, pairs, out, settings, kept, where, options, progress, started) -> tuple[dict, int, int]:
    """write_shards' run in a folder prepare()d, after the shards kept: the manifest, the bytes
    read and the tokens written."""
    workers, scheduler = where
    eot, bos, val_fraction, shard_format, text_column, errors = options
    separators = document_separators(tokenizer.special_tokens)
    parts = document_parts(pairs, separators=separators, text_column=text_column)
    setup_args = (tokenizer, eot, bos, val_fraction, settings["dtype"], separators, text_column, errors)
    tokenizer.prepare_bulk()
    writer = ShardWriter(out, settings, kept, splits_of(val_fraction, shard_format))
    n_bytes, kept_tokens = 0, writer.total_tokens
    with progress_bar(progress, "encoding", input_bytes(pairs), "B") as bar:
        try:
            todo = parts_from(parts, writer.resume_part(), writer, separators, text_column, errors, bar)
            for index, part, (encoded, part_bytes, digest) in encode_in_order(todo, workers, scheduler, setup_args):
                writer.read(index, part.label, digest)
                for split, (ids, doc_ends) in zip(writer.splits, encoded):
                    writer.write(split, ids, doc_ends, index)
                    writer.tally(index, split, len(ids), len(doc_ends))
                n_bytes += part_bytes
                if bar is not None:
                    bar.update(part.weight)
                    bar.set_postfix_str(rates(n_bytes, writer.total_tokens - kept_tokens, time.perf_counter() - started))
            check_unchanged(pairs, settings)
            manifest = writer.finish(pairs, max(tokenizer.decoder), tokenizer.vocab.decoder_sha256)
        finally:
            writer.discard()
    return manifest, n_bytes, writer.total_tokens - kept_tokens


def rates(n_bytes: int, tokens: int, seconds: float) -> str:
    """A run's throughput as progress and its summary both say it: the bytes read (decompressed:
    the text and its JSONL or Parquet framing), and tokens.

    Example: "2.5 MB/s, 1,234,567 tokens/s"
    """
    seconds = max(seconds, 1e-9)
    return f"{n_bytes / 1e6 / seconds:,.1f} MB/s, {tokens / seconds:,.0f} tokens/s"


def _make_folder(out: Path) -> Path | None:
    """Make the folder out (and its parents); the topmost folder made, or None if out was there."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out} is a file, not a folder for shards; choose another {arg('out_dir')}")
    if out.is_symlink() and not out.exists():
        raise OutputError(f"{out} is a symbolic link that leads nowhere; choose another {arg('out_dir')}, or fix the link")
    made = next((folder for folder, parent in zip([out, *out.parents], out.parents) if parent.exists()), None)
    made = None if out.exists() else made
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot make {out} ({e.strerror or e}); choose an {arg('out_dir')} you can write to") from None
    return made


@contextmanager
def _unmade_on_failure(out: Path, made: Path | None):
    """On a failure, remove the folders _make_folder made if they are empty: a
    run stopped by bad input leaves no empty out_dir behind (one that wrote shards keeps them for
    a rerun). It runs while the lock is held, so that no other run is writing there."""
    try:
        yield
    except BaseException:
        try:
            if made is not None and not os.listdir(out):
                for folder in [out, *out.parents]:
                    folder.rmdir()
                    if folder == made:
                        break
        except OSError:  # something else appeared in it: it stays
            pass
        raise
