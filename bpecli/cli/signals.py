"""SIGTERM and Ctrl-C: raised in the main thread, so that a command cleans up as it does for any
error, and ending the process anyway when the main thread stays held in C code."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time

from .streams import say

# Seconds a SIGTERM waits for the main thread to clean up before the process ends anyway.
TERMINATE_GRACE = 5.0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main process so that cleanup runs as it does for Ctrl-C."""


def _on_sigterm(signum, frame):
    raise Terminated


def take_signals() -> None:
    """SIGTERM raises Terminated; then SIGTERM and Ctrl-C are taken in a thread of their own (they
    are blocked in every other): it raises them in the main thread, which cleans up as soon as it
    runs Python again, and ends the process itself if the main thread stays held in C code (pyarrow
    opening a FIFO no one writes, a stalled network read) past TERMINATE_GRACE. Shards stay safe
    either way: each is recorded before its final name appears."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    wanted = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)

    def watch() -> None:
        received = signal.sigwait(wanted)
        _thread.interrupt_main(signal.Signals(received))
        time.sleep(TERMINATE_GRACE)
        from ..inputs.spool import unspool_all

        unspool_all()  # what the main thread's cleanup would have removed, had it run
        say("bpecli: terminated" if received == signal.SIGTERM else "bpecli: interrupted")
        os._exit(143 if received == signal.SIGTERM else 130)

    try:
        threading.Thread(target=watch, name="bpecli-signals", daemon=True).start()
    except RuntimeError:  # no memory for a thread: the main thread takes the signals itself
        signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)
