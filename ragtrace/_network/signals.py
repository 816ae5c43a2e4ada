"""How a ragtrace command that serves until stopped stops: Ctrl-C (SIGINT) or SIGTERM.

Two things would otherwise keep such a command from cleaning up:

- a process started in the background by a script (``cmd &`` in a shell without job control)
  inherits SIGINT as *ignored*, and Python then never raises ``KeyboardInterrupt``: Ctrl-C,
  ``kill -INT`` and a supervisor's interrupt do nothing;
- a container runtime or a service manager stops a process with SIGTERM, whose default action
  ends it at once, without closing its servers or flushing what it holds.

``ragtrace review serve``, ``ragtrace judge serve`` (through ``wait_until_stopped()``) and
``ragtrace demo`` run inside ``stop_on_signals()``: both signals raise ``KeyboardInterrupt`` in
the main thread, so the command stops the way Ctrl-C stops it (servers closed, spans flushed,
the demo's summary printed), and the previous handlers are restored on leaving. ``ragtrace
worker`` and ``ragtrace ingest`` install their own handlers for both signals, which drain their
queues before they stop.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt`` in the main thread inside the block,
    whatever the process inherited; the previous handlers come back after it.

    Off the main thread (where Python cannot set handlers) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig in STOP_SIGNALS:
        signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def wait_until_stopped() -> None:
    """Block until SIGINT or SIGTERM arrives (or ``KeyboardInterrupt``), then return: the
    serving commands' main thread waits here and cleans up after it."""
    try:
        with stop_on_signals():
            threading.Event().wait()
    except KeyboardInterrupt:
        pass


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)
