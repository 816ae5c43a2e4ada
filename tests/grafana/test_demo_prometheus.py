"""``ragtrace demo --prometheus``: a real Prometheus loads the shipped rules, scrapes the demo and
stops with it; without the binary the demo says what to install."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
from typing import Any

import pytest

from ragtrace import _cli as cli
from ragtrace.demo.prometheus_stack import PrometheusStack, scrape_target, shipped_rules
from ragtrace.demo.run import APP as DEMO_APP
from ragtrace.demo.run import DemoError
from tests.components import http_get, require_binary, wait_until, with_sigint_ignored
from tests.grafana.artifacts import REPO, RULE_FILES, rule_groups

URL_LINE = re.compile(r"^prometheus at (http://127\.0\.0\.1:\d+) ")


def api(url: str, path: str, **params: str) -> Any:
    """GET ``/api/v1/<path>`` of the Prometheus at ``url``; the ``data`` of its answer."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with http_get(f"{url}/api/v1/{path}{query}") as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


@pytest.mark.integration
def test_demo_with_prometheus_loads_the_rules_scrapes_the_demo_and_stops_it() -> None:
    require_binary("prometheus")
    command = [
        *(sys.executable, "-m", "ragtrace", "demo", "--prometheus", "--duration", "0"),
        *("--evaluators", "looping,tokens_presence"),
        *("--rate", "20", "--metrics-port", "0", "--no-live", "--quiet"),
    ]
    process = subprocess.Popen(  # as a script's background job: SIGINT inherited as ignored
        with_sigint_ignored(command),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []

    def read_output() -> None:
        for line in process.stdout or ():
            lines.append(line)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()

    def printed_url() -> str | None:
        return next((m[1] for line in list(lines) if (m := URL_LINE.match(line))), None)

    try:
        url = wait_until("the demo to print the Prometheus URL", printed_url, timeout_s=60)
        groups = api(url, "rules")["groups"]
        assert {g["name"] for g in groups} == {g["name"] for g in rule_groups()}
        assert {g["file"] for g in groups} == {str(path) for path in RULE_FILES}
        loaded = {rule["name"] for group in groups for rule in group["rules"]}
        shipped = {
            rule.get("alert") or rule["record"] for g in rule_groups() for rule in g["rules"]
        }
        assert loaded == shipped

        def evaluated() -> bool:
            rules = [rule for g in api(url, "rules")["groups"] for rule in g["rules"]]
            return all(r["health"] == "ok" and r["evaluationTime"] > 0 for r in rules)

        wait_until("every rule evaluated without error", evaluated, timeout_s=30)
        # the recording rules run over the demo's own metrics
        mean = f'app_evaluator:ragtrace_evaluation_score:mean1h{{app="{DEMO_APP}"}}'
        wait_until(f"{mean} to have data", lambda: api(url, "query", query=mean)["result"], 45)
        (target,) = api(url, "targets")["activeTargets"]
        assert target["health"] == "up"
        assert target["scrapeUrl"].startswith("http://127.0.0.1:")
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the demo stops, and Prometheus with it
        returncode = process.wait(60)
        reader.join(10)
    assert returncode in (0, 130), "".join(lines)
    assert any("ragtrace demo summary" in line for line in lines), "".join(lines)
    with pytest.raises(OSError):
        http_get(f"{url}/-/ready", timeout_s=2.0)


def test_demo_with_prometheus_but_no_binary_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no prometheus on it
    argv = ["demo", "--prometheus", "--duration", "1", "--metrics-port", "0", "--no-live"]
    argv += ["--evaluators", "looping,tokens_presence"]
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    assert "--prometheus needs the prometheus binary, not found on PATH" in err
    assert "apt-get install prometheus" in err
    assert "summary" not in out  # the demo did not start


@pytest.mark.integration
def test_a_prometheus_that_cannot_start_is_reported_with_its_log() -> None:
    binary = require_binary("prometheus")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        stack = PrometheusStack(binary, ["127.0.0.1:9"], shipped_rules(), port=port)
        with pytest.raises(DemoError, match="exited") as failure:
            stack.start()
    assert "address already in use" in str(failure.value)


@pytest.mark.parametrize(
    ("addr", "target"),
    [
        ("127.0.0.1", "127.0.0.1:9464"),
        ("0.0.0.0", "127.0.0.1:9464"),
        ("::", "[::1]:9464"),
        ("::1", "[::1]:9464"),
        ("localhost", "localhost:9464"),
    ],
)
def test_prometheus_scrapes_the_demo_where_it_listens(addr: str, target: str) -> None:
    assert scrape_target(addr, 9464) == target
