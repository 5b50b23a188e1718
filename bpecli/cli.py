"""The bpecli command: parse arguments, call one library function, render the result."""

from __future__ import annotations

import errno
import json
import os
import re
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from typer.core import TyperCommand
from typer.main import get_command_name

from .errors import BpecliError


class _Command(TyperCommand):
    """Turns every way a command can fail into one line on stderr and a documented exit status:
    1 for an error, 130 for Ctrl-C, 143 for SIGTERM, 0 when the reader of stdout left early."""

    def invoke(self, ctx):
        try:
            _load_numpy_within_limit()
            return super().invoke(ctx)
        except BpecliError as e:
            if _ran_out_of_memory(e):  # pyarrow's ArrowMemoryError, said as an input it cannot read
                _out_of_memory(ctx)
            _fail(f"bpecli: error: {e}", 1)
        except Terminated:  # finished shards stay for a rerun to keep; workers end quietly
            _fail("bpecli: terminated", 143)
        except KeyboardInterrupt:
            _fail("bpecli: interrupted", 130)
        except BrokenPipeError:  # `bpecli encode ... | head`: the reader left, nothing is wrong
            _silence_stdout()
            raise typer.Exit(0) from None
        except OSError as e:  # a full stdout (>/dev/full), a file that vanished: say which
            _silence_stdout()
            if e.errno == errno.ENOMEM:  # an mmap, a fork
                _out_of_memory(ctx)
            where = f" ({e.filename})" if e.filename else ""
            _fail(f"bpecli: error: {e.strerror or e}{where}", 1)
        except MemoryError:
            _out_of_memory(ctx)
        except ImportError as e:  # a library that no longer fits in memory, or a broken install
            if _MAPPING_FAILED.search(str(e)):
                _out_of_memory(ctx)
            _fail(f"bpecli: error: cannot load {e.name or 'a module'} ({e}); reinstall bpecli and its dependencies", 1)
        except RuntimeError as e:
            if "can't start new thread" not in str(e):
                raise
            _out_of_memory(ctx)


def _ran_out_of_memory(error: BaseException) -> bool:
    """Whether an error was raised while handling a MemoryError (its context, even if hidden)."""
    seen = 0
    context = error.__context__
    while context is not None and seen < 20:
        if isinstance(context, MemoryError):
            return True
        context, seen = context.__context__, seen + 1
    return False


# What the dynamic loader says when a library finds no memory to be mapped into
_MAPPING_FAILED = re.compile(r"failed to map segment|cannot allocate memory|cannot map zero-fill pages", re.IGNORECASE)


def _memory_limit() -> tuple[int, str] | None:
    """(the bytes of memory a process may map, the ulimit option that sets them), if limited."""
    import resource

    limits = [(resource.getrlimit(kind)[0], option) for kind, option in ((resource.RLIMIT_AS, "-v"), (resource.RLIMIT_DATA, "-d"))]
    finite = [limit for limit in limits if limit[0] != resource.RLIM_INFINITY]
    return min(finite) if finite else None


def _out_of_memory(ctx) -> NoReturn:
    """Say that the run found no memory: the limit when one is set (fewer workers would not help:
    each process has the limit to itself), else what takes less. The command's cleanup has run; a
    process then leaves at once, without the libraries' own exit: pyarrow's allocator (mimalloc),
    once out of memory, crashed it (SIGSEGV after the line, at ulimit -v 320000)."""
    limited = _memory_limit()
    if limited is not None:
        limit, option = limited
        line = (f"bpecli: error: out of memory within the limit of {limit >> 20:,} MB a process (ulimit {option} {limit >> 10}); "
                f"raise it: a bpecli process takes {NEEDS_MB[0]} to {NEEDS_MB[1]} MB (Parquet the most), more for long documents")
    else:
        workers = ctx.params.get("workers", 1) > 1 and (ctx.info_name != "encode" or ctx.params.get("out") is not None)
        line = "bpecli: error: out of memory; use " + ("fewer --workers or " if workers else "") + "smaller inputs"
    if not _AS_PROCESS["main"]:  # called in a test's process, not bpecli's own
        _fail(line, 1)
    _say(line)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(1)


