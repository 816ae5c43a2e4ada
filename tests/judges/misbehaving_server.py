"""An OpenAI-compatible HTTP server on loopback that misbehaves on request.

The real llama.cpp judge cannot be told to answer HTTP 429 or garbage, so failure-path tests
talk to this one: the ``model`` of each request picks its behaviour, e.g. ``openai/garbage``.

- ``ok``: a valid JSON verdict;
- ``garbage``: prose with no JSON;
- ``fenced``: the verdict inside a Markdown code fence, with a sentence around it;
- ``wrong-schema``: JSON that does not match the schema;
- ``repairable``: garbage first, then a valid verdict when asked again in the same conversation;
- ``ratelimit-once``: HTTP 429 with ``Retry-After: 0`` once per conversation, then ok;
- ``ratelimit``: always HTTP 429;
- ``error500``: always HTTP 500;
- ``hang``: sleeps ``hang_s`` (default ``HANG_S``) before answering;
- ``slow``: answers ok after 0.3 s;
- ``drop``: closes the connection without answering.
- ``claims-loop`` / ``claims-cut``: a claim judge whose extraction loops on its first claim
  (listed ``LOOP_CLAIMS`` times) / stops mid-JSON at its token limit; its verdicts are
  ``{"verdict": "yes"}``. An extraction is a request whose schema has a ``claims`` property.

Every request is recorded (``requests``), so tests can count attempts; ``max_in_flight``
holds, per behaviour, the most requests served at once.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ragtrace._judges import JudgeClient

HANG_S = 5.0
VERDICT = {"verdict": "yes", "reason": "stated in the context"}
LOOP_CLAIMS = 16
LOOPED_CLAIM = "The first Super Bowl was held on January 15, 1967."


class MisbehavingJudge:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.in_flight: dict[str, int] = {}
        self.max_in_flight: dict[str, int] = {}
        self.hang_s = HANG_S
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                owner._handle(self, body)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def client(self, behaviour: str, tmp_path: Path, **options: Any) -> JudgeClient:
        """A JudgeClient for ``behaviour``, retrying fast, with its own cache file."""
        options.setdefault("backoff_s", 0.01)
        options.setdefault("cache", tmp_path / "cache.sqlite")
        return JudgeClient(f"openai/{behaviour}", api_base=self.api_base, **options)

    def start(self) -> MisbehavingJudge:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def count(self, behaviour: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.get("model") == behaviour)

    def _first_time(self, body: dict[str, Any]) -> bool:
        key = json.dumps(body.get("messages", [])[:1], sort_keys=True) + str(body.get("model"))
        with self._lock:
            first = key not in self._seen
            self._seen.add(key)
        return first

    def _handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        model = str(body.get("model"))
        with self._lock:
            self.requests.append(body)
            self.in_flight[model] = self.in_flight.get(model, 0) + 1
            self.max_in_flight[model] = max(self.max_in_flight.get(model, 0), self.in_flight[model])
        try:
            self._answer(handler, body)
        finally:
            with self._lock:
                self.in_flight[model] -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        behaviour = str(body.get("model", "ok"))
        if behaviour == "drop":
            handler.close_connection = True
            handler.connection.close()
            return
        if behaviour == "hang":
            time.sleep(self.hang_s)
        if behaviour == "slow":
            time.sleep(0.3)
        if behaviour == "ratelimit" or (behaviour == "ratelimit-once" and self._first_time(body)):
            self._send(handler, 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
            return
        if behaviour == "error500":
            self._send(handler, 500, {"error": {"message": "boom"}})
            return
        content = json.dumps(VERDICT)
        if behaviour.startswith("claims-"):
            content = _claim_judge(behaviour, body)
        elif behaviour == "garbage":
            content = "I think the answer is probably fine, yes."
        elif behaviour == "fenced":
            content = f"Here is my verdict:\n```json\n{content}\n```\nHope this helps."
        elif behaviour == "wrong-schema":
            content = json.dumps({"verdict": "maybe"})
        elif behaviour == "repairable" and len(body.get("messages", [])) < 3:
            content = "not json"
        self._send(handler, 200, _completion(behaviour, content))

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)


class _QuietServer(ThreadingHTTPServer):
    """Clients that time out or are dropped on purpose break pipes: not worth a traceback."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


def is_extraction(body: dict[str, Any]) -> bool:
    """Whether ``body`` asks for a claim list (its schema has a ``claims`` property)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return "claims" in schema.get("properties", {})


def _claim_judge(behaviour: str, body: dict[str, Any]) -> str:
    if not is_extraction(body):
        return json.dumps({"verdict": "yes"})
    if behaviour == "claims-loop":
        return json.dumps({"claims": [LOOPED_CLAIM] * LOOP_CLAIMS})
    return '{"claims": ["' + LOOPED_CLAIM + '", "' + LOOPED_CLAIM[:20]  # cut by max_tokens


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }
