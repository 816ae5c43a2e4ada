"""Small builders for Grafana dashboard JSON (stdlib only): panels, rows, variables, layout.

``grafana.build_dashboards`` composes ragtrace's dashboards from these::

    layout([row("Overview"), timeseries("Pass rate", "...", [target(expr, "{{app}}")])])

Every panel and query names the datasource through the ``datasource`` template variable, so a
dashboard works with whatever Prometheus the user picks. The JSON follows Grafana's dashboard
model (schema version 39, Grafana 10 and later import it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Json = dict[str, Any]

SCHEMA_VERSION = 39
GRID_WIDTH = 24
DATASOURCE: Json = {"type": "prometheus", "uid": "${datasource}"}
TAGS = ["ragtrace", "rag"]


def target(expr: str, legend: str = "", *, exemplar: bool = False, heatmap: bool = False) -> Json:
    """One PromQL query of a panel (its ``refId`` is set by the panel)."""
    return {
        "datasource": DATASOURCE,
        "editorMode": "code",
        "expr": expr,
        "exemplar": exemplar,
        "format": "heatmap" if heatmap else "time_series",
        "legendFormat": legend or "__auto",
        "range": True,
    }


def _with_ref_ids(targets: Sequence[Json]) -> list[Json]:
    return [{**t, "refId": chr(ord("A") + i)} for i, t in enumerate(targets)]


def _field_config(
    unit: str, min_: float | None, max_: float | None, custom: Json | None = None
) -> Json:
    defaults: Json = {"unit": unit, "color": {"mode": "palette-classic"}}
    if min_ is not None:
        defaults["min"] = min_
    if max_ is not None:
        defaults["max"] = max_
    if custom is not None:
        defaults["custom"] = custom
    return {"defaults": defaults, "overrides": []}


def _panel(kind: str, title: str, description: str, targets: Sequence[Json], width: int) -> Json:
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": width, "x": 0, "y": 0},
        "targets": _with_ref_ids(targets),
    }


def timeseries(
    title: str,
    description: str,
    targets: Sequence[Json],
    *,
    unit: str = "short",
    width: int = 12,
    min_: float | None = 0,
    max_: float | None = None,
    stack: bool = False,
) -> Json:
    """A time-series panel; legends are tables with mean and last value."""
    custom = {
        "drawStyle": "line",
        "fillOpacity": 20 if stack else 5,
        "lineWidth": 1,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"group": "A", "mode": "normal" if stack else "none"},
    }
    return {
        **_panel("timeseries", title, description, targets, width),
        "fieldConfig": _field_config(unit, min_, max_, custom),
        "options": {
            "legend": {
                "calcs": ["mean", "lastNotNull"],
                "displayMode": "table",
                "placement": "bottom",
                "showLegend": True,
            },
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }


def below_is_bad(panel: Json, bound: float) -> Json:
    """``panel`` with a threshold at ``bound``: red below it, green from it on (drawn as a
    dashed line on a time series)."""
    return _thresholds(panel, [{"color": "red", "value": None}, {"color": "green", "value": bound}])


def above_is_bad(panel: Json, bound: float) -> Json:
    """``panel`` with a threshold at ``bound``: green up to it, red above it."""
    return _thresholds(panel, [{"color": "green", "value": None}, {"color": "red", "value": bound}])


def drawn_level(panel: Json, legend: str, *, color: str = "red") -> Json:
    """``panel`` with the series of its query whose legend is ``legend`` (one reading the level
    an alert compares with, e.g. a recorded constant) drawn as a dashed line of ``color``,
    outside any stack: the level moves with the rule that defines it, where a threshold would
    be a number typed twice."""
    (ref_id,) = [t["refId"] for t in panel["targets"] if t["legendFormat"] == legend]
    override = {
        "matcher": {"id": "byFrameRefID", "options": ref_id},
        "properties": [
            {"id": "color", "value": {"mode": "fixed", "fixedColor": color}},
            {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
            {"id": "custom.lineWidth", "value": 2},
            {"id": "custom.fillOpacity", "value": 0},
            {"id": "custom.stacking", "value": {"group": "A", "mode": "none"}},
        ],
    }
    panel["fieldConfig"]["overrides"].append(override)
    return panel


def _thresholds(panel: Json, steps: list[Json]) -> Json:
    defaults = panel["fieldConfig"]["defaults"]
    defaults["thresholds"] = {"mode": "absolute", "steps": steps}
    if panel["type"] == "timeseries":
        defaults["custom"]["thresholdsStyle"] = {"mode": "dashed"}
    return panel


def stat(
    title: str, description: str, targets: Sequence[Json], *, unit: str = "short", width: int = 6
) -> Json:
    """A single-value panel showing the last value of each series."""
    return {
        **_panel("stat", title, description, targets, width),
        "fieldConfig": _field_config(unit, None, None),
        "options": {
            "colorMode": "value",
            "graphMode": "area",
            "justifyMode": "auto",
            "orientation": "auto",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": "auto",
        },
    }


def bargauge(
    title: str, description: str, targets: Sequence[Json], *, unit: str, width: int = 12
) -> Json:
    """Horizontal bars, one per series (last value), for side-by-side comparisons."""
    return {
        **_panel("bargauge", title, description, targets, width),
        "fieldConfig": _field_config(unit, 0, 1),
        "options": {
            "displayMode": "gradient",
            "orientation": "horizontal",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "showUnfilled": True,
        },
    }


def heatmap(title: str, description: str, targets: Sequence[Json], *, width: int = 8) -> Json:
    """A heatmap of pre-bucketed histogram series (``format: heatmap``), exemplars shown."""
    return {
        **_panel("heatmap", title, description, targets, width),
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {
            "calculate": False,
            "cellGap": 1,
            "color": {"mode": "scheme", "scheme": "Spectral", "steps": 64, "reverse": False},
            "exemplars": {"color": "rgba(255,0,255,0.7)"},
            "filterValues": {"le": 1e-9},
            "legend": {"show": True},
            "rowsFrame": {"layout": "auto"},
            "tooltip": {"mode": "single", "yHistogram": True},
            "yAxis": {"axisPlacement": "left", "reverse": False, "unit": "none"},
        },
    }


def row(title: str, *, repeat: str | None = None) -> Json:
    """A row header; the panels after it belong to it. ``repeat``: one copy per value."""
    out: Json = {
        "type": "row",
        "title": title,
        "collapsed": False,
        "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": 0},
        "panels": [],
    }
    if repeat is not None:
        out["repeat"] = repeat
    return out


def layout(panels: Sequence[Json]) -> list[Json]:
    """Number the panels and place them left to right, wrapping at the grid's width."""
    out: list[Json] = []
    x = y = row_height = 0
    for panel_id, panel in enumerate(panels, start=1):
        grid = dict(panel["gridPos"])
        if panel["type"] == "row" or x + grid["w"] > GRID_WIDTH:
            x, y, row_height = 0, y + row_height, 0
        grid["x"], grid["y"] = x, y
        row_height = max(row_height, grid["h"])
        x += grid["w"]
        out.append({**panel, "id": panel_id, "gridPos": grid})
    return out