_AS_PROCESS = {"main": False}  # set by main(): the process is bpecli's own


# The address space a bpecli process takes, with numpy and pyarrow loaded and their threads: the
# one-liner, `encode --out` and `train` of 3 MB of .txt, .gz or .jsonl run in ulimit -v 300000 to
# 400000; `encode --out` of .parquet needs 700000 (pyarrow's threads reserve address space).
NEEDS_MB = (300, 700)


# Address space the forked check keeps free beyond what numpy took (see _load_numpy_within_limit)
_SPARE_MB = 64


def _load_numpy_within_limit() -> None:
    """Under a memory limit, load numpy now, while the command has taken no memory yet, and first
    in a forked child to see that it loads: OpenBLAS, which numpy loads, ends a process it cannot
    allocate for with exit(1) and a line of its own, before Python can say a word. (Without a
    limit nothing happens here: numpy is loaded where it is needed, if it is.)"""
    if "numpy" in sys.modules or _memory_limit() is None or not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            import mmap

            import numpy  # noqa: F401

            # and room to spare: glibc reserves 64 MB for a thread's first malloc, and near the
            # limit OpenBLAS's own allocation may find less than it did here
            mmap.mmap(-1, _SPARE_MB << 20).close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise MemoryError
    import numpy  # noqa: F401


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main process so that cleanup runs as it does for Ctrl-C."""


def _on_sigterm(signum, frame):
    raise Terminated


# Seconds a SIGTERM waits for the main thread to clean up before the process ends anyway.
TERMINATE_GRACE = 5.0


def _watch_signals() -> None:
    """Take SIGTERM and Ctrl-C in a thread of their own (they are blocked in every other): it
    raises them in the main thread, which cleans up as soon as it runs Python again, and ends the
    process itself if the main thread stays held in C code (pyarrow opening a FIFO no one writes,
    a stalled network read) past TERMINATE_GRACE. Shards stay safe either way: each is recorded
    before its final name appears."""
    import _thread
    import signal
    import threading
    import time

    wanted = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)

    def watch() -> None:
        received = signal.sigwait(wanted)
        _thread.interrupt_main(signal.Signals(received))
        time.sleep(TERMINATE_GRACE)
        _say("bpecli: terminated" if received == signal.SIGTERM else "bpecli: interrupted")
        os._exit(143 if received == signal.SIGTERM else 130)

    try:
        threading.Thread(target=watch, name="bpecli-signals", daemon=True).start()
    except RuntimeError:  # no memory for a thread: the main thread takes the signals itself
        signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)


def _fail(message: str, status: int):
    _say(message)
    raise typer.Exit(status) from None


def _say(message: str) -> None:
    try:
        typer.echo(message, err=True)
    except (OSError, ValueError, AttributeError):  # stderr closed too: the status says it
        pass


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass


def _stdout():
    """The binary stdout, or an error when the shell closed it (`>&-`). A failed write names it."""
    if _STREAMS_CLOSED["stdout"]:
        raise BpecliError("standard output is closed; redirect it to a file (> out.txt) or a pipe")
    return _Named(sys.stdout.buffer)


_STDOUT = "standard output"


class _Named:
    """A stream whose failed writes say which stream it is (an OSError with filename _STDOUT)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, data):
        return self._named(self.stream.write, data)

    def flush(self) -> None:
        self._named(self.stream.flush)

    def __getattr__(self, name: str):  # the rest (isatty, encoding, fileno...) as the stream has it
        return getattr(self.stream, name)

    @staticmethod
    def _named(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:  # the reader left: not an error (see _Command.invoke)
            raise
        except OSError as e:
            raise OSError(e.errno, e.strerror, _STDOUT) from None


_STREAMS_CLOSED = {"stdout": False}


_APP = dict(
    help="Train byte-level BPE tokenizers and turn corpora into token ids and shards.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion for bash, zsh, fish and PowerShell
    pretty_exceptions_enable=False,
)
app = typer.Typer(**_APP)  # type: ignore[arg-type]
command = app.command(cls=_Command)


def _app_for(args: list[str]) -> typer.Typer:
    """app, or, when args start with a command's name, an app of that command alone: typer reads
    every command's signature at each start (about 50 ms for all of them), and a one-liner runs one."""
    for info in app.registered_commands:
        if args[:1] == [info.name or get_command_name(info.callback.__name__)]:  # type: ignore[union-attr]
            alone = typer.Typer(**_APP)  # type: ignore[arg-type]
            alone.registered_callback, alone.registered_commands = app.registered_callback, [info]
            return alone
    return app


def _print_version(asked: bool) -> None:
    if asked:
        from . import __version__

        typer.echo(f"bpecli {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Train byte-level BPE tokenizers and turn corpora into token ids and shards."""


class Errors(str, Enum):
    strict = "strict"
    replace = "replace"  # type: ignore[assignment]  # str.replace: the member wins, as typer reads it


class Format(str, Enum):
    ids = "ids"
    tokens = "tokens"
    json = "json"
    count = "count"  # type: ignore[assignment]


class Special(str, Enum):
    all = "all"
    none = "none"


def _cpus() -> int:
    from .executor import available_cpus

    return available_cpus()


def _progress(quiet: bool):
    """The progress bars a command asks the library for: tqdm's on a terminal, plain lines in a log
    (a CI job, stderr to a file), none with --quiet."""
    if quiet:
        return None
    if sys.stderr.isatty():
        from tqdm import tqdm

        return lambda description, total, unit: tqdm(total=total, unit=unit, unit_scale=unit == "B", desc=description)
    return _PlainProgress


class _PlainProgress:
    """Progress as plain lines on stderr, one every EVERY seconds and one at the end: no carriage
    returns or escape codes for a log to trip over.

    Example: "bpecli encoding: 12.6 of 41.8 MB (30%), 5 s, 2.5 MB/s, 1,234,567 tokens/s"
    """

    EVERY = 5.0

    def __init__(self, description: str, total: int, unit: str):
        import time

        self.description, self.total, self.unit, self.done, self.extra = description, total, unit, 0, ""
        self.clock = time.monotonic
        self.started = self.said = self.clock()

    def update(self, n: int) -> None:
        self.done += n
        if self.clock() - self.said >= self.EVERY:
            self._say()

    def set_postfix_str(self, text: str) -> None:
        self.extra = text

    def close(self) -> None:
        self._say()

    def abandon(self) -> None:
        """The work failed: its error is the last line, not a progress line."""

    def _say(self) -> None:
        self.said = self.clock()
        seconds = max(self.said - self.started, 1e-9)
        if self.unit == "B":
            scale, name = (1e6, "MB") if self.total >= 1e6 else (1e3, "kB")
            amount = f"{self.done / scale:,.1f} of {self.total / scale:,.1f} {name}"
            rate = f"{self.done / scale / seconds:,.1f} {name}/s"
        else:
            amount, rate = f"{self.done:,} of {self.total:,} {self.unit}s", f"{self.done / seconds:,.0f} {self.unit}s/s"
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        extra = f", {self.extra}" if self.extra else ""
        try:
            print(f"bpecli {self.description}: {amount}{share}, {seconds:.0f} s, {rate}{extra}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr closed: progress is not worth failing for
            pass


TokenizerOption = Annotated[
    Path, typer.Option("--tokenizer", "-t", help="A bpecli folder, vocab.json, tokenizer.json or .tiktoken file.")
]
SchedulerOption = Annotated[Optional[str], typer.Option(
    envvar="BPECLI_SCHEDULER", show_envvar=False,
    help="Run the workers on a Dask cluster: its scheduler's address (tcp://host:8786) or scheduler file; "
         "also BPECLI_SCHEDULER. Inputs must be reachable from the workers. [default: this machine]")]
PatternOption = Annotated[
    Optional[str], typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex (for .tiktoken files).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="A machine-readable result on stdout.")]
SpecialIdsOption = Annotated[
    Optional[list[str]], typer.Option("--special-ids", help="TOKEN=ID, repeatable (for .tiktoken files).")
]


def _load_tokenizer(path: Path, pattern: str | None, special_ids: list[str] | None):
    from .files import load

    specials = None
    if special_ids:
        specials = {}
        for item in special_ids:
            token, _, number = item.rpartition("=")
            if not token or not number.isdigit():
                raise BpecliError(f"--special-ids {item!r}: expected TOKEN=ID, e.g. '<|endoftext|>=100257'")
            specials[token] = int(number)
    return load(path, pattern=pattern, special_tokens=specials)


@command
def train(
    inputs: Annotated[list[str], typer.Argument(help="Text (.txt), .jsonl, .parquet, .gz/.zst/.bz2 files; - reads stdin.", metavar="INPUT...")],
    vocab_size: Annotated[int, typer.Option(min=256, help="Bytes + merges + special tokens.")],
    out: Annotated[Path, typer.Option(help="Folder to write the tokenizer files into.")],
    special: Annotated[list[str], typer.Option(help="A special token, repeatable; it separates documents.")] = [],
    pattern: Annotated[str, typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex.")] = "gpt2",
    workers: Annotated[int, typer.Option(min=1, help="Processes that count pre-tokens (at most the CPUs this process may use).")] = _cpus(),
    scheduler: SchedulerOption = None,
    normalize: Annotated[list[str], typer.Option(help="Normalize text first: nfc, nfd, nfkc, nfkd, lowercase (repeatable or comma-separated; in order). Encode applies it too.")] = [],
    min_frequency: Annotated[int, typer.Option(min=0, help="Stop when the best pair is rarer than this.")] = 0,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out folder.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress (bars on a terminal, lines in a log).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="A summary on stdout as JSON.")] = False,
) -> None:
    """Train a byte-level BPE tokenizer and write vocab.json, merges.txt, tokenizer.json,
    tokenizer.tiktoken and bpecli.json into --out."""
    from .corpus import check_apart, streams_spooled
    from .files import check_writable
    from .trainer import train as train_tokenizer

    check_apart(out, inputs)
    check_writable(out, force=force)  # before the long count, not after it
    with streams_spooled(inputs) as pairs:
        tokenizer = train_tokenizer(
            pairs,
            text_column=text_column,
            vocab_size=vocab_size,
            special_tokens=special,
            pattern=pattern,
            workers=workers,
            scheduler=scheduler,
            normalize=normalize,
            min_frequency=min_frequency,
            errors=errors.value,
            progress=_progress(quiet),
        )
    tokenizer.save(out, force=force)
    if tokenizer.vocab_size < vocab_size:  # said even with --quiet: the result is not what was asked
        why = f"no pair occurred {min_frequency} times or more" if min_frequency > 1 else "the corpus ran out of pairs"
        typer.echo(f"bpecli: note: stopped after {len(tokenizer.merges):,} merges: {why}; "
                   f"the vocabulary has {tokenizer.vocab_size:,} tokens, not {vocab_size:,}", err=True)
    if as_json:
        from .tokenizer import describe

        info = describe(tokenizer)
        _print_json({"out": str(out), "vocab_size": tokenizer.vocab_size, "vocab_size_asked": vocab_size,
                     "merges": len(tokenizer.merges), "special_tokens": info["special_tokens"], "pattern": info["pattern"],
                     "normalize": info["normalize"],
                     "files": sorted(p.name for p in out.iterdir())})
    elif not quiet:
        typer.echo(f"trained {tokenizer.vocab_size} tokens ({len(tokenizer.merges)} merges) into {out}", err=True)
    if tokenizer.normalize and not quiet:
        typer.echo(f"bpecli: note: {', '.join(tokenizer.normalize)} is in tokenizer.json and bpecli.json; tokenizer.tiktoken "
                   "and vocab.json/merges.txt cannot say it: normalize text yourself before tiktoken encodes it", err=True)


class ShardFormat(str, Enum):
    npy = "npy"
    llmc = "llmc"
    nanogpt = "nanogpt"


class Dtype(str, Enum):
    auto = "auto"
    uint16 = "uint16"
    uint32 = "uint32"


@command
def encode(
    tokenizer: TokenizerOption,
    inputs: Annotated[Optional[list[str]], typer.Argument(help="Text files (.txt; with --out also .jsonl, .parquet, .gz/.zst/.bz2); - or nothing reads stdin.", metavar="[INPUT...]")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="ids, tokens, json or count.")] = Format.ids,
    lines: Annotated[bool, typer.Option("--lines", help="Encode each line on its own, one output line each.")] = False,
    special: Annotated[Special, typer.Option(help="all: special tokens in the text become their ids; none: plain text.")] = Special.all,
    out: Annotated[Optional[Path], typer.Option(help="Write token shards and manifest.json into this folder.")] = None,
    shard_tokens: Annotated[int, typer.Option(min=1, help="Tokens per shard (the last one holds the rest).")] = 100_000_000,
    workers: Annotated[int, typer.Option(min=1, help="Processes that encode, with --out (at most the CPUs this process may use).")] = _cpus(),
    scheduler: SchedulerOption = None,
    eot: Annotated[Optional[str], typer.Option(help="Token written after every document: a special token, an id, or none. [default: <|endoftext|> if the tokenizer has it]")] = None,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    dtype: Annotated[Dtype, typer.Option(help="Shard dtype: auto is uint16 when every id fits, else uint32.")] = Dtype.auto,
    shard_format: Annotated[ShardFormat, typer.Option(help="npy: .npy files; llmc: llm.c's .bin (256 int32 header: magic, version, token count); nanogpt: one raw train.bin (and val.bin).")] = ShardFormat.npy,
    bos: Annotated[Optional[str], typer.Option(help="Token written before every document: a special token or an id. [default: none]")] = None,
    val_fraction: Annotated[Optional[float], typer.Option(help="Put about this fraction of the documents (chosen by a hash of each one's text) into val_* shards, the rest into train_*.")] = None,
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8 input: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Rebuild --out even if it holds a finished or other run.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no summary.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --out: the summary on stdout as JSON.")] = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Encode text to token ids, printed on one line per input (or per line with --lines);
    with --out, encode a corpus into .npy shards (one document after another, each followed by --eot)."""
    from .executor import keep_freed_memory

    keep_freed_memory()  # the command owns its process, as the workers own theirs
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if out is not None:
        return _encode_to_shards(tok, inputs or ["-"], out, shard_tokens, workers, scheduler, eot, bos, val_fraction,
                                 text_column, dtype, errors, force, quiet, as_json, shard_format)
    from .corpus import ERRORS_HINT, read_text

    allow_special = special is Special.all
    stdout = _stdout()
    for name in inputs or ["-"]:
        text = read_text(name, errors=errors.value, hint=ERRORS_HINT)
        units = text.split("\n") if lines else [text]
        if lines and text.endswith("\n"):
            units.pop()
        for number, unit in enumerate(units, 1):
            ids = tok.encode(unit, allowed_special="all") if allow_special else tok.encode_ordinary(unit)
            stdout.write((_render_ids(tok, ids, format, name, number if lines else None) + "\n").encode())
    stdout.flush()


def _encode_to_shards(tok, inputs, out, shard_tokens, workers, scheduler, eot, bos, val_fraction, text_column, dtype,
                      errors, force, quiet, as_json, shard_format) -> None:
    from .corpus import streams_spooled
    from .shards import resolve_eot, resolve_token, write_shards

    eot_id, bos_id = resolve_eot(tok, eot), resolve_token(tok, bos, "--bos")
    with streams_spooled(inputs) as pairs:
        run = write_shards(
            tok, pairs, out, shard_tokens=shard_tokens, workers=workers, scheduler=scheduler, eot=eot_id, text_column=text_column,
            dtype=dtype.value, errors=errors.value, force=force, shard_format=shard_format.value, bos=bos_id,
            val_fraction=val_fraction, progress=_progress(quiet),
        )
    m = run.manifest
    if as_json:
        return _print_json({
            "out": str(out), "status": run.status, "total_tokens": m["total_tokens"], "total_documents": m["total_documents"],
            "shards": len(m["shards"]), "dtype": m["dtype"], "kept_shards": run.kept_shards, "seconds": round(run.seconds, 3),
            "bytes_read": run.n_bytes, "mb_per_s": round(run.n_bytes / 1e6 / max(run.seconds, 1e-9), 2),
            **({"splits": m["splits"]} if "splits" in m else {}),
        })
    if quiet:
        return
    if run.status == "complete":
        typer.echo(f"{out} is complete already ({m['total_tokens']:,} tokens in {len(m['shards'])} shards); --force rebuilds it", err=True)
        return
    resumed = f", {run.kept_shards} kept from an interrupted run" if run.kept_shards else ""
    if "splits" in m:
        resumed += "; " + ", ".join(f"{name} {split['tokens']:,} tokens ({split['documents']:,} documents)"
                                    for name, split in m["splits"].items())
    typer.echo(
        f"wrote {m['total_tokens']:,} tokens ({m['total_documents']:,} documents, {m['dtype']}) in "
        f"{len(m['shards'])} shards to {out}{resumed}; {run.n_bytes / 1e6 / max(run.seconds, 1e-9):.1f} MB/s",
        err=True,
    )


def _render_ids(tok, ids: list[int], format: Format, name: str, line: int | None) -> str:
    if format is Format.count:
        return str(len(ids))
    if format is Format.tokens:
        from .files import token_to_str

        return " ".join(token_to_str(tok.decoder[i]) if i not in tok.special_ids else tok.special_ids[i] for i in ids)
    if format is Format.json:
        where = {"input": name} if line is None else {"input": name, "line": line}
        return json.dumps({**where, "ids": ids, "count": len(ids)})
    return " ".join(map(str, ids))


@command
def decode(
    tokenizer: TokenizerOption,
    input: Annotated[str, typer.Argument(help="Whitespace-separated ids, or a shard (.npy or llm.c .bin); - reads stdin.")] = "-",
    errors: Annotated[Errors, typer.Option(help="Ids that make invalid UTF-8: U+FFFD (replace) or an error (strict).")] = Errors.replace,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Decode token ids back to text, written with nothing added."""
    from .corpus import read_ids

    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if input.endswith((".npy", ".bin")):
        from .shards import read_shard

        ids: Any = read_shard(input)
    else:
        ids = read_ids(input)
    text = tok.decode(ids, errors=errors.value)
    stdout = _stdout()
    stdout.write(text.encode("utf-8", errors="surrogateescape"))
    stdout.flush()


class Peer(str, Enum):
    tiktoken = "tiktoken"
    tokenizers = "tokenizers"




@command
def inspect(
    target: Annotated[Path, typer.Argument(help="A tokenizer (any format encode takes) or a shard folder.")],
    text: Annotated[Optional[str], typer.Option(help="Show how this text splits; - reads stdin.")] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Shard folder: re-hash every shard against the manifest.")] = False,
    compare: Annotated[Optional[Path], typer.Option(help="A second tokenizer to set beside this one on --corpus.")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Text file for bytes per token (with --compare or alone).")] = None,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Show a tokenizer, how a text splits into tokens, or a shard folder."""
    from .shards import JOURNAL, MANIFEST

    if target.is_dir() and ((target / MANIFEST).exists() or (target / JOURNAL).exists()):
        return _inspect_shards(target, verify, as_json)
    tok = _load_tokenizer(target, pattern, special_ids)
    if text is not None:
        from .corpus import read_text

        return _inspect_text(tok, read_text("-") if text == "-" else text, as_json)
    from .tokenizer import describe

    info = describe(tok)
    if corpus:
        from .corpus import read_text

        sample = read_text(corpus)
        sides = {str(target): tok}
        if compare:
            sides[str(compare)] = _load_tokenizer(compare, None, None)
        n_bytes = len(sample.encode("utf-8"))
        info["bytes_per_token"] = {name: n_bytes / max(1, len(t.encode(sample, allowed_special="all"))) for name, t in sides.items()}
    if as_json:
        return _print_json(info)
    _render_tokenizer(info)


def _print_json(document) -> None:
    stdout = _stdout()
    stdout.write((json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode())
    stdout.flush()


def _console():
    from rich.console import Console

    _stdout()  # a closed stdout is an error, not output thrown away
    return Console(file=_Named(sys.stdout), width=min(80, Console().width), highlight=False)


def _table(columns: list[str], rows, title: str | None = None):
    """A rich table; a column name starting with ">" is right-aligned. Long cells end in "…"."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name.lstrip(">"), justify="right" if name.startswith(">") else "left",
                         overflow="ellipsis", no_wrap=True, max_width=56)
    for row in rows:
        table.add_row(*row)
    return table


def _render_tokenizer(info: dict) -> None:
    console = _console()
    console.print(f"[bold]vocab size[/] {info['vocab_size']:,}  ({info['ordinary_tokens']:,} ordinary, "
                  f"{info['merges']:,} merges, {len(info['special_tokens'])} special)")
    pattern = info["pattern"]
    console.print(f"[bold]pattern[/] {pattern if len(pattern) < 66 else pattern[:63] + '...'}", markup=True)
    if info["normalize"]:
        console.print(f"[bold]normalize[/] {', '.join(info['normalize'])}", markup=True)
    for token, rank in info["special_tokens"].items():
        console.print(f"[bold]special[/] {token} = {rank}", markup=True)
    rows = [(str(r["id"]), str(r["bytes"]), repr(r["token"])) for r in info["longest_tokens"]]
    console.print(_table([">id", ">bytes", "token"], rows, title="longest tokens"))
    most = max(info["byte_lengths"].values())
    console.print("[bold]tokens by byte length[/]")
    for length, count in info["byte_lengths"].items():
        console.print(f"{length:>4} {count:>7,} " + "#" * max(1, round(50 * count / most)), markup=False)
    for title in ("first_merges", "last_merges"):
        merges = "  ".join(f"{a!r}+{b!r}" for a, b in info[title][:5])
        console.print(f"[bold]{title.replace('_', ' ')}[/] {merges}", overflow="fold")
    for name, value in info.get("bytes_per_token", {}).items():
        console.print(f"[bold]bytes per token[/] {value:.3f}  {name}", overflow="fold")


def _inspect_text(tok, text: str, as_json: bool) -> None:
    from .tokenizer import render_token

    ids = tok.encode(text, allowed_special="all")
    tokens = [render_token(tok.decoder[i]) for i in ids]
    if as_json:
        return _print_json({"count": len(ids), "ids": ids, "tokens": tokens})
    if not sys.stdout.isatty():
        stdout = _stdout()
        stdout.write("".join(f"{i}\t{token}\n" for i, token in zip(ids, tokens)).encode())
        stdout.write(f"{len(ids)} tokens\n".encode())
        stdout.flush()
        return
    from rich.text import Text

    colours = ["black on cyan", "black on yellow", "black on green", "black on magenta"]
    console = _console()
    console.print(Text.assemble(*((t, colours[n % 4]) for n, t in enumerate(tokens))))
    console.print(Text.assemble(*((f"{i} ", colours[n % 4].split()[-1]) for n, i in enumerate(ids))))
    console.print(f"{len(ids)} tokens")


def _inspect_shards(folder: Path, verify: bool, as_json: bool) -> None:
    from .shards import describe_shards, verify as verify_shards

    info = describe_shards(folder)
    if verify:
        problems = verify_shards(folder)
        info["verified"] = not problems
        if problems:
            raise BpecliError(f"{folder}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    if as_json:
        return _print_json(info)
    from .shards import UNBOUNDED

    console = _console()
    console.print(f"[bold]{info['total_tokens']:,}[/] tokens, [bold]{info['total_documents']:,}[/] documents, "
                  f"{info['dtype']}, {len(info['shards'])} shards"
                  + (f" of up to {info['shard_tokens']:,} tokens" if info["shard_tokens"] < UNBOUNDED else ", one per split"))
    rows = [(s["file"], f"{s['tokens']:,}", f"{s['documents']:,}", s["sha256"][:16]) for s in info["shards"]]
    console.print(_table(["file", ">tokens", ">documents", "sha256"], rows))
    console.print("[bold]most frequent ids[/] " + "  ".join(f"{t['id']}×{t['count']:,}" for t in info["most_frequent"]), overflow="fold")
    if verify:
        console.print("verified: every shard matches its sha256 in the manifest")


@command
def bench(
    tokenizer: TokenizerOption,
    corpus: Annotated[str, typer.Argument(help="A UTF-8 text file; documents split at special tokens.")],
    against: Annotated[Optional[Peer], typer.Option(help="A peer built from the same ranks, timed in the same run.")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Processes for bpecli, threads for the peer.")] = 1,
    repeat: Annotated[int, typer.Option(min=1, help="Runs of each; the median counts.")] = 3,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Time encoding and decoding of a corpus, beside a peer tokenizer with the same ranks."""
    from .bench import bench as run_bench
    from .executor import keep_freed_memory

    keep_freed_memory()  # as encode does
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    report = run_bench(tok, corpus, against=against.value if against else None, workers=workers, repeat=repeat)
    if as_json:
        return _print_json(report)
    console = _console()
    console.print(f"{report['bytes'] / 1e6:.1f} MB, {report['documents']:,} documents, {workers} worker(s), "
                  f"median of {repeat}; peak memory {report['peak_memory_mib']:.0f} MiB")
    rows = [
        (name, f"{r['encode_mb_per_s']:.1f}", f"{r['encode_tokens_per_s']:,.0f}", f"{r['decode_mb_per_s']:.1f}", f"{r['tokens']:,}")
        for name, r in ((name, report[name]) for name in ["bpecli"] + ([report["peer"]] if against else []))
    ]
    console.print(_table([">", ">encode MB/s", ">tokens/s", ">decode MB/s", ">tokens"], rows))
    if against:
        console.print(f"ratio bpecli / {report['peer']} encode throughput: [bold]{report['ratio']:.2f}x[/]")
        if report["identical"]:
            console.print("ids identical")
        else:
            console.print(f"ids differ: first at {report['first_difference']}", overflow="fold")


def main() -> None:
    import signal

    # `cmd >&-` or `<&-` leave None in sys.stdout / sys.stdin: stand-ins keep click working, and the
    # commands say what is wrong when they need the real one (corpus.read_bytes for stdin)
    if sys.stdout is None:
        _STREAMS_CLOSED["stdout"] = True
        sys.stdout = open(os.devnull, "w")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    # numpy's OpenBLAS starts a thread per CPU at import, and reserves memory for each, which
    # bpecli (no linear algebra) never uses: under a memory limit their start fails, out loud
    _AS_PROCESS["main"] = True
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if _memory_limit() is not None:  # nor pyarrow's jemalloc a thread whose start fails, out loud
        os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    signal.signal(signal.SIGTERM, _on_sigterm)
    _watch_signals()
    try:
        status = _app_for(sys.argv[1:])(standalone_mode=False)
        sys.stdout.flush()  # here, where a full stdout is still one line (--version, --help >/dev/full)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except OSError as e:  # only stdout is written out here (--help, --version)
        _silence_stdout()
        _say(f"bpecli: error: {e.strerror or e} ({e.filename or _STDOUT})")
        sys.exit(1)
    except Exception as e:  # click's usage errors (a bad option value...): one line, status 2 as click's
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        command = getattr(getattr(e, "ctx", None), "command_path", None) or "bpecli"
        if type(e).__name__ == "NoArgsIsHelpError":  # `bpecli` alone: the help, as click shows it
            e.show()  # type: ignore[attr-defined]
        else:
            typer.echo(f"{command}: error: {e.format_message()} (see {command} --help)", err=True)
        sys.exit(e.exit_code)
    sys.exit(status or 0)
