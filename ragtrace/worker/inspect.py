"""Looking into a Redis queue: its counters, its dead letters, and putting dead letters back.

``queue_state`` gives the fleet's counters (submitted, published, duplicates, dead-lettered)
beside the stream's backlog and pending entries, and reconciles them: every entry ever added is
published, skipped as a duplicate, dead-lettered or still in the stream, so ``unaccounted`` is 0
unless entries were lost (Redis lost its data: then the counters start again with the group,
``groups_created`` says how often that happened since the last loss of the counters, and the
workers count ``ragtrace_queue_group_recreated_total``); ``dead_letters`` lists what the
dead-letter stream holds (reason, deliveries, trace id); ``requeue`` appends dead letters to the
work stream again (after a fix) and removes them from the dead-letter stream; ``purge`` deletes
them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.pipeline.queues.redis_streams import (
    FIELD,
    StreamCommands,
    as_text,
    entry_field,
)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One entry of the dead-letter stream."""

    id: str
    original_id: str
    reason: str
    deliveries: int
    trace_id: str | None
    size: int


def queue_state(commands: StreamCommands) -> dict[str, Any]:
    """Counters and lengths of the queue, as one JSON-ready mapping."""
    o = commands.options
    client = commands.client
    stats = commands.stats()
    pending = 0
    try:
        summary = client.xpending(o.stream, o.group)
        pending = int(summary.get("pending", 0)) if isinstance(summary, dict) else 0
    except Exception as exc:  # no group yet
        if "NOGROUP" not in str(exc):
            raise
    state: dict[str, Any] = {
        "stream": o.stream,
        "group": o.group,
        "backlog": int(client.xlen(o.stream)),
        "pending": pending,
        "dead_letters": int(client.xlen(o.dead_stream)),
    }
    for name in COUNTERS:
        state[name] = stats.get(name, 0)
    state["unaccounted"] = state["submitted"] - sum(
        state[name] for name in ("published", "duplicates", "dead_lettered", "backlog")
    )
    return state


COUNTERS = (
    "submitted",
    "published",
    "duplicates",
    "dead_lettered",
    "duplicates_refused",
    "groups_created",
)
"""The fleet's counters in ``<stream>:stats``: entries added; published and acknowledged;
acknowledged without publishing (their record was published already); moved to the dead
letters; adds refused because their idempotency key was seen (an app's retry); times the
consumer group was created."""


def dead_letters(commands: StreamCommands, limit: int = 20) -> list[DeadLetter]:
    """The oldest ``limit`` dead letters."""
    rows = commands.client.xrange(commands.options.dead_stream, count=limit)
    return [_dead_letter(as_text(entry_id), fields) for entry_id, fields in rows]


def requeue(commands: StreamCommands, ids: Sequence[str] = ()) -> int:
    """Put dead letters (``ids``, or all when empty) back on the work stream; how many.

    Requeued entries count again as submitted; the backlog cap does not apply to them.
    """
    o = commands.options
    client = commands.client
    rows = _select(commands, ids)
    for entry_id, fields in rows:
        pipe = client.pipeline(transaction=True)
        pipe.xadd(o.stream, {FIELD: entry_field(fields)})
        pipe.xdel(o.dead_stream, entry_id)
        pipe.hincrby(o.stats_key, "submitted", 1)
        pipe.execute()
    return len(rows)


def purge(commands: StreamCommands, ids: Sequence[str] = ()) -> int:
    """Delete dead letters (``ids``, or all when empty); how many."""
    rows = _select(commands, ids)
    if not rows:
        return 0
    return int(commands.client.xdel(commands.options.dead_stream, *[i for i, _ in rows]))


def _select(commands: StreamCommands, ids: Sequence[str]) -> list[tuple[str, Any]]:
    stream = commands.options.dead_stream
    if ids:
        rows = []
        for entry_id in ids:
            rows.extend(commands.client.xrange(stream, min=entry_id, max=entry_id))
        return [(as_text(i), f) for i, f in rows]
    return [(as_text(i), f) for i, f in commands.client.xrange(stream)]


def _dead_letter(entry_id: str, fields: Any) -> DeadLetter:
    payload = entry_field(fields)
    try:
        trace_id = json.loads(payload).get("record", {}).get("trace_id")
    except Exception:  # an undecodable payload is why it is here
        trace_id = None
    return DeadLetter(
        id=entry_id,
        original_id=as_text(entry_field(fields, "id")),
        reason=as_text(entry_field(fields, "reason")),
        deliveries=int(entry_field(fields, "deliveries") or 0),
        trace_id=trace_id if isinstance(trace_id, str) else None,
        size=len(payload),
    )
