"""The key check in front of the llama.cpp judge: ragtrace compares the key, in constant time.

llama.cpp's server compares its API key itself, and not in constant time. When a
``LocalJudgeServer`` has a key, llama.cpp therefore listens with no key where only this user's
processes reach it (a Unix socket in a private 0700 folder; where there are no Unix sockets, a
loopback port with a random key of its own), and a ``JudgeFront`` serves the public address:

- a request must carry ``Authorization: Bearer <key>`` or ``x-api-key: <key>`` (llama.cpp
  accepts both), compared with ``ragtrace._network.same_secret``; else it is answered 401 with
  llama.cpp's JSON error and never reaches llama.cpp. ``/health``, ``/v1/health`` and CORS
  preflights (``OPTIONS``) pass without a key, as they do in llama.cpp;
- anything else is forwarded as it came (method, path, query, headers but the key and the
  hop-by-hop ones, body up to ``max_body`` bytes) and the answer comes back as llama.cpp gave it:
  status, headers and body, a streamed (chunked, server-sent events) answer piece by piece as it
  arrives, so ``stream=True`` clients work;
- a client has ``client_timeout_s`` to send its request; llama.cpp has ``upstream_timeout_s``
  between two pieces of its answer (a long generation sends nothing until it is done). An
  unreachable or silent llama.cpp is a 502 or 504 with a JSON error::

    front = JudgeFront("0.0.0.0", 8089, Upstream.unix("/run/judge/llama.sock"), api_key=key)
    front.start()            # front.url: http://0.0.0.0:8089
    front.close()
"""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from http import HTTPStatus
from typing import ClassVar

from ragtrace._network import same_secret
from ragtrace._network.http import HttpServer, QuietHandler, RequestRefused, bind, read_body

MAX_BODY = 8 << 20
"""The largest request body forwarded (8 MiB; a judge prompt is some tens of kilobytes)."""
CLIENT_TIMEOUT_S = 30.0
"""How long a client may sit idle or send slowly."""
UPSTREAM_TIMEOUT_S = 600.0
"""How long llama.cpp may stay silent while it answers (its own default read/write timeout)."""
PUBLIC_PATHS = frozenset({"/health", "/v1/health"})
"""Paths llama.cpp answers without a key (seen with xllamacpp 2026.10: every other one needs it)."""
_PIECE = 1 << 16
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
        "expect",
    }
)
_KEYS = frozenset({"authorization", "x-api-key"})


@dataclass(frozen=True)
class Upstream:
    """Where llama.cpp listens: a Unix socket ``path``, or ``host:port``; ``api_key`` is its own
    key (only where it listens on a port), added to every forwarded request."""

    path: str = ""
    host: str = "127.0.0.1"
    port: int = 0
    api_key: str | None = None

    @classmethod
    def unix(cls, path: str) -> Upstream:
        return cls(path=path)

    def connection(self, timeout_s: float) -> http.client.HTTPConnection:
        """A new connection to llama.cpp (not yet connected)."""
        if self.path:
            return _UnixConnection(self.path, timeout_s)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)

    def __repr__(self) -> str:  # never the key
        where = f"unix:{self.path}" if self.path else f"{self.host}:{self.port}"
        return f"Upstream({where!r})"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout_s: float) -> None:
        super().__init__("localhost", timeout=timeout_s)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class JudgeFront:
    """Checks the key of every request in constant time and forwards the rest to llama.cpp.

    Args:
        host, port: Where to listen (port 0: a free one).
        upstream: Where llama.cpp listens.
        api_key: The key asked for (not empty).
        max_body: The largest request body taken (413 beyond).
        client_timeout_s: How long a client may sit idle or send slowly.
        upstream_timeout_s: How long llama.cpp may stay silent while it answers.

    Raises:
        ValueError: No key.
        OSError: ``host:port`` cannot be bound (``cannot listen on host:port: ...``), at
            construction.
    """

    def __init__(
        self,
        host: str,
        port: int,
        upstream: Upstream,
        *,
        api_key: str,
        max_body: int = MAX_BODY,
        client_timeout_s: float = CLIENT_TIMEOUT_S,
        upstream_timeout_s: float = UPSTREAM_TIMEOUT_S,
    ) -> None:
        if not api_key:
            raise ValueError("JudgeFront needs an api_key: without one, serve llama.cpp directly")
        handler = type(
            "_BoundFrontHandler",
            (_FrontHandler,),
            {
                "front": self,
                "timeout": client_timeout_s,
            },
        )
        self.upstream = upstream
        self._api_key = api_key
        self.max_body = int(max_body)
        self.upstream_timeout_s = float(upstream_timeout_s)
        self._http: HttpServer = bind(
            host,
            int(port),
            handler,
            what="ragtrace judge (key check)",
            thread="ragtrace-judge-front",
            cannot="the judge server cannot listen",
        )
        self.url = self._http.url

    def start(self) -> JudgeFront:
        """Serve from a daemon thread (once)."""
        self._http.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        self._http.close()

    def accepts(self, authorization: str | None, x_api_key: str | None) -> bool:
        """Whether a request with these headers carries the key (``same_secret``; as llama.cpp
        does, ``x-api-key`` may say ``Bearer <key>`` too)."""
        given = []
        if authorization is not None:
            scheme, _, rest = authorization.strip().partition(" ")
            if scheme.lower() == "bearer":
                given.append(rest.strip())
        if x_api_key is not None:
            scheme, _, rest = x_api_key.strip().partition(" ")
            given.append(rest.strip() if scheme.lower() == "bearer" else x_api_key.strip())
        matches = [same_secret(key, self._api_key) for key in given]  # each one, no early exit
        return any(matches)

    def __repr__(self) -> str:
        return f"JudgeFront({self.url!r} -> {self.upstream!r})"


