"""Reading a settings file: parse YAML or TOML, walk the sections, build the settings."""

from __future__ import annotations

import difflib
import importlib
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ragtrace.evaluators import registry
from ragtrace.evaluators.base import Evaluator
from ragtrace.pipeline.sampling import Sampler
from ragtrace.pipeline.sampling.rules import STATUSES, Cascade, Rule

DEFAULT_PROMETHEUS_PORT = 9464
_TOP = ("evaluators", "sampling", "pipeline", "sinks")
_SAMPLING = (
    "rate", "evaluator_rates", "rules", "rate_limits", "burst", "hourly_budget_usd", "cascades"
)  # fmt: skip
_RULE = (
    "action", "status", "empty_retrieval", "top_score_below", "app", "route", "tenant",
    "metadata", "feedback", "evaluators", "name",
)  # fmt: skip
_CASCADE = ("evaluator", "after", "low", "high")
_PIPELINE = ("queue_size", "workers", "batch_wait_s", "processes", "shared_cache_mb")
_SINKS = ("prometheus", "otel")
_PROMETHEUS = ("port", "addr")
_BASE_OPTIONS = ("threshold", "inline", "batch_size", "timeout_s", "cost_usd")
_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")


class SettingsError(ValueError):
    """A settings file or mapping is unreadable or invalid; the message says where and why."""


@dataclass(frozen=True)
class EvaluationSettings:
    """What to evaluate, how to sample, and where results go.

    Attributes:
        evaluators: Built evaluators, in the configured order.
        sampler: Decides which evaluators run on which record.
        queue_size: Most records waiting for workers.
        workers: Worker threads.
        processes: Worker processes the evaluator calls run in (0: threads of this process).
        shared_cache_mb: Size of the cache those processes share (None: the default).
        batch_wait_s: How long a worker waits to fill a batch.
        metrics_port: Port of the Prometheus /metrics endpoint; None: no endpoint.
        metrics_addr: Address the endpoint listens on.
        otel: Export evaluation results as spans.
    """

    evaluators: tuple[Evaluator, ...]
    sampler: Sampler
    queue_size: int = 10000
    workers: int = 2
    batch_wait_s: float = 0.05
    processes: int = 0
    shared_cache_mb: float | None = None
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    otel: bool = True

    def __post_init__(self) -> None:
        if not all(isinstance(e, Evaluator) for e in self.evaluators):
            raise SettingsError("EvaluationSettings: evaluators must be Evaluator instances")
        if not isinstance(self.sampler, Sampler):
            raise SettingsError("EvaluationSettings: sampler must be a Sampler")
        if self.queue_size < 1 or self.workers < 1:
            raise SettingsError("EvaluationSettings: queue_size and workers must be >= 1")
        if not self.batch_wait_s >= 0:
            raise SettingsError("EvaluationSettings: batch_wait_s must be >= 0")
        if self.processes < 0:
            raise SettingsError("EvaluationSettings: processes must be >= 0")
        if self.shared_cache_mb is not None and not 0 <= self.shared_cache_mb < math.inf:
            raise SettingsError("EvaluationSettings: shared_cache_mb must be a number >= 0")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise SettingsError("EvaluationSettings: metrics_port must be in 0..65535")


def load_settings(path: str | os.PathLike[str]) -> EvaluationSettings:
    """Read settings from a ``.yaml``/``.yml`` (PyYAML) or ``.toml`` file.

    Raises:
        SettingsError: The file cannot be read or parsed, or a value is invalid.
    """
    source = os.fspath(path)
    suffix = Path(source).suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise SettingsError(f"{source}: unsupported file type {suffix!r}; use .yaml, .yml or .toml")
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{source}: cannot read the file: {exc}") from exc
    if suffix == ".toml":
        try:
            data: object = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{source}: invalid TOML: {exc}") from exc
    else:
        data = _load_yaml(text, source)
    return _Reader(source).settings({} if data is None else data)


def settings_from_mapping(data: Mapping[str, Any], source: str = "<dict>") -> EvaluationSettings:
    """Build settings from a mapping shaped like the file (config as code).

    Entries of ``evaluators`` may also be ``Evaluator`` instances.

    Raises:
        SettingsError: A value is invalid; the message names ``source`` and the key's path.
    """
    return _Reader(source).settings(data)


def _load_yaml(text: str, source: str) -> object:
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise SettingsError(f"{source}: reading YAML needs PyYAML: pip install pyyaml") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _refuse_duplicate_keys(yaml, root, source, set())
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{source}: invalid YAML: {exc}") from exc


