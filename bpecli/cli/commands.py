"""The five commands: each parses its options, calls the library, and hands the result to render.
A function's docstring is its --help."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import BpecliError
from ..parallel.local import keep_freed_memory
from ..formats import check_writable
from ..tokenizer import load
from ..vocab import MAX_ID
from ..pretokenize import document_separators
from . import render
from .ids import write_decoded, write_ids
from .options import (
    FRACTION_METAVAR, AllowedSpecial, Dtype, Errors, Format, JsonOption, PatternOption, Peer, SchedulerOption, ShardFormat,
    SpecialIdsOption, TokenizerOption, command_line_text, cpus, folder, fraction, named, normalize_steps, whole_option,
)
from .streams import binary_stdout

# llm.c's header counts a shard's tokens in an int32
LLMC_MAX_TOKENS = 2**31 - 1

# corpus, trainer, shards, report and bench are imported inside functions: --help, --version and
# shell completion load none of them, and each command only those it uses (numpy comes with the
# last four). The rest of the library is loaded with the package.


def train(
    inputs: Annotated[list[str], typer.Argument(parser=named, help="Text (.txt), .jsonl, .parquet, .gz/.zst/.bz2 files; - reads stdin.", metavar="INPUT...")],
    vocab_size: Annotated[int, whole_option(256, MAX_ID + 1, help="Bytes + merges + special tokens.")],
    out: Annotated[Path, typer.Option(parser=folder, help="Folder to write the tokenizer files into.")],
    special: Annotated[list[str], typer.Option(help="A special token, repeatable; it separates documents.")] = [],
    pattern: Annotated[str, typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex.")] = "gpt2",
    workers: Annotated[int, whole_option(1, help="Processes that count pre-tokens, then threads that share the merge loop (at most the CPUs this process may use).", show_default="all of them")] = cpus(),
    scheduler: SchedulerOption = None,
    normalize: Annotated[list[str], typer.Option(parser=normalize_steps, metavar="<str>", help="Normalize text first: nfc, nfd, nfkc, nfkd, lowercase (repeatable or comma-separated; in order). Encode applies it too.")] = [],
    add_prefix_space: Annotated[bool, typer.Option("--add-prefix-space", help="A space before each text that does not start with one, so its first word is counted and encoded as any other (Hugging Face's add_prefix_space, written into tokenizer.json).")] = False,
    bos: Annotated[Optional[str], typer.Option(help="A special token that encode puts before each text (a TemplateProcessing in tokenizer.json; transformers' bos_token).", show_default="none")] = None,
    eos: Annotated[Optional[str], typer.Option(help="A special token that encode puts after each text (as --bos; transformers' eos_token).", show_default="none")] = None,
    min_frequency: Annotated[int, whole_option(0, help="Stop when the best pair is rarer than this.")] = 0,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out folder.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress (bars on a terminal, lines in a log).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="A summary on stdout as JSON.")] = False,
) -> None:
    """Train a byte-level BPE tokenizer and write vocab.json, merges.txt, tokenizer.json,
    tokenizer.tiktoken and bpecli.json into --out.

    \b
    Examples:
      bpecli train corpus.txt --vocab-size 32000 --out tok
      bpecli train a.txt --vocab-size 8000 --special '<|endoftext|>' --out tok
      bpecli train docs.jsonl.gz more.parquet --vocab-size 8000 --out tok -q
      cat *.txt | bpecli train - --vocab-size 4000 --out tok --json
    """
    from ..inputs.sources import check_apart
    from ..inputs.spool import streams_spooled
    from ..training import train as train_tokenizer

    check_apart(out, inputs)
    check_writable(out, force=force)  # before the long count, not after it
    if scheduler:
        render.library_notes()
    if as_json:
        binary_stdout()  # a closed stdout is said now, not after the work whose summary it would take
    separators = [*special, *(token for token in (bos, eos) if token is not None)]
    with streams_spooled(inputs, separators=separators, errors=errors.value) as pairs:
        tokenizer = train_tokenizer(
            pairs,
            text_column=text_column,
            vocab_size=vocab_size,
            special_tokens=special,
            pattern=pattern,
            workers=workers,
            scheduler=scheduler,
            normalize=normalize,
            add_prefix_space=add_prefix_space,
            bos=bos,
            eos=eos,
            min_frequency=min_frequency,
            errors=errors.value,
            progress=render.progress(quiet),
        )
    tokenizer.save(out, force=force)
    render.train_summary(tokenizer, out, vocab_size, min_frequency, quiet, as_json)


def encode(
    tokenizer: TokenizerOption,
    inputs: Annotated[Optional[list[str]], typer.Argument(parser=named, help="Text (.txt), .jsonl, .parquet, .gz/.zst/.bz2 files; - or nothing reads stdin. Without --out: a line of ids per text file, or per JSONL line or Parquet row.", metavar="[INPUT...]")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="ids, tokens, json or count.")] = Format.ids,
    lines: Annotated[bool, typer.Option("--lines", help="Encode each line of a text input on its own, one output line each (JSONL and Parquet give a line per record anyway).")] = False,
    allowed_special: Annotated[AllowedSpecial, typer.Option(help="all: special-token text becomes the special tokens' ids; none: plain text. (The Python API's encode refuses it unless allowed_special names it, as tiktoken does.)")] = AllowedSpecial.all,
    special: Annotated[Optional[AllowedSpecial], typer.Option("--special", hidden=True, help="The former name of --allowed-special.")] = None,
    add_special_tokens: Annotated[bool, typer.Option("--add-special-tokens/--no-add-special-tokens", help="Put the tokenizer's template tokens (a Hugging Face post-processor, or train --bos/--eos) around each text, as Hugging Face's encode does; with --out they are each document's --bos and --eot.")] = True,
    out: Annotated[Optional[Path], typer.Option(parser=folder, help="Write token shards and manifest.json into this folder.")] = None,
    shard_tokens: Annotated[int, whole_option(1, help="Tokens per shard (the last one holds the rest).")] = 100_000_000,
    workers: Annotated[int, whole_option(1, help="Processes that encode, with --out (at most the CPUs this process may use).", show_default="all of them")] = cpus(),
    scheduler: SchedulerOption = None,
    eot: Annotated[Optional[str], typer.Option(help="Token written after every document: a special token, an id, or none (documents back to back).", show_default="<|endoftext|>; an error if the tokenizer has none")] = None,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    dtype: Annotated[Dtype, typer.Option(help="Shard dtype: auto is uint16 when every id fits, else uint32.")] = Dtype.auto,
    shard_format: Annotated[ShardFormat, typer.Option(help="npy: .npy files; llmc: llm.c's .bin (256 int32 header: magic, version, token count); nanogpt: one raw train.bin (and val.bin).")] = ShardFormat.npy,
    bos: Annotated[Optional[str], typer.Option(help="Token written before every document: a special token or an id.", show_default="none")] = None,
    val_fraction: Annotated[Optional[float], typer.Option(parser=fraction, metavar=FRACTION_METAVAR, help="Put about this fraction of the documents (chosen by a hash of each one's text) into val_* shards, the rest into train_*.")] = None,
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8 input: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Make --out match this run: resume it if interrupted, keep it if finished (its shards verified), rebuild it if anything differs.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no summary.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --out: the summary on stdout as JSON.")] = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Encode text to token ids, printed on one line per text input (or per line with --lines) and
    per JSONL line or Parquet row; with --out, encode a corpus into shards (.npy, or llm.c's or
    nanoGPT's .bin: one document after another, each followed by --eot).

    \b
    Examples:
      echo -n "hello world" | bpecli encode -t tok
      bpecli encode -t tok notes.txt --lines -f count
      bpecli encode -t tok corpus.jsonl --out shards --val-fraction 0.005 --force
      bpecli encode -t tok corpus.txt --out data --shard-format nanogpt
    """
    if special is not None:  # encode's --special clashed with train's --special TOKEN
        render.note(f"encode --special is now --allowed-special (--allowed-special {special.value}); "
                    "--special will be removed")
        allowed_special = special
    if out is not None and shard_format is ShardFormat.llmc and shard_tokens > LLMC_MAX_TOKENS:
        raise typer.BadParameter(f"{shard_tokens:,} is above {LLMC_MAX_TOKENS:,}: llm.c's header counts tokens in an int32",
                                 param_hint="'--shard-tokens'")
    if out is not None and as_json:
        binary_stdout()  # a closed stdout is said now, not after the shards whose summary it would take
    for name in inputs or []:
        _no_file(name, any(c.isspace() for c in name) or "." not in name and "/" not in name,
                 f"to encode the text itself, pipe it in: echo -n {_quoted(name[:40])} | bpecli encode -t {_quoted(tokenizer)}")
    keep_freed_memory()  # the command owns its process, as the workers own theirs
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if out is None:
        stdout = binary_stdout()
        write_ids(tok, inputs or ["-"], format, lines, allowed_special is AllowedSpecial.all, text_column, errors.value, stdout,
                  add_special_tokens=add_special_tokens)
        stdout.flush()
        return
    from ..inputs.spool import streams_spooled
    from ..shards.run import no_eot_error, resolve_eot, resolve_token
    from ..shards import write_shards

    eot_id, bos_id = resolve_eot(tok, eot), resolve_token(tok, bos, "bos")
    if add_special_tokens and tok.template is not None:
        bos_id, eot_id = _template_ends(tok, bos_id, eot_id, bos_given=bos is not None, eot_given=eot is not None)
    if eot is None and eot_id is None:
        raise no_eot_error()
    if scheduler:
        render.library_notes()
    with streams_spooled(inputs or ["-"], separators=document_separators(tok.special_tokens), errors=errors.value) as pairs:
        run = write_shards(
            tok, pairs, out, shard_tokens=shard_tokens, workers=workers, scheduler=scheduler, eot=eot_id, text_column=text_column,
            dtype=dtype.value, errors=errors.value, force=force, shard_format=shard_format.value, bos=bos_id,
            val_fraction=val_fraction, progress=render.progress(quiet),
        )
    render.shards_summary(run, out, quiet, as_json)


