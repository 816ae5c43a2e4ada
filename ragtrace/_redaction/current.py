"""The redaction policy of the process's current ragtrace, for a sink built without one.

A sink given no policy (``ReviewSink(store)`` handed to ``ragtrace.init``) redacts with the
policy of the ragtrace that is current when it writes, since ``init`` may come after the sink
is built. The runtime sets it when an instance becomes current and clears it when that
instance stops being current; it is kept on this floor so that sinks, below the runtime, read
it without importing the runtime::

    set_current_policy(instance.redaction)   # the runtime
    current_policy().text(query)             # a sink; NO_REDACTION while none is current
"""

from __future__ import annotations

from ragtrace._redaction.policy import NO_REDACTION, Redaction

_current: Redaction | None = None


def set_current_policy(policy: Redaction | None) -> None:
    """Make ``policy`` the current instance's (None: no instance is current)."""
    global _current
    _current = policy


def current_policy() -> Redaction:
    """The current instance's policy, or ``NO_REDACTION`` while none is current."""
    return _current if _current is not None else NO_REDACTION
