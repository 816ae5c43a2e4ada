"""No server prints or logs its token: ``ragtrace review serve``, ``ragtrace ingest`` (its OTLP
receivers and its metrics endpoint), the ``/metrics`` endpoint of ``init`` and ``ragtrace judge
serve`` each start with a known token, and the token is in none of what they write. They say
where it came from instead; the review server prints a one-time login link."""

from __future__ import annotations

import http.cookiejar
import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._metrics.endpoint import start_metrics_server
from tests.components import free_port, require_module, stop_process, wait_until

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "never-print-me-0123456789"
METRICS_TOKEN = "never-print-me-either-9876"


def _started(
    args: list[str], env: dict[str, str], until: str, tmp_path: Path
) -> tuple[subprocess.Popen[str], Path]:
    """``python -m ragtrace ARGS`` with stdout and stderr in one log, once ``until`` is in it."""
    log = tmp_path / "out.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragtrace", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )
    wait_until(
        f"{args[0]} to start",
        lambda: until in log.read_text() or proc.poll() is not None,
        timeout_s=120,
    )
    assert proc.poll() is None, log.read_text()
    return proc, log


@pytest.mark.parametrize("given", ["env", "flag"])
def test_review_serve_prints_a_one_time_login_link_not_its_token(
    tmp_path: Path, given: str
) -> None:
    env = {"RAGTRACE_REVIEW_DB": str(tmp_path / "review.db")}
    args = ["review", "serve", "--host", "0.0.0.0", "--port", "0"]
    if given == "env":
        env["RAGTRACE_REVIEW_TOKEN"] = TOKEN
    else:
        args += ["--token", TOKEN]
    proc, log = _started(args, env, "listening on", tmp_path)
    try:
        said = log.read_text()
        link = next(line.split()[1] for line in said.splitlines() if line.startswith("open "))
        assert "?login=" in link and "one-time login link" in said
        source = "$RAGTRACE_REVIEW_TOKEN" if given == "env" else "--token"
        assert f"bearer token required (from {source})" in said
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with browser.open(link, timeout=10) as page:  # signs in, then the queue
            assert page.status == 200 and page.url.endswith("/queue")
        with pytest.raises(urllib.error.HTTPError) as again:  # once only
            urllib.request.urlopen(link, timeout=10)
        assert again.value.code == 401
    finally:
        stop_process(proc)
    assert TOKEN not in log.read_text()


def test_ingest_prints_neither_its_token_nor_the_metrics_token(tmp_path: Path) -> None:
    env = {"RAGTRACE_INGEST_TOKEN": TOKEN, "RAGTRACE_METRICS_TOKEN": METRICS_TOKEN}
    args = ["ingest", "--evaluators", "looping", "--listen", f"0.0.0.0:{free_port()}"]
    args += ["--grpc-listen", f"0.0.0.0:{free_port()}"]
    args += ["--metrics-port", "0", "--metrics-addr", "0.0.0.0"]
    proc, log = _started(args, env, "redaction policy", tmp_path)
    try:
        said = log.read_text()
        assert said.count("bearer token required (from $RAGTRACE_INGEST_TOKEN)") == 2, said
    finally:
        stop_process(proc)
    text = log.read_text()
    assert TOKEN not in text and METRICS_TOKEN not in text


def test_the_metrics_endpoint_logs_no_token(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server = start_metrics_server(0, "0.0.0.0", CollectorRegistry(), token=METRICS_TOKEN)
    server.close()
    assert "bearer token required" in caplog.text
    assert METRICS_TOKEN not in caplog.text


def test_judge_serve_prints_where_its_key_came_from_not_the_key(tmp_path: Path) -> None:
    require_module("xllamacpp", "pip install -e '.[judge]'")
    args = ["judge", "serve", "--model", "smollm2-135m", "--port", str(free_port())]
    args += ["--threads", "1"]
    proc, log = _started(args, {"RAGTRACE_JUDGE_API_KEY": TOKEN}, "Ctrl-C stops", tmp_path)
    try:
        assert "bearer token required (from $RAGTRACE_JUDGE_API_KEY)" in log.read_text()
    finally:
        stop_process(proc)
    assert TOKEN not in log.read_text()
