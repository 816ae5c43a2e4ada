"""Reader of the ``sampling`` section: rates, rules, rate limits, the hourly budget, cascades.

Every evaluator name under ``sampling`` must be one that runs. When the same file configures
``evaluators`` (read first), the names are checked against those here; otherwise they are
checked once every source is merged (``names_check``), against the evaluators code or the
environment chose::

    read_sampling(checks, {"rate": 0.1}, ("looping",))   # (Sampler(...), names it uses)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragtrace.pipeline.sampling import Sampler
from ragtrace.pipeline.sampling.rules import STATUSES, Cascade, Rule
from ragtrace.settings.checks import Checks, kind, suggest
from ragtrace.settings.schema import CASCADE_KEYS, RULE_KEYS, SAMPLING_KEYS, SettingsError


def read_sampling(
    checks: Checks, value: object, names: Sequence[str] | None
) -> tuple[Sampler, tuple[str, ...]]:
    """``sampling``: the ``Sampler``, and the evaluator names it uses. ``names``: the
    evaluators the same source configures (None: it configures none; not checked here)."""
    reader = SamplingReader(checks, names)
    return reader.sampler(value), tuple(reader.used)


def names_check(source: str, used: Sequence[str]) -> Any:
    """A check of the merged options: the evaluators that run include every name the file's
    ``sampling`` uses (else that part of it never applies: logged)."""

    def check(values: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
        if sources.get("sampler") != source:
            return []
        running = {getattr(e, "name", e) for e in values.get("evaluators", ("looping",))}
        missing = sorted(set(used) - running)
        if not missing:
            return []
        where = sources.get("evaluators", "default")
        return [
            f"{source}: sampling: names {', '.join(map(repr, missing))}, which will not run "
            f"(evaluators from {where}: {', '.join(sorted(running)) or 'none'}); "
            "the parts of sampling that name them never apply"
        ]

    return check


class SamplingReader:
    """Builds a ``Sampler`` from one ``sampling`` mapping.

    Args:
        checks: The checks of the source, which also record its errors.
        names: The configured evaluators, the only names ``sampling`` may use (None: any;
            they are checked later).
    """

    def __init__(self, checks: Checks, names: Sequence[str] | None) -> None:
        self.checks = checks
        self.names = None if names is None else list(names)
        self.used: list[str] = []

    def sampler(self, value: object) -> Sampler:
        """The whole section; each part that fails is recorded and the others still read."""
        checks = self.checks
        s = checks.mapping(value, "sampling", SAMPLING_KEYS)
        errors = len(checks.errors)
        options: dict[str, Any] = {}
        parts: dict[str, Callable[[], Any]] = {
            "rate": lambda: checks.number(s["rate"], "sampling.rate", 0, 1),
            "evaluator_rates": lambda: self.per_evaluator(
                s["evaluator_rates"], "sampling.evaluator_rates", 0, 1
            ),
            "rate_limits": lambda: self.per_evaluator(
                s["rate_limits"], "sampling.rate_limits", 0, None
            ),
            "burst": lambda: self.per_evaluator(s["burst"], "sampling.burst", 1, None),
            "hourly_budget_usd": lambda: (
                None
                if s["hourly_budget_usd"] is None
                else checks.number(s["hourly_budget_usd"], "sampling.hourly_budget_usd", 0)
            ),
        }
        for key, read in parts.items():
            if key in s:
                with checks.attempt():
                    options[key] = read()
        for key in options.get("burst", {}).keys() - options.get("rate_limits", {}).keys():
            with checks.attempt():
                checks.fail(
                    f"sampling.burst.{key}",
                    "no rate limit for this evaluator in sampling.rate_limits",
                )
        for key, entry in (("rules", self.rule), ("cascades", self.cascade)):
            with checks.attempt():
                listed = checks.items(s.get(key, []), f"sampling.{key}")
                options[key] = []
                for i, item in enumerate(listed):
                    with checks.attempt():
                        options[key].append(entry(item, f"sampling.{key}[{i}]"))
        if len(checks.errors) > errors:
            return Sampler()  # the file fails as a whole; this value is never used
        rate = options.pop("rate", 1.0)
        try:
            return Sampler(rate, **options)
        except ValueError as exc:
            if isinstance(exc, SettingsError):
                raise
            checks.fail("sampling.cascades", str(exc).removeprefix("Sampler: "))

    def configured(self, value: object, path: str) -> str:
        """The name of a configured evaluator."""
        name = self.checks.string(value, path)
        if self.names is not None and name not in self.names:
            known = ", ".join(self.names) or "(none)"
            self.checks.fail(
                path, f"unknown evaluator {name!r}{suggest(name, self.names)}; configured: {known}"
            )
        if name not in self.used:
            self.used.append(name)
        return name

    def per_evaluator(
        self, value: object, path: str, low: float, high: float | None
    ) -> dict[str, float]:
        """A table of configured evaluator name -> number in ``[low, high]``."""
        table = self.checks.mapping(value, path, None)
        return {
            self.configured(k, f"{path}.{k}"): self.checks.number(v, f"{path}.{k}", low, high)
            for k, v in table.items()
        }

    def rule(self, value: object, path: str) -> Rule:
        """One entry of ``sampling.rules``."""
        checks = self.checks
        r = checks.mapping(value, path, RULE_KEYS)
        if "action" not in r:
            checks.fail(path, "missing key 'action' (always or never)")
        if r["action"] not in ("always", "never"):
            checks.fail(f"{path}.action", f"expected 'always' or 'never', got {kind(r['action'])}")
        options: dict[str, Any] = {"action": r["action"]}
        for key in ("empty_retrieval", "feedback"):
            if key in r:
                options[key] = checks.boolean(r[key], f"{path}.{key}")
        for key in ("app", "route", "tenant", "name"):
            if key in r:
                options[key] = checks.string(r[key], f"{path}.{key}")
        if "top_score_below" in r:
            options["top_score_below"] = checks.number(
                r["top_score_below"], f"{path}.top_score_below"
            )
        if "status" in r:
            options["status"] = checks.strings(r["status"], f"{path}.status")
            for status in options["status"]:
                if status not in STATUSES:
                    hint = suggest(status, STATUSES) or f"; expected one of: {', '.join(STATUSES)}"
                    checks.fail(f"{path}.status", f"unknown status {status!r}{hint}")
        if "metadata" in r:
            meta = checks.mapping(r["metadata"], f"{path}.metadata", None)
            for key, v in meta.items():
                if not isinstance(v, str | int | float | bool):
                    checks.fail(
                        f"{path}.metadata.{key}", f"expected a string or number, got {kind(v)}"
                    )
            options["metadata"] = meta
        if "evaluators" in r:
            names = checks.strings(r["evaluators"], f"{path}.evaluators")
            options["evaluators"] = tuple(self.configured(n, f"{path}.evaluators") for n in names)
        try:
            return Rule(**options)
        except ValueError as exc:
            checks.fail(path, str(exc).removeprefix("Rule: "))

    def cascade(self, value: object, path: str) -> Cascade:
        """One entry of ``sampling.cascades``."""
        checks = self.checks
        c = checks.mapping(value, path, CASCADE_KEYS)
        for key in ("evaluator", "after"):
            if key not in c:
                checks.fail(path, f"missing key {key!r}")
        try:
            return Cascade(
                self.configured(c["evaluator"], f"{path}.evaluator"),
                self.configured(c["after"], f"{path}.after"),
                checks.number(c.get("low", 0.0), f"{path}.low"),
                checks.number(c.get("high", 1.0), f"{path}.high"),
            )
        except ValueError as exc:
            if isinstance(exc, SettingsError):
                raise
            checks.fail(path, str(exc).removeprefix("Cascade: "))
