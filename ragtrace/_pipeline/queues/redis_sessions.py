"""The open conversations of a worker fleet, kept in the queue's Redis until they go quiet.

With a Redis queue a session's turns land on whichever ``ragtrace worker`` reads them first, so
the turns a conversation score needs live in Redis, not in one worker. ``RedisSessions`` is the
``SessionStore`` (``ragtrace._pipeline.session_store``) every worker of a fleet shares; each
step is one Lua script, atomic on the server, timed by the server's clock (``TIME``)::

    store = RedisSessions(client, "ragtrace:work", idle_s=300, max_sessions=10_000, max_turns=50)
    store.track([(session_id, record, sampled), ...])   # a worker, per batch it reads
    for due in store.claim_due():                        # every worker, every tick
        ...                                              # score, publish, confirm delivery
        store.finished(due)

Keys, under ``<stream>:sessions:``: ``idle`` (a sorted set: session id -> time of its last turn;
0 once ended), ``ended`` (a sorted set: session id -> when the application ended it, see
below), ``turns:<id>`` (a list of its latest ``max_turns`` turns, in the queue's codec;
one ``-`` for a session not sampled, which keeps no turns), ``claimed`` (a sorted set: session id
-> when its claim lapses) and ``scoring:<id>`` (the turns of a claimed session). Lists expire
``ttl_s`` after their last write (default a day past ``idle_s``), so a fleet that stops for
good leaves nothing behind.

Claiming moves a quiet session's turns to ``scoring:<id>`` and records the claim, in one
script: exactly one worker gets it, and turns that arrive meanwhile start the session's next
round. ``finished`` deletes the claim and its turns. A worker that dies (or whose sinks do not
confirm delivery) holds its claim until ``claim_timeout_s`` passes; then the next worker to
look claims the same turns again: at least once, once in the normal case. The server's count of
open sessions (``ZCARD`` of ``idle``) bounds the fleet's together (``max_sessions``).

An application that ships its records ends a session with ``SessionEndMarks.mark`` (what
``ragtrace.end_session`` does there): one script adds the id to ``ended``, on Redis's clock. The
session's last turns may still be on their way (in the application's buffer, in the stream, in
a worker's batch), so a worker acts on a mark only once it is ``end_grace_s`` old (default
``END_GRACE_S``): then, in the claim script, the mark goes and the session, if open, becomes due
at once, claimed like a quiet one (exactly one worker). A turn that reaches the workers after
that starts the session's next round, scored when it goes quiet; a mark for an id with no open
session just goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace._model import RagRecord
from ragtrace._pipeline.queues.base import WorkItem
from ragtrace._pipeline.queues.codec import CodecError, decode_item, encode_item
from ragtrace._pipeline.session_store import (
    SESSION_TURNS,
    SESSIONS_FULL,
    DueSession,
    TrackedTurn,
)

CLAIM_TIMEOUT_S = 120.0
"""How long a claimed session may take to be scored and delivered before another worker
claims it again."""
END_GRACE_S = 2.0
"""How old an application's end mark must be before a worker scores the session: time for
the session's last turns to reach the workers."""
MAX_END_MARKS = 100_000
"""Most end marks waiting in Redis (a mark lives ``END_GRACE_S`` while workers run)."""
TTL_MARGIN_S = 86400
NOT_SAMPLED = b"-"
SESSION_END_FAILED = "session_end_failed"
"""The drop reason of an end mark that could not be written (Redis unreachable)."""
SESSION_ENDS_FULL = "session_ends_full"
"""The drop reason of an end mark refused because ``MAX_END_MARKS`` were waiting."""

