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

from ..errors import BpecliError


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
            _fail(f"bpecli: error: {e.for_cli(FLAGS)}", 1)
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


# The flags of the library's arguments whose names differ from them (errors.render_for_cli): the
# rest are "--" and the argument's name with dashes.
FLAGS = {"special_tokens": "--special", "tokenizer": "-t", "out_dir": "--out"}


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
    from ..corpus import redact

    _say(redact(message))  # an input's credentials never reach a terminal or a log
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
        from .. import __version__

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
    from ..executor import available_cpus

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


def _whole(minimum: int):
    """The parser of a whole-number option: ASCII digits only (int() takes "٣" as 3), and a number
    too long to be a count is refused in one short line."""

    def parse(value: str | int) -> int:
        if isinstance(value, int):  # the default
            return value
        from ..corpus import parse_id, shown

        number = parse_id(value)
        if number is None:
            too_long = value.isascii() and value.isdigit()
            raise typer.BadParameter(f"{shown(value)} is {'too large' if too_long else 'not a whole number of ASCII digits'}")
        if number < minimum:
            raise typer.BadParameter(f"{number} is below {minimum}")
        return number

    parse.__name__ = "int range"
    return parse


def _whole_option(minimum: int, **kwargs):
    return typer.Option(parser=_whole(minimum), metavar=f"<int range> [x>={minimum}]", **kwargs)


_FRACTION = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)


def _fraction(value: str | float) -> float:
    """The parser of a fraction: ASCII digits, a point and an exponent only (float() also takes
    "٠.٥", "nan" and "1_0")."""
    if isinstance(value, float):
        return value
    if not _FRACTION.fullmatch(value):
        from ..corpus import shown

        raise typer.BadParameter(f"{shown(value)} is not a number such as 0.005")
    return float(value)


_fraction.__name__ = "float"


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
    from ..files import load

    specials = None
    if special_ids:
        specials = {}
        from ..corpus import parse_id, shown

        for item in special_ids:
            token, _, number = item.rpartition("=")
            rank = parse_id(number)
            if not token or rank is None:
                raise BpecliError(f"--special-ids {shown(item, 60)}: expected TOKEN=ID with ID in ASCII digits, "
                                  "e.g. '<|endoftext|>=100257'")
            specials[token] = rank
    return load(path, pattern=pattern, special_tokens=specials)


