"""``ragtrace demo --prometheus``: a real Prometheus loads the shipped rules, scrapes the demo and
stops with it; without the binary the demo says what to install. Time-lapsed, a demo that
degrades pages on a quality alert within seconds, and a good one stays quiet."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from ragtrace import _cli as cli
from ragtrace.demo._prometheus_stack import (
    DEMO_FLOORS,
    PrometheusStack,
    scrape_target,
    shipped_rules,
)
from ragtrace.demo._run import APP as DEMO_APP
from ragtrace.demo._run import DemoError
from tests.components import http_get, require_binary, wait_until, with_sigint_ignored
from tests.grafana.artifacts import REPO, RULE_FILES, rule_groups

URL_LINE = re.compile(r"^prometheus at (http://127\.0\.0\.1:\d+) ")
ALERTS_URL = re.compile(r"^prometheus at .*; alerts at (http://\S+)\); it stops with the demo$")
SWITCH_LINE = re.compile(r"^ragtrace demo: switched good -> sloppy at ")
LEXICAL = ("--evaluators", "looping,tokens_presence")  # no model to load
# The time-lapsed runs: x60, 20 requests a second (300 verdicts per 15-second window, 3 times
# the 100 a window needs: a number of verdicts, not time-lapsed), the good app for
# DEGRADE_AFTER_S (the baseline of the degraded minutes), then as long again.
TIME_SCALE = "60"
DEGRADE_AFTER_S = 30.0
FIRING_WITHIN_S = 45.0  # after the switch
QUALITY_ALERTS = {"RagtraceQualityDrop", "RagtraceQualityBelowFloor"}


def api(url: str, path: str, **params: str) -> Any:
    """GET ``/api/v1/<path>`` of the Prometheus at ``url``; the ``data`` of its answer."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with http_get(f"{url}/api/v1/{path}{query}") as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