def _refuse_duplicate_keys(yaml: Any, node: Any, source: str, seen_nodes: set[int]) -> None:
    if node is None or id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in keys:
                    line = key.start_mark.line + 1
                    raise SettingsError(f"{source}: line {line}: duplicate key {key.value!r}")
                keys.add(key.value)
            _refuse_duplicate_keys(yaml, value, source, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_duplicate_keys(yaml, item, source, seen_nodes)


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _kind(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


class _Reader:
    """Checks one settings mapping, failing with ``<source>: <path>: <message>``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.names: list[str] = []

    def fail(self, path: str, message: str) -> NoReturn:
        raise SettingsError(
            f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}"
        )

    def settings(self, data: object) -> EvaluationSettings:
        if not isinstance(data, Mapping):
            self.fail("", f"expected a mapping at the top level, got {type(data).__name__}")
        top = self.mapping(data, "", _TOP)
        evaluators = self.evaluators(top.get("evaluators", []))
        pipeline = self.mapping(top.get("pipeline", {}), "pipeline", _PIPELINE)
        sinks = self.mapping(top.get("sinks", {}), "sinks", _SINKS)
        port, addr = self.prometheus(sinks.get("prometheus"))
        return EvaluationSettings(
            evaluators=evaluators,
            sampler=self.sampler(top.get("sampling", {})),
            queue_size=self.integer(pipeline.get("queue_size", 10000), "pipeline.queue_size", 1),
            workers=self.integer(pipeline.get("workers", 2), "pipeline.workers", 1),
            batch_wait_s=self.number(
                pipeline.get("batch_wait_s", 0.05), "pipeline.batch_wait_s", 0
            ),
            processes=self.integer(pipeline.get("processes", 0), "pipeline.processes", 0),
            shared_cache_mb=(
                None
                if pipeline.get("shared_cache_mb") is None
                else self.number(pipeline["shared_cache_mb"], "pipeline.shared_cache_mb", 0)
            ),
            metrics_port=port,
            metrics_addr=addr,
            otel=self.boolean(sinks.get("otel", True), "sinks.otel"),
        )

    def mapping(self, value: object, path: str, known: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {_kind(value)}")
        for key in value:
            at = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str):
                self.fail(at, f"keys must be strings, got {_kind(key)}")
            if known is not None and key not in known:
                hint = _suggest(key, known) or f"; expected one of: {', '.join(known)}"
                self.fail(at, f"unknown key{hint}")
        return dict(value)

    def items(self, value: object, path: str) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.fail(path, f"expected a list, got {_kind(value)}")
        return list(value)

    def number(
        self, value: object, path: str, low: float | None = None, high: float | None = None
    ) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            hint = ""
            if isinstance(value, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", value):
                hint = " (YAML reads 1e-3 as a string: write 1.0e-3)"
            self.fail(path, f"expected a number, got {_kind(value)}{hint}")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
            self.fail(path, f"must be {bounds}, got {value!r}")
        return float(value)

    def integer(self, value: object, path: str, low: int, high: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected an integer, got {_kind(value)}")
        self.number(value, path, low, high)
        return value

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value:
            hint = (
                " (quote it: YAML reads yes/no/on/off as booleans)"
                if isinstance(value, bool)
                else ""
            )
            self.fail(path, f"expected a non-empty string, got {_kind(value)}{hint}")
        return value

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        if isinstance(value, str):
            return (self.string(value, path),)
        return tuple(self.string(v, f"{path}[{i}]") for i, v in enumerate(self.items(value, path)))

    def configured(self, value: object, path: str) -> str:
        name = self.string(value, path)
        if name not in self.names:
            known = ", ".join(self.names) or "(none)"
            self.fail(
                path, f"unknown evaluator {name!r}{_suggest(name, self.names)}; configured: {known}"
            )
        return name

    def evaluators(self, value: object) -> tuple[Evaluator, ...]:
        built: list[Evaluator] = []
        where: dict[str, str] = {}
        for i, item in enumerate(self.items(value, "evaluators")):
            at = f"evaluators[{i}]"
            evaluator = item if isinstance(item, Evaluator) else self.evaluator(item, at)
            if evaluator.name in where:
                self.fail(
                    at, f"duplicate evaluator {evaluator.name!r} (also {where[evaluator.name]})"
                )
            where[evaluator.name] = at
            built.append(evaluator)
        self.names = list(where)
        return tuple(built)

    def evaluator(self, item: object, at: str) -> Evaluator:
        entry = self.mapping({"name": item} if isinstance(item, str) else item, at, None)
        if "name" not in entry:
            self.fail(at, "missing key 'name' (the evaluator to build)")
        name = self.string(entry.pop("name"), f"{at}.name")
        known = registry.names()
        if name not in known:
            self.fail(
                f"{at}.name",
                f"unknown evaluator {name!r}{_suggest(name, known)}; known: {', '.join(known)}",
            )
        nested = self.mapping(entry.pop("options", {}), f"{at}.options", None)
        for key in nested.keys() & entry.keys():
            self.fail(f"{at}.options.{key}", f"also given as {at}.{key}")
        options = {**entry, **nested}
        try:
            return registry.create(name, **options)
        except TypeError as exc:
            match = _UNEXPECTED.search(str(exc))
            if match and match.group(1) in options:
                key = match.group(1)
                path = f"{at}.options.{key}" if key in nested else f"{at}.{key}"
                self.fail(
                    path, f"unknown option for evaluator {name!r}{_suggest(key, _BASE_OPTIONS)}"
                )
            self.fail(at, f"evaluator {name!r}: {exc}")
        except Exception as exc:  # the constructor's own checks, a missing extra, ...
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            self.fail(at, f"evaluator {name!r}: {message}")

    def per_evaluator(
        self, value: object, path: str, low: float, high: float | None
    ) -> dict[str, float]:
        table = self.mapping(value, path, None)
        return {
            self.configured(k, f"{path}.{k}"): self.number(v, f"{path}.{k}", low, high)
            for k, v in table.items()
        }

    def sampler(self, value: object) -> Sampler:
        s = self.mapping(value, "sampling", _SAMPLING)
        limits = self.per_evaluator(s.get("rate_limits", {}), "sampling.rate_limits", 0, None)
        burst = self.per_evaluator(s.get("burst", {}), "sampling.burst", 1, None)
        for key in burst.keys() - limits.keys():
            self.fail(
                f"sampling.burst.{key}", "no rate limit for this evaluator in sampling.rate_limits"
            )
        budget = s.get("hourly_budget_usd")
        rules = self.items(s.get("rules", []), "sampling.rules")
        cascades = self.items(s.get("cascades", []), "sampling.cascades")
        try:
            return Sampler(
                self.number(s.get("rate", 1.0), "sampling.rate", 0, 1),
                evaluator_rates=self.per_evaluator(
                    s.get("evaluator_rates", {}), "sampling.evaluator_rates", 0, 1
                ),
                rules=[self.rule(r, f"sampling.rules[{i}]") for i, r in enumerate(rules)],
                rate_limits=limits,
                burst=burst,
                hourly_budget_usd=None
                if budget is None
                else self.number(budget, "sampling.hourly_budget_usd", 0),
                cascades=[
                    self.cascade(c, f"sampling.cascades[{i}]") for i, c in enumerate(cascades)
                ],
            )
        except ValueError as exc:
            if isinstance(exc, SettingsError):
                raise
            self.fail("sampling.cascades", str(exc).removeprefix("Sampler: "))

    def rule(self, value: object, path: str) -> Rule:
        r = self.mapping(value, path, _RULE)
        if "action" not in r:
            self.fail(path, "missing key 'action' (always or never)")
        if r["action"] not in ("always", "never"):
            self.fail(f"{path}.action", f"expected 'always' or 'never', got {_kind(r['action'])}")
        options: dict[str, Any] = {"action": r["action"]}
        for key in ("empty_retrieval", "feedback"):
            if key in r:
                options[key] = self.boolean(r[key], f"{path}.{key}")
        for key in ("app", "route", "tenant", "name"):
            if key in r:
                options[key] = self.string(r[key], f"{path}.{key}")
        if "top_score_below" in r:
            options["top_score_below"] = self.number(
                r["top_score_below"], f"{path}.top_score_below"
            )
        if "status" in r:
            options["status"] = self.strings(r["status"], f"{path}.status")
            for status in options["status"]:
                if status not in STATUSES:
                    hint = _suggest(status, STATUSES) or f"; expected one of: {', '.join(STATUSES)}"
                    self.fail(f"{path}.status", f"unknown status {status!r}{hint}")
        if "metadata" in r:
            meta = self.mapping(r["metadata"], f"{path}.metadata", None)
            for key, v in meta.items():
                if not isinstance(v, str | int | float | bool):
                    self.fail(
                        f"{path}.metadata.{key}", f"expected a string or number, got {_kind(v)}"
                    )
            options["metadata"] = meta
        if "evaluators" in r:
            names = self.strings(r["evaluators"], f"{path}.evaluators")
            options["evaluators"] = tuple(self.configured(n, f"{path}.evaluators") for n in names)
        try:
            return Rule(**options)
        except ValueError as exc:
            self.fail(path, str(exc).removeprefix("Rule: "))

    def cascade(self, value: object, path: str) -> Cascade:
        c = self.mapping(value, path, _CASCADE)
        for key in ("evaluator", "after"):
            if key not in c:
                self.fail(path, f"missing key {key!r}")
        try:
            return Cascade(
                self.configured(c["evaluator"], f"{path}.evaluator"),
                self.configured(c["after"], f"{path}.after"),
                self.number(c.get("low", 0.0), f"{path}.low"),
                self.number(c.get("high", 1.0), f"{path}.high"),
            )
        except ValueError as exc:
            if isinstance(exc, SettingsError):
                raise
            self.fail(path, str(exc).removeprefix("Cascade: "))

    def prometheus(self, value: object) -> tuple[int | None, str]:
        if value is None or value is False:
            return None, "127.0.0.1"
        if value is True:
            return DEFAULT_PROMETHEUS_PORT, "127.0.0.1"
        p = self.mapping(value, "sinks.prometheus", _PROMETHEUS)
        port = self.integer(
            p.get("port", DEFAULT_PROMETHEUS_PORT), "sinks.prometheus.port", 0, 65535
        )
        return port, self.string(p.get("addr", "127.0.0.1"), "sinks.prometheus.addr")
