"""The key check in front of llama.cpp: a recording upstream shows what passes and what never
does; the real SmolLM2 server with a key shows that judges, streams and ``judge serve`` work."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragtrace._backends._loading import MissingExtraError
from ragtrace._judges import JudgeClient, LocalJudgeServer
from ragtrace._judges import front as front_module
from ragtrace._judges import local as local_module
from ragtrace._judges.front import JudgeFront, Upstream
from tests.components import free_port, missing_component
from tests.judges.test_client import SCHEMA
from tests.judges.test_local_judge import PROMPT

KEY = "s3cret-judge-key"


class _Recorder(BaseHTTPRequestHandler):
    """An upstream that records every request; ``/stream`` sends three events, the second only
    once the test says so (``gate``)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    seen: ClassVar[list[dict[str, Any]]] = []
    gate = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append(
            {"method": self.command, "path": self.path, "headers": self.headers, "body": body}
        )
        if self.path == "/slow":
            time.sleep(1.0)
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                if i == 1:
                    self.gate.wait(10)
                event = f"data: {i}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
            return
        data = json.dumps({"path": self.path, "body": body.decode()}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "yes")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _any


@pytest.fixture
def upstream() -> Iterator[ThreadingHTTPServer]:
    _Recorder.seen.clear()
    _Recorder.gate.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    _Recorder.gate.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def front(upstream: ThreadingHTTPServer) -> Iterator[JudgeFront]:
    where = Upstream(host="127.0.0.1", port=upstream.server_address[1])
    with_front = JudgeFront("127.0.0.1", 0, where, api_key=KEY, max_body=1000).start()
    yield with_front
    with_front.close()


def call(
    url: str,
    method: str = "GET",
    path: str = "/v1/models",
    body: bytes | None = None,
    **headers: str,
) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(
            method, path, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )
        answer = conn.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-key"},
        {"Authorization": f"Basic {KEY}"},
        {"Authorization": f"Bearer {KEY}x"},
        {"x_api_key": "wrong"},
        {"Authorization": KEY},
    ],
)
def test_no_or_a_wrong_key_is_401_and_never_reaches_llama_cpp(front, headers):
    status, answer_headers, body = call(front.url, "POST", "/v1/chat/completions", b"{}", **headers)
    assert status == 401
    assert json.loads(body) == {
        "error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}
    }
    assert answer_headers["Content-Type"].startswith("application/json")
    assert _Recorder.seen == []


def test_the_right_key_forwards_method_path_headers_and_body_without_the_key(front):
    status, headers, body = call(
        front.url,
        "POST",
        "/v1/chat/completions?x=1",
        b'{"a": 1}',
        Authorization=f"Bearer {KEY}",
        X_Custom="kept",
    )
    assert status == 201 and headers["X-Upstream"] == "yes"
    assert json.loads(body) == {"path": "/v1/chat/completions?x=1", "body": '{"a": 1}'}
    (seen,) = _Recorder.seen
    assert seen["method"] == "POST" and seen["headers"]["X-Custom"] == "kept"
    assert seen["headers"]["Authorization"] is None and seen["headers"]["X-Api-Key"] is None
    for method in ("GET", "PUT", "DELETE", "HEAD"):
        status, _, _ = call(front.url, method, "/v1/models", x_api_key=KEY)
        assert status == 201
    status, _, _ = call(front.url, "GET", "/v1/models", x_api_key=f"Bearer {KEY}")
    assert status == 201
    assert [s["method"] for s in _Recorder.seen] == ["POST", "GET", "PUT", "DELETE", "HEAD", "GET"]


def test_the_key_is_compared_with_same_secret(front, monkeypatch):
    calls: list[tuple[str, str]] = []
    real = front_module.same_secret

    def spy(given: str, expected: str) -> bool:
        calls.append((given, expected))
        return real(given, expected)

    monkeypatch.setattr(front_module, "same_secret", spy)
    assert call(front.url, Authorization="Bearer nope")[0] == 401
    assert call(front.url, Authorization=f"Bearer {KEY}")[0] == 201
    assert call(front.url, x_api_key=KEY)[0] == 201
    assert calls == [("nope", KEY), (KEY, KEY), (KEY, KEY)]


def test_health_and_preflights_pass_without_a_key_as_in_llama_cpp(front):
    assert call(front.url, "GET", "/health")[0] == 201
    assert call(front.url, "GET", "/v1/health?x")[0] == 201
    assert call(front.url, "OPTIONS", "/v1/chat/completions")[0] == 201
    assert call(front.url, "GET", "/healthz")[0] == 401
    assert [s["path"] for s in _Recorder.seen] == [
        "/health",
        "/v1/health?x",
        "/v1/chat/completions",
    ]


def test_a_streamed_answer_comes_through_as_it_arrives(front):
    host, port = front.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("POST", "/stream", body=b"{}", headers={"Authorization": f"Bearer {KEY}"})
        answer = conn.getresponse()
        assert answer.status == 200 and answer.chunked
        assert answer.getheader("Content-Type") == "text/event-stream"
        # The upstream holds the rest back until the first event has reached the client.
        assert answer.read1(100) == b"data: 0\n\n"
        _Recorder.gate.set()
        assert answer.read() == b"data: 1\n\ndata: 2\n\n"
    finally:
        conn.close()


