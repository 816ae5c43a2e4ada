"""The Grafana dashboards and provisioning files, checked without a Grafana server: the JSON is
the builder's output, every panel reads the datasource variable, every variable used exists,
panels tile the grid, and the provisioning files point at them."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from grafana import build_dashboards
from ragtrace._metrics.collection import Metrics
from ragtrace._model import Score
from tests.grafana.artifacts import (
    GRAFANA,
    VARIABLE,
    dashboards,
    panels,
    queries,
    recording_rules,
)

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
DASHBOARDS = dashboards()


def test_committed_json_is_the_builders_output() -> None:
    assert set(build_dashboards.render()) == set(DASHBOARDS)
    for name, text in build_dashboards.render().items():
        committed = (GRAFANA / "dashboards" / name).read_text()
        assert committed == text, f"{name} is stale: run python -m grafana.build_dashboards"
    assert build_dashboards.main(["--check"]) == 0


def test_there_is_a_quality_and_an_operations_dashboard() -> None:
    uids = {dashboard["uid"] for dashboard in DASHBOARDS.values()}
    assert uids == {"ragtrace-quality", "ragtrace-operations"}
    for dashboard in DASHBOARDS.values():
        assert "ragtrace" in dashboard["tags"]
        assert dashboard["links"][0]["tags"] == ["ragtrace"]  # each links to the other


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_and_query_uses_the_datasource_variable(name: str) -> None:
    dashboard = DASHBOARDS[name]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, (panel["title"], target["refId"])
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]
    for annotation in dashboard["annotations"]["list"]:
        if not annotation.get("builtIn"):
            assert annotation["datasource"] == DATASOURCE, annotation["name"]


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_variable_referenced_is_defined(name: str) -> None:
    dashboard = DASHBOARDS[name]
    defined = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert {"datasource", "app", "evaluator"} <= defined
    used = {
        next(group for group in found.groups() if group)
        for text in _strings(dashboard)
        for found in VARIABLE.finditer(text)
    }
    builtin = {name for name in used if name.startswith("__")}
    assert used - builtin <= defined, used - builtin - defined
    assert {"datasource", "app", "evaluator"} <= used  # and each of them is used


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_app_and_evaluator_are_multi_value_with_all_as_any(name: str) -> None:
    for variable in DASHBOARDS[name]["templating"]["list"]:
        if variable["type"] == "query":
            assert variable["multi"] and variable["includeAll"], variable["name"]
            assert variable["allValue"] == ".*", variable["name"]
            assert variable["query"].startswith("label_values(ragtrace_"), variable["name"]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_panels_tile_the_grid_without_overlapping(name: str) -> None:
    items = panels(DASHBOARDS[name])
    ids = [panel["id"] for panel in items]
    assert len(ids) == len(set(ids))
    boxes = [panel["gridPos"] for panel in items]
    for box in boxes:
        assert box["x"] >= 0 and box["x"] + box["w"] <= 24 and box["h"] > 0
    for a, b in itertools.combinations(boxes, 2):
        apart = (
            a["x"] + a["w"] <= b["x"]
            or b["x"] + b["w"] <= a["x"]
            or a["y"] + a["h"] <= b["y"]
            or b["y"] + b["h"] <= a["y"]
        )
        assert apart, (a, b)


def test_score_panels_show_exemplars_and_a_heatmap() -> None:
    quality = DASHBOARDS["ragtrace-quality.json"]
    exemplar_exprs = [q.expr for q in queries() if q.exemplar]
    assert exemplar_exprs
    assert all("ragtrace_evaluation_score_bucket" in expr for expr in exemplar_exprs)
    heatmaps = [p for p in panels(quality) if p["type"] == "heatmap"]
    assert heatmaps and all(t["format"] == "heatmap" for p in heatmaps for t in p["targets"])
    repeated = [p for p in panels(quality) if p.get("repeat")]
    assert [p["repeat"] for p in repeated] == ["evaluator"]


def _exemplar_label() -> str:
    """The label under which ragtrace's score exemplars carry the trace id."""
    metrics = Metrics(CollectorRegistry(), app="support-bot")
    metrics.observe_score(Score("groundedness", 0.5), "support-bot", trace_id="ab" * 16)
    (family,) = [f for f in metrics.registry.collect() if f.name == "ragtrace_evaluation_score"]
    exemplars = [s.exemplar for s in family.samples if s.exemplar is not None]
    assert exemplars
    (label,) = {name for exemplar in exemplars for name in exemplar.labels}
    return label


