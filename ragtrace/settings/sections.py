"""Readers of the ``evaluators``, ``pipeline`` and ``sinks`` sections (``sampling`` has its own).

Each reader has the shape ``ragtrace.settings.reader`` expects: it takes the ``Checks`` of the
source, the section's value and the fields read so far, and returns the ``EvaluationSettings``
fields it fills::

    read_pipeline(Checks("ragtrace.yaml"), {"workers": 4}, {})  # {"workers": 4, ...}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragtrace.evaluators import registry, suites
from ragtrace.evaluators.base import Evaluator
from ragtrace.settings.checks import Checks, suggest
from ragtrace.settings.schema import (
    DEFAULT_PROMETHEUS_PORT,
    EVALUATOR_OPTIONS,
    OTEL_RESULTS,
    PHOENIX_KEYS,
    PIPELINE_KEYS,
    PROMETHEUS_KEYS,
    SINKS_KEYS,
    EvaluationSettings,
    Fields,
)

_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")
SUITES = ("online",)
SUITE_KEYS = ("suite", "profile", "options")


def read_evaluators(checks: Checks, value: object, earlier: Mapping[str, Any]) -> Fields:
    """``evaluators``: a list of names, ``{name: ..., option: ...}`` entries, ``{suite: online,
    profile: ..., options: {name: {...}}}`` entries (every evaluator of the online suite) or
    ``Evaluator``s."""
    built: list[Evaluator] = []
    where: dict[str, str] = {}
    for i, item in enumerate(checks.items(value, "evaluators")):
        at = f"evaluators[{i}]"
        if isinstance(item, Evaluator):
            group = [item]
        elif isinstance(item, Mapping) and "suite" in item:
            group = build_suite(checks, item, at)
        else:
            group = [build_evaluator(checks, item, at)]
        for evaluator in group:
            if evaluator.name in where:
                checks.fail(
                    at, f"duplicate evaluator {evaluator.name!r} (also {where[evaluator.name]})"
                )
            where[evaluator.name] = at
            built.append(evaluator)
    return {"evaluators": tuple(built)}


def build_suite(checks: Checks, item: Mapping[str, Any], at: str) -> list[Evaluator]:
    """The evaluators of a ``{suite: online, profile: ..., options: {...}}`` entry
    (``ragtrace.evaluators.suites``), each built as a ``{name: ...}`` entry would be."""
    entry = checks.mapping(item, at, SUITE_KEYS)
    suite = checks.string(entry["suite"], f"{at}.suite")
    if suite not in SUITES:
        hint = suggest(suite, SUITES)
        checks.fail(f"{at}.suite", f"unknown suite {suite!r}{hint}; known: {', '.join(SUITES)}")
    profile = checks.string(entry.get("profile", "default"), f"{at}.profile")
    if profile not in suites.PROFILES:
        known = tuple(suites.PROFILES)
        checks.fail(
            f"{at}.profile",
            f"unknown profile {profile!r}{suggest(profile, known)}; known: {', '.join(known)}",
        )
    options = checks.mapping(entry.get("options", {}), f"{at}.options", registry.ONLINE_SUITE)
    for name, given in options.items():
        checks.mapping(given, f"{at}.options.{name}", None)
    return [
        build_evaluator(checks, {"name": name, **chosen}, f"{at}.options.{name}")
        for name, chosen in suites.suite_options(profile, options).items()
    ]


def build_evaluator(checks: Checks, item: object, at: str) -> Evaluator:
    """Build the evaluator one entry names, with its options (inline or under ``options``)."""
    entry = checks.mapping({"name": item} if isinstance(item, str) else item, at, None)
    if "name" not in entry:
        checks.fail(at, "missing key 'name' (the evaluator to build)")
    name = checks.string(entry.pop("name"), f"{at}.name")
    known = registry.names()
    if name not in known:
        checks.fail(
            f"{at}.name",
            f"unknown evaluator {name!r}{suggest(name, known)}; known: {', '.join(known)}",
        )
    nested = checks.mapping(entry.pop("options", {}), f"{at}.options", None)
    for key in nested.keys() & entry.keys():
        checks.fail(f"{at}.options.{key}", f"also given as {at}.{key}")
    options = {**entry, **nested}
    try:
        return registry.create(name, **options)
    except TypeError as exc:
        match = _UNEXPECTED.search(str(exc))
        if match and match.group(1) in options:
            key = match.group(1)
            path = f"{at}.options.{key}" if key in nested else f"{at}.{key}"
            checks.fail(
                path, f"unknown option for evaluator {name!r}{suggest(key, EVALUATOR_OPTIONS)}"
            )
        checks.fail(at, f"evaluator {name!r}: {exc}")
    except Exception as exc:  # the constructor's own checks, a missing extra, ...
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        checks.fail(at, f"evaluator {name!r}: {message}")


def read_pipeline(checks: Checks, value: object, earlier: Mapping[str, Any]) -> Fields:
    """``pipeline``: queue size, workers, batch wait, worker processes, their shared cache and
    a passage store."""
    p = checks.mapping(value, "pipeline", PIPELINE_KEYS)
    defaults = EvaluationSettings
    cache = p.get("shared_cache_mb", defaults.shared_cache_mb)
    store = p.get("passage_store")
    return {
        "queue_size": checks.integer(
            p.get("queue_size", defaults.queue_size), "pipeline.queue_size", 1
        ),
        "workers": checks.integer(p.get("workers", defaults.workers), "pipeline.workers", 1),
        "batch_wait_s": checks.number(
            p.get("batch_wait_s", defaults.batch_wait_s), "pipeline.batch_wait_s", 0
        ),
        "processes": checks.integer(
            p.get("processes", defaults.processes), "pipeline.processes", 0
        ),
        "shared_cache_mb": (
            None if cache is None else checks.number(cache, "pipeline.shared_cache_mb", 0)
        ),
        "passage_store": None if store is None else _passage_store(checks, store),
    }


def _passage_store(checks: Checks, value: object) -> str:
    """``pipeline.passage_store``: the path of a store ``ragtrace index`` writes. Opened (and
    refused when it is not a store) where the pipeline's options are built, not here: ``ragtrace
    index --config`` reads this file's evaluators to create the very store it names."""
    return checks.string(value, "pipeline.passage_store")


