"""The command's standard streams: stdout as bytes whose failed writes name it, stand-ins for
streams the shell closed, and the one line on stderr that ends a failed command."""

from __future__ import annotations

import os
import sys

import typer

from ..errors import BpecliError

# corpus is imported inside a function: --help, --version and shell completion do not load it.

STDOUT = "standard output"

_CLOSED = {"stdout": False}


def stand_in_for_closed() -> None:
    """`cmd >&-` or `<&-` leave None in sys.stdout / sys.stdin: stand-ins keep click working, and
    the commands say what is wrong when they need the real one (corpus.read_bytes for stdin)."""
    if sys.stdout is None:
        _CLOSED["stdout"] = True
        sys.stdout = open(os.devnull, "w")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")


def binary_stdout() -> Named:
    """The binary stdout, or an error when the shell closed it (`>&-`). A failed write names it."""
    if _CLOSED["stdout"]:
        raise BpecliError("standard output is closed; redirect it to a file (> out.txt) or a pipe")
    return Named(sys.stdout.buffer)


class Named:
    """A stream whose failed writes say which stream it is (an OSError with filename STDOUT)."""

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
        except BrokenPipeError:  # the reader left: not an error (see app._Command.invoke)
            raise
        except OSError as e:
            raise OSError(e.errno, e.strerror, STDOUT) from None


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's last flush cannot fail again."""
    from ..parallel.local import to_devnull

    to_devnull(1)


def fail(message: str, status: int):
    """Say message on stderr, its secrets redacted, and end the command with status."""
    from ..inputs.sources import redact

    say(redact(message))  # an input's credentials never reach a terminal or a log
    raise typer.Exit(status) from None


def say(message: str) -> None:
    """A line on stderr, unless stderr is closed too (the exit status says it then)."""
    try:
        typer.echo(message, err=True)
    except (OSError, ValueError, AttributeError):
        pass
