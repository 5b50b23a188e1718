"""The bpecli command: `main` is the console script (`bpecli = "bpecli.cli:main"`) and what
`python -m bpecli` runs; `app` is the Typer application, for tests and for embedding."""

from .app import app as app
from .app import main as main

__all__ = ["app", "main"]
