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
- ``dedupe_s`` (120): how long a record's idempotency key is remembered. A record the app sends
  again within it (a retry after a timeout whose first try did reach Redis) is not added twice,
  and a record published within it is not published again (it is counted as a duplicate). The
  keys cost Redis about 60 bytes per record shipped in the last ``dedupe_s`` to ``2 * dedupe_s``.
- ``max_hold_s`` (600): a worker keeps the entries it is evaluating claimed (a heartbeat resets
  their idle time every ``reclaim_idle_s / 4``) for at most this long; a batch held longer is
  left to be reclaimed, as a stuck worker's.
- ``consumer_idle_s`` (3600): a consumer idle this long with nothing pending is removed from the
  group (a worker that was killed, or scaled away).

Any other query parameter must be one the Redis client reads from a URL (``db``,
``socket_keepalive``, ``client_name``, ``ssl_cert_reqs`` with ``rediss://``, ...); an unknown or
malformed one raises ``ValueError`` naming it and listing the valid ones, at ``init``, at a
worker's and at ingest's start, never later at the first send.

The dead-letter stream is ``<stream>:dead``, the counters hash ``<stream>:stats``, the stream's
epoch (an id and a creation time, written once with the stream) ``<stream>:epoch`` and the record
of resets (the stream or the group found lost) ``<stream>:resets``.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ragtrace._config.suggestions import suggest

SCHEMES = ("redis", "rediss", "unix")
# Query parameters the Redis client reads from a URL as text (it parses its typed ones itself,
# see ``_client_parsers``); TLS ones only with ``rediss://``.
_CLIENT_TEXT_OPTIONS = (
    "client_name", "username", "password", "encoding", "encoding_errors", "lib_name",
    "lib_version",
)  # fmt: skip
_CLIENT_TLS_OPTIONS = (
    "ssl_keyfile", "ssl_certfile", "ssl_cert_reqs", "ssl_ca_certs", "ssl_ca_path", "ssl_ca_data",
    "ssl_password", "ssl_ciphers",
)  # fmt: skip


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
    dedupe_s: float = 120.0
    max_hold_s: float = 600.0
    consumer_idle_s: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("max_backlog", "buffer", "batch", "max_deliveries", "max_entry_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"redis queue: {name} must be a whole number >= 1, got {value!r}")
        for name in ("timeout_s", "reclaim_idle_s", "dedupe_s", "max_hold_s", "consumer_idle_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"redis queue: {name} must be a finite number > 0, got {value!r}")
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
    def undelivered_prefix(self) -> str:
        """Keys ``<prefix><entry id>``: the sinks that did not confirm an entry's delivery."""
        return f"{self.stream}:undelivered:"

    @property
    def epoch_key(self) -> str:
        return f"{self.stream}:epoch"

    @property
    def resets_key(self) -> str:
        return f"{self.stream}:resets"

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
        parts = urlsplit(url)
        client = _client_parsers(parts.scheme)
        values: dict[str, object] = {}
        for key, raw in parse_qsl(parts.query, keep_blank_values=True):
            if key in known:
                values[key] = _parse(key, raw, str(known[key]))
            elif key in client:
                _check_client_value(key, raw, client[key])
            else:
                hint = suggest(key, [*known, *client])
                raise ValueError(
                    f"redis queue URL: unknown option {key!r}{hint}; ragtrace's options: "
                    f"{', '.join(sorted(known))}; the Redis client's ({parts.scheme}://): "
                    f"{', '.join(sorted(client))}"
                )
        for key, value in overrides.items():
            if key not in known:
                raise ValueError(
                    f"redis queue: unknown option {key!r}; known: {', '.join(sorted(known))}"
                )
            values[key] = value
        return cls(url=url, **values)  # type: ignore[arg-type]


def _client_parsers(scheme: str) -> dict[str, Callable[[str], object] | None]:
    """The query parameters the Redis client takes for ``scheme``, each with the client's own
    parser (None: taken as text)."""
    typed: dict[str, Callable[[str], object] | None] = {}
    try:
        from redis.connection import URL_QUERY_ARGUMENT_PARSERS

        typed.update(URL_QUERY_ARGUMENT_PARSERS)  # type: ignore[arg-type]
    except ImportError:  # the client is checked (and named) when the queue connects
        pass
    names: dict[str, Callable[[str], object] | None] = dict.fromkeys(_CLIENT_TEXT_OPTIONS)
    names.update(typed)
    if scheme == "rediss":
        names.update(dict.fromkeys(_CLIENT_TLS_OPTIONS))
    else:  # TLS settings would reach a plain connection, which refuses them at the first send
        names = {k: v for k, v in names.items() if not k.startswith("ssl_")}
    return names


def _check_client_value(key: str, raw: str, parser: Callable[[str], object] | None) -> None:
    if not raw:
        raise ValueError(f"redis queue URL: {key}= has no value")
    if parser is None:
        return
    try:
        value = parser(raw)
    except (TypeError, ValueError):
        raise ValueError(f"redis queue URL: {key}={raw!r} is not a valid value") from None
    if isinstance(value, float) and not math.isfinite(value):  # a timeout of nan or inf
        raise ValueError(f"redis queue URL: {key}={raw!r} must be a finite number")


def _parse(key: str, raw: str, kind: str) -> object:
    if not raw:
        raise ValueError(f"redis queue URL: {key}= has no value")
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        what = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"redis queue URL: {key}={raw!r} is not {what}") from None
    return raw
