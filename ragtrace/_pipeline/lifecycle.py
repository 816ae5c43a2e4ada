"""Process hooks for live pipelines, and the time budget a shutdown keeps.

``register_process_hooks(pipeline)`` holds the pipeline weakly. The first call installs one
``atexit`` handler, which shuts every live pipeline down (flushing what is queued), and one
``os.register_at_fork`` child handler, which tells every live pipeline that it now runs in a
forked child (its threads, worker processes and possibly held locks belong to the parent).
``register_exit_hook(owner)`` adds an owner of pipelines (a ``Ragtrace``): at exit the owners
stop first, each within its own budget, then the pipelines nobody owns.

A shutdown never waits past its budget: ``run_bounded(fn, timeout_s)`` runs a step that may
block (a hung exporter, a store that does not answer) on a daemon thread and stops waiting for
it at the deadline; the process can still exit, since daemon threads do not hold it::

    deadline = Deadline(5.0)
    finished = run_bounded(sinks.shutdown, deadline.remaining(), name="sinks")
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

EXIT_FLUSH_S = 5.0


class ProcessBound(Protocol):
    """What the hooks need from a pipeline."""

    def shutdown(self, timeout_s: float = ...) -> object:
        """Flush, then stop."""

    def _after_fork(self) -> None:
        """Start afresh in a forked child (single-threaded when called)."""


class Stoppable(Protocol):
    """What the exit hook needs from an owner of pipelines."""

    @property
    def shutdown_budget_s(self) -> float:
        """The longest its shutdown may take."""

    def shutdown(self, timeout_s: float | None = ...) -> object:
        """Flush what can be flushed within ``timeout_s``, count the rest, stop."""


class Deadline:
    """A point in time ``seconds`` from now (monotonic clock).

    Args:
        seconds: The budget; 0 or less is already spent.
    """

    def __init__(self, seconds: float) -> None:
        self.budget_s = max(0.0, seconds)
        self._end = time.monotonic() + self.budget_s

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self._end - time.monotonic())

    def share(self, fraction: float) -> float:
        """``fraction`` of the whole budget, or what is left if that is less."""
        return min(self.remaining(), fraction * self.budget_s)


def run_bounded(
    fn: Callable[[], object],
    timeout_s: float,
    *,
    name: str,
    on_error: Callable[[BaseException], None] | None = None,
) -> bool:
    """Run ``fn()`` on a daemon thread and wait for it at most ``timeout_s`` seconds.

    Returns True if it returned in time (an exception it raised goes to ``on_error``); False
    if it is still running: it is left to finish, or to end with the process.
    """
    done = threading.Event()

    def call() -> None:
        try:
            fn()
        except BaseException as exc:
            if on_error is not None:
                with contextlib.suppress(BaseException):
                    on_error(exc)
        finally:
            done.set()

    threading.Thread(target=call, name=f"ragtrace-{name}", daemon=True).start()
    return done.wait(max(0.0, timeout_s))


_live: weakref.WeakSet[ProcessBound] = weakref.WeakSet()
_owners: weakref.WeakSet[Stoppable] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooks_installed = False


def register_process_hooks(pipeline: ProcessBound) -> None:
    """Shut ``pipeline`` down at interpreter exit and reset it in a forked child."""
    _live.add(pipeline)
    _install_hooks()


def register_exit_hook(owner: Stoppable) -> None:
    """Shut ``owner`` down at interpreter exit, before the pipelines (held weakly)."""
    _owners.add(owner)
    _install_hooks()


def _install_hooks() -> None:
    global _hooks_installed
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_shutdown_all_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_all_after_fork)


def _shutdown_all_at_exit() -> None:
    """Owners first, then ownerless pipelines; all of it within the largest owner's budget
    (``EXIT_FLUSH_S`` when there is none)."""
    owners = list(_owners)
    deadline = Deadline(max((o.shutdown_budget_s for o in owners), default=EXIT_FLUSH_S))
    for owner in owners:
        with contextlib.suppress(Exception):  # the interpreter is going down
            owner.shutdown(timeout_s=min(owner.shutdown_budget_s, deadline.remaining()))
    for pipeline in list(_live):
        with contextlib.suppress(Exception):
            pipeline.shutdown(timeout_s=deadline.remaining())


def _reset_all_after_fork() -> None:
    for pipeline in list(_live):
        pipeline._after_fork()
