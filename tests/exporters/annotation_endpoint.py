"""A loopback stand-in for Phoenix's span annotation endpoint that fails on purpose.

``AnnotationEndpoint`` answers ``POST /v1/span_annotations?sync=true`` as Phoenix 20.26.1 does
(checked against the real server in ``tests/test_phoenix_live.py``): 200 with the inserted ids
when every span of the batch is known, 404 ``{"detail": "Spans with IDs a, b do not exist."}``
otherwise; with ``sessions`` given it also answers ``POST /v1/session_annotations?sync=true`` as
Phoenix 12 and later do (404 ``Sessions with IDs ... do not exist.`` for sessions it lacks;
without ``sessions``, 404 ``Not Found`` as an older Phoenix). Tests script what real Phoenix
cannot be made to do on demand: answer with a given status (``fail_with``), hang (``hang_s``),
or learn of spans later (``known``)::

    with AnnotationEndpoint(known={"00f067aa0ba902b7"}) as ep:
        sink = PhoenixAnnotationSink(ep.endpoint, ...)
        ...
        assert ep.received == [...]
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

PATH = "/v1/span_annotations"
SESSION_PATH = "/v1/session_annotations"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    endpoint: AnnotationEndpoint


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        ep = self.server.endpoint
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status, reply = ep._answer(self.path, dict(self.headers), body)
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class AnnotationEndpoint:
    """Phoenix's annotation endpoint on 127.0.0.1 (a free port), with scripted faults.

    Args:
        known: Span ids the server has (None: every span is known).
        fail_with: Statuses to answer the next requests with, in order, before behaving.
        hang_s: Sleep this long before answering each request.
        sessions: Session ids the server has (None: no session annotation route at all).
    """

    def __init__(
        self,
        known: set[str] | None = None,
        fail_with: list[int] | None = None,
        hang_s: float = 0.0,
        sessions: set[str] | None = None,
    ) -> None:
        self.known = known
        self.sessions = sessions
        self.fail_with: deque[int] = deque(fail_with or [])
        self.hang_s = hang_s
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every request: ``{"path", "headers", "data", "status", "at"}``."""
        self.received: list[dict[str, Any]] = []
        """Annotations accepted (200), in order."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.endpoint = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def learn(self, *span_ids: str) -> None:
        """The spans reached the server (as the app's span processor sends them)."""
        with self.lock:
            if self.known is not None:
                self.known.update(span_ids)

    def statuses(self) -> list[int]:
        with self.lock:
            return [r["status"] for r in self.requests]

    def _answer(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        if self.hang_s:
            time.sleep(self.hang_s)
        data = json.loads(body).get("data", [])
        with self.lock:
            if self.fail_with:
                status, reply = self.fail_with.popleft(), {"detail": "scripted failure"}
            elif not path.startswith(PATH) and not (
                path.startswith(SESSION_PATH) and self.sessions is not None
            ):
                status, reply = 404, {"detail": "Not Found"}
            else:
                by_session = path.startswith(SESSION_PATH)
                key, have = ("session_id", self.sessions) if by_session else ("span_id", self.known)
                missing = sorted({a[key] for a in data} - have if have is not None else set())
                if missing:
                    what = "Sessions" if by_session else "Spans"
                    detail = f"{what} with IDs {', '.join(missing)} do not exist."
                    status, reply = 404, {"detail": detail}
                else:
                    status = 200
                    reply = {
                        "data": [{"id": str(len(self.received) + i)} for i in range(len(data))]
                    }
                    self.received.extend(data)
            self.requests.append(
                {
                    "path": path,
                    "headers": headers,
                    "data": data,
                    "status": status,
                    "at": time.time(),
                }
            )
        return status, reply

    def __enter__(self) -> AnnotationEndpoint:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
