"""The one small HTTP server every ragtrace port runs on: ingest, review and ``/metrics``.

``bind`` opens a threading ``http.server`` on ``host:port`` (IPv4 or IPv6 by the address;
port 0 picks a free one) and returns an ``HttpServer`` that knows the address really bound
(``host``, ``port``, ``url``, ``listening``); ``start`` serves it from a daemon thread, so it
never keeps the process alive, and ``close`` stops it within a bounded time (idempotent; in a
forked child only the socket is closed). ``bind_wsgi`` does the same for a WSGI app
(wsgiref's server: the ``/metrics`` endpoint serves prometheus_client's own WSGI app)::

    server = bind("127.0.0.1", 0, Handler, what="ragtrace review", thread="ragtrace-review")
    server.start()
    print(server.url)        # http://127.0.0.1:40123
    server.close()

What every server shares:

- a binding failure is an ``OSError`` naming ``host:port`` (its ``__cause__`` is the socket's);
- handlers derive from ``QuietHandler``: no line per request (debug level only), a read
  timeout so an idle or slow client cannot hold a thread, and ``read_body`` to take a body
  within a size limit (``RequestRefused`` with the status to answer: 400, 411, 413);
- a connection that breaks (a client that resets or times out) is one log line, at most one
  per ``LOG_EVERY_S`` with a count (``BrokenConnections``), never socketserver's traceback;
- bearer tokens are checked in constant time with ``ragtrace._network.authorized``; who may
  reach a server at all is ``ragtrace._network.check_exposure``'s rule.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from types import TracebackType
from typing import Any, Self
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from ragtrace._network import WILDCARDS

LOG_EVERY_S = 10.0
"""Broken connections are logged at most once per this many seconds (with a count)."""
READ_TIMEOUT_S = 30.0
"""How long a connection may sit idle or send slowly, unless a handler says otherwise."""
_log = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class RequestRefused(Exception):
    """A request refused before it is handled: the status to answer and why, in words."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BrokenConnections:
    """Logs broken connections one line at a time, at most one line per ``LOG_EVERY_S``.

    Args:
        what: The server, at the head of each line (``ragtrace ingest (OTLP/HTTP)``).
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._next = 0.0
        self._quiet = 0

    def __call__(self, peer: object, exc: BaseException | None) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                self._quiet += 1
                return
            self._next = now + LOG_EVERY_S
            quiet, self._quiet = self._quiet, 0
        more = f" ({quiet} more since the last one logged)" if quiet else ""
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
        if isinstance(exc, OSError) or exc is None:
            _log.warning("%s: connection from %s broken: %s%s", self._what, peer, reason, more)
        else:  # not the network: a bug, worth its traceback
            _log.error("%s: request from %s failed%s", self._what, peer, more, exc_info=exc)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs no line per request and times idle connections out."""

    timeout = READ_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        """Debug level only: outcomes are counted in Prometheus, a scrape is not news."""
        _log.debug("%s - " + format, self.address_string(), *args)


