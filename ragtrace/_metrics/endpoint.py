"""The ``/metrics`` endpoint: ``start_metrics_server`` serves a registry to Prometheus::

    with start_metrics_server(port=9464) as server:
        print(server.url)                         # http://127.0.0.1:9464/metrics

The endpoint is prometheus_client's own WSGI app (``make_wsgi_app``) on ragtrace's one small
HTTP server (``ragtrace._network.http``), so it negotiates the format and gzip as
prometheus_client does: the OpenMetrics exposition, which carries the trace-id exemplars, when
the scraper's ``Accept`` header asks for ``application/openmetrics-text`` (Prometheus does),
the classic text format otherwise; gzip when ``Accept-Encoding`` allows it.

It listens on loopback by default. Beyond loopback it starts only with a ``token`` (then every
path, health probes included, answers 401 without ``Authorization: Bearer <token>``; Prometheus
sends it with ``authorization: {credentials_file: ...}`` in its scrape config) or with
``allow_unauthenticated=True``; otherwise it raises ``ExposureRefused`` (``ragtrace._network``).
At start it logs the address really bound and whether a token is asked for.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Protocol, Self

from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app

from ragtrace._config import Config
from ragtrace._network import authorized, check_exposure, listening_line
from ragtrace._network.http import ClosesOnExit, HttpServer, WsgiApp, bind_wsgi

logger = logging.getLogger("ragtrace")

METRICS_PATH = "/metrics"
HEALTH_PATH = "/healthz"
LIVE_PATH = "/livez"
READY_PATH = "/readyz"

_StartResponse = Callable[..., Any]
HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]
"""Returns ``(healthy, details)``; details are served as JSON."""


class _Gate:
    """Open while the server serves; ``close`` refuses new scrapes and waits (bounded) for
    those in flight, so no scrape is answered from families already taken off the registry."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._open = True
        self._busy = 0

    def enter(self) -> bool:
        with self._cond:
            if self._open:
                self._busy += 1
            return self._open

    def leave(self) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def close(self, timeout_s: float) -> None:
        with self._cond:
            self._open = False
            self._cond.wait_for(lambda: self._busy == 0, timeout_s)


