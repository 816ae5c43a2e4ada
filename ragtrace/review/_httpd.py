"""The socket side of the review app: ``ReviewApp`` on ragtrace's one small HTTP server.

``serve_review(app, host, port)`` binds (refusing a non-loopback address without a token:
``ragtrace._network``), serves from a daemon thread (``ragtrace._network.http``) and returns a
``ReviewServer`` (``url``, ``login_url()``: a one-time login link, ``close()``; a context
manager). Request bodies are capped at ``MAX_BODY`` bytes and idle connections time out, so a
slow or huge client cannot hold the server.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from ragtrace._network import check_exposure, listening_line
from ragtrace._network.http import (
    ClosesOnExit,
    QuietHandler,
    RequestRefused,
    bind,
    read_body,
)
from ragtrace.review import _pages as pages
from ragtrace.review._server import SECURITY_HEADERS, Request, Response, ReviewApp

logger = logging.getLogger("ragtrace.review")

MAX_BODY = 1 << 20


class _Handler(QuietHandler):
    app: ReviewApp

    def _serve(self) -> None:
        try:
            body = read_body(self, MAX_BODY)
        except RequestRefused as refused:
            too_large = refused.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
            message = "Request too large." if too_large else refused.message
            response = Response(refused.status, pages.error_page(refused.status, message).encode())
            response.headers.extend(SECURITY_HEADERS)
            self.close_connection = True  # the body is unread
            self._send(response)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, self.path, headers, body)
        self._send(self.app.handle(request))

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


class ReviewServer(ClosesOnExit):
    """The review app served on ``host:port`` from a daemon thread (see ``serve_review``); a
    context manager.

    Building one binds and starts serving. It logs the address really bound and whether a
    token is asked for. There is no open mode: the queue holds chat logs, so beyond loopback a
    token is always needed.

    Attributes:
        url: ``http://host:port``.
        port: The port it listens on.

    Raises:
        ExposureRefused: ``host`` is not loopback and the app has no token (a ``ValueError``).
        OSError: The address cannot be bound, naming ``host:port``.
    """

    def __init__(self, app: ReviewApp, host: str = "127.0.0.1", port: int = 8765) -> None:
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
        handler = type("Handler", (_Handler,), {"app": app})
        http = bind(host, port, handler, what="ragtrace review", thread="ragtrace-review")
        self._server = http.start()
        self._app = app
        self.port = self._server.port
        self.url = self._server.url
        logger.info("%s", listening_line("ragtrace review", self.url, host, app.token))

    def login_url(self) -> str:
        """The queue's URL; with a token, a one-time login link (``ReviewApp.login_link``),
        never the token itself."""
        return self.url + self._app.login_link()

    def close(self) -> None:
        """Stop serving (idempotent)."""
        self._server.close()


def serve_review(app: ReviewApp, host: str = "127.0.0.1", port: int = 8765) -> ReviewServer:
    """Serve ``app`` on ``host:port`` from a daemon thread: a started ``ReviewServer``.

    Raises:
        ExposureRefused: ``host`` is not loopback and the app has no token (a ``ValueError``).
        OSError: The address cannot be bound, naming ``host:port``.
    """
    return ReviewServer(app, host, port)