def read_body(handler: BaseHTTPRequestHandler, limit: int, *, required: bool = False) -> bytes:
    """The request's body, at most ``limit`` bytes as its ``Content-Length`` says.

    Args:
        handler: The request.
        limit: The largest body taken.
        required: A request without ``Content-Length`` is refused (411); else its body is empty.

    Raises:
        RequestRefused: 411 (no or a malformed length, when required), 400 (a malformed length,
            or a body shorter than it says), 413 (over ``limit``). The body is then unread: the
            caller closes the connection.
    """
    length = (handler.headers.get("Content-Length") or "").strip()
    if not length.isdigit():
        if required:
            raise RequestRefused(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
        if length:
            raise RequestRefused(HTTPStatus.BAD_REQUEST, "Bad Content-Length.")
        return b""
    size = int(length)
    if size > limit:
        raise RequestRefused(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"body of {size} bytes is over the limit of {limit}",
        )
    body = handler.rfile.read(size) if size else b""
    if len(body) < size:
        raise RequestRefused(HTTPStatus.BAD_REQUEST, "body shorter than Content-Length")
    return body


class _ThreadingServer(ThreadingMixIn, HTTPServer):
    """One daemon thread per connection; a broken connection is one line (``BrokenConnections``)."""

    daemon_threads = True
    request_queue_size = 128
    """Connections the kernel holds before they are accepted (socketserver's 5 made a burst
    of new connections wait a second for the SYN to be sent again)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        family: int,
        broken: BrokenConnections,
    ) -> None:
        self.address_family = family
        self.broken = broken
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line per broken connection instead of socketserver's traceback."""
        peer = f"{client_address[0]}:{client_address[1]}" if client_address else "?"
        self.broken(peer, sys.exc_info()[1])


class _ThreadingWSGIServer(_ThreadingServer, WSGIServer):
    """wsgiref's server, one daemon thread per connection."""


class _QuietWSGIHandler(QuietHandler, WSGIRequestHandler):
    """wsgiref's handler, quiet and with the read timeout."""


class ClosesOnExit:
    """A server that ``with`` closes on the way out: subclasses define ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class HttpServer(ClosesOnExit):
    """A bound server (see ``bind``): serving once started; a context manager.

    Attributes:
        host: The address it is bound to (``::`` or ``127.0.0.1``; no brackets).
        port: The port it is bound to (the one picked when asked for port 0).
        url: ``http://host:port`` (IPv6 addresses in brackets), without a path.
        listening: ``host:port`` as bound (``[::]:4318``).
    """

    def __init__(self, httpd: HTTPServer, name: str, poll_s: float) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": poll_s}, name=name, daemon=True
        )
        self._closed = False
        self._lock = threading.Lock()
        self.host = str(httpd.server_address[0])
        self.port = int(httpd.server_address[1])
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.listening = f"{shown}:{self.port}"
        self.url = f"http://{self.listening}"

    def start(self) -> HttpServer:
        """Serve from a daemon thread (once)."""
        with self._lock:
            if not self._closed and self._thread.ident is None:
                self._thread.start()
        return self

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop serving, release the port and wait up to ``timeout_s`` for the serving loop
        (idempotent). In a forked child, where the serving thread is the parent's, only the
        socket is closed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive():  # else shutdown() would wait for a loop that never runs
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread.ident is not None:
            self._thread.join(timeout_s)

    def __repr__(self) -> str:
        return f"HttpServer({self.url!r}, closed={self._closed})"


def bind(
    host: str,
    port: int,
    handler: type[BaseHTTPRequestHandler],
    *,
    what: str,
    thread: str,
    cannot: str = "cannot listen",
    poll_s: float = 0.1,
) -> HttpServer:
    """Bind a threading HTTP server for ``handler`` on ``host:port``; ``start()`` serves it.

    Args:
        host: The address (``127.0.0.1``, ``::1``, ``[::1]``, ``0.0.0.0``, a host name).
        port: The port; 0 picks a free one (read it from ``.port``).
        handler: The request handler class (a ``QuietHandler`` as a rule).
        what: The server, in its log lines (``ragtrace review``).
        thread: Its serving thread's name, before the port (``ragtrace-review``).
        cannot: The head of the error when the address cannot be bound.
        poll_s: How soon the serving loop notices ``close()``.

    Raises:
        OSError: ``<cannot> on host:port: <reason>`` (in use, not local, unknown name).
    """
    return _bind(host, port, handler, _ThreadingServer, what, thread, cannot, poll_s)


def bind_wsgi(
    host: str,
    port: int,
    app: WsgiApp,
    *,
    what: str,
    thread: str,
    cannot: str = "cannot listen",
    poll_s: float = 0.05,
) -> HttpServer:
    """``bind`` for a WSGI ``app`` (wsgiref's server and handler, quiet, threaded)."""
    server = _bind(
        host, port, _QuietWSGIHandler, _ThreadingWSGIServer, what, thread, cannot, poll_s
    )
    httpd = server._httpd
    assert isinstance(httpd, WSGIServer)
    httpd.set_app(app)
    return server


def _bind(
    host: str,
    port: int,
    handler: type[BaseHTTPRequestHandler],
    server_class: type[_ThreadingServer],
    what: str,
    thread: str,
    cannot: str,
    poll_s: float,
) -> HttpServer:
    address = host.strip("[]")
    try:
        family = address_family(address, port)
        httpd = server_class((address, port), handler, family, BrokenConnections(what))
    except OSError as exc:
        raise OSError(exc.errno, f"{cannot} on {host}:{port}: {exc.strerror or exc}") from exc
    return HttpServer(httpd, f"{thread}-{httpd.server_address[1]}", poll_s)


def address_family(host: str, port: int) -> int:
    """The socket family to bind ``host`` with (every interface of IPv4 for ``""``)."""
    if host in WILDCARDS and host != "::":
        return socket.AF_INET
    if ":" in host:
        return socket.AF_INET6
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    return int(infos[0][0])


def connect_host(addr: str) -> str:
    """Where a client on this machine reaches a server bound to ``addr``."""
    if addr in ("0.0.0.0", ""):
        return "127.0.0.1"
    if addr == "::":
        return "[::1]"
    return f"[{addr}]" if ":" in addr else addr