def test_provisioned_datasource_links_exemplars_to_traces() -> None:
    files = sorted((GRAFANA / "provisioning" / "datasources").glob("*.yml"))
    assert files
    config = yaml.safe_load(files[0].read_text())
    assert config["apiVersion"] == 1
    by_uid = {source["uid"]: source for source in config["datasources"]}
    prometheus = [s for s in by_uid.values() if s["type"] == "prometheus"]
    assert len(prometheus) == 1 and prometheus[0]["isDefault"]
    destinations = prometheus[0]["jsonData"]["exemplarTraceIdDestinations"]
    assert [d["name"] for d in destinations] == [_exemplar_label()]
    assert all(d["datasourceUid"] in by_uid for d in destinations)


def test_provisioned_dashboard_provider_loads_json_files() -> None:
    files = sorted((GRAFANA / "provisioning" / "dashboards").glob("*.yml"))
    assert files
    config = yaml.safe_load(files[0].read_text())
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"].startswith("/")
    assert provider["folder"] == "ragtrace"


RULES = GRAFANA / "prometheus" / "ragtrace-alerts.rules.yml"
# Panel -> the alert whose operating point it draws as a threshold, the side that is bad on the
# panel, and how the alert's bound becomes the panel's unit.
PANEL_ALERTS: dict[str, tuple[str, str, Any]] = {
    # Errors in the alert's window -> errors per minute, as the panel plots them.
    "Internal errors per minute": ("RagtraceInternalErrors", ">", lambda b, w: b / w),
    "Queue backlog": ("RagtraceQueueBacklogGrowing", ">", lambda b, w: b),
}
# Panel -> the alert whose level it draws from a recorded series, and that series' query.
THRESHOLD = "ragtrace:quality_evidence_threshold"
FLOOR = "app_evaluator:ragtrace_quality_floor:pass_ratio"
BUDGET = "ragtrace:judge_budget_usd:1d"
DRAWN_LEVELS: dict[str, tuple[str, str]] = {
    "Drop evidence": ("RagtraceQualityDrop", THRESHOLD),
    "Floor evidence": ("RagtraceQualityBelowFloor", THRESHOLD),
    "Drop evidence by window: $evaluator": ("RagtraceQualityDrop", THRESHOLD),
    "Floor evidence by window: $evaluator": ("RagtraceQualityBelowFloor", THRESHOLD),
    "Pass ratio by window vs baseline: $evaluator": ("RagtraceQualityBelowFloor", FLOOR),
    "Verdicts by window: $evaluator": ("RagtraceQualityDrop", "ragtrace:quality_min_verdicts"),
    "Hallucinated answers (faithfulness)": ("RagtraceQualityBelowFloor", FLOOR),
    "Judge spend at the current pace, USD per day": ("RagtraceJudgeSpendRateHigh", BUDGET),
    "Judge spend, last 24 hours": ("RagtraceJudgeSpendOverBudget", BUDGET),
}


def _rule(name: str) -> dict[str, Any]:
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    (rule,) = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == name]
    return dict(rule)


def alert_condition(name: str) -> tuple[str, float, float]:
    """(comparison, bound, window in minutes) of the alert, from the rules parsed as YAML."""
    expr = re.sub(r'"[^"]*"', '""', _rule(name)["expr"])
    comparison = re.search(r"\)?\s*([<>])=?\s*([0-9.]+)", expr)
    window = re.search(r"\[(\d+)m\]", expr)
    assert comparison is not None, expr
    return comparison.group(1), float(comparison.group(2)), float(window.group(1) if window else 1)


def _series_read(expr: str, records: dict[str, str]) -> set[str]:
    """The series ``expr`` reads, through every recording rule it reads in turn."""
    names = set(re.findall(r"\b((?:[a-z_]+:)?ragtrace[a-z0-9_:]*)", re.sub(r'"[^"]*"', "", expr)))
    for name in sorted(names):
        if name in records:
            names |= _series_read(records.pop(name), records)
    return names


