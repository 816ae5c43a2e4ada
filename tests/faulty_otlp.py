"""OTLP endpoints that fail on purpose, on loopback, for the shutdown and fault tests.

- ``closed_port()``: a port nothing listens on (connections are refused).
- ``HangingEndpoint``: accepts connections and never answers (a collector stuck in GC).
- ``FailingEndpoint(status)``: answers every ``POST /v1/traces`` with ``status`` (500, 429, ...)
  after reading the body, optionally with ``Retry-After``.

Each counts what reached it, so a test can tell that the exporter really tried::

    with HangingEndpoint() as ep:
        rt = ragtrace.init(otlp_endpoint=ep.endpoint, shutdown_timeout_s=1)
        ...
        assert ep.connections >= 1
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.components import free_port


def closed_port() -> int:
    """A loopback port that refuses connections (free a moment ago, nothing listens)."""
    return free_port()


class _Endpoint:
    """What the faulty endpoints share: a context manager with a base URL."""

    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class HangingEndpoint(_Endpoint):
    """A TCP listener that accepts every connection, reads nothing back and never answers."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._held)

    def start(self) -> None:
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        threading.Thread(target=self._accept, name="hanging-otlp", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._held.append(conn)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            held, self._held = list(self._held), []
        for conn in held:
            with contextlib.suppress(OSError):
                conn.close()
        self._sock.close()


class _FailingHandler(BaseHTTPRequestHandler):
    server: _FailingServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0") or 0)
        self.rfile.read(length)
        endpoint = self.server.owner
        endpoint._count()
        body = b"not today"
        self.send_response(endpoint.status)
        if endpoint.retry_after is not None:
            self.send_header("Retry-After", str(endpoint.retry_after))
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _FailingServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: FailingEndpoint


class FailingEndpoint(_Endpoint):
    """An HTTP endpoint that answers every export with ``status``.

    Args:
        status: The HTTP status of every answer (500: not retried; 429, 503: retried).
        retry_after: A ``Retry-After`` header in seconds, if any.
    """

    def __init__(self, status: int, retry_after: int | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        self._server = _FailingServer(("127.0.0.1", 0), _FailingHandler)
        self._server.owner = self
        self.port = int(self._server.server_address[1])
        self._lock = threading.Lock()
        self.requests = 0

    def _count(self) -> None:
        with self._lock:
            self.requests += 1

    def start(self) -> None:
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"failing-otlp-{self.status}",
            daemon=True,
        ).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