@command
def train(
    inputs: Annotated[list[str], typer.Argument(help="Text (.txt), .jsonl, .parquet, .gz/.zst/.bz2 files; - reads stdin.", metavar="INPUT...")],
    vocab_size: Annotated[int, _whole_option(256, help="Bytes + merges + special tokens.")],
    out: Annotated[Path, typer.Option(help="Folder to write the tokenizer files into.")],
    special: Annotated[list[str], typer.Option(help="A special token, repeatable; it separates documents.")] = [],
    pattern: Annotated[str, typer.Option(help="Pre-tokenizer: gpt2, cl100k, o200k or a regex.")] = "gpt2",
    workers: Annotated[int, _whole_option(1, help="Processes that count pre-tokens (at most the CPUs this process may use).")] = _cpus(),
    scheduler: SchedulerOption = None,
    normalize: Annotated[list[str], typer.Option(help="Normalize text first: nfc, nfd, nfkc, nfkd, lowercase (repeatable or comma-separated; in order). Encode applies it too.")] = [],
    min_frequency: Annotated[int, _whole_option(0, help="Stop when the best pair is rarer than this.")] = 0,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out folder.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress (bars on a terminal, lines in a log).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="A summary on stdout as JSON.")] = False,
) -> None:
    """Train a byte-level BPE tokenizer and write vocab.json, merges.txt, tokenizer.json,
    tokenizer.tiktoken and bpecli.json into --out."""
    from ..corpus import check_apart, streams_spooled
    from ..files import check_writable
    from ..trainer import train as train_tokenizer

    check_apart(out, inputs)
    check_writable(out, force=force)  # before the long count, not after it
    with streams_spooled(inputs, separators=special, errors=errors.value) as pairs:
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
        from ..tokenizer import describe

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
    inputs: Annotated[Optional[list[str]], typer.Argument(help="Text (.txt), .jsonl, .parquet, .gz/.zst/.bz2 files; - or nothing reads stdin. Without --out: a line of ids per text file, or per JSONL line or Parquet row.", metavar="[INPUT...]")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="ids, tokens, json or count.")] = Format.ids,
    lines: Annotated[bool, typer.Option("--lines", help="Encode each line of a text input on its own, one output line each (JSONL and Parquet give a line per record anyway).")] = False,
    special: Annotated[Special, typer.Option(help="all: special tokens in the text become their ids; none: plain text.")] = Special.all,
    out: Annotated[Optional[Path], typer.Option(help="Write token shards and manifest.json into this folder.")] = None,
    shard_tokens: Annotated[int, _whole_option(1, help="Tokens per shard (the last one holds the rest).")] = 100_000_000,
    workers: Annotated[int, _whole_option(1, help="Processes that encode, with --out (at most the CPUs this process may use).")] = _cpus(),
    scheduler: SchedulerOption = None,
    eot: Annotated[Optional[str], typer.Option(help="Token written after every document: a special token, an id, or none. [default: <|endoftext|> if the tokenizer has it]")] = None,
    text_column: Annotated[str, typer.Option(help="The text field of .jsonl and .parquet inputs.")] = "text",
    dtype: Annotated[Dtype, typer.Option(help="Shard dtype: auto is uint16 when every id fits, else uint32.")] = Dtype.auto,
    shard_format: Annotated[ShardFormat, typer.Option(help="npy: .npy files; llmc: llm.c's .bin (256 int32 header: magic, version, token count); nanogpt: one raw train.bin (and val.bin).")] = ShardFormat.npy,
    bos: Annotated[Optional[str], typer.Option(help="Token written before every document: a special token or an id. [default: none]")] = None,
    val_fraction: Annotated[Optional[float], typer.Option(parser=_fraction, help="Put about this fraction of the documents (chosen by a hash of each one's text) into val_* shards, the rest into train_*.")] = None,
    errors: Annotated[Errors, typer.Option(help="Invalid UTF-8 input: stop (strict) or use U+FFFD (replace).")] = Errors.strict,
    force: Annotated[bool, typer.Option("--force", help="Rebuild --out even if it holds a finished or other run.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no summary.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --out: the summary on stdout as JSON.")] = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Encode text to token ids, printed on one line per text input (or per line with --lines) and
    per JSONL line or Parquet row;
    with --out, encode a corpus into .npy shards (one document after another, each followed by --eot)."""
    from ..executor import keep_freed_memory

    keep_freed_memory()  # the command owns its process, as the workers own theirs
    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if out is not None:
        return _encode_to_shards(tok, inputs or ["-"], out, shard_tokens, workers, scheduler, eot, bos, val_fraction,
                                 text_column, dtype, errors, force, quiet, as_json, shard_format)
    from ..corpus import ERRORS_HINT, input_kind, read_records, read_text, reads_whole
    from ..pretokenize import safe_blocks

    allow_special = special is Special.all
    stdout = _stdout()
    for name in inputs or ["-"]:
        key: str | None
        if name != "-" and input_kind(name)[0] != "text":
            # JSONL and Parquet: the documents train and encode --out read, one line of ids for each
            # record (as tiktoken's encode_batch gives a list each), never the JSON syntax as text
            numbered: Any = read_records(name, text_column=text_column, errors=errors.value)
            key = "row" if input_kind(name)[0] == "parquet" else "line"
        elif reads_whole(name):
            text = read_text(name, errors=errors.value, hint=ERRORS_HINT)
            units = text.split("\n") if lines else [text]
            if lines and text.endswith("\n"):
                units.pop()
            numbered, key = enumerate(units, 1), "line" if lines else None
        elif lines:  # a large file (or a compressed one, or a URI) a part at a time
            numbered, key = enumerate(_lines_in_parts(name, errors.value), 1), "line"
        else:
            _encode_in_parts(tok, name, format, allow_special, errors.value, stdout)
            continue
        for number, unit in numbered:
            if len(unit) > _LONG_UNIT and _cuts_safely(tok, allow_special):  # written a block at a time
                where = {key: number} if key else {}
                _write_ids_line(tok, safe_blocks(unit, _LONG_UNIT), format, allow_special, name, where, stdout)
                continue
            ids = tok.encode(unit, allowed_special="all") if allow_special else tok.encode_ordinary(unit)
            stdout.write((_render_ids(tok, ids, format, name, number if key else None, key or "line") + "\n").encode())
    stdout.flush()


# A text or record longer than this is encoded and written a block at a time (a list of Python
# ints takes 36 bytes an id: a 20 MB record held 660 MB).
_LONG_UNIT = 1 << 22


def _cuts_safely(tok, allow_special: bool) -> bool:
    """Whether text cut at safe cuts encodes as the whole: a preset pattern, and no special token
    that a safe cut could fall inside (one holding a newline)."""
    from ..pretokenize import is_preset

    return is_preset(tok.pattern) and not (allow_special and any("\n" in t for t in tok.special_tokens))


def _lines_in_parts(name: str, errors: str):
    """The lines of a text input read a part at a time (parts cut before a newline)."""
    from ..corpus import text_parts

    last = None  # a part's last line, complete only once the next part (or the end) comes
    for index, text in enumerate(text_parts(name, separators=["\n"], errors=errors)):
        found = text.split("\n")
        if index:  # a part after the first starts with the newline that ended the last line
            yield last
            found = found[1:]
        yield from found[:-1]
        last = found[-1] if found else ""
    if last:  # (a text that ends in a newline ends in no line)
        yield last


def _encode_in_parts(tok, name: str, format: Format, allow_special: bool, errors: str, stdout) -> None:
    """The one line of ids of a text input too large to read whole, written a part at a time: parts
    are cut before a special token, or where a piece surely starts, so they encode as the whole."""
    from ..corpus import text_parts
    from ..pretokenize import SAFE_CUT

    separators = list(tok.special_tokens) if allow_special else []
    safe_cut = SAFE_CUT if _cuts_safely(tok, allow_special) else None
    texts = text_parts(name, separators=separators, safe_cut=safe_cut, errors=errors)
    _write_ids_line(tok, texts, format, allow_special, name, {}, stdout)


def _write_ids_line(tok, texts, format: Format, allow_special: bool, name: str, where: dict, stdout) -> None:
    """The line _render_ids makes of the ids of "".join(texts), written a text at a time (texts
    cut where they encode as the whole)."""
    from ..corpus import redact

    count, gap = 0, ""
    if format is Format.json:
        stdout.write((json.dumps({"input": redact(name), **where})[:-1] + ', "ids": [').encode())
    for text in texts:
        ids = tok.encode(text, allowed_special="all") if allow_special else tok.encode_ordinary(text)
        if ids and format is not Format.count:
            rendered = _render_ids(tok, ids, Format.tokens if format is Format.tokens else Format.ids, name, None)
            stdout.write((gap + (rendered.replace(" ", ", ") if format is Format.json else rendered)).encode())
            gap = ", " if format is Format.json else " "
        count += len(ids)
    ending = {Format.count: str(count), Format.json: f"], \"count\": {count}}}"}.get(format, "")
    stdout.write((ending + "\n").encode())


def _encode_to_shards(tok, inputs, out, shard_tokens, workers, scheduler, eot, bos, val_fraction, text_column, dtype,
                      errors, force, quiet, as_json, shard_format) -> None:
    from ..corpus import streams_spooled
    from ..pretokenize import document_separators
    from ..shards import resolve_eot, resolve_token, write_shards

    eot_id, bos_id = resolve_eot(tok, eot), resolve_token(tok, bos, "--bos")
    with streams_spooled(inputs, separators=document_separators(tok.special_tokens), errors=errors.value) as pairs:
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


def _render_ids(tok, ids: list[int], format: Format, name: str, line: int | None, key: str = "line") -> str:
    if format is Format.count:
        return str(len(ids))
    if format is Format.tokens:
        from ..files import token_to_str

        return " ".join(token_to_str(tok.decoder[i]) if i not in tok.special_ids else tok.special_ids[i] for i in ids)
    if format is Format.json:
        from ..corpus import redact

        where = {"input": redact(name)} if line is None else {"input": redact(name), key: line}
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
    from ..corpus import read_ids

    tok = _load_tokenizer(tokenizer, pattern, special_ids)
    if input.endswith((".npy", ".bin")):
        from ..shards import read_shard

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
    compare: Annotated[Optional[list[Path]], typer.Option(help="Another tokenizer to set beside this one (repeatable); on --corpus too.")] = None,
    corpus: Annotated[Optional[list[str]], typer.Option(help="Text, .jsonl or .parquet to measure bytes per token on (repeatable; large ones are sampled).")] = None,
    report: Annotated[Optional[Path], typer.Option(help="Write the figures as one self-contained HTML page to this file.")] = None,
    shard_tokenizer: Annotated[Optional[Path], typer.Option("--tokenizer", "-t", help="Shard folder: the tokenizer it was encoded with, to show tokens, not ids, and bytes per token.")] = None,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Show a tokenizer (beside others with --compare, on a --corpus), how a text splits into
    tokens, or a shard folder; --report draws the same figures in an HTML page."""
    from ..shards import JOURNAL, MANIFEST

    if target.is_dir() and ((target / MANIFEST).exists() or (target / JOURNAL).exists()):
        for given, option in ((text, "--text"), (compare, "--compare"), (corpus, "--corpus")):
            if given:
                raise typer.BadParameter(f"{option} is for a tokenizer; {target} is a shard folder")
        tok = _load_tokenizer(shard_tokenizer, pattern, special_ids) if shard_tokenizer else None
        return _inspect_shards(target, tok, verify, as_json, report)
    if shard_tokenizer:
        raise typer.BadParameter(f"--tokenizer is for a shard folder; {target} is the tokenizer itself")
    if verify:
        raise typer.BadParameter(f"--verify is for a shard folder; {target} is not one")
    tok = _load_tokenizer(target, pattern, special_ids)
    if text is not None:
        if report or compare or corpus:
            raise typer.BadParameter("--text shows one text; --report, --compare and --corpus describe the tokenizer")
        from ..corpus import read_text

        return _inspect_text(tok, read_text("-") if text == "-" else text, as_json)
    from ..report import tokenizer_figures

    others = {str(path): _load_tokenizer(path, None, None) for path in dict.fromkeys(compare or []) if str(path) != str(target)}
    figures = tokenizer_figures(tok, name=str(target), corpora=corpus or [], compare=others)
    if report:
        from ..report import tokenizer_page, write_report

        _wrote(write_report(report, tokenizer_page(figures, {str(target): tok, **others})))
    if as_json:
        return _print_json(figures)
    if not report:
        _render_tokenizer(figures)