def test_panel_thresholds_are_the_alerts_operating_points() -> None:
    """Panels draw thresholds where an alert rule compares with a number: red on the side the
    alert fires on, at the bound its condition compares with."""
    found: dict[str, Any] = {}
    for dashboard in DASHBOARDS.values():
        found.update(
            {
                p["title"]: p
                for p in panels(dashboard)
                if "thresholds" in p.get("fieldConfig", {}).get("defaults", {})
            }
        )
    assert set(found) == set(PANEL_ALERTS)
    for title, panel in found.items():
        alert, side, to_panel = PANEL_ALERTS[title]
        comparison, bound, window = alert_condition(alert)
        assert comparison == side, (title, alert)
        steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert steps[0]["value"] is None and len(steps) == 2
        assert steps[1]["value"] == pytest.approx(to_panel(bound, window)), title
        low, high = ("red", "green") if side == "<" else ("green", "red")
        assert (steps[0]["color"], steps[1]["color"]) == (low, high), title
        assert panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"] == {"mode": "dashed"}


def test_panels_draw_the_levels_the_alerts_read_from_recorded_series() -> None:
    """The evidence threshold, the floors, the minimum verdicts and the judge budget are drawn
    by querying the recorded series the alert reads (directly or through the recording rules),
    as a dashed line: no number typed into the dashboard."""
    found: dict[str, Any] = {}
    for dashboard in DASHBOARDS.values():
        found.update(
            {p["title"]: p for p in panels(dashboard) if p.get("fieldConfig", {}).get("overrides")}
        )
    assert set(found) == set(DRAWN_LEVELS)
    recorded = {r["record"]: r["expr"] for r in recording_rules()}
    for title, panel in found.items():
        alert, level = DRAWN_LEVELS[title]
        assert level in recorded, title
        assert level in _series_read(_rule(alert)["expr"], dict(recorded)), (title, alert)
        (override,) = panel["fieldConfig"]["overrides"]
        assert override["matcher"]["id"] == "byFrameRefID"
        (drawn,) = [t for t in panel["targets"] if t["refId"] == override["matcher"]["options"]]
        # the level itself (1 - the faithfulness floor: the share of failed verdicts)
        assert re.sub(r"\{[^}]*\}", "", drawn["expr"]) in (level, f"1 - {level}"), title
        style = {p["id"]: p["value"] for p in override["properties"]}
        assert style["custom.lineStyle"]["fill"] == "dash", title


def test_quality_levels_are_drawn_only_for_the_evaluators_the_alerts_watch() -> None:
    """Where a quality alert's level is drawn, the panel's recorded quality series carry the
    alert's own evaluator matcher: a sensitive-content score (low pass ratio = something found)
    is never drawn against a threshold."""
    checked = 0
    for title, (alert, _) in DRAWN_LEVELS.items():
        if not alert.startswith("RagtraceQuality"):
            continue
        matcher = re.search(r'evaluator!~"[^"]*"', _rule(alert)["expr"])
        assert matcher is not None, alert
        (panel,) = [p for d in DASHBOARDS.values() for p in panels(d) if p["title"] == title]
        for target in panel["targets"]:
            if re.search(r"\bapp_evaluator(_window)?:", target["expr"]):
                assert matcher.group(0) in target["expr"], (title, target["expr"])
                checked += 1
    assert checked >= 6


def test_editing_an_alerts_bound_moves_the_panel(tmp_path: Any) -> None:
    from grafana.operating_points import alert_bound

    edited = tmp_path / "rules.yml"
    shipped = alert_bound("RagtraceQueueBacklogGrowing")
    text = RULES.read_text(encoding="utf-8")
    assert text.count(f"> {shipped:g}") == 1
    edited.write_text(text.replace(f"> {shipped:g}", "> 500"))
    assert (
        alert_bound("RagtraceQueueBacklogGrowing")
        == alert_condition("RagtraceQueueBacklogGrowing")[1]
    )
    assert alert_bound("RagtraceQueueBacklogGrowing", edited) == 500


def test_descriptions_quote_the_shipped_constants() -> None:
    from grafana.operating_points import recorded_constant

    recorded = {r["record"]: r["expr"] for r in recording_rules()}
    for name in (THRESHOLD, "ragtrace:quality_min_verdicts", "ragtrace:quality_drop_tolerance_sd"):
        assert recorded[name].strip() == f"vector({recorded_constant(name):g})", name
    with pytest.raises(KeyError):
        recorded_constant(FLOOR)  # per evaluator, not one number
