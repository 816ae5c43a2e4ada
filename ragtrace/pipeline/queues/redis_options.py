"""Where and how the Redis Streams queue runs: one URL carries everything.

``redis://[:password@]host:port/db?stream=ragtrace:work&max_backlog=100000`` (or ``rediss://``
for TLS). Every query parameter has a default and is checked with a clear error:

- ``stream`` (``ragtrace:work``): the stream records go to. In Redis Cluster give it a hash
  tag (``{ragtrace}:work``) so its companion keys share a slot.
- ``group`` (``ragtrace``): the consumer group the workers share.
- ``consumer`` (``<host>-<pid>``): this worker's name in the group.
- ``max_backlog`` (100000): entries the stream may hold, unread or unacknowledged; past it the
  app refuses records (``queue_full``).
- ``buffer`` (10000): records the app buffers while the broker is slow or down; past it,
  ``buffer_full`` drops.
- ``batch`` (64): records per round trip, on the app's side and the worker's (a worker's
  batch is held unacknowledged until all of it is published: keep a batch's evaluation time
  well under ``reclaim_idle_s``, e.g. ``batch=8`` for slow LLM judges).
- ``timeout_s`` (2.0): the socket timeout of each command.
- ``reclaim_idle_s`` (60): an entry unacknowledged this long is taken over from its consumer.
- ``max_deliveries`` (3): deliveries without acknowledgement before an entry is dead-lettered.
- ``max_entry_bytes`` (4194304): a larger encoded record is dropped (``too_large``).

The dead-letter stream is ``<stream>:dead`` and the counters hash ``<stream>:stats``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, fields
from urllib.parse import parse_qsl, urlsplit, urlunsplit

SCHEMES = ("redis", "rediss", "unix")


def default_consumer() -> str:
    """``<host>-<pid>``: unique per process, readable in ``XINFO CONSUMERS``."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class RedisQueueOptions:
    """The Redis queue's settings (see the module docstring for each one)."""

    url: str
    stream: str = "ragtrace:work"
    group: str = "ragtrace"
    consumer: str = field(default_factory=default_consumer)
    max_backlog: int = 100_000
    buffer: int = 10_000
    batch: int = 64
    timeout_s: float = 2.0
    reclaim_idle_s: float = 60.0
    max_deliveries: int = 3
    max_entry_bytes: int = 4 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_backlog", "buffer", "batch", "max_deliveries", "max_entry_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"redis queue: {name} must be a whole number >= 1, got {value!r}")
        for name in ("timeout_s", "reclaim_idle_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"redis queue: {name} must be a number > 0, got {value!r}")
        for name in ("stream", "group", "consumer"):
            if not getattr(self, name):
                raise ValueError(f"redis queue: {name} must not be empty")

    @property
    def dead_stream(self) -> str:
        return f"{self.stream}:dead"

    @property
    def stats_key(self) -> str:
        return f"{self.stream}:stats"

    @property
    def connection_url(self) -> str:
        """The URL without ragtrace's own query parameters (what the Redis client reads)."""
        parts = urlsplit(self.url)
        own = {f.name for f in fields(self)}
        kept = [(k, v) for k, v in parse_qsl(parts.query) if k not in own]
        query = "&".join(f"{k}={v}" for k, v in kept)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))

    @property
    def safe_url(self) -> str:
        """The URL with any password replaced by ``***`` (for logs and errors)."""
        parts = urlsplit(self.connection_url)
        if parts.password is None:
            return self.connection_url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    @classmethod
    def from_url(cls, url: str, **overrides: object) -> RedisQueueOptions:
        """Options from a ``redis://`` URL's query parameters, then ``overrides``.

        Raises:
            ValueError: Not a Redis URL, an unknown parameter, or a value out of range.
        """
        if not isinstance(url, str) or urlsplit(url).scheme not in SCHEMES:
            raise ValueError(
                f"queue: expected a redis://host:port/db URL (or rediss://, unix://), got {url!r}"
            )
        known = {f.name: f.type for f in fields(cls) if f.name != "url"}
        values: dict[str, object] = {}
        for key, raw in parse_qsl(urlsplit(url).query):
            if key in known:
                values[key] = _parse(key, raw, str(known[key]))
        for key, value in overrides.items():
            if key not in known:
                raise ValueError(
                    f"redis queue: unknown option {key!r}; known: {', '.join(sorted(known))}"
                )
            values[key] = value
        return cls(url=url, **values)  # type: ignore[arg-type]


def _parse(key: str, raw: str, kind: str) -> object:
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        what = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"redis queue URL: {key}={raw!r} is not {what}") from None
    return raw