def read_sinks(checks: Checks, value: object, earlier: Mapping[str, Any]) -> Fields:
    """``sinks``: the Prometheus endpoint (``true``, ``false`` or ``{port, addr}``), OTel
    (``true``, ``false``, or how: ``logs``, ``spans``, ``both``, ``none``) and Phoenix (its
    base URL, or ``{endpoint: URL}``)."""
    sinks = checks.mapping(value, "sinks", SINKS_KEYS)
    port, addr = _prometheus(checks, sinks.get("prometheus"))
    otel, otel_results = _otel(checks, sinks.get("otel", EvaluationSettings.otel))
    return {
        "metrics_port": port,
        "metrics_addr": addr,
        "otel": otel,
        "otel_results": otel_results,
        "phoenix_endpoint": _phoenix(checks, sinks.get("phoenix")),
    }


def _otel(checks: Checks, value: object) -> tuple[bool, str | None]:
    if isinstance(value, str):
        if value not in OTEL_RESULTS:
            checks.fail(
                "sinks.otel",
                f"unknown value {value!r}{suggest(value, OTEL_RESULTS)}; use true, false or "
                f"one of {', '.join(OTEL_RESULTS)}",
            )
        return value != "none", value
    return checks.boolean(value, "sinks.otel"), None


def _phoenix(checks: Checks, value: object) -> str | None:
    if value is None or value is False:
        return None
    if isinstance(value, str):
        url = checks.string(value, "sinks.phoenix")
        path = "sinks.phoenix"
    else:
        p = checks.mapping(value, "sinks.phoenix", PHOENIX_KEYS)
        if "endpoint" not in p:
            checks.fail("sinks.phoenix", "missing key 'endpoint' (Phoenix's base URL)")
        url = checks.string(p["endpoint"], "sinks.phoenix.endpoint")
        path = "sinks.phoenix.endpoint"
    if not url.startswith(("http://", "https://")):
        checks.fail(path, f"expected an http:// or https:// URL, got {url!r}")
    return url


def _prometheus(checks: Checks, value: object) -> tuple[int | None, str]:
    addr = EvaluationSettings.metrics_addr
    if value is None or value is False:
        return None, addr
    if value is True:
        return DEFAULT_PROMETHEUS_PORT, addr
    p = checks.mapping(value, "sinks.prometheus", PROMETHEUS_KEYS)
    port = checks.integer(p.get("port", DEFAULT_PROMETHEUS_PORT), "sinks.prometheus.port", 0, 65535)
    return port, checks.string(p.get("addr", addr), "sinks.prometheus.addr")