def test_bodies_over_the_limit_and_chunked_bodies_are_refused(front):
    status, _, body = call(front.url, "POST", "/v1/x", b"x" * 1001, Authorization=f"Bearer {KEY}")
    assert status == 413 and "over the limit" in json.loads(body)["error"]["message"]
    with socket.create_connection(("127.0.0.1", int(front.url.rsplit(":", 1)[1])), 10) as sock:
        sock.sendall(
            f"POST /v1/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".encode()
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 411")
    assert _Recorder.seen == []


def test_an_unreachable_or_silent_llama_cpp_is_a_json_502_or_504(upstream):
    gone = JudgeFront("127.0.0.1", 0, Upstream(port=free_port()), api_key=KEY).start()
    try:
        status, _, body = call(gone.url, Authorization=f"Bearer {KEY}")
        assert status == 502 and "unreachable" in json.loads(body)["error"]["message"]
    finally:
        gone.close()
    where = Upstream(port=upstream.server_address[1])
    slow = JudgeFront("127.0.0.1", 0, where, api_key=KEY, upstream_timeout_s=0.2).start()
    try:
        status, _, body = call(slow.url, path="/slow", Authorization=f"Bearer {KEY}")
        assert status == 504 and json.loads(body)["error"]["code"] == 504
    finally:
        slow.close()


def test_a_front_needs_a_key_and_a_free_port(front):
    with pytest.raises(ValueError, match="api_key"):
        JudgeFront("127.0.0.1", 0, Upstream(port=1), api_key="")
    port = int(front.url.rsplit(":", 1)[1])
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
        JudgeFront("127.0.0.1", port, Upstream(port=1), api_key=KEY)
    assert KEY not in repr(front) and KEY not in repr(Upstream(api_key=KEY))


# The real llama.cpp judge with a key.


def _keyed_server(**options: Any) -> LocalJudgeServer:
    try:
        return LocalJudgeServer("smollm2-135m", threads=1, api_key=KEY, **options).start()
    except MissingExtraError as exc:
        missing_component(f"the local judge needs {exc}")


@pytest.fixture(scope="module")
def keyed() -> Iterator[LocalJudgeServer]:
    server = _keyed_server()
    yield server
    server.stop()


@pytest.mark.judge
def test_llama_cpp_listens_where_only_this_process_reaches_it(keyed):
    assert keyed._front is not None and keyed.address == keyed._front.url
    socket_path = Path(keyed._front.upstream.path)
    assert socket_path.is_socket() and socket_path.parent.stat().st_mode & 0o077 == 0
    assert call(keyed.address, path="/health")[0] == 200
    status, _, body = call(keyed.address, "POST", "/v1/chat/completions", b"{}")
    assert status == 401 and json.loads(body)["error"]["type"] == "authentication_error"


@pytest.mark.judge
def test_a_judge_with_the_key_works_through_the_front(keyed, tmp_path):
    judge = JudgeClient(
        keyed.model_name, api_base=keyed.api_base, api_key=KEY, cache=False, timeout_s=60
    )
    reply = judge.complete(PROMPT, schema=SCHEMA, max_tokens=40)
    assert reply.output_tokens > 0 and reply.input_tokens > 20


@pytest.mark.judge
def test_a_streamed_completion_works_through_the_front(keyed):
    import openai

    client = openai.OpenAI(base_url=keyed.api_base, api_key=KEY, timeout=60, max_retries=0)
    stream = client.chat.completions.create(
        model=keyed.alias,
        messages=[{"role": "user", "content": "Count from one to five."}],
        max_tokens=20,
        stream=True,
    )
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert len(pieces) > 3 and "".join(pieces).strip()
    wrong = openai.OpenAI(base_url=keyed.api_base, api_key="nope", timeout=60, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(
            model=keyed.alias, messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )


@pytest.mark.judge
def test_stop_frees_the_port_and_the_private_socket():
    server = _keyed_server(port=free_port())
    assert server._front is not None
    folder = Path(server._front.upstream.path).parent
    server.stop()
    assert not folder.exists() and server.address == ""
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), 2).close()
    server.start()  # the same handle starts again, on the same port
    try:
        assert call(server.address, path="/v1/models", Authorization=f"Bearer {KEY}")[0] == 200
    finally:
        server.stop()


@pytest.mark.judge
def test_without_unix_sockets_llama_cpp_has_a_loopback_port_and_a_key_of_its_own(monkeypatch):
    monkeypatch.setattr(local_module, "_UNIX_SOCKETS", False)
    server = _keyed_server()
    try:
        assert server._front is not None
        inner = server._front.upstream
        assert inner.port and inner.api_key and inner.api_key != KEY
        direct = f"http://127.0.0.1:{inner.port}"
        assert call(direct, Authorization=f"Bearer {KEY}")[0] == 401
        assert call(server.address, Authorization=f"Bearer {KEY}")[0] == 200
    finally:
        server.stop()


@pytest.mark.judge
def test_judge_serve_with_a_key_checks_it_in_front():
    port = free_port()
    env = {**os.environ, "RAGTRACE_JUDGE_API_KEY": KEY}
    command = [sys.executable, "-m", "ragtrace", "judge", "serve", "--model", "smollm2-135m"]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in banner, banner
        assert "from $RAGTRACE_JUDGE_API_KEY" in banner and KEY not in banner
        url = f"http://127.0.0.1:{port}"
        assert call(url)[0] == 401
        assert call(url, Authorization=f"Bearer {KEY}")[0] == 200
        proc.terminate()
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.judge
def test_a_taken_port_is_a_clear_error_and_leaves_nothing_behind(front, monkeypatch):
    port = int(front.url.rsplit(":", 1)[1])
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(**options: Any) -> str:
        made.append(real_mkdtemp(**options))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
        _keyed_server(port=port)
    assert made and not Path(made[0]).exists()