class _FrontHandler(QuietHandler):
    front: ClassVar[JudgeFront]
    protocol_version = "HTTP/1.1"
    server_version, sys_version = "ragtrace-judge", ""
    disable_nagle_algorithm = True  # else each answer waits ~45 ms for the client's ACK

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _handle(self) -> None:
        path = self.path.partition("?")[0]
        public = path in PUBLIC_PATHS or self.command == "OPTIONS"
        if not public and not self.front.accepts(
            self.headers.get("Authorization"), self.headers.get("X-Api-Key")
        ):
            self.close_connection = True  # its body is unread
            self._error(HTTPStatus.UNAUTHORIZED, "Invalid API Key", "authentication_error")
            return
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length")
            return
        try:
            body = read_body(self, self.front.max_body)
        except RequestRefused as exc:
            self.close_connection = True
            self._error(exc.status, exc.message)
            return
        self._forward(body)

    def _forward(self, body: bytes) -> None:
        front = self.front
        upstream = front.upstream.connection(front.upstream_timeout_s)
        try:
            try:
                upstream.putrequest(
                    self.command, self.path, skip_host=True, skip_accept_encoding=True
                )
                upstream.putheader("Host", "localhost")
                for name, value in self.headers.items():
                    if name.lower() not in _HOP_BY_HOP and name.lower() not in _KEYS:
                        upstream.putheader(name, value)
                if front.upstream.api_key:
                    upstream.putheader("Authorization", f"Bearer {front.upstream.api_key}")
                if body or self.command in ("POST", "PUT", "PATCH"):
                    upstream.putheader("Content-Length", str(len(body)))
                upstream.endheaders(body or None)  # one send: headers and body
                answer = upstream.getresponse()
            except TimeoutError:
                self.close_connection = True
                self._error(HTTPStatus.GATEWAY_TIMEOUT, "the llama.cpp judge did not answer")
                return
            except (OSError, http.client.HTTPException) as exc:
                self.close_connection = True
                self._error(HTTPStatus.BAD_GATEWAY, f"the llama.cpp judge is unreachable: {exc}")
                return
            self._relay(answer)
        finally:
            upstream.close()

    def _relay(self, answer: http.client.HTTPResponse) -> None:
        self.send_response_only(answer.status, answer.reason)
        self.log_request(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        bodiless = self.command == "HEAD" or answer.status in (204, 304) or answer.status < 200
        if bodiless:
            if answer.length is not None:
                self.send_header("Content-Length", str(answer.length))
            self.end_headers()
            return
        if answer.length is not None and not answer.chunked:
            self.send_header("Content-Length", str(answer.length))
            self.end_headers()
            while piece := answer.read(_PIECE):
                self.wfile.write(piece)
            return
        chunked = self.request_version != "HTTP/1.0"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:  # an HTTP/1.0 client: the end of the answer is the end of the connection
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        while piece := answer.read1(_PIECE):  # as it arrives: server-sent events
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _error(self, status: HTTPStatus, message: str, kind: str = "server_error") -> None:
        if status < 500 and status != HTTPStatus.UNAUTHORIZED:
            kind = "invalid_request_error"
        payload = {"error": {"message": message, "type": kind, "code": int(status)}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