def decode(
    tokenizer: TokenizerOption,
    input: Annotated[str, typer.Argument(parser=named, help="Whitespace-separated ids, or a shard (.npy, llm.c .bin, or nanoGPT .bin with its manifest.json); - reads stdin.", metavar="[INPUT]")] = "-",
    errors: Annotated[Errors, typer.Option(help="Ids that make invalid UTF-8: U+FFFD (replace) or an error (strict).")] = Errors.replace,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Decode token ids back to text, written with nothing added.

    \b
    Examples:
      bpecli encode -t tok notes.txt | bpecli decode -t tok
      bpecli decode -t tok shards/train_00000.npy | head -c 500
    """
    from ..inputs.documents import id_blocks
    from ..inputs.sources import label_of

    ids = " ".join(input.split()).replace(",", " ").strip()
    _no_file(input, bool(input) and all(c.isdecimal() or c.isspace() or c == "," for c in input),
             f"to decode the ids themselves, pipe them in: echo {_quoted(ids[:40])} | bpecli decode -t {_quoted(tokenizer)}")
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if input.endswith((".npy", ".bin")):
        from ..shards import read_shard

        blocks: Any = [read_shard(input, as_listed=True)]
    else:
        blocks = id_blocks(input)  # a block at a time: an ids file of any size
    stdout = binary_stdout()
    write_decoded(tok, blocks, errors.value, stdout, label_of(input))
    stdout.flush()


def inspect(
    target: Annotated[str, typer.Argument(parser=named, help="A tokenizer (any format encode takes) or a shard folder.", metavar="TARGET")],
    text: Annotated[Optional[str], typer.Option(parser=command_line_text, metavar="<str>", help="Show how this text splits; - reads stdin.")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Shard folder: re-hash every shard against the manifest.")] = False,
    compare: Annotated[Optional[list[str]], typer.Option(parser=named, help="Another tokenizer to set beside this one (repeatable); on --corpus too.")] = None,
    corpus: Annotated[Optional[list[str]], typer.Option(parser=named, help="Text, .jsonl or .parquet to measure bytes per token on (repeatable; large ones are sampled).")] = None,
    report: Annotated[Optional[Path], typer.Option(parser=folder, help="Write the figures as one self-contained HTML page to this file.")] = None,
    shard_tokenizer: Annotated[Optional[str], typer.Option("--tokenizer", "-t", parser=named, help="Shard folder: the tokenizer it was encoded with, to show tokens, not ids, and bytes per token.")] = None,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Show a tokenizer (beside others with --compare, on a --corpus), how a text splits into
    tokens, or a shard folder; --report draws the same figures in an HTML page.

    \b
    Examples:
      bpecli inspect tok
      bpecli inspect tok --text "Hello, world"
      bpecli inspect tok --compare gpt2/vocab.json --corpus a.txt --report a.html
      bpecli inspect shards -t tok --verify
    """
    from ..shards.layout import JOURNAL, MANIFEST

    folder = Path(target)  # tokenizers stay str, as given: Path writes "s3://" as "s3:/" in messages
    if folder.is_dir() and (os.path.lexists(folder / MANIFEST) or os.path.lexists(folder / JOURNAL)):
        for given, option in ((text, "--text"), (compare, "--compare"), (corpus, "--corpus")):
            if given:
                raise typer.BadParameter(f"{option} is for a tokenizer; {target} is a shard folder")
        tok = _load_tokenizer(shard_tokenizer, pattern, special_ids) if shard_tokenizer else None
        return _inspect_shards(folder, tok, verify, as_json, report)
    if shard_tokenizer:
        raise typer.BadParameter(f"--tokenizer is for a shard folder, which holds a {MANIFEST}; {target} is "
                                 f"{'a folder without one' if folder.is_dir() else 'no folder'}")
    if verify:
        raise typer.BadParameter(f"--verify is for a shard folder; {target} is not one")
    tok = _load_tokenizer(target, pattern, special_ids)
    if text is not None:
        if report or compare or corpus:
            raise typer.BadParameter("--text shows one text; --report, --compare and --corpus describe the tokenizer")
        from ..inputs.documents import read_text

        ids = tok.encode(read_text("-") if text == "-" else text, allowed_special="all")
        return render.text_view(tok, ids, as_json)
    from ..report import tokenizer_figures

    others = {str(path): _load_tokenizer(path, None, None) for path in dict.fromkeys(compare or []) if str(path) != str(target)}
    figures = tokenizer_figures(tok, name=str(target), corpora=corpus or [], compare=others)
    if report:
        from ..report import tokenizer_page, write_report

        render.wrote(write_report(report, tokenizer_page(figures, {str(target): tok, **others})))
    if as_json:
        return render.print_json(figures)
    if not report:
        render.tokenizer_view(figures)


def _inspect_shards(folder: Path, tok, verify: bool, as_json: bool, report: Path | None) -> None:
    from ..report import shard_figures
    from ..shards import verify as verify_shards

    if verify:  # first: a changed shard is named as such before its ids are read
        problems = verify_shards(folder)
        if problems:
            raise BpecliError(f"{folder}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    info = shard_figures(folder, tokenizer=tok, workers=cpus())
    if verify:
        info["verified"] = True
    if report:
        from ..report import shards_page, write_report

        render.wrote(write_report(report, shards_page(info, tok)))
    if as_json:
        return render.print_json(info)
    if report:
        return
    render.shards_view(info, tok is not None, verify)


def bench(
    tokenizer: TokenizerOption,
    corpus: Annotated[str, typer.Argument(parser=named, help="A UTF-8 text file (documents split at special tokens), or .jsonl / .parquet (a document per record).", metavar="CORPUS")],
    against: Annotated[Optional[Peer], typer.Option(help="A peer built from the same ranks, timed in the same run.")] = None,
    workers: Annotated[int, whole_option(1, help="Processes for bpecli, threads for the peer.")] = 1,
    repeat: Annotated[int, whole_option(1, help="Runs of each; the median counts.")] = 3,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Time encoding and decoding of a corpus, beside a peer tokenizer with the same ranks.

    \b
    Examples:
      bpecli bench -t tok corpus.txt
      bpecli bench -t tok corpus.jsonl --against tiktoken --workers 4
    """
    from ..bench import bench as run_bench

    keep_freed_memory()  # as encode does
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    report = run_bench(tok, corpus, against=against.value if against else None, workers=workers, repeat=repeat)
    if as_json:
        return render.print_json(report)
    render.bench_view(report, workers, repeat, against is not None)


def _template_ends(tok, bos: int | None, eot: int | None, *, bos_given: bool, eot_given: bool) -> tuple[int | None, int | None]:
    """The bos and eot of shards: the tokens the tokenizer's template puts before and after a text
    (one each at most), where --bos and --eot are not given."""
    prefix, suffix = tok.template.prefix, tok.template.suffix
    for given, ids, flag, where in ((bos_given, prefix, "--bos", "before"), (eot_given, suffix, "--eot", "after")):
        if not given and len(ids) > 1:
            raise BpecliError(f"the tokenizer's template puts {len(ids)} tokens {where} each text, and a shard run "
                              f"takes one {flag}: give {flag}, or --no-add-special-tokens")
    return (bos if bos_given or not prefix else prefix[0]), (eot if eot_given or not suffix else suffix[0])


def _no_file(name: str, typed: bool, hint: str) -> None:
    """An input that names no file but looks typed for the command to read from stdin (typed): an
    error with hint, which says how to pipe it in."""
    import os

    from ..errors import InputError
    from ..inputs.sources import is_uri

    if typed and name != "-" and not is_uri(name) and not os.path.lexists(name):
        raise InputError(f"{name[:40]}: no such file; {hint}")


def _quoted(text) -> str:
    """text as a shell word."""
    import shlex

    return shlex.quote(str(text))


def _load_tokenizer(path: str | Path, pattern: str | None, special_ids: list[str] | None):
    """The tokenizer at path, with --pattern and the special tokens of --special-ids TOKEN=ID."""
    from ..inputs.documents import parse_id, shown

    specials = None
    if special_ids:
        specials = {}
        for item in special_ids:
            token, _, number = item.rpartition("=")
            rank = parse_id(number)
            if not token or rank is None:
                raise BpecliError(f"--special-ids {shown(item, 60)}: expected TOKEN=ID with ID in ASCII digits, "
                                  "e.g. '<|endoftext|>=100257'")
            specials[token] = rank
    return load(path, pattern=pattern, special_tokens=specials)
