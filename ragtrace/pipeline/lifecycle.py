"""Process hooks for live pipelines: shut them down at interpreter exit, reset them after fork.

``register_process_hooks(pipeline)`` holds the pipeline weakly. The first call installs one
``atexit`` handler, which shuts every live pipeline down (flushing what is queued), and one
``os.register_at_fork`` child handler, which tells every live pipeline that it now runs in a
forked child (its threads, worker processes and possibly held locks belong to the parent).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from typing import Protocol

EXIT_FLUSH_S = 5.0


class ProcessBound(Protocol):
    """What the hooks need from a pipeline."""

    def shutdown(self, timeout_s: float = ...) -> None:
        """Flush, then stop."""

    def _after_fork(self) -> None:
        """Start afresh in a forked child (single-threaded when called)."""


_live: weakref.WeakSet[ProcessBound] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooks_installed = False


def register_process_hooks(pipeline: ProcessBound) -> None:
    """Shut ``pipeline`` down at interpreter exit and reset it in a forked child."""
    global _hooks_installed
    _live.add(pipeline)
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_shutdown_all_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_all_after_fork)


def _shutdown_all_at_exit() -> None:
    for pipeline in list(_live):
        with contextlib.suppress(Exception):  # the interpreter is going down
            pipeline.shutdown(timeout_s=EXIT_FLUSH_S)


def _reset_all_after_fork() -> None:
    for pipeline in list(_live):
        pipeline._after_fork()
