"""Where the turns of open conversations wait until the conversation goes quiet.

A ``SessionStore`` keeps, per session id, the latest turns (records) and when the last one came;
``claim_due`` hands over the sessions that have had no turn for ``idle_s`` seconds (or were
ended with ``end``), each to exactly one caller, which then says ``finished`` (scored and
published) or ``release`` (try again later). ``MemorySessions`` is this process's store, for the
in-process pipeline; ``ragtrace._pipeline.queues.redis_sessions.RedisSessions`` is shared by a
fleet of workers::

    store = MemorySessions(idle_s=300, max_sessions=10_000, max_turns=50)
    drops = store.track([("s-1", record, True)])   # [] or the drop reasons, one per turn lost
    for due in store.claim_due():
        ...                                          # score due.turns, publish
        store.finished(due)

Both are bounded: a turn of a new session beyond ``max_sessions`` is refused
(``SESSIONS_FULL``), and a session keeps its latest ``max_turns`` turns, an older one pushed
out counted (``SESSION_TURNS``). A session not sampled (the session-level decision made when
its turns arrive) is remembered without its turns, so that its decision is counted once, when
it goes quiet.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ragtrace._model import RagRecord

SESSIONS_FULL = "sessions_full"
SESSION_TURNS = "session_turns"
TrackedTurn = tuple[str, RagRecord, bool]
"""(session id, the turn's record, whether the session is sampled)."""


@dataclass(frozen=True)
class DueSession:
    """A quiet (or ended) session handed to one scorer.

    Attributes:
        session_id: The conversation's id.
        turns: Its kept turns, in arrival order (empty when it is not sampled).
        sampled: The session-level sampling decision.
        claim: What the store needs to finish or release the claim.
    """

    session_id: str
    turns: tuple[RagRecord, ...]
    sampled: bool
    claim: object = None


class SessionStore(Protocol):
    """Open sessions until they go quiet (see the module docstring)."""

    durable: bool
    """Whether the sessions outlive this process (another process scores them if it ends)."""

    def track(self, turns: Sequence[TrackedTurn]) -> list[str]:
        """Add turns; returns a drop reason per turn (or older turn) lost."""

    def end(self, session_id: str) -> bool:
        """Make ``session_id`` due now; False when it is not open."""

    def claim_due(self, limit: int = 100) -> list[DueSession]:
        """Up to ``limit`` due sessions, each handed to this caller only."""

    def finished(self, due: DueSession) -> None:
        """``due`` was scored and published: forget it."""

    def release(self, due: DueSession) -> None:
        """``due`` could not be published: let it be claimed again later."""

    def open_sessions(self) -> int:
        """Sessions waiting to go quiet."""


class _Open:
    __slots__ = ("last_seen", "sampled", "turns")

    def __init__(self, sampled: bool, max_turns: int) -> None:
        self.sampled = sampled
        self.turns: deque[RagRecord] = deque(maxlen=max_turns)
        self.last_seen = 0.0


class MemorySessions:
    """The open sessions of this process, in a bounded dict ordered by last turn.

    ``track`` is one dict update under a lock (microseconds, on the application's thread);
    ``claim_due`` reads from the oldest end and stops at the first session still active.

    Args:
        idle_s: Seconds without a turn after which a session is due.
        max_sessions: Most open sessions.
        max_turns: Turns kept per session (the latest).
        clock: Monotonic seconds (injectable for tests).
    """

    durable = False

    def __init__(
        self,
        idle_s: float,
        max_sessions: int,
        max_turns: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not idle_s > 0 or max_sessions < 1 or max_turns < 1:
            raise ValueError("MemorySessions needs idle_s > 0, max_sessions >= 1, max_turns >= 1")
        self.idle_s = float(idle_s)
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._clock = clock
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._ended: list[str] = []
        self._lock = threading.Lock()

    def track(self, turns: Sequence[TrackedTurn]) -> list[str]:
        drops: list[str] = []
        now = self._clock()
        with self._lock:
            for session_id, record, sampled in turns:
                found = self._open.get(session_id)
                if found is None:
                    if len(self._open) >= self.max_sessions:
                        drops.append(SESSIONS_FULL)
                        continue
                    found = self._open[session_id] = _Open(sampled, self.max_turns)
                else:
                    self._open.move_to_end(session_id)
                found.last_seen = now
                if found.sampled:
                    if len(found.turns) == self.max_turns:
                        drops.append(SESSION_TURNS)
                    found.turns.append(record)
        return drops

    def end(self, session_id: str) -> bool:
        with self._lock:
            if session_id not in self._open:
                return False
            self._ended.append(session_id)
            return True

    def claim_due(self, limit: int = 100) -> list[DueSession]:
        cutoff = self._clock() - self.idle_s
        due: list[DueSession] = []
        with self._lock:
            while self._ended and len(due) < limit:
                session_id = self._ended.pop()
                found = self._open.pop(session_id, None)
                if found is not None:
                    due.append(DueSession(session_id, tuple(found.turns), found.sampled))
            quiet: list[tuple[str, _Open]] = []
            for session_id, found in self._open.items():  # oldest turn first
                if found.last_seen > cutoff or len(due) + len(quiet) >= limit:
                    break
                quiet.append((session_id, found))
            for session_id, found in quiet:
                del self._open[session_id]
                due.append(DueSession(session_id, tuple(found.turns), found.sampled))
        return due

    def take_all(self) -> list[DueSession]:
        """Every open session, due or not (the process is ending)."""
        with self._lock:
            taken = [DueSession(s, tuple(o.turns), o.sampled) for s, o in self._open.items()]
            self._open.clear()
            self._ended.clear()
        return taken

    def finished(self, due: DueSession) -> None:
        """Nothing to do: a claimed session has left the store already."""

    def release(self, due: DueSession) -> None:
        """In process a session that could not be published is not tried again."""

    def open_sessions(self) -> int:
        return len(self._open)

    def after_fork(self) -> None:
        """In a forked child: the parent's sessions are the parent's to score."""
        self._lock = threading.Lock()
        self._open = OrderedDict()
        self._ended = []
