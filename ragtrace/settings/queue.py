"""The ``queue`` key: where sampled records go when they are evaluated by ``ragtrace worker``.

Either a URL, or a mapping with ``url`` and any option of the Redis queue::

    queue: redis://redis.internal:6379/0
    queue: {url: "redis://redis.internal:6379/0", stream: "support:work", max_backlog: 50000}

Absent (the default), records are evaluated in the application's own process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from urllib.parse import urlencode, urlsplit, urlunsplit

from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.settings.checks import Checks

QUEUE_KEYS = ("url", *(f.name for f in fields(RedisQueueOptions) if f.name != "url"))


def read_queue(checks: Checks, value: object) -> str | None:
    """``queue``: a ``redis://`` URL, or ``{url, <option>: <value>, ...}`` (None: off)."""
    if value is None:
        return None
    if isinstance(value, str):
        url = value
    else:
        q = checks.mapping(value, "queue", QUEUE_KEYS)
        if "url" not in q:
            checks.fail("queue", "missing 'url' (redis://host:port/db)")
        url = _with_options(checks.string(q["url"], "queue.url"), {
            k: v for k, v in q.items() if k != "url"
        })  # fmt: skip
    try:
        check_queue_url(url)
    except ValueError as exc:
        checks.fail("queue", str(exc))
    return url


def check_queue_url(url: str) -> None:
    """Raise ``ValueError`` unless ``url`` is a Redis queue URL whose options are valid."""
    RedisQueueOptions.from_url(url)


def _with_options(url: str, options: Mapping[str, object]) -> str:
    if not options:
        return url
    parts = urlsplit(url)
    extra = urlencode({k: str(v) for k, v in options.items()})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
