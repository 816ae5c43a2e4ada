"""Who hears the results of ``ragtrace.evaluate``: a registry that loads nothing else.

``add_result_listener(fn)`` makes ``fn(result)`` run for every ``EvaluationResult`` that
``ragtrace.evaluate`` (and so ``ragtrace.testing.assert_scores``) returns, before it is
printed or returned. The pytest plugin (``ragtrace.testing.plugin``) collects a session's
scores this way; importing this module costs it nothing at start-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtrace._offline.results import EvaluationResult

ResultListener = Callable[["EvaluationResult"], None]

_lock = threading.Lock()
_listeners: list[ResultListener] = []


def add_result_listener(listener: ResultListener) -> ResultListener:
    """Hear every result from now on (returns ``listener``, for ``remove_result_listener``)."""
    with _lock:
        _listeners.append(listener)
    return listener


def remove_result_listener(listener: ResultListener) -> None:
    """Stop hearing results; removing one never added is a no-op."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def publish(result: EvaluationResult) -> None:
    """Hand ``result`` to every listener, in the order they were added."""
    with _lock:
        listeners = tuple(_listeners)
    for listener in listeners:
        listener(result)