# KEYS[1] idle. ARGV: prefix, max sessions, max turns, ttl, then (id, sampled 1/0, payload)*.
_TRACK = (
    """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local prefix, most, keep, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local drops = {}
for i = 5, #ARGV, 3 do
  local sid, sampled, payload = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local seen = redis.call('ZSCORE', KEYS[1], sid)
  if not seen and redis.call('ZCARD', KEYS[1]) >= most then
    table.insert(drops, '"""
    + SESSIONS_FULL
    + """')
  else
    if not seen or tonumber(seen) > 0 then redis.call('ZADD', KEYS[1], now, sid) end
    local key = prefix .. 'turns:' .. sid
    if sampled == '1' then
      if redis.call('RPUSH', key, payload) > keep then
        redis.call('LTRIM', key, -keep, -1)
        table.insert(drops, '"""
    + SESSION_TURNS
    + """')
      end
    elseif redis.call('EXISTS', key) == 0 then
      redis.call('RPUSH', key, '-')
    end
    redis.call('EXPIRE', key, ttl)
  end
end
return drops
"""
)

# KEYS[1] idle, KEYS[2] claimed, KEYS[3] ended. ARGV: prefix, idle_s, claim timeout, limit,
# ttl, end grace. End marks past their grace make their open session due (last turn time 0).
# Returns the session ids claimed: lapsed claims first, then quiet sessions.
_CLAIM = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local prefix, idle, hold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local limit, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[6]),
                                'LIMIT', 0, limit)) do
  redis.call('ZREM', KEYS[3], sid)
  if redis.call('ZSCORE', KEYS[1], sid) then redis.call('ZADD', KEYS[1], 0, sid) end
end
local out = {}
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)) do
  redis.call('ZADD', KEYS[2], now + hold, sid)
  table.insert(out, sid)
end
if #out >= limit then return out end
local quiet = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - idle, 'LIMIT', 0, limit - #out)
for _, sid in ipairs(quiet) do
  if not redis.call('ZSCORE', KEYS[2], sid) then
    redis.call('ZREM', KEYS[1], sid)
    local turns, scoring = prefix .. 'turns:' .. sid, prefix .. 'scoring:' .. sid
    if redis.call('EXISTS', turns) == 1 then
      redis.call('RENAME', turns, scoring)
      redis.call('EXPIRE', scoring, ttl)
    end
    redis.call('ZADD', KEYS[2], now + hold, sid)
    table.insert(out, sid)
  end
end
return out
"""

# KEYS[1] idle. ARGV: session id. 1 if it was open (now due), else 0.
_END = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], 0, ARGV[1])
  return 1
end
return 0
"""

