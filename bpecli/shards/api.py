"""write_shards as Python callers (and the encode command) use it: the options of `bpecli encode
--out` in the library's terms, a tokenizer given as an object, a path or a name, and tokens around
documents given as text or ids. The run itself is run.py's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import BpecliError, arg
from ..inputs.spool import streams_spooled
from ..pretokenize import DEFAULT_EOT, document_separators
from ..tokenizer import Tokenizer, load
from . import run
from .run import ShardRun

Input = str | Path | tuple[str, str]


def write_shards(
    tokenizer: Tokenizer | str | Path,
    inputs: Input | list[Input],
    out_dir: str | Path,
    *,
    shard_tokens: int = 100_000_000,
    shard_format: str = "npy",
    dtype: str = "auto",
    eot: str | int | None = "auto",
    bos: str | int | None = None,
    val_fraction: float | None = None,
    text_column: str = "text",
    errors: str = "strict",
    workers: int = 1,
    scheduler: str | None = None,
    force: bool = False,
    progress: Callable | None = None,
) -> ShardRun:
    """Encode a corpus into a folder of token shards with a manifest.json, as `bpecli encode --out`
    does: atomically (a reader never sees a partial shard reported as finished) and resumably (a
    run that was stopped carries on from its last finished shard when called again the same way).

    tokenizer is a Tokenizer, or anything `load` takes (a folder, a file, "cl100k_base"). inputs
    are text (.txt), .jsonl and .parquet files, compressed or not, local or URIs (s3://...), "-"
    for stdin; a (path, label) pair shows label in messages. Each document (a JSONL line or
    Parquet row, or the text between special tokens of a text file) is encoded on its own: special
    tokens in it count as text. Options, each as the flag of the same name:

    - shard_tokens: tokens per shard (the last holds the rest); shard_format: "npy" (.npy files),
      "llmc" (llm.c's .bin) or "nanogpt" (one raw train.bin, and val.bin).
    - dtype: "auto" (uint16 when every id fits, else uint32), "uint16" or "uint32".
    - eot, bos: the token written after (before) every document: a special token ("<|endoftext|>"),
      an id, or None for nothing. eot="auto" is <|endoftext|>, an error where the tokenizer has
      none (name another, or None to write the documents back to back).
    - val_fraction: put about this fraction of the documents (chosen by a hash of their text, so the
      same ones every run) into val_* shards, the rest into train_*.
    - text_column: the text field of JSONL and Parquet; errors: invalid UTF-8 stops the run
      ("strict") or becomes U+FFFD ("replace").
    - workers: processes that encode; scheduler: a Dask scheduler's address to run them on. The
      shards are the same whichever is used.
    - force: make out_dir match this run, as Make wants: an interrupted run of the same settings
      resumes, a finished one whose shards verify is kept, anything else is rebuilt (never a
      folder of other files).
    - progress: a factory progress(description, total, unit) of an object with update(n),
      set_postfix_str(text) and close(), such as tqdm: lambda d, t, u: tqdm(desc=d, total=t, unit=u).

    The result says what happened (status "written", "resumed" or "complete": found finished and
    left alone), with the manifest as written to out_dir/manifest.json.

    Example: write_shards("gpt2", ["a.jsonl"], "shards", val_fraction=0.01).manifest["total_tokens"] -> 52113
    """
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else load(tokenizer)
    names = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    if not names:
        raise BpecliError(f"{arg('inputs')} is empty: give at least one file to encode")
    if errors not in ("strict", "replace"):
        raise BpecliError(f"{arg('errors')} {errors!r}: expected strict or replace")
    eot_id = token_id(tok, eot, "eot")
    bos_id = token_id(tok, bos, "bos")
    spooled = [name for name in names if isinstance(name, (str, Path))]
    with streams_spooled([str(name) for name in spooled], separators=document_separators(tok.special_tokens),
                         errors=errors) as pairs:
        by_name = dict(zip(map(str, spooled), pairs))
        pairs = [by_name[str(name)] if isinstance(name, (str, Path)) else name for name in names]
        return run.write_shards(
            tok, pairs, out_dir, shard_tokens=shard_tokens, workers=workers, scheduler=scheduler, eot=eot_id,
            text_column=text_column, dtype=dtype, errors=errors, force=force, shard_format=shard_format, bos=bos_id,
            val_fraction=val_fraction, progress=progress,
        )


def token_id(tokenizer: Tokenizer, token: str | int | None, name: str) -> int | None:
    """The id of a token written around every document, given as text or as an id; None (or
    "none") for nothing, and "auto" (eot's default) for <|endoftext|> (an error where the tokenizer
    has none: see run.no_eot_error).

    Example (GPT-2): "auto" -> 50256; "<|endoftext|>" -> 50256; 50256 -> 50256; None -> None
    """
    if token == "auto" and name == "eot":
        if DEFAULT_EOT not in tokenizer.special_tokens:
            raise run.no_eot_error()
        return tokenizer.special_tokens[DEFAULT_EOT]
    if isinstance(token, bool) or not isinstance(token, (str, int, type(None))):
        raise BpecliError(f"{arg(name)} {token!r}: expected a special token, an id or None")
    if isinstance(token, int):
        if token not in tokenizer.decoder:
            raise BpecliError(f"{arg(name)} {token} is not an id of this tokenizer (0..{max(tokenizer.decoder)})")
        return token
    return run.resolve_token(tokenizer, token, name)
