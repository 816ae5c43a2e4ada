"""The shipped Alertmanager configuration in a real Alertmanager: an app that degrades fires
several quality alerts at once, and the app's on-call gets one notification for all of them.

The test's copy of ``grafana/alertmanager/alertmanager.example.yml`` keeps its routes and
inhibition rules as shipped; only the receivers (PagerDuty, Slack) become webhooks to a small
HTTP server the test runs on loopback, and the waits before a group is sent are shortened.
"""

from __future__ import annotations

import copy
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.components import require_binary, run_alertmanager, wait_until
from tests.grafana.artifacts import ALERTMANAGER_EXAMPLE, alert_rules

FLOOR, DROP = "RagtraceQualityBelowFloor", "RagtraceQualityDrop"
# What the rules can fire for a degraded app (every evaluator with verdicts, a drop under its
# baseline and, where it sank that far, the floor too), for an app with the lexical evaluators
# only, and, for a third app, a drop alone: (alert, evaluator).
DEGRADED = {
    "aurora-help": [
        (DROP, "faithfulness"),
        (FLOOR, "faithfulness"),
        (DROP, "answer_relevance"),
        (FLOOR, "looping.unique_sentences"),
        (DROP, "looping.unique_sentences"),
        (DROP, "groundedness"),
    ],
    "docs-bot": [
        (FLOOR, "looping.compression_ratio"),
        (DROP, "looping.compression_ratio"),
        (DROP, "tokens_presence.answer"),
    ],
}
SLIDING = {"slow-bot": [(DROP, "groundedness")]}
GROUP_WAIT, GROUP_INTERVAL = "1s", "2s"
SETTLE_S = 8.0  # after the last expected notification: four group intervals for any other


class Webhook:
    """A loopback HTTP server that keeps every JSON body posted to it, with its path."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        lock = threading.Lock()
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    posts.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def serving(self) -> Iterator[Webhook]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(10)


def _shorten(route: dict[str, Any]) -> None:
    """Shorten the waits of ``route`` and its children where they set them."""
    if "group_wait" in route:
        route["group_wait"] = GROUP_WAIT
    if "group_interval" in route:
        route["group_interval"] = GROUP_INTERVAL
    for child in route.get("routes", []):
        _shorten(child)


def _timing_removed(route: dict[str, Any]) -> dict[str, Any]:
    route = {k: v for k, v in route.items() if k not in ("group_wait", "group_interval")}
    if "routes" in route:
        route["routes"] = [_timing_removed(child) for child in route["routes"]]
    return route


def config_to_webhooks(shipped: dict[str, Any], webhook_url: str) -> dict[str, Any]:
    """The shipped configuration with each receiver posting to ``webhook_url/<its name>`` and
    the group waits shortened; routes and inhibition rules untouched."""
    config = copy.deepcopy(shipped)
    config["receivers"] = [
        {"name": name, "webhook_configs": [{"url": f"{webhook_url}/{name}"}]}
        for name in (receiver["name"] for receiver in shipped["receivers"])
    ]
    _shorten(config["route"])
    assert _timing_removed(config["route"]) == _timing_removed(shipped["route"])
    assert config["inhibit_rules"] == shipped["inhibit_rules"]
    return config


def as_posted(alert: str, app: str, evaluator: str, rules: dict[str, Any]) -> dict[str, Any]:
    """An alert as Prometheus sends it: the rule's labels with the series' app and evaluator."""
    rule = rules[alert]
    return {
        "labels": {"alertname": alert, **rule["labels"], "app": app, "evaluator": evaluator},
        "annotations": {
            "summary": f"{evaluator} of {app}: {alert}",
            "runbook_url": rule["annotations"]["runbook_url"],
        },
        "startsAt": datetime.now(UTC).isoformat(),
        "generatorURL": "http://127.0.0.1:9090/graph",
    }


def _key(alert: dict[str, Any]) -> tuple[str, str]:
    return alert["labels"]["alertname"], alert["labels"]["evaluator"]


@pytest.mark.integration
def test_amtool_accepts_the_shipped_configuration() -> None:
    amtool = require_binary("amtool")
    result = subprocess.run(
        [amtool, "check-config", str(ALERTMANAGER_EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout and "2 inhibit rules" in result.stdout, result.stdout


def inhibited(alert: str, evaluator: str, alerts: list[tuple[str, str]]) -> bool:
    """A drop of an evaluator that is also under its floor: the floor inhibits it."""
    return alert == DROP and (FLOOR, evaluator) in alerts


@pytest.mark.integration
def test_a_degraded_app_sends_one_notification_per_app(tmp_path: Path) -> None:
    """Every quality alert of two degraded apps, posted at once: one notification per app
    reaches the quality pager, carrying its alerts but the drops of an evaluator already under
    its floor (inhibited: held by Alertmanager, suppressed, sent nowhere); a third app's lone
    drop pages too."""
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert {rules[name]["labels"]["severity"] for name in (FLOOR, DROP)} == {"critical"}
    posted = [
        as_posted(alert, app, evaluator, rules)
        for app, alerts in {**DEGRADED, **SLIDING}.items()
        for alert, evaluator in alerts
    ]
    assert all(a["labels"]["component"] == "quality" for a in posted)

    with Webhook().serving() as webhook:
        config = tmp_path / "alertmanager.yml"
        shipped = yaml.safe_load(ALERTMANAGER_EXAMPLE.read_text())
        config.write_text(yaml.safe_dump(config_to_webhooks(shipped, webhook.url)))
        with run_alertmanager(config) as manager:
            manager.post_alerts(posted)

            def every_app_notified() -> bool:
                apps = {body["groupLabels"].get("app") for _, body in list(webhook.posts)}
                return apps >= {*DEGRADED, *SLIDING}

            wait_until("a notification for every app", every_app_notified, 30.0, 0.2)
            time.sleep(SETTLE_S)  # any second notification (an update) comes by now
            held = manager.alerts()
            log = manager.log_tail()
    notifications = list(webhook.posts)

    by_app: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for path, body in notifications:
        by_app.setdefault(body["groupLabels"].get("app", ""), []).append((path, body))
    assert set(by_app) == {*DEGRADED, *SLIDING}, (notifications, log)
    for app, alerts in {**DEGRADED, **SLIDING}.items():
        assert len(by_app[app]) == 1, by_app[app]  # one for the app, not one per alert
        [(path, body)] = by_app[app]
        assert path == "/rag-quality-pager" and body["receiver"] == "rag-quality-pager", body
        assert body["groupLabels"] == {"app": app} and body["status"] == "firing", body
        notified = sorted(_key(alert) for alert in body["alerts"])
        assert notified == sorted((a, e) for a, e in alerts if not inhibited(a, e, alerts)), body
        assert all(alert["labels"]["severity"] == "critical" for alert in body["alerts"])

    # Alertmanager holds the inhibited drops, suppressed by the floor of the same evaluator
    assert len(held) == len(posted), held
    for alert in held:
        labels, status = alert["labels"], alert["status"]
        app_alerts = {**DEGRADED, **SLIDING}[labels["app"]]
        if inhibited(labels["alertname"], labels["evaluator"], app_alerts):
            assert status["state"] == "suppressed" and status["inhibitedBy"], alert
        else:
            assert status["state"] == "active" and not status["inhibitedBy"], alert