def _wrote(path: Path) -> None:
    typer.echo(f"wrote {path} ({path.stat().st_size / 1e3:,.0f} kB)", err=True)


def _print_json(document) -> None:
    stdout = _stdout()
    # a file name that is not UTF-8 (its bytes kept as lone surrogates) is written as JSON's \udcff
    # escape, which json.loads and os.fsencode turn back into the very name
    stdout.write((json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace"))
    stdout.flush()


def _console():
    from rich.console import Console

    class Quiet(Console):
        def on_broken_pipe(self) -> None:  # rich's own exits with status 1
            self.quiet = True
            raise BrokenPipeError  # the reader left: _Command.invoke exits 0

    _stdout()  # a closed stdout is an error, not output thrown away
    return Quiet(file=_Named(sys.stdout), width=min(80, Console().width), highlight=False)


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


_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(value: float, top: float, width: int, log: bool = False) -> str:
    """A bar of block characters, in eighths of a column: value's share of top (log10 scale if log)."""
    import math

    if log:
        value, top = math.log10(max(value, 1)) + (value > 0), math.log10(max(top, 1)) + 1
    eighths = round(8 * width * value / top) if top > 0 else 0
    eighths = max(eighths, 1 if value > 0 else 0)
    return ("█" * (eighths // 8) + _EIGHTHS[eighths % 8]).rstrip()


def _bars(title: str, rows: list[tuple[str, float, str]], *, log: bool = False, width: int = 30, colour: str = "cyan"):
    """A bucketed bar chart as a rich table: a label, a bar, and the value as text, per row."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", box=None, show_header=False, padding=(0, 1), pad_edge=False)
    table.add_column(justify="right", max_width=22, no_wrap=True, overflow="ellipsis")
    table.add_column(width=width, no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    top = max((value for _, value, _ in rows), default=0)
    for label, value, shown in rows:
        table.add_row(label, Text(_bar(value, top, width, log), style=colour), shown)
    return table


# What render_token writes for what would not show: visible spaces and escapes, dimmed on a terminal.
_MARKERS = r"(\u2423+|(?:\\(?:[ntr]|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}))+)"


def _token(rendered: str) -> Any:
    """A rendered token (tokenizer.render_token) for the terminal, its markers dimmed."""
    import re

    from rich.text import Text

    text = Text()
    for n, run in enumerate(re.split(_MARKERS, rendered)):
        if run:
            text.append(run, style="dim" if n % 2 else "")
    return text


def _render_tokenizer(info: dict) -> None:
    from ..report.svg import number, percent

    console = _console()
    console.print(f"[bold]vocab size[/] {info['vocab_size']:,}  ({info['ordinary_tokens']:,} ordinary, "
                  f"{info['merges']:,} merges, {len(info['special_tokens'])} special)")
    pattern = info["pattern"]
    console.print(f"[bold]pattern[/] {pattern if len(pattern) < 66 else pattern[:63] + '...'}", markup=True)
    if info["normalize"]:
        console.print(f"[bold]normalize[/] {', '.join(info['normalize'])}", markup=True)
    for token, rank in info["special_tokens"].items():
        console.print(f"[bold]special[/] {token} = {rank}", markup=True)
    console.print()
    console.print(_bars("kinds of tokens (log scale)", [(k["kind"], k["tokens"], f"{k['tokens']:,} {percent(k['share']):>6}")
                                                        for k in info["kinds"]], log=True))
    console.print()
    from ..report.page import length_buckets

    console.print(_bars("tokens by length in bytes", [(label, count, f"{int(count):,}") for label, count in length_buckets(info["byte_lengths"])]))
    console.print()
    rows = [(str(r["id"]), str(r["bytes"]), _token(r["token"])) for r in info["longest_tokens"]]
    console.print(_table([">id", ">bytes", "token"], rows, title="longest tokens"))
    for title in ("first_merges", "last_merges"):
        line = _token("")
        for merge in info[title][:6]:
            line.append("  ")
            line.append_text(_token(merge["left"]))
            line.append("+", style="dim")
            line.append_text(_token(merge["right"]))
        console.print(_titled(title.replace("_", " "), line), overflow="ellipsis", no_wrap=True)
    if "bytes_per_token" not in info:
        return
    names = list(info["tokenizers"])
    short_names = _short_names(names)
    console.print()
    inputs = [c["input"] for c in info["corpus"]]
    sampled = sum(c["sample_bytes"] for c in info["corpus"])
    bars = [(short_names[n], info["bytes_per_token"][name], f"{info['bytes_per_token'][name]:.3f}") for n, name in enumerate(names)]
    console.print(_bars(f"bytes per token on {len(inputs)} input{'s' * (len(inputs) > 1)} ({sampled / 1e6:.1f} MB of text)", bars))
    if len(inputs) > 1:
        by_input = info["bytes_per_token_by_input"]
        console.print(_table(["input"] + [">" + n for n in short_names],
                             [[Path(i).name] + [f"{by_input[name][i]:.3f}" for name in names] for i in inputs],
                             title="bytes per token by input"))
    console.print()
    growth = info["growth"]
    sizes = sorted({p["vocab_size"] for name in names for p in growth[name]})
    table = _table([">vocab size"] + [">" + n for n in short_names], [
        [f"{size:,}"] + [next((f"{p['bytes_per_token']:.3f}" for p in growth[name] if p["vocab_size"] == size), "") for name in names]
        for size in sizes], title="bytes per token as the vocabulary grows (first merges only)")
    console.print(table)
    words = info["words"]
    console.print(f"[bold]common words[/] of the {words['words']:,} most common: " + "; ".join(
        f"{short_names[n]} keeps {words['whole'][name]:,} whole" for n, name in enumerate(names)), overflow="fold")
    if len(names) > 1 and words["examples"]:
        words_rows = [[_token(e["word"]), number(e["count"])] + [_joined(e["tokens"][name]) for name in names]
                      for e in words["examples"][:8]]
        console.print(_table(["word", ">count"] + short_names, words_rows, title=f"{words['split_differently']:,} of them split differently"))


def _titled(title: str, line):
    from rich.text import Text

    out = Text(title, style="bold")
    out.append_text(line)
    return out


def _joined(tokens: list[str]):
    from rich.text import Text

    out = Text()
    for n, token in enumerate(tokens):
        if n:
            out.append("|", style="dim")
        out.append_text(_token(token))
    return out


def _short_names(names: list[str]) -> list[str]:
    """Tokenizer paths as column titles: the file name, with its folder when names collide."""
    short = [Path(n).name for n in names]
    if len(set(short)) < len(short):
        short = [str(Path(Path(n).parent.name) / Path(n).name) for n in names]
    return short


def _inspect_text(tok, text: str, as_json: bool) -> None:
    from ..tokenizer import render_token

    ids = tok.encode(text, allowed_special="all")
    tokens = [tok.special_ids[i] if i in tok.special_ids else render_token(tok.decoder[i]) for i in ids]
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


def _inspect_shards(folder: Path, tok, verify: bool, as_json: bool, report: Path | None) -> None:
    from ..report import shard_figures
    from ..shards import verify as verify_shards

    if verify:  # first: a changed shard is named as such before its ids are read
        problems = verify_shards(folder)
        if problems:
            raise BpecliError(f"{folder}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    info = shard_figures(folder, tokenizer=tok, workers=_cpus())
    if verify:
        info["verified"] = True
    if report:
        from ..report import shards_page, write_report

        _wrote(write_report(report, shards_page(info, tok)))
    if as_json:
        return _print_json(info)
    if report:
        return
    _render_shards(info, tok is not None, verify)


def _render_shards(info: dict, with_tokenizer: bool, verify: bool) -> None:
    from ..report.svg import number, percent
    from ..shards import UNBOUNDED

    console = _console()
    console.print(f"[bold]{info['total_tokens']:,}[/] tokens, [bold]{info['total_documents']:,}[/] documents, "
                  f"{info['dtype']}, {len(info['shards'])} shard{'s' * (len(info['shards']) != 1)}"
                  + (f" of up to {info['shard_tokens']:,} tokens" if info["shard_tokens"] < UNBOUNDED else ", one per split"))
    splits = info["splits"]
    rows = [(name, f"{s['tokens']:,}", percent(s["tokens"] / info["total_tokens"]) if info["total_tokens"] else "-",
             f"{s['documents']:,}", f"{s['shards']:,}", number(s["bytes_per_token"]) if s["bytes_per_token"] else "-")
            for name, s in splits.items()]
    console.print(_table(["split", ">tokens", ">share", ">documents", ">shards", ">bytes/token"], rows))
    shards = info["shards"]
    if len(shards) <= 16:
        console.print(_bars("tokens per shard", [(s["file"], s["tokens"], f"{s['tokens']:,}") for s in shards]))
    else:
        sizes = sorted(s["tokens"] for s in shards)
        console.print(f"[bold]tokens per shard[/] {len(shards):,} shards: smallest {sizes[0]:,}, median "
                      f"{sizes[len(sizes) // 2]:,}, largest {sizes[-1]:,}")
    lengths = info["document_lengths"]
    if lengths["documents"]:
        console.print()
        console.print(_bars("documents by length in tokens (eot included)",
                            [(_bucket(b), sum(b["documents"].values()), f"{sum(b['documents'].values()):,}") for b in lengths["buckets"]]))
        console.print(f"median {number(lengths['median'])}, mean {number(lengths['mean'])}, 90% below {number(lengths['p90'])}, "
                      f"99% below {number(lengths['p99'])}, longest {lengths['max']:,} tokens")
    vocabulary = info["vocabulary"]
    console.print()
    console.print(f"[bold]vocabulary[/] {vocabulary['seen']:,} of {vocabulary['ids']:,} ids occur; {vocabulary['never_seen']:,} never, "
                  f"{vocabulary['rare']:,} fewer than {vocabulary['rare_below']} times", overflow="fold")
    covering = vocabulary["ids_covering"]
    console.print(f"ids that make {' / '.join(covering)} of the tokens: {' / '.join(f'{n:,}' for n in covering.values())}")
    if info["bytes_per_token"] is not None:
        console.print(f"[bold]bytes per token[/] {info['bytes_per_token']:.3f} ({info['text_bytes'] / 1e6:,.1f} MB of text)")
    by_input = info["by_input"]
    if by_input and len(by_input) > 1:
        measured = all(i["bytes_per_token"] is not None for i in by_input)
        console.print(_bars("bytes per token by input" if measured else "tokens by input",
                            [(Path(i["input"]).name, i["bytes_per_token"] if measured else i["tokens"],
                              f"{i['bytes_per_token']:.3f}" if measured else f"{i['tokens']:,}") for i in by_input[:12]]))
        if len(by_input) > 12:
            console.print(f"... and {len(by_input) - 12:,} more inputs (--json lists them)")
    rows = [(str(n + 1), str(t["id"]), *([_token(t["token"])] if with_tokenizer else []), f"{t['count']:,}", percent(t["share"]))
            for n, t in enumerate(info["most_frequent"][:10])]
    console.print(_table([">rank", ">id", *(["token"] if with_tokenizer else []), ">count", ">share"], rows,
                         title="most frequent tokens" if with_tokenizer else "most frequent ids"))
    if not with_tokenizer:
        console.print("[dim]give the tokenizer (-t TOK) to see tokens, not ids, and bytes per token[/]")
    elif not info["same_tokenizer_files"]:
        console.print("[dim]note: the tokenizer given is of the same size, read from other files than the shards were "
                      "written with[/]")
    if verify:
        console.print("verified: every shard matches its sha256 in the manifest")


def _bucket(bucket: dict) -> str:
    return f"{bucket['from']:,}" if bucket["from"] == bucket["to"] else f"{bucket['from']:,}-{bucket['to']:,}"


@command
def bench(
    tokenizer: TokenizerOption,
    corpus: Annotated[str, typer.Argument(help="A UTF-8 text file (documents split at special tokens), or .jsonl / .parquet (a document per record).")],
    against: Annotated[Optional[Peer], typer.Option(help="A peer built from the same ranks, timed in the same run.")] = None,
    workers: Annotated[int, _whole_option(1, help="Processes for bpecli, threads for the peer.")] = 1,
    repeat: Annotated[int, _whole_option(1, help="Runs of each; the median counts.")] = 3,
    as_json: JsonOption = False,
    pattern: PatternOption = None,
    special_ids: SpecialIdsOption = None,
) -> None:
    """Time encoding and decoding of a corpus, beside a peer tokenizer with the same ranks."""
    from ..bench import bench as run_bench
    from ..executor import keep_freed_memory

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
