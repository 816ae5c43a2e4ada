"""Reader of the ``sampling`` section: rates, rules, rate limits, the hourly budget, cascades.

Every evaluator name under ``sampling`` must be configured under ``evaluators``, which is read
first: ``read_sampling`` takes the names from the fields read before it::

    read_sampling(checks, {"rate": 0.1}, {"evaluators": evaluators})  # {"sampler": Sampler(...)}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.pipeline.sampling import Sampler
from ragtrace.pipeline.sampling.rules import STATUSES, Cascade, Rule
from ragtrace.settings.checks import Checks, kind, suggest
from ragtrace.settings.schema import CASCADE_KEYS, RULE_KEYS, SAMPLING_KEYS, Fields, SettingsError


def read_sampling(checks: Checks, value: object, earlier: Mapping[str, Any]) -> Fields:
    """``sampling``: the ``Sampler``, checked against the evaluators read before it."""
    names = [evaluator.name for evaluator in earlier.get("evaluators", ())]
    return {"sampler": SamplingReader(checks, names).sampler(value)}


class SamplingReader:
    """Builds a ``Sampler`` from one ``sampling`` mapping.

    Args:
        checks: The checks of the source, which also raise its errors.
        names: The configured evaluators, the only names ``sampling`` may use.
    """

    def __init__(self, checks: Checks, names: Sequence[str]) -> None:
        self.checks = checks
        self.names = list(names)

    def sampler(self, value: object) -> Sampler:
        """The whole section."""
        checks = self.checks
        s = checks.mapping(value, "sampling", SAMPLING_KEYS)
        limits = self.per_evaluator(s.get("rate_limits", {}), "sampling.rate_limits", 0, None)
        burst = self.per_evaluator(s.get("burst", {}), "sampling.burst", 1, None)
        for key in burst.keys() - limits.keys():
            checks.fail(
                f"sampling.burst.{key}", "no rate limit for this evaluator in sampling.rate_limits"
            )
        budget = s.get("hourly_budget_usd")
        rules = checks.items(s.get("rules", []), "sampling.rules")
        cascades = checks.items(s.get("cascades", []), "sampling.cascades")
        try:
            return Sampler(
                checks.number(s.get("rate", 1.0), "sampling.rate", 0, 1),
                evaluator_rates=self.per_evaluator(
                    s.get("evaluator_rates", {}), "sampling.evaluator_rates", 0, 1
                ),
                rules=[self.rule(r, f"sampling.rules[{i}]") for i, r in enumerate(rules)],
                rate_limits=limits,
                burst=burst,
                hourly_budget_usd=None
                if budget is None
                else checks.number(budget, "sampling.hourly_budget_usd", 0),
                cascades=[
                    self.cascade(c, f"sampling.cascades[{i}]") for i, c in enumerate(cascades)
                ],
            )
        except ValueError as exc:
            if isinstance(exc, SettingsError):
                raise
            checks.fail("sampling.cascades", str(exc).removeprefix("Sampler: "))

    def configured(self, value: object, path: str) -> str:
        """The name of a configured evaluator."""
        name = self.checks.string(value, path)
        if name not in self.names:
            known = ", ".join(self.names) or "(none)"
            self.checks.fail(
                path, f"unknown evaluator {name!r}{suggest(name, self.names)}; configured: {known}"
            )
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