class DemoProcess:
    """A ``ragtrace demo --prometheus`` subprocess and the lines it printed so far."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []

    def printed(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        return next((m for line in list(self.lines) if (m := pattern.match(line))), None)

    def prometheus_url(self) -> str:
        found = wait_until(
            "the demo to print the Prometheus URL", lambda: self.printed(URL_LINE), timeout_s=60
        )
        return str(found[1])

    def output(self) -> str:
        return "".join(self.lines)


@contextmanager
def demo_with_prometheus(args: Sequence[str]) -> Iterator[DemoProcess]:
    """``ragtrace demo --prometheus --duration 0 --metrics-port 0 --no-live *args`` until the
    block ends; then Ctrl-C (SIGINT to its pid) stops it and its Prometheus, within 60 s."""
    require_binary("prometheus")
    command = [
        *(sys.executable, "-m", "ragtrace", "demo", "--prometheus", "--duration", "0"),
        *("--metrics-port", "0", "--no-live", *args),
    ]
    process = subprocess.Popen(  # as a script's background job: SIGINT inherited as ignored
        with_sigint_ignored(command),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    demo = DemoProcess(process)

    def read_output() -> None:
        for line in process.stdout or ():
            demo.lines.append(line)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        yield demo
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the demo stops, and Prometheus with it
        try:
            process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
            reader.join(10)


@pytest.mark.integration
def test_demo_with_prometheus_loads_the_rules_scrapes_the_demo_and_stops_it() -> None:
    with demo_with_prometheus([*LEXICAL, "--rate", "20", "--quiet"]) as demo:
        url = demo.prometheus_url()
        # the alerts URL it prints answers on this Prometheus (Debian's has no /alerts page)
        alerts_url = demo.printed(ALERTS_URL)
        assert alerts_url is not None and alerts_url[1].startswith(url), demo.output()
        with http_get(alerts_url[1]) as answer:
            assert answer.status == 200
            assert json.load(answer)["status"] == "success"
        groups = api(url, "rules")["groups"]
        demo_groups = rule_groups(DEMO_FLOORS)
        assert {g["name"] for g in groups} == {g["name"] for g in rule_groups() + demo_groups}
        assert {g["file"] for g in groups} == {str(path) for path in [*RULE_FILES, DEMO_FLOORS]}
        loaded = {rule["name"] for group in groups for rule in group["rules"]}
        shipped = {
            rule.get("alert") or rule["record"]
            for g in rule_groups() + demo_groups
            for rule in g["rules"]
        }
        assert loaded == shipped
        # the demo app is held to its own floors where they are higher
        floor = f'app_evaluator:ragtrace_quality_floor:pass_ratio{{app="{DEMO_APP}"}}'
        wait_until(f"{floor} to have data", lambda: api(url, "query", query=floor)["result"], 45)

        def evaluated() -> bool:
            rules = [rule for g in api(url, "rules")["groups"] for rule in g["rules"]]
            return all(r["health"] == "ok" and r["evaluationTime"] > 0 for r in rules)

        wait_until("every rule evaluated without error", evaluated, timeout_s=30)
        # the recording rules run over the demo's own metrics
        ratio = f'app_evaluator_window:ragtrace_pass_ratio:ratio{{app="{DEMO_APP}"}}'
        wait_until(f"{ratio} to have data", lambda: api(url, "query", query=ratio)["result"], 45)
        (target,) = api(url, "targets")["activeTargets"]
        assert target["health"] == "up"
        assert target["scrapeUrl"].startswith("http://127.0.0.1:")
    assert demo.process.returncode in (0, 130), demo.output()
    assert "ragtrace demo summary" in demo.output(), demo.output()
    with pytest.raises(OSError):
        http_get(f"{url}/-/ready", timeout_s=2.0)


def quality_alert_rules(url: str) -> list[dict[str, Any]]:
    """The alert rules of the ``ragtrace.quality`` group as the live Prometheus holds them."""
    groups = api(url, "rules", type="alert")["groups"]
    rules = [r for g in groups if g["name"] == "ragtrace.quality" for r in g["rules"]]
    assert {r["name"] for r in rules} == QUALITY_ALERTS
    return rules


def quality_alerts(url: str) -> list[dict[str, Any]]:
    """The quality alerts the live Prometheus holds now (pending or firing)."""
    names = {r["name"] for r in quality_alert_rules(url)}
    return [a for a in api(url, "alerts")["alerts"] if a["labels"]["alertname"] in names]


@pytest.mark.integration
def test_time_lapsed_a_demo_that_degrades_fires_a_quality_alert() -> None:
    args = [*LEXICAL, "--rate", "20", "--alert-time-scale", TIME_SCALE, "--scenario", "good"]
    args += ["--degrade-after", f"{DEGRADE_AFTER_S:g}"]
    with demo_with_prometheus(args) as demo:
        url = demo.prometheus_url()
        assert "time-lapsed x60: 15m windows last 15s" in demo.output()
        wait_until("the demo to degrade", lambda: demo.printed(SWITCH_LINE), DEGRADE_AFTER_S + 60)
        assert quality_alerts(url) == [], "a quality alert was active before the app degraded"

        def firing() -> list[dict[str, Any]]:
            return [a for a in quality_alerts(url) if a["state"] == "firing"]

        fired = wait_until("a quality alert to fire", firing, FIRING_WITHIN_S, 0.5)
    alert = fired[0]
    assert alert["labels"]["app"] == DEMO_APP and alert["labels"]["component"] == "quality"
    assert alert["labels"]["evaluator"].startswith(("looping", "tokens_presence"))
    # a quality alert that pages: the drop under the good minutes, or the floor
    assert {a["labels"]["alertname"] for a in fired} <= QUALITY_ALERTS, fired
    assert all(a["labels"]["severity"] == "critical" for a in fired), fired


@pytest.mark.integration
def test_time_lapsed_a_good_demo_keeps_every_quality_alert_inactive() -> None:
    args = [*LEXICAL, "--rate", "20", "--alert-time-scale", TIME_SCALE, "--scenario", "good"]
    with demo_with_prometheus(args) as demo:
        url = demo.prometheus_url()
        guard = f'app_evaluator_window:ragtrace_verdicts:increase{{app="{DEMO_APP}",window="15m"}}'

        def guard_met() -> bool:
            counts = [float(s["value"][1]) for s in api(url, "query", query=guard)["result"]]
            return bool(counts) and min(counts) >= 100  # ragtrace:quality_min_verdicts

        wait_until("the traffic guard to be met", guard_met, 45)
        seen: list[dict[str, Any]] = []
        until = time.monotonic() + DEGRADE_AFTER_S + FIRING_WITHIN_S  # as long as the other
        while time.monotonic() < until:
            seen += quality_alerts(url)
            time.sleep(0.5)
        assert guard_met()  # the alerts were evaluated on enough traffic all along
        rules = quality_alert_rules(url)
        assert all(r["health"] == "ok" and r["state"] == "inactive" for r in rules), rules
    assert seen == [], seen
    assert "scenario         good" in demo.output()


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
