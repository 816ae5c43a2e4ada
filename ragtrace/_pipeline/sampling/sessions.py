"""Sampling by conversation: whole sessions, and the turns that follow a failure.

Two ways to keep the turns of a conversation together, for the ``Sampler``:

- ``session_low64(record)``: the number the ratio decision compares with ``rate * 2**64`` when
  the sampler decides by session (``Sampler(by="session")``): the first 8 bytes of the BLAKE2b
  digest of the session id, so every turn of a session, in every process, gets the decision
  its first turn got; a record without a session falls back to its trace id's low 64 bits;
- ``FailedSessions``: the sessions where a turn failed an evaluator, remembered for a while.
  A rule with ``after_failure=True`` then keeps the later turns of such a session, at most
  ``max_turns`` of them and for ``ttl_s`` seconds after the failure. The memory is a bounded
  LRU of session ids (``max_sessions``; the least recently used is forgotten first). It learns
  of failures through ``observe(record, evaluations)``, the score sinks' ``export``::

    failures = FailedSessions(max_sessions=10_000, ttl_s=1800, max_turns=20)
    sampler = Sampler(0.05, by="session", failed_sessions=failures,
                      rules=[Rule("always", after_failure=True)])
    rt = ragtrace.init(app="support-bot", sampler=sampler, score_sinks=[failures])

The memory is this process's: a turn is kept when the process that samples it saw the failure
(in-process pipelines: the worker threads both sample and publish). With a Redis queue the
application samples before shipping and ``ragtrace worker`` processes evaluate, so there it
learns nothing of the workers' failures (docs/pipeline.md says what that means).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragtrace._model import Evaluation, RagRecord

_LOW64 = (1 << 64) - 1
_RECENT = 4
"""Trace ids of the kept turns remembered per session: a turn chosen twice (inline evaluators
first, then the background ones; feedback) counts once."""


def session_id_of(record: RagRecord) -> str | None:
    """The record's session id, when it has one (empty counts as none)."""
    conversation = record.conversation
    if conversation is None:
        return None
    return conversation.session_id or None


def trace_low64(trace_id: str) -> int:
    """The low 64 bits of a hex trace id (OpenTelemetry's ``TraceIdRatioBased``); a trace id
    that is not hex (offline data sets) is hashed instead, the same in every process."""
    try:
        return int(trace_id, 16) & _LOW64
    except (TypeError, ValueError):
        return _hash64(str(trace_id))


def session_low64(record: RagRecord) -> int:
    """What the session ratio compares: a hash of the session id, or without a session the
    trace id's low 64 bits."""
    session = session_id_of(record)
    return trace_low64(record.trace_id) if session is None else _hash64(session)


def _hash64(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@dataclass(slots=True)
class _Failure:
    """One remembered session: which turn failed, until when later turns are kept, how many
    were kept and the last kept ones' trace ids."""

    trace_id: str
    until: float
    kept: int
    recent: tuple[str, ...]


class FailedSessions:
    """The sessions where a turn failed an evaluator, and how many of their later turns to keep.

    Thread-safe; every call is O(1) under one lock. Also a score sink (``export``,
    ``shutdown``), so it can be handed to ``ragtrace.init(score_sinks=[...])`` to learn of
    failures.

    Args:
        max_sessions: Sessions remembered at most; past it, the least recently used one is
            forgotten (under 1 KB each with the session id and the trace ids of its last 4
            kept turns).
        ttl_s: How long after a failure the session's later turns are kept.
        max_turns: How many later turns are kept after a failure (each new failure starts the
            count and the time again).
        evaluators: The evaluators (or score names) whose failures count; empty: any.
        clock: Seconds, monotonic (injectable for tests).

    Raises:
        ValueError: A bad argument, named in the message.
    """

    def __init__(
        self,
        max_sessions: int = 10_000,
        ttl_s: float = 1800.0,
        max_turns: int = 20,
        *,
        evaluators: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("max_sessions", max_sessions), ("max_turns", max_turns)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"FailedSessions: {name} must be a whole number >= 1, got {value!r}"
                )
        if (
            isinstance(ttl_s, bool)
            or not isinstance(ttl_s, int | float)
            or not math.isfinite(ttl_s)
            or ttl_s <= 0
        ):
            raise ValueError(
                f"FailedSessions: ttl_s must be a number of seconds > 0, got {ttl_s!r}"
            )
        names = (evaluators,) if isinstance(evaluators, str) else tuple(evaluators)
        if not all(isinstance(n, str) and n for n in names):
            raise ValueError("FailedSessions: evaluators must be evaluator or score names")
        if not callable(clock):
            raise ValueError("FailedSessions: clock must be a callable returning seconds")
        self.max_sessions = max_sessions
        self.ttl_s = float(ttl_s)
        self.max_turns = max_turns
        self.evaluators = frozenset(names)
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Failure] = OrderedDict()
        self.failures = 0
        """Failing turns observed (with a session)."""
        self.kept = 0
        """Later turns kept because of a failure."""
        self.forgotten = 0
        """Sessions forgotten before their time because ``max_sessions`` was reached."""

    def __len__(self) -> int:
        """Sessions remembered now (expired ones included until they are next looked at)."""
        return len(self._sessions)

    def __repr__(self) -> str:
        return (
            f"<FailedSessions {len(self)}/{self.max_sessions} ttl_s={self.ttl_s:g} "
            f"max_turns={self.max_turns}>"
        )

    def observe(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> bool:
        """Remember ``record``'s session if one of ``evaluations`` failed (a score that did
        not pass its threshold; an evaluator error is no failure). Returns whether it did.

        The same failing turn observed twice counts once; a new failing turn of a session
        already remembered starts its count and time again."""
        session = session_id_of(record)
        if session is None or not self._failed(evaluations):
            return False
        until = self._clock() + self.ttl_s
        with self._lock:
            known = self._sessions.get(session)
            if known is not None and known.trace_id == record.trace_id:
                return True
            self._sessions[session] = _Failure(record.trace_id, until, 0, ())
            self._sessions.move_to_end(session)
            self.failures += 1
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
                self.forgotten += 1
        return True

    def keeps(self, record: RagRecord, count: bool = True) -> bool:
        """Whether ``record`` is a later turn of a remembered session that is still within
        ``ttl_s`` and ``max_turns`` of its failure; with ``count``, it is counted as kept."""
        session = session_id_of(record)
        if session is None or not self._sessions:
            return False
        now = self._clock()
        with self._lock:
            failure = self._sessions.get(session)
            if failure is None:
                return False
            if now >= failure.until:
                del self._sessions[session]
                return False
            trace_id = record.trace_id
            if trace_id == failure.trace_id:
                return False  # the failing turn itself
            if trace_id in failure.recent:
                return True
            if failure.kept >= self.max_turns:
                return False
            if count:
                failure.kept += 1
                failure.recent = (*failure.recent[1 - _RECENT :], trace_id)
                self._sessions.move_to_end(session)
                self.kept += 1
        return True

    def forget(self, session_id: str) -> None:
        """Forget one session (its later turns are sampled as any other again)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """The score sink's side: ``observe``."""
        self.observe(record, evaluations)

    def shutdown(self) -> None:
        """Nothing to release (a score sink's shutdown)."""

    def _failed(self, evaluations: Sequence[Evaluation]) -> bool:
        wanted = self.evaluators
        return any(
            score.passed is False
            and score.error is None
            and (not wanted or evaluation.evaluator in wanted or score.name in wanted)
            for evaluation in evaluations
            for score in evaluation.scores
        )
