"""The socket side of the review app: a threading HTTP server running ``ReviewApp``.

``serve_review(app, host, port)`` binds (refusing a non-loopback address without a token:
``ragtrace.network``),
serves from a daemon thread and returns a ``ReviewServer`` (``url``, ``login_url``,
``close()``; a context manager). Request bodies are capped at ``MAX_BODY`` bytes and idle
connections time out, so a slow or huge client cannot hold the server.
"""

from __future__ import annotations

import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlencode

from ragtrace.network import check_exposure, listening_line
from ragtrace.review import pages
from ragtrace.review.server import SECURITY_HEADERS, Request, Response, ReviewApp

logger = logging.getLogger("ragtrace.review")

MAX_BODY = 1 << 20


class _Handler(BaseHTTPRequestHandler):
    server: ReviewHTTPServer
    timeout = 30

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            status = 413 if length > MAX_BODY else 400
            message = "Request too large." if status == 413 else "Bad Content-Length."
            response = Response(status, pages.error_page(status, message).encode())
            response.headers.extend(SECURITY_HEADERS)
            self.close_connection = True
            self._send(response)
            return
        body = self.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, self.path, headers, body)
        self._send(self.server.app.handle(request))

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_POST = do_HEAD = _serve

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("review %s - " + format, self.address_string(), *args)


class ReviewHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: ReviewApp, family: int) -> None:
        self.address_family = family
        self.app = app
        super().__init__(address, _Handler)


class ReviewServer:
    """A running review app (see ``serve_review``); a context manager.

    Attributes:
        url: ``http://host:port`` (with ``?token=...`` appended in ``login_url``).
    """

    def __init__(self, httpd: ReviewHTTPServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host = str(httpd.server_address[0])
        self.port = int(httpd.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        token = httpd.app.token
        self.login_url = self.url + "/queue" + (f"?{urlencode({'token': token})}" if token else "")

    def close(self) -> None:
        """Stop serving (idempotent)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5.0)

    def __enter__(self) -> ReviewServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def serve_review(app: ReviewApp, host: str = "127.0.0.1", port: int = 8765) -> ReviewServer:
    """Serve ``app`` on ``host:port`` from a daemon thread.

    It logs the address really bound and whether a token is asked for. There is no open mode:
    the queue holds chat logs, so beyond loopback a token is always needed.

    Raises:
        ExposureRefused: ``host`` is not loopback and the app has no token (a ``ValueError``).
        OSError: The address cannot be bound.
    """
    check_exposure(
        "the review queue (ragtrace review serve)",
        host,
        port,
        token=app.token,
        allowed=False,
        token_hint="--token, or RAGTRACE_REVIEW_TOKEN",
        allow_hint=None,
    )
    app.bound_host = host.strip("[]")
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    httpd = ReviewHTTPServer((host.strip("[]"), port), app, family)
    thread = threading.Thread(
        target=httpd.serve_forever,
        kwargs={"poll_interval": 0.1},
        name="ragtrace-review",
        daemon=True,
    )
    thread.start()
    server = ReviewServer(httpd, thread)
    logger.info("%s", listening_line("ragtrace review", server.url, host, app.token))
    return server
