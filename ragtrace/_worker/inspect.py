"""Looking into a Redis queue: its counters, its dead letters, and putting dead letters back.

``queue_state`` gives the fleet's counters (submitted, published, duplicates, dead-lettered)
beside the stream's backlog and pending entries, and reconciles them: every entry ever added
(``submitted`` by ragtrace, or ``foreign``: added to the stream by anything else, counted from
the stream's own ``entries-added``) is published, skipped as a duplicate, dead-lettered (of
which ``undecodable``: not a work item) or still in the stream, so ``unaccounted`` is 0 unless
entries vanished from a stream that still exists (trimmed or deleted by hand). When Redis lost
its data the counters start again with the stream: ``epoch`` says when the current stream was
made, and ``resets`` (recorded by the shipper and workers that noticed, see
``ragtrace._pipeline.queues.redis_losses``) how often the stream or group was lost, the last
time, why, and how many records were possibly lost; ``dead_letters`` lists what the
dead-letter stream holds (reason, deliveries, trace id); ``requeue`` appends dead letters to the
work stream again (after a fix) and removes them from the dead-letter stream; ``purge`` deletes
them.

The names in ``queue_state`` (stream, group, reset reasons) and a dead letter's reason and
trace id come from outside (a URL, Redis) and are made ``printable`` (control characters
written ``\\xNN``), as every ragtrace CLI prints names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ragtrace._network.terminal import printable
from ragtrace._pipeline.queues.redis_losses import resets
from ragtrace._pipeline.queues.redis_streams import (
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
        "stream": printable(o.stream),
        "group": printable(o.group),
        "backlog": int(client.xlen(o.stream)),
        "pending": pending,
        "dead_letters": int(client.xlen(o.dead_stream)),
    }
    for name in COUNTERS:
        state[name] = stats.get(name, 0)
    added = _entries_added(client, o.stream)
    state["foreign"] = max(0, added - state["submitted"]) if added is not None else 0
    state["unaccounted"] = (
        state["submitted"]
        + state["foreign"]
        - sum(state[name] for name in ("published", "duplicates", "dead_lettered", "backlog"))
    )
    epoch = commands.current_epoch()
    state["epoch"] = (
        {"id": epoch.get("id"), "created_at": _iso(epoch.get("created_ms"))} if epoch else None
    )
    state["resets"] = _resets(commands)
    return state


def _entries_added(client: Any, stream: str) -> int | None:
    """Entries ever added to ``stream`` (Redis 7's ``entries-added``; 0 when it does not exist,
    None when this Redis does not say)."""
    try:
        info = client.xinfo_stream(stream)
    except Exception as exc:
        if "no such key" in str(exc).lower():
            return 0
        raise
    value = info.get("entries-added", info.get(b"entries-added"))
    return None if value is None else int(value)


def _resets(commands: StreamCommands) -> dict[str, Any]:
    raw = resets(commands)
    by_reason = {
        printable(k.partition(":")[2]): int(v) for k, v in raw.items() if k.startswith("resets:")
    }
    return {
        "count": int(raw.get("resets", 0)),
        "by_reason": by_reason,
        "possibly_lost": int(raw.get("possibly_lost", 0)),
        "last_at": _iso(raw.get("last_at_ms")),
        "last_reason": None if raw.get("last_reason") is None else printable(raw["last_reason"]),
        "last_possibly_lost": int(raw.get("last_possibly_lost", 0)),
    }


def _iso(ms: str | None) -> str | None:
    if not ms:
        return None
    return datetime.fromtimestamp(int(ms) / 1000, UTC).isoformat(timespec="seconds")


COUNTERS = (
    "submitted",
    "published",
    "duplicates",
    "dead_lettered",
    "undecodable",
    "duplicates_refused",
    "groups_created",
)
"""The fleet's counters in ``<stream>:stats``: entries added; published and acknowledged;
acknowledged without publishing (their record was published already); moved to the dead
letters (of which ``undecodable``: not a work item, e.g. a foreign entry); adds refused
because their idempotency key was seen (an app's retry); times the consumer group was created."""


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
        reason=printable(as_text(entry_field(fields, "reason"))),
        deliveries=int(entry_field(fields, "deliveries") or 0),
        trace_id=printable(trace_id) if isinstance(trace_id, str) else None,
        size=len(payload),
    )
