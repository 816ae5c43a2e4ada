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
# The traffic guards: `... >= 50` verdicts (the quality statistics' is
# ragtrace:quality_min_verdicts, in the recording rules).
TRAFFIC_GUARD = re.compile(r">=\s*50\b")


@pytest.mark.integration
def test_promtool_accepts_the_rule_files() -> None:
    result = promtool("check", "rules", *map(str, RULE_FILES))
    assert result.returncode == 0, result.stdout + result.stderr
    found = sum(int(n) for n in re.findall(r"SUCCESS: (\d+) rules found", result.stdout))
    assert found == len(alert_rules()) + len(recording_rules())


@pytest.mark.integration
def test_promtool_unit_tests_pass() -> None:
    assert RULE_TEST_FILES
    result = promtool("test", "rules", *map(str, RULE_TEST_FILES), timeout_s=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_TEST_FILES), result.stdout


def test_unit_tests_load_the_shipped_rule_files() -> None:
    """Every test loads all the shipped rule files; a test may add rules of its own from its
    folder (an app's floors, as ``ragtrace alerts floors`` writes them)."""
    for name, tests in rule_tests().items():
        loaded = {(RULES_DIR / "tests" / f).resolve() for f in tests["rule_files"]}
        own = {path for path in loaded if path.parent == (RULES_DIR / "tests").resolve()}
        assert loaded - own == set(RULE_FILES), name


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


MEASURED_TRAFFIC = "quality_traffic.test.yml"
QUALITY_ALERTS = 'ALERTS{alertstate="firing", component="quality"'
SERIES_LABEL = re.compile(r'\b(app|evaluator)="([^"]+)"')


def _shares(group: dict[str, Any]) -> set[int]:
    """The shares of bad answers (from the app names, ``...-10pct``) a test group feeds."""
    return {
        int(dict(SERIES_LABEL.findall(series["series"]))["app"].rsplit("-", 1)[1][:-3])
        for series in group["input_series"]
    }


def test_measured_traffic_tests_cover_every_share_of_bad_answers() -> None:
    """The series of quality_traffic.test.yml are drawn from measured verdicts (``benchmarks/
    alert_traffic.py --rule-tests``): the group of 0% and 3% bad answers expects no quality
    alert over the whole run; the group of 10%, 20% and 30% expects none before the change and
    one for every app within 45 minutes (faithfulness at 10% excepted: it pages later)."""
    groups = {group["name"]: group for group in rule_tests()[MEASURED_TRAFFIC]["tests"]}
    quiet = next(g for name, g in groups.items() if "0% and 3%" in name)
    paging = next(g for name, g in groups.items() if "10% or more" in name)
    assert _shares(quiet) == {0, 3}
    assert _shares(paging) == {10, 20, 30}
    (never,) = quiet["promql_expr_test"]
    assert QUALITY_ALERTS in never["expr"] and never["exp_samples"] == []
    before, after = paging["promql_expr_test"]
    assert QUALITY_ALERTS in before["expr"] and before["exp_samples"] == []
    assert QUALITY_ALERTS in after["expr"] and "[45m]" in after["expr"]
    apps = {dict(SERIES_LABEL.findall(s["series"]))["app"] for s in paging["input_series"]}
    expected = {sample["labels"] for sample in after["exp_samples"]}
    assert expected == {f'{{app="{app}"}}' for app in apps if app != "faithfulness-halueval-10pct"}
    assert len(expected) >= 15


CONSTANT = re.compile(r"(record: ragtrace:quality_(\w+)\n\s+expr: vector\()([0-9.]+)\)")
RECORDING = "ragtrace-recording.rules.yml"


def _with_constants(tmp_path: Path, **values: str) -> Path:
    """A copy of the rules with some of the quality constants changed; its tests folder."""
    shutil.copytree(RULES_DIR, tmp_path / "prometheus")
    recording = tmp_path / "prometheus" / RECORDING
    text = recording.read_text()
    assert {m[1] for m in CONSTANT.findall(text)} >= set(values)
    recording.write_text(CONSTANT.sub(lambda m: f"{m[1]}{values.get(m[2], m[3])})", text))
    return tmp_path / "prometheus" / "tests"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("constants", "failing"),
    [
        ({"drop_tolerance_sd": "0", "evidence_threshold": "2"}, "0% and 3%"),
        ({"drop_tolerance_sd": "3"}, "10% or more"),
    ],
    ids=["tight", "loose"],
)
def test_measured_traffic_tests_fail_when_the_levels_move(
    tmp_path: Path, constants: dict[str, str], failing: str
) -> None:
    """The measured-traffic cases have teeth: no tolerance and little evidence page on 0-3%
    bad answers, a tolerance of 3 standard deviations misses 10-30%, and promtool fails that
    group."""
    folder = _with_constants(tmp_path, **constants)
    tests = rule_tests()[MEASURED_TRAFFIC]
    (group,) = [g for g in tests["tests"] if failing in g["name"]]
    one = folder / "one_group.test.yml"
    one.write_text(yaml.safe_dump({**tests, "tests": [group]}))
    result = promtool("test", "rules", str(one))
    assert result.returncode == 1, (group["name"], result.stdout)
    assert "FAILED" in result.stderr and "ALERTS" in result.stderr


def test_every_alert_with_a_traffic_guard_has_a_low_traffic_test() -> None:
    """Test groups named "low traffic" feed bad scores at a rate under the guard; promtool
    compares the whole list of alerts, so such an app is checked to stay out of it."""
    guarded = {rule["alert"] for rule in alert_rules() if TRAFFIC_GUARD.search(rule["expr"])}
    assert len(guarded) >= 5, guarded
    low_traffic = {alert for group, alert, _ in _cases() if "low traffic" in group}
    assert guarded <= low_traffic, guarded - low_traffic


@pytest.mark.integration
def test_low_traffic_tests_fail_when_the_guard_is_weakened(tmp_path: Path) -> None:
    """The low-traffic cases have teeth: with a guard of 1 evaluation (the quality windows:
    1 verdict), promtool must fail their groups."""
    folder = _with_constants(tmp_path, min_verdicts="1")
    alerts = folder.parent / "ragtrace-alerts.rules.yml"
    alerts.write_text(TRAFFIC_GUARD.sub(">= 1", alerts.read_text()))
    for name in ("quality", "safety", "pipeline"):
        result = promtool("test", "rules", str(folder / f"{name}.test.yml"), timeout_s=300)
        assert result.returncode == 1, (name, result.stdout)
        failed = re.findall(r"^\s+name: (.+),$", result.stderr, flags=re.MULTILINE)
        assert any("low traffic" in group for group in failed), (name, result.stderr)
        if name != "quality":  # a quality floor fires a minute sooner with a guard of 1
            assert all("low traffic" in group for group in failed), (name, result.stderr)


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
        constant = rule["expr"].strip().startswith("vector(")  # ragtrace:name, one number
        assert RECORD_NAME.match(rule["record"]) or (
            constant and re.fullmatch(r"ragtrace:[a-z_]+", rule["record"])
        ), rule["record"]
        level = rule["record"].split(":", 1)[0]
        grouping = re.findall(r"\bby \(([^)]*)\)", rule["expr"])
        labels = {label.strip() for by in grouping for label in by.split(",")}
        labels |= set(re.findall(r'"(\w+)",\s*"[^"]*",\s*"",\s*""\s*\)', rule["expr"]))
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
