"""How library code reports progress: through a factory the caller gives (the CLI's makes a bar
on a terminal and plain lines in a log); library code itself never prints."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager


@contextmanager
def progress_bar(progress: Callable | None, description: str, total: int, unit: str):
    """A bar from the factory a caller gave, progress(description, total, unit) -> an object with
    update(n), set_postfix_str(text) and close() (and abandon(), if it should stay quiet when the
    work fails); None gives no bar."""
    bar = progress(description, total, unit) if progress else None
    try:
        yield bar
    except BaseException:  # the error says what happened: a bar that can be left unsaid is
        if bar is not None:
            getattr(bar, "abandon", bar.close)()
        raise
    if bar is not None:
        bar.close()