# KEYS[1] ended. ARGV: session id, most marks, ttl. 1 if marked, 0 when full.
_MARK_END = """
local t = redis.call('TIME')
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2])
then return 0 end
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisSessions:
    """A ``SessionStore`` in Redis, shared by the workers of a fleet (see the module docstring).

    Args:
        client: A ``redis.Redis`` client (the queue consumer's).
        stream: The queue's stream name; keys go under ``<stream>:sessions:``.
        idle_s: Seconds without a turn after which a session is due.
        max_sessions: Most open sessions, fleet-wide.
        max_turns: Turns kept per session (the latest).
        claim_timeout_s: How long a claim holds before another worker may take the session.
        ttl_s: How long a session's turns outlive its last write (default ``idle_s`` + a day).
        end_grace_s: How old an application's end mark must be before it makes its session due.
    """

    durable = True

    def __init__(
        self,
        client: Any,
        stream: str,
        *,
        idle_s: float,
        max_sessions: int,
        max_turns: int,
        claim_timeout_s: float = CLAIM_TIMEOUT_S,
        ttl_s: int | None = None,
        end_grace_s: float = END_GRACE_S,
    ) -> None:
        if not idle_s > 0 or max_sessions < 1 or max_turns < 1 or not claim_timeout_s > 0:
            raise ValueError(
                "RedisSessions needs idle_s > 0, max_sessions >= 1, max_turns >= 1 and "
                "claim_timeout_s > 0"
            )
        if not end_grace_s >= 0:
            raise ValueError(f"RedisSessions needs end_grace_s >= 0, not {end_grace_s!r}")
        self.end_grace_s = float(end_grace_s)
        self._client = client
        self.prefix = f"{stream}:sessions:"
        self.idle_s = float(idle_s)
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self.claim_timeout_s = float(claim_timeout_s)
        self.ttl_s = int(ttl_s if ttl_s is not None else idle_s + TTL_MARGIN_S)
        self._idle = self.prefix + "idle"
        self._claimed = self.prefix + "claimed"
        self._ended = self.prefix + "ended"
        self._track = client.register_script(_TRACK)
        self._claim = client.register_script(_CLAIM)
        self._end = client.register_script(_END)
        self.undecodable = 0

    def track(self, turns: Sequence[TrackedTurn]) -> list[str]:
        args: list[Any] = [self.prefix, self.max_sessions, self.max_turns, self.ttl_s]
        for session_id, record, sampled in turns:
            payload = encode_item(WorkItem(record, ())) if sampled else NOT_SAMPLED
            args += [session_id, 1 if sampled else 0, payload]
        return [_text(reason) for reason in self._track(keys=[self._idle], args=args)]

    def end(self, session_id: str) -> bool:
        return bool(self._end(keys=[self._idle], args=[session_id]))

    def claim_due(self, limit: int = 100) -> list[DueSession]:
        claimed = [
            _text(s)
            for s in self._claim(
                keys=[self._idle, self._claimed, self._ended],
                args=[
                    self.prefix,
                    self.idle_s,
                    self.claim_timeout_s,
                    limit,
                    self.ttl_s,
                    self.end_grace_s,
                ],
            )
        ]
        if not claimed:
            return []
        pipe = self._client.pipeline(transaction=False)
        for session_id in claimed:
            pipe.lrange(self.prefix + "scoring:" + session_id, 0, -1)
        due = []
        for session_id, payloads in zip(claimed, pipe.execute(), strict=True):
            sampled = _raw(payloads[0]) != NOT_SAMPLED if payloads else True
            turns = self._decoded(payloads) if sampled else ()
            due.append(DueSession(session_id, turns, sampled))
        return due

    def _decoded(self, payloads: Sequence[bytes | str]) -> tuple[RagRecord, ...]:
        """The turns that decode; one that does not is left out and counted (``undecodable``)."""
        turns = []
        for payload in payloads:
            try:
                turns.append(decode_item(payload).record)
            except CodecError:
                self.undecodable += 1
        return tuple(turns)

    def finished(self, due: DueSession) -> None:
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(self.prefix + "scoring:" + due.session_id)
        pipe.zrem(self._claimed, due.session_id)
        pipe.execute()

    def release(self, due: DueSession) -> None:
        """The claim stays until it lapses (``claim_timeout_s``); then it is scored again."""

    def open_sessions(self) -> int:
        return int(self._client.zcard(self._idle))


class SessionEndMarks:
    """The application's side of ending sessions that a fleet scores (see the module
    docstring): ``mark(session_id)`` adds an end mark beside the sessions' keys.

    Args:
        client: A ``redis.Redis`` client (the shipper's), with short timeouts.
        stream: The queue's stream name.
        max_marks: Most marks waiting; one more is refused.
        ttl_s: How long the marks outlive the last one written (a fleet that never reads them).
    """

    def __init__(
        self,
        client: Any,
        stream: str,
        *,
        max_marks: int = MAX_END_MARKS,
        ttl_s: int = TTL_MARGIN_S,
    ) -> None:
        self._key = f"{stream}:sessions:ended"
        self._max_marks = max_marks
        self._ttl_s = ttl_s
        self._mark = client.register_script(_MARK_END)

    def mark(self, session_id: str) -> bool:
        """End ``session_id`` for the fleet; False when ``max_marks`` are waiting.

        Raises:
            redis.RedisError: Redis could not be reached or failed.
        """
        return bool(self._mark(keys=[self._key], args=[session_id, self._max_marks, self._ttl_s]))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _raw(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