def datasource_variable() -> Json:
    """The ``datasource`` variable: any Prometheus data source."""
    return {
        "current": {},
        "hide": 0,
        "includeAll": False,
        "label": "Data source",
        "multi": False,
        "name": "datasource",
        "options": [],
        "query": "prometheus",
        "refresh": 1,
        "regex": "",
        "skipUrlSync": False,
        "type": "datasource",
    }


def query_variable(name: str, label: str, query: str) -> Json:
    """A multi-value variable filled by ``label_values(...)``; "All" matches anything."""
    return {
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "datasource": DATASOURCE,
        "definition": query,
        "hide": 0,
        "includeAll": True,
        "label": label,
        "multi": True,
        "name": name,
        "options": [],
        "query": query,
        "refresh": 2,
        "regex": "",
        "skipUrlSync": False,
        "sort": 1,
        "type": "query",
    }


def alerts_annotation(expr: str) -> Json:
    """Marks ragtrace's pending and firing alerts on every time-series panel."""
    return {
        "datasource": DATASOURCE,
        "enable": True,
        "expr": expr,
        "iconColor": "red",
        "name": "ragtrace alerts",
        "step": "60s",
        "tagKeys": "severity,component",
        "textFormat": "{{app}} {{evaluator}} {{instance}}",
        "titleFormat": "{{alertname}} ({{alertstate}})",
        "useValueForTime": False,
    }


def dashboard(
    uid: str,
    title: str,
    description: str,
    panels: Sequence[Json],
    variables: Sequence[Json],
    annotations: Sequence[Json] = (),
) -> Json:
    """A whole dashboard, linked to the other ragtrace dashboards by tag."""
    builtin = {
        "builtIn": 1,
        "datasource": {"type": "grafana", "uid": "-- Grafana --"},
        "enable": True,
        "hide": True,
        "iconColor": "rgba(0, 211, 255, 1)",
        "name": "Annotations & Alerts",
        "type": "dashboard",
    }
    return {
        "annotations": {"list": [builtin, *annotations]},
        "description": description,
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "links": [
            {
                "asDropdown": False,
                "icon": "external link",
                "includeVars": True,
                "keepTime": True,
                "tags": ["ragtrace"],
                "targetBlank": False,
                "title": "ragtrace dashboards",
                "type": "dashboards",
            }
        ],
        "panels": layout(panels),
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "tags": TAGS,
        "templating": {"list": list(variables)},
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }
