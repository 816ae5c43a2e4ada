"""The recording and alert rules: promtool accepts them, their unit tests pass and cover every
alert firing and silent (low traffic too), and every alert can be routed and has a runbook."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.components import promtool
from tests.grafana.artifacts import (
    ALERTMANAGER_EXAMPLE,
    DOCS,
    RULE_FILES,
    RULE_TEST_FILES,
    RULES_DIR,
    alert_rules,
    recording_rules,
    rule_groups,
    rule_tests,
)

RUNBOOK_BASE = "https://github.com/ragtrace/ragtrace/blob/main/docs/grafana.md"
SEVERITIES = {"critical", "warning"}
TEAMS = {"rag-quality", "rag-platform"}
COMPONENTS = {"quality", "privacy", "safety", "pipeline", "fleet", "ingest", "cost"}
RECORD_NAME = re.compile(r"^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$")  # level:metric:operations
# The traffic guards: `... >= 50` verdicts, or, on the quality alerts, the traffic their
# thresholds were measured at (1 sampled request a second: 900 in 15 minutes, 3,600 an hour).
TRAFFIC_GUARD = re.compile(r">=\s*(50|900|3600)\b")


@pytest.mark.integration
def test_promtool_accepts_the_rule_files() -> None:
    result = promtool("check", "rules", *map(str, RULE_FILES))
    assert result.returncode == 0, result.stdout + result.stderr
    found = sum(int(n) for n in re.findall(r"SUCCESS: (\d+) rules found", result.stdout))
    assert found == len(alert_rules()) + len(recording_rules())


@pytest.mark.integration
def test_promtool_unit_tests_pass() -> None:
    assert RULE_TEST_FILES
    result = promtool("test", "rules", *map(str, RULE_TEST_FILES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_TEST_FILES), result.stdout


def test_unit_tests_load_the_shipped_rule_files() -> None:
    for name, tests in rule_tests().items():
        loaded = {(RULES_DIR / "tests" / f).resolve() for f in tests["rule_files"]}
        assert loaded == set(RULE_FILES), name


def _cases() -> list[tuple[str, str, list[Any]]]:
    """(test group name, alert name, expected alerts) of every alert_rule_test."""
    return [
        (group.get("name", ""), case["alertname"], case.get("exp_alerts") or [])
        for tests in rule_tests().values()
        for group in tests["tests"]
        for case in group.get("alert_rule_test", [])
    ]


def test_every_alert_is_unit_tested_firing_and_not_firing() -> None:
    cases = _cases()
    for rule in alert_rules():
        name = rule["alert"]
        firing = [expected for _, alert, expected in cases if alert == name and expected]
        silent = [expected for _, alert, expected in cases if alert == name and not expected]
        assert firing, f"{name}: no unit test where it fires"
        assert silent, f"{name}: no unit test where it stays silent"
    assert {alert for _, alert, _ in cases} == {rule["alert"] for rule in alert_rules()}


def test_every_alert_with_a_traffic_guard_has_a_low_traffic_test() -> None:
    """Test groups named "low traffic" feed bad scores at a rate under the guard; promtool
    compares the whole list of alerts, so such an app is checked to stay out of it."""
    guarded = {rule["alert"] for rule in alert_rules() if TRAFFIC_GUARD.search(rule["expr"])}
    assert len(guarded) >= 5, guarded
    low_traffic = {alert for group, alert, _ in _cases() if "low traffic" in group}
    assert guarded <= low_traffic, guarded - low_traffic


@pytest.mark.integration
def test_low_traffic_tests_fail_when_the_guard_is_weakened(tmp_path: Path) -> None:
    """The low-traffic cases have teeth: with a guard of 1 evaluation, promtool must fail."""
    shutil.copytree(RULES_DIR, tmp_path / "prometheus")
    alerts = tmp_path / "prometheus" / "ragtrace-alerts.rules.yml"
    alerts.write_text(TRAFFIC_GUARD.sub(">= 1", alerts.read_text()))
    for name in ("quality", "safety", "pipeline"):
        result = promtool(
            "test", "rules", str(tmp_path / "prometheus" / "tests" / f"{name}.test.yml")
        )
        assert result.returncode == 1, (name, result.stdout)
        failed = re.findall(r"^\s+name: (.+),$", result.stderr, flags=re.MULTILINE)
        assert failed and all("low traffic" in group for group in failed), (name, result.stderr)


def test_alerts_carry_routing_labels_and_annotations() -> None:
    for rule in alert_rules():
        name, labels = rule["alert"], rule["labels"]
        assert name.startswith("Ragtrace"), name
        assert labels["severity"] in SEVERITIES, name
        assert labels["team"] in TEAMS, name
        assert labels["component"] in COMPONENTS, name
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}, name
        assert annotations["runbook_url"] == f"{RUNBOOK_BASE}#{name.lower()}", name
    names = [rule["alert"] for rule in alert_rules()]
    assert len(names) == len(set(names))


def _github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown page."""
    anchors = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_runbook_url_points_at_a_runbook_section_of_the_docs() -> None:
    anchors = _github_anchors(DOCS.read_text())
    for rule in alert_rules():
        anchor = rule["annotations"]["runbook_url"].split("#", 1)[1]
        assert anchor in anchors, f"{rule['alert']}: no heading for #{anchor} in {DOCS.name}"


def test_recording_rules_follow_the_naming_convention() -> None:
    for rule in recording_rules():
        assert RECORD_NAME.match(rule["record"]), rule["record"]
        level = rule["record"].split(":", 1)[0]
        grouping = re.findall(r"\bby \(([^)]*)\)", rule["expr"])
        labels = {label.strip() for by in grouping for label in by.split(",")}
        expected = set() if level == "ragtrace" else set(level.split("_"))
        # avg_over_time of a recorded series keeps that series' labels
        assert labels == expected or not grouping, (rule["record"], labels)
    groups = [group["name"] for group in rule_groups()]
    assert len(groups) == len(set(groups)) and all(g.startswith("ragtrace.") for g in groups)


def _matches(matcher: str, labels: dict[str, str]) -> bool:
    name, op, value = re.fullmatch(r'(\w+)\s*(=~|!~|!=|=)\s*"(.*)"', matcher).groups()  # type: ignore[union-attr]
    actual = labels.get(name, "")
    return {
        "=": actual == value,
        "!=": actual != value,
        "=~": re.fullmatch(value, actual) is not None,
        "!~": re.fullmatch(value, actual) is None,
    }[op]


def test_the_alertmanager_example_routes_every_alert_to_a_receiver() -> None:
    """A first-match walk over the example's routes with each alert's labels (the example uses
    only plain matchers; Alertmanager itself is not needed for that)."""
    config = yaml.safe_load(ALERTMANAGER_EXAMPLE.read_text())
    receivers = {receiver["name"] for receiver in config["receivers"]}
    routes = config["route"]["routes"]
    assert {route["receiver"] for route in routes} <= receivers
    assert config["route"]["receiver"] in receivers
    routed = {}
    for rule in alert_rules():
        labels = {"alertname": rule["alert"], **rule["labels"]}
        route = next(r for r in routes if all(_matches(m, labels) for m in r["matchers"]))
        routed[rule["alert"]] = route["receiver"]
        if labels["component"] == "privacy":
            assert route["receiver"] == "privacy-oncall"
        elif labels["severity"] == "critical":
            assert route["receiver"].endswith("-pager"), rule["alert"]
        else:
            assert route["receiver"].endswith("-chat"), rule["alert"]
    for inhibit in config["inhibit_rules"]:
        for matcher in inhibit["source_matchers"] + inhibit["target_matchers"]:
            alert = re.fullmatch(r'alertname="(\w+)"', matcher)
            assert alert is None or alert[1] in routed, matcher
