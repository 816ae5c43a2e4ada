"""A results destination a test can close, pause and open, and a worker fleet that sends to it.

``Gate(target)`` is an HTTP endpoint on loopback in front of a real receiver (an OTLP/HTTP
receiver, a Phoenix annotation endpoint): while open it forwards every ``POST`` to ``target``;
while closed it refuses each one (``status``, 400 by default) or, with ``hold``, holds it until
it opens, as a destination that is down or paused would. ``fleet_exporting`` gives ``ragtrace
worker`` subprocesses on a real redis-server with the sinks of a settings file, ``start`` starts
one and waits until it serves ``/livez``::

    with OtlpReceiver() as receiver, Gate(receiver.endpoint) as gate:
        fleet = fleet_exporting(tmp_path, redis_server)
        _, port = start(fleet, "w1", "--otlp-endpoint", gate.endpoint)
        ...
        gate.open = True
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.components import free_port, wait_until
from tests.otlp_receiver import OtlpReceiver
from tests.queues.fleet import Workers
from tests.queues.test_worker import probe
from tests.redis_server import RedisServer

EVALUATORS = 3
"""The workers' evaluators (takes_time, dies_on_poison, flags_bad): one result each per record."""
MANY_DELIVERIES = "reclaim_idle_s=2&max_deliveries=100"
"""Queue options under which an outage of a minute dead-letters nothing."""


class Gate:
    """An HTTP endpoint that forwards to ``target`` while open; while closed it refuses
    (``status``: ``hold=False``) or holds each request until it opens (a paused destination:
    ``hold``), and counts those requests."""

    def __init__(self, target: str, status: int = 400) -> None:
        self.target = target.rstrip("/")
        self.status = status
        self.hold = False
        self.refused = 0
        self._opened = threading.Event()
        gate = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, reply = gate.status, b"refused by the test's gate"
                if not gate.open:
                    gate.refused += 1
                    if gate.hold:
                        gate._opened.wait(60)
                if gate.open:
                    headers = {
                        name: self.headers.get(name, "")
                        for name in ("Content-Type", "Content-Encoding")
                        if self.headers.get(name)
                    }
                    status, reply = gate.forward(self.path, body, headers)
                with contextlib.suppress(OSError):  # the sender gave up waiting
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def open(self) -> bool:
        return self._opened.is_set()

    @open.setter
    def open(self, value: bool) -> None:
        if value:
            self._opened.set()
        else:
            self._opened.clear()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def forward(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        request = urllib.request.Request(self.target + path, data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()

    def __enter__(self) -> Gate:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.open = True  # let held requests go
        self._server.shutdown()
        self._server.server_close()


def fleet_exporting(
    tmp_path: Path,
    redis_server: RedisServer,
    query: str = MANY_DELIVERIES,
    sinks: str = "{otel: logs}",
) -> Workers:
    """Workers whose results go to ``sinks`` (the settings file's ``sinks:``; by default OTLP
    log records); the queue URL's options are ``query`` (by default many deliveries are
    allowed, so a closed destination does not dead-letter)."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "evaluators: [takes_time, dies_on_poison, flags_bad]\n"
        "pipeline: {workers: 2, batch_wait_s: 0.05}\n"
        f"sinks: {sinks}\n"
    )
    url = redis_server.url + "?batch=8&" + query
    return Workers(tmp_path, url, settings)


def start(
    fleet: Workers, name: str, *args: str, eval_s: float = 0.01
) -> tuple[subprocess.Popen[bytes], int]:
    """Start worker ``name`` with the CLI arguments ``args`` and a metrics port; once it serves
    ``/livez``, its process and that port."""
    port = free_port()
    proc = fleet.start(name, *args, "--metrics-port", str(port), eval_s=eval_s)
    wait_until(f"{name} up", lambda: probe(port, "/livez")[0] == 200, 60)
    return proc, port


def delivered_trace_ids(receiver: OtlpReceiver) -> set[str]:
    """The records with every one of their results at the OTLP receiver (at least once)."""
    names: dict[str, set[str]] = {}
    for log in receiver.logs:
        if log.event_name == "gen_ai.evaluation.result":
            names.setdefault(log.trace_id, set()).add(log.attributes["gen_ai.evaluation.name"])
    return {trace_id for trace_id, got in names.items() if len(got) == EVALUATORS}
