"""The bpecli application: the Typer app and its five commands, the one place where an error
becomes one line on stderr and an exit status, and main(), the console script."""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from typing import Annotated

import typer
from typer.core import TyperCommand
from typer.main import get_command_name

from .. import __version__
from ..errors import BpecliError
from . import commands
from .memory import MAPPING_FAILED, as_own_process, load_numpy_within_limit, memory_limit, out_of_memory, ran_out_of_memory
from .signals import Terminated, take_signals
from .streams import STDOUT, fail, say, silence_stdout, stand_in_for_closed

# The flags of the library's arguments whose names differ from them (errors.render_for_cli): the
# rest are "--" and the argument's name with dashes.
FLAGS = {"special_tokens": "--special", "tokenizer": "-t", "out_dir": "--out"}


class _Command(TyperCommand):
    """Turns every way a command can fail into one line on stderr and a documented exit status:
    1 for an error, 130 for Ctrl-C, 143 for SIGTERM, 0 when the reader of stdout left early."""

    def invoke(self, ctx):
        try:
            load_numpy_within_limit(sys.argv[1:])
            return super().invoke(ctx)
        except BpecliError as e:
            if ran_out_of_memory(e):  # pyarrow's ArrowMemoryError, said as an input it cannot read
                out_of_memory(ctx)
            fail(f"bpecli: error: {e.for_cli(FLAGS)}", 1)
        except Terminated:  # finished shards stay for a rerun to keep; workers end quietly
            fail("bpecli: terminated", 143)
        except KeyboardInterrupt:
            fail("bpecli: interrupted", 130)
        except BrokenPipeError:  # `bpecli encode ... | head`: the reader left, nothing is wrong
            silence_stdout()
            raise typer.Exit(0) from None
        except OSError as e:  # a full stdout (>/dev/full), a file that vanished: say which
            silence_stdout()
            if e.errno == errno.ENOMEM:  # an mmap, a fork
                out_of_memory(ctx)
            where = f" ({e.filename})" if e.filename else ""
            fail(f"bpecli: error: {e.strerror or e}{where}", 1)
        except MemoryError:
            out_of_memory(ctx)
        except ImportError as e:  # a library that no longer fits in memory, or a broken install
            if MAPPING_FAILED.search(str(e)):
                out_of_memory(ctx)
            fail(f"bpecli: error: cannot load {e.name or 'a module'} ({e}); reinstall bpecli and its dependencies", 1)
        except RuntimeError as e:
            if "can't start new thread" not in str(e):
                raise
            out_of_memory(ctx)


# -h as well as --help, for the app and every command
HELP = {"help_option_names": ["-h", "--help"]}
_APP = dict(
    context_settings=HELP,
    help="Train byte-level BPE tokenizers and turn corpora into token ids and shards.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion for bash, zsh, fish and PowerShell
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: it wraps to any terminal, where rich's table cuts option names at 80 columns
)
# Each command in the list `bpecli --help` shows, in one line (its own --help says more)
SUMMARIES: dict[Callable[..., None], str] = {
    commands.train: "Train a byte-level BPE tokenizer on a corpus, into --out.",
    commands.encode: "Encode text to token ids; with --out, a corpus to training shards.",
    commands.decode: "Decode token ids, or a shard, back to text.",
    commands.inspect: "Show a tokenizer, how a text splits, or a shard folder.",
    commands.bench: "Time encoding and decoding of a corpus beside a peer tokenizer.",
}
app = typer.Typer(**_APP)  # type: ignore[arg-type]
for _command, _summary in SUMMARIES.items():
    app.command(cls=_Command, context_settings=HELP, short_help=_summary)(_command)


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
        typer.echo(f"bpecli {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Train byte-level BPE tokenizers and turn corpora into token ids and shards."""


def main() -> None:
    """bpecli as a process: the command in sys.argv, its output, and its exit status."""
    stand_in_for_closed()
    as_own_process()
    take_signals()
    try:
        status = _app_for(sys.argv[1:])(standalone_mode=False)
        sys.stdout.flush()  # here, where a full stdout is still one line (--version, --help >/dev/full)
    except BrokenPipeError:
        silence_stdout()
        sys.exit(0)
    except OSError as e:  # only stdout is written out here (--help, --version)
        silence_stdout()
        say(f"bpecli: error: {e.strerror or e} ({e.filename or STDOUT})")
        sys.exit(1)
    except SystemError:  # under ulimit -v, a MemoryError CPython had no memory to raise, lost on the way out
        if memory_limit() is None:
            raise
        out_of_memory(None)  # with a limit, the line names it, not the command's options
    except Exception as e:  # click's usage errors (a bad option value...): one line, status 2 as click's
        if not (hasattr(e, "format_message") and hasattr(e, "exit_code")):
            raise
        command = getattr(getattr(e, "ctx", None), "command_path", None) or "bpecli"
        if type(e).__name__ == "NoArgsIsHelpError":  # `bpecli` alone: the help, as click shows it
            e.show()  # type: ignore[attr-defined]
        else:
            from ..inputs.sources import redact

            # a usage error may quote a URI given as a tokenizer: its credentials never show
            typer.echo(redact(f"{command}: error: {e.format_message()} (see {command} --help)"), err=True)
        sys.exit(e.exit_code)
    sys.exit(status or 0)