class MetricsServer(Protocol):
    """A running ``/metrics`` endpoint, as ``ragtrace.start_metrics_server`` returns it.

    Public as ``ragtrace.MetricsServer``. A context manager: leaving the ``with`` block closes
    it (as does the runtime's shutdown, for the runtime's own).

    Attributes:
        host: The address it listens on.
        port: The port it listens on (the one picked when asked for port 0).
        url: ``http://host:port/metrics``.
    """

    host: str
    port: int
    url: str

    @property
    def closed(self) -> bool:
        """Whether it stopped serving."""

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop serving and close the listening socket (idempotent)."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class _ServedMetrics(ClosesOnExit):
    """A ``MetricsServer`` on ragtrace's HTTP server, with the gate its scrapes pass."""

    def __init__(self, server: HttpServer, gate: _Gate | None = None) -> None:
        self._server = server
        self._gate = gate or _Gate()
        self.host = server.host
        self.port = server.port
        self.url = server.url + METRICS_PATH

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop serving and close the listening socket (idempotent).

        In a forked child, where the serving thread is the parent's, only the socket is closed.
        """
        if self._server.closed:
            return
        self._gate.close(min(1.0, timeout_s))  # scrapes from now on: 503
        self._server.close(timeout_s)

    @property
    def closed(self) -> bool:
        return self._server.closed

    def __repr__(self) -> str:
        return f"MetricsServer({self.url!r}, closed={self.closed})"


def start_metrics_server(
    port: int = 9464,
    addr: str = "127.0.0.1",
    registry: CollectorRegistry | None = None,
    *,
    health: HealthCheck | None = None,
    probes: Mapping[str, HealthCheck] | None = None,
    token: str | None = None,
    allow_unauthenticated: bool = False,
) -> MetricsServer:
    """Serve ``registry`` (default: the global one) at ``http://addr:port/metrics``.

    Requests are answered on daemon threads, so the server never keeps the process alive.

    Args:
        port: TCP port; 0 picks a free one (read it from ``.port``).
        addr: Address to listen on; loopback by default. Beyond it (``0.0.0.0``, ``::``, an
            interface's address) it needs ``token`` or ``allow_unauthenticated``.
        registry: The registry to expose.
        health: Also answer ``/healthz``: 200 when ``health()`` says healthy, else 503, with
            its details as JSON.
        probes: More such checks by path (``{"/livez": ..., "/readyz": ...}``).
        token: Require ``Authorization: Bearer <token>`` on every path (401 without it).
        allow_unauthenticated: Listen beyond loopback without a token (the user said so).

    Raises:
        ExposureRefused: ``addr`` is beyond loopback, with no token and not allowed (a
            ``ValueError``).
        OSError: The address cannot be bound (in use, not local), naming ``addr:port``.
    """
    check_metrics_exposure(addr, port, token=token, allow_unauthenticated=allow_unauthenticated)
    gate = _Gate()
    checks = dict(probes or {})
    if health is not None:
        checks[HEALTH_PATH] = health
    app = _routes(make_wsgi_app(REGISTRY if registry is None else registry), checks, gate, token)
    http = bind_wsgi(
        addr,
        port,
        app,
        what="ragtrace metrics",
        thread="ragtrace-metrics",
        cannot="ragtrace: cannot serve metrics",
    )
    server = _ServedMetrics(http.start(), gate)
    paths = ", ".join([METRICS_PATH, *checks])
    logger.info("%s", listening_line(f"ragtrace: {paths}", server.url, addr, token))
    return server


def check_metrics_exposure(
    addr: str, port: int, *, token: str | None, allow_unauthenticated: bool
) -> None:
    """Refuse a metrics endpoint beyond loopback without a token unless that is allowed.

    Raises:
        ExposureRefused: Naming the token and the flag that are the ways out.
    """
    check_exposure(
        "the ragtrace metrics endpoint",
        addr,
        port,
        token=token,
        allowed=allow_unauthenticated,
        token_hint="metrics_token, RAGTRACE_METRICS_TOKEN",
        allow_hint="metrics_allow_unauthenticated, RAGTRACE_METRICS_ALLOW_UNAUTHENTICATED=true "
        "or --metrics-allow-unauthenticated",
    )


def check_configured_metrics(config: Config) -> None:
    """``check_metrics_exposure`` for the endpoint ``config`` asks for, if any: a command calls
    it before it starts anything.

    Raises:
        ExposureRefused: See ``check_metrics_exposure``.
    """
    if config.metrics_port is not None:
        check_metrics_exposure(
            config.metrics_addr,
            config.metrics_port,
            token=config.metrics_token,
            allow_unauthenticated=config.metrics_allow_unauthenticated,
        )


def serve_configured_metrics(
    config: Config, registry: CollectorRegistry, live: HealthCheck, ready: HealthCheck
) -> MetricsServer | None:
    """``/metrics``, ``/livez``, ``/readyz`` and ``/healthz`` (``ready`` again) where
    ``config`` says, or None when it names no port: a service's endpoint (``ragtrace worker``,
    ``ragtrace ingest``)."""
    if config.metrics_port is None:
        return None
    return start_metrics_server(
        config.metrics_port,
        config.metrics_addr,
        registry,
        health=ready,
        probes={LIVE_PATH: live, READY_PATH: ready},
        token=config.metrics_token,
        allow_unauthenticated=config.metrics_allow_unauthenticated,
    )


def probes_line(server: MetricsServer, token: str | None) -> str:
    """What a command prints once its metrics and health endpoint listens (``listening_line``)."""
    paths = ", ".join([METRICS_PATH, LIVE_PATH, READY_PATH, HEALTH_PATH])
    return listening_line(paths, server.url, server.host, token)


def _routes(
    app: WsgiApp, checks: Mapping[str, HealthCheck], gate: _Gate, token: str | None = None
) -> WsgiApp:
    """Answer ``/metrics`` with ``app``, each path of ``checks`` with its check, 404 elsewhere;
    401 without the token (when there is one); 503 once the server is closing."""

    def serve(environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        if token is not None and not authorized(environ.get("HTTP_AUTHORIZATION"), token):
            start_response(
                "401 Unauthorized",
                [
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("WWW-Authenticate", 'Bearer realm="ragtrace metrics"'),
                ],
            )
            return [b"ragtrace: this endpoint needs its bearer token\n"]
        if not gate.enter():
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"ragtrace: shutting down\n"]
        try:
            return _route(environ, start_response)
        finally:
            gate.leave()

    def _route(environ: dict[str, Any], start_response: _StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in (METRICS_PATH, METRICS_PATH + "/"):
            return app(environ, start_response)
        check = checks.get(path)
        if check is not None:
            try:
                ok, details = check()
            except Exception as exc:  # a broken check is an unhealthy worker, not a crash
                ok, details = False, {"healthy": False, "problems": [f"health check: {exc}"]}
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "application/json")])
            return [json.dumps(details).encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"ragtrace: metrics are served at {METRICS_PATH}\n".encode()]

    return serve
