"""The shipped Grafana and Prometheus files, loaded, and every PromQL expression in them.

``queries()`` lists each expression with where it comes from (dashboard panel, variable,
annotation, rule), in Grafana's form; ``to_promql`` turns one into what Prometheus runs
(``$__rate_interval`` -> ``1m``, template variables -> ``.*``, ``label_values`` -> a query).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "grafana"
DASHBOARD_DIR = GRAFANA / "dashboards"
RULES_DIR = GRAFANA / "prometheus"
RULE_FILES = sorted(RULES_DIR.glob("*.rules.yml"))
RULE_TEST_FILES = sorted((RULES_DIR / "tests").glob("*.test.yml"))
DOCS = REPO / "docs" / "grafana.md"
ALERTMANAGER_EXAMPLE = GRAFANA / "alertmanager" / "alertmanager.example.yml"

GRAFANA_INTERVALS = ("__rate_interval", "__interval", "__range")
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.+),\s*)?(?P<label>\w+)\)$")


@dataclass(frozen=True)
class Query:
    """One PromQL expression shipped in a dashboard or a rule file.

    Attributes:
        where: A readable origin, e.g. ``ragtrace-quality.json: Pass rate by evaluator [A]``.
        expr: The expression as written (Grafana variables and all).
        legend: The panel's legend format (``{{app}}``), if any.
        kind: ``panel``, ``variable``, ``annotation``, ``record`` or ``alert``.
        exemplar: The panel asks Grafana to show exemplars for this query.
    """

    where: str
    expr: str
    legend: str = ""
    kind: str = "panel"
    exemplar: bool = False

    @property
    def promql(self) -> str:
        return to_promql(self.expr)


def to_promql(expr: str) -> str:
    """What Prometheus runs for a Grafana expression: intervals 1m, variables ``.*``."""
    match = LABEL_VALUES.match(expr.strip())
    if match is not None:
        selector = match["selector"] or "{__name__=~'.+'}"
        expr = f"count by ({match['label']}) ({selector})"

    def substitute(found: re.Match[str]) -> str:
        name = next(group for group in found.groups() if group)
        return "1m" if name in GRAFANA_INTERVALS else ".*"

    return VARIABLE.sub(substitute, expr)


def dashboards() -> dict[str, dict[str, Any]]:
    """File name -> parsed dashboard JSON."""
    return {
        path.name: json.loads(path.read_text()) for path in sorted(DASHBOARD_DIR.glob("*.json"))
    }


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, rows included, also those nested in collapsed rows."""
    out: list[dict[str, Any]] = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def rule_groups(*paths: Path) -> list[dict[str, Any]]:
    """Every rule group of ``paths`` (default: every shipped rule file)."""
    groups: list[dict[str, Any]] = []
    for path in paths or RULE_FILES:
        groups.extend(yaml.safe_load(path.read_text())["groups"])
    return groups


def rules() -> list[dict[str, Any]]:
    return [rule for group in rule_groups() for rule in group["rules"]]


def alert_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def recording_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "record" in rule]


def rule_tests() -> dict[str, dict[str, Any]]:
    """Test file name -> parsed promtool unit-test file."""
    return {path.name: yaml.safe_load(path.read_text()) for path in RULE_TEST_FILES}


def queries() -> list[Query]:
    """Every PromQL expression of every dashboard (panels, variables, annotations) and rule."""
    out: list[Query] = []
    for name, dashboard in dashboards().items():
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                where = f"{name}: {panel['title']} [{target['refId']}]"
                legend = target.get("legendFormat", "")
                legend = "" if legend == "__auto" else legend
                exemplar = bool(target.get("exemplar"))
                out.append(Query(where, target["expr"], legend, exemplar=exemplar))
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                where = f"{name}: variable {variable['name']}"
                out.append(Query(where, variable["query"], kind="variable"))
        for annotation in dashboard["annotations"]["list"]:
            if "expr" in annotation:
                where = f"{name}: annotation {annotation['name']}"
                out.append(Query(where, annotation["expr"], kind="annotation"))
    for rule in rules():
        kind = "alert" if "alert" in rule else "record"
        out.append(Query(f"{kind} {rule.get('alert') or rule['record']}", rule["expr"], kind=kind))
    return out


def legend_labels(legend: str) -> set[str]:
    """Label names a legend format refers to (``{{app}} / {{evaluator}}`` -> app, evaluator)."""
    return set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
