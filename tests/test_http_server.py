"""The one small HTTP server under ingest, review and ``/metrics``: binding, lifecycle, body
limits, broken connections and quiet logs, on real sockets on loopback."""

from __future__ import annotations

import errno
import gzip
import logging
import re
import socket
import threading
import time
import urllib.error
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, make_wsgi_app

from ragtrace._network.http import (
    HttpServer,
    QuietHandler,
    RequestRefused,
    bind,
    bind_wsgi,
    connect_host,
    read_body,
)
from tests.components import http_get, wait_until

LOGGER = "ragtrace._network.http"


class Echo(QuietHandler):
    """Answers a POST with its body (limit 64 bytes, length required when the path says so)
    and a refusal with its status and message."""

    def do_POST(self) -> None:
        try:
            body = read_body(self, 64, required=self.path == "/required")
        except RequestRefused as refused:
            self.close_connection = True
            self._answer(int(refused.status), refused.message.encode())
            return
        self._answer(200, body)

    def do_GET(self) -> None:
        if self.path == "/reset":
            raise ConnectionResetError("peer went away")
        if self.path == "/bug":
            raise RuntimeError("a bug in the handler")
        self._answer(200, b"hello")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[HttpServer]:
    with bind("127.0.0.1", 0, Echo, what="test server", thread="test-http").start() as running:
        yield running


def raw(server: HttpServer, request: bytes, *, half_close: bool = False) -> bytes:
    """Send ``request`` as is and read the whole answer."""
    with socket.create_connection((server.host, server.port), timeout=5) as sock:
        sock.sendall(request)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_port_zero_reports_the_address_really_bound(server: HttpServer) -> None:
    assert server.port > 0 and server.host == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}"
    assert server.listening == f"127.0.0.1:{server.port}"
    with http_get(server.url + "/") as response:
        assert response.read() == b"hello"
    names = [t.name for t in threading.enumerate()]
    assert f"test-http-{server.port}" in names


def test_an_ipv6_address_binds_with_or_without_brackets() -> None:
    for host in ("::1", "[::1]"):
        with bind(host, 0, Echo, what="test", thread="test-v6").start() as server:
            assert server.url == f"http://[::1]:{server.port}"
            assert server.listening == f"[::1]:{server.port}"
            with http_get(server.url + "/") as response:
                assert response.read() == b"hello"


def test_connect_host_names_where_a_local_client_reaches_the_server() -> None:
    assert connect_host("0.0.0.0") == "127.0.0.1" and connect_host("") == "127.0.0.1"
    assert connect_host("::") == "[::1]" and connect_host("::1") == "[::1]"
    assert connect_host("127.0.0.2") == "127.0.0.2"


def test_a_taken_port_is_an_error_naming_the_address(server: HttpServer) -> None:
    with pytest.raises(
        OSError, match=re.escape(f"cannot listen on 127.0.0.1:{server.port}: ")
    ) as caught:
        bind("127.0.0.1", server.port, Echo, what="test", thread="test-taken")
    assert caught.value.errno == errno.EADDRINUSE
    assert isinstance(caught.value.__cause__, OSError)
    with pytest.raises(OSError, match=re.escape("cannot serve things on no-such-host.invalid:0: ")):
        bind("no-such-host.invalid", 0, Echo, what="t", thread="t", cannot="cannot serve things")


def test_close_is_bounded_idempotent_and_frees_the_port() -> None:
    server = bind("127.0.0.1", 0, Echo, what="test", thread="test-close").start()
    port = server.port
    started = time.monotonic()
    server.close()
    server.close()
    assert server.closed and time.monotonic() - started < 2.0
    assert not any(t.name == f"test-close-{port}" for t in threading.enumerate())
    with pytest.raises(urllib.error.URLError):
        http_get(f"http://127.0.0.1:{port}/", timeout_s=1)
    with bind("127.0.0.1", port, Echo, what="test", thread="test-again").start() as again:
        assert again.port == port
    never_started = bind("127.0.0.1", 0, Echo, what="test", thread="test-idle")
    never_started.close()  # no serving loop to wait for
    assert never_started.closed
    assert never_started.start().closed  # a closed server does not start


def lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the server logged."""
    return [r for r in caplog.records if r.name == LOGGER]


def post(path: str, headers: bytes, body: bytes = b"") -> bytes:
    return b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n" + body


@pytest.mark.parametrize(
    ("path", "headers", "body", "status", "message"),
    [
        ("/", b"Content-Length: 5\r\n", b"hello", b"200", b"hello"),
        ("/", b"", b"", b"200", b""),
        ("/required", b"", b"", b"411", b"Content-Length is required"),
        ("/required", b"Content-Length: x1\r\n", b"", b"411", b"Content-Length is required"),
        ("/", b"Content-Length: x1\r\n", b"", b"400", b"Bad Content-Length."),
        ("/", b"Content-Length: -3\r\n", b"", b"400", b"Bad Content-Length."),
        ("/", b"Content-Length: 65\r\n", b"", b"413", b"body of 65 bytes is over the limit of 64"),
    ],
)
def test_bodies_are_taken_within_their_limit(
    server: HttpServer, path: str, headers: bytes, body: bytes, status: bytes, message: bytes
) -> None:
    answer = raw(server, post(path, headers, body))
    head, _, got = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == status and got == message


def test_a_body_shorter_than_its_length_is_refused(server: HttpServer) -> None:
    answer = raw(server, post("/", b"Content-Length: 10\r\n", b"abc"), half_close=True)
    assert answer.split(b" ")[1] == b"400" and answer.endswith(b"body shorter than Content-Length")


def test_requests_leave_no_log_line_above_debug(
    server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for _ in range(3):
            with http_get(server.url + "/") as response:
                response.read()
    assert [r for r in caplog.records if r.name == LOGGER] == []


def test_a_broken_connection_is_one_line_and_the_next_ones_are_counted(
    server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        raw(server, b"GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_until(
            "the broken connection's line", lambda: lines(caplog), timeout_s=5, interval_s=0.05
        )
        raw(server, b"GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
    (line,) = lines(caplog)
    assert line.levelno == logging.WARNING and line.exc_info is None
    assert line.getMessage().startswith("test server: connection from 127.0.0.1:")
    assert "broken: ConnectionResetError: peer went away" in line.getMessage()


def test_a_bug_in_a_handler_is_logged_with_its_traceback(
    server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        raw(server, b"GET /bug HTTP/1.1\r\nHost: x\r\n\r\n")
        (line,) = wait_until(
            "the failure's line", lambda: lines(caplog), timeout_s=5, interval_s=0.05
        )
    assert line.levelno == logging.ERROR and "request from 127.0.0.1:" in line.getMessage()
    assert line.exc_info is not None and line.exc_info[0] is RuntimeError


def test_a_wsgi_app_is_served_with_its_own_negotiation() -> None:
    """prometheus_client's WSGI app on the helper: gzip and OpenMetrics as the client asks."""
    registry = CollectorRegistry()
    Counter("probe_requests", "Requests.", registry=registry).inc(3)
    app = make_wsgi_app(registry)
    with bind_wsgi("127.0.0.1", 0, app, what="test", thread="test-wsgi").start() as server:
        with http_get(server.url + "/metrics", {"Accept-Encoding": "gzip"}) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert b"probe_requests_total 3.0" in gzip.decompress(response.read())
        accept = {"Accept": "application/openmetrics-text; version=1.0.0"}
        with http_get(server.url + "/metrics", accept) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            assert response.read().endswith(b"# EOF\n")
