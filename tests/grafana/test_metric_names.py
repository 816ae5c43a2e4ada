"""Every metric name, label name and label value the dashboards and rules use is one ragtrace
writes: the families of ``ragtrace/_metrics/collection.py`` (with their ``_total``, ``_bucket``,
``_sum``, ``_count`` series) and the series the recording rules define."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry

from ragtrace._alerts.floors import DECLARED_FLOOR
from ragtrace._backends.tier_counts import RESULTS as CACHE_RESULTS
from ragtrace._backends.tier_counts import TIERS as CACHE_TIERS
from ragtrace._metrics.collection import OUTCOMES, REQUEST_STATUSES, Metrics
from ragtrace._metrics.ingest import REQUEST_OUTCOMES as INGEST_OUTCOMES
from ragtrace._pipeline.sampling import DROPPED, SAMPLED
from tests.grafana.artifacts import queries, recording_rules
from tests.grafana.traffic import SyntheticTraffic

NAME = re.compile(r"\b((?:[a-z_]+:)?ragtrace[a-z0-9_:]*)")
SELECTOR = re.compile(r"\b((?:[a-z_]+:)?ragtrace[a-z0-9_:]*)\{([^}]*)\}")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
TARGET_LABELS = {"job", "instance"}  # added by Prometheus to every scraped series


def _fed_registry() -> CollectorRegistry:
    """A registry with a sample in every family: ragtrace's Metrics,
    after one healthy and one incident step of synthetic traffic (no server started)."""
    traffic = SyntheticTraffic()
    traffic.tick(0)
    traffic.incident()
    traffic.tick(1)
    return traffic.registry


REGISTRY = _fed_registry()
SERIES: dict[str, set[str]] = {}
VALUES: dict[str, set[str]] = {}
for _family in REGISTRY.collect():
    for _sample in _family.samples:
        SERIES.setdefault(_sample.name, set()).update(_sample.labels)
        for _label, _value in _sample.labels.items():
            VALUES.setdefault(_label, set()).add(_value)
# the recorded series of the shipped rules, and the floors an app declares in a rule file of
# its own (`ragtrace alerts floors` writes it; the alert rules read it where present)
RECORDED = {rule["record"] for rule in recording_rules()} | {DECLARED_FLOOR}
QUERIES = queries()
ALLOWED_VALUES = {
    "outcome": set(OUTCOMES) | set(INGEST_OUTCOMES),
    "decision": {SAMPLED, DROPPED},
    "status": set(REQUEST_STATUSES),
    "direction": VALUES["direction"],
    "result": set(CACHE_RESULTS),
    "tier": set(CACHE_TIERS),
}


def _recorded_labels(name: str) -> set[str]:
    """Labels of a recorded series, from its level (``app_evaluator:...`` -> app, evaluator)."""
    level = name.split(":", 1)[0]
    return set() if level == "ragtrace" else set(level.split("_"))


def test_every_family_of_metrics_py_is_fed_so_its_labels_are_known() -> None:
    defined = {family.name for family in Metrics(CollectorRegistry(), app="a").registry.collect()}
    fed = {family.name for family in REGISTRY.collect() if family.samples}
    assert defined <= fed, defined - fed


def test_every_metric_name_used_is_defined() -> None:
    used: dict[str, list[str]] = {}
    for query in QUERIES:
        for name in NAME.findall(STRING.sub('""', query.promql)):
            used.setdefault(name, []).append(query.where)
    assert len(used) >= 15
    unknown = {
        name: where[0]
        for name, where in used.items()
        if name not in (RECORDED if ":" in name else SERIES)
    }
    assert not unknown, unknown
    # and every recorded series is used by a dashboard or an alert
    assert set(used) >= RECORDED, RECORDED - set(used)


def test_every_label_matcher_names_a_label_of_its_series() -> None:
    for query in QUERIES:
        for name, matchers in SELECTOR.findall(query.promql):
            allowed = _recorded_labels(name) if ":" in name else SERIES[name] | TARGET_LABELS
            for label, _, _ in MATCHER.findall(matchers):
                assert label in allowed, f"{query.where}: {name} has no label {label!r}"


def test_matched_label_values_are_ones_ragtrace_writes() -> None:
    checked = 0
    for query in QUERIES:
        for _, matchers in SELECTOR.findall(query.promql):
            for label, op, value in MATCHER.findall(matchers):
                if label not in ALLOWED_VALUES:
                    continue
                values = value.split("|") if op in ("=~", "!~") else [value]
                assert all(re.fullmatch(r"\w+", v) for v in values), (query.where, value)
                unknown = set(values) - ALLOWED_VALUES[label]
                assert not unknown, f"{query.where}: {label} is never {sorted(unknown)}"
                checked += 1
    assert checked >= 10
