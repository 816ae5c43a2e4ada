"""Sampling rules and cascades, and the checks on the sampler's settings.

``Rule`` says "always" or "never" sample an evaluator when every condition it gives matches a
record (status, empty retrieval, best chunk score, app, route, tenant, metadata, feedback, a
later turn of a session that failed: ``after_failure``);
``Cascade`` makes an expensive evaluator run only when a cheaper one's score lies in a band.
Both check their fields when built and raise a ValueError that names the bad one. The sampler
itself (``ragtrace._pipeline.sampling.Sampler``) takes them as ``rules=`` and ``cascades=``::

    from ragtrace._pipeline.sampling import Sampler
    from ragtrace._pipeline.sampling.rules import Cascade, Rule

    Sampler(
        0.1,
        rules=[Rule("always", status=("error",)), Rule("never", route="healthcheck")],
        cascades=[Cascade("judge_faithfulness", after="groundedness", low=0.3, high=0.7)],
    )

The helpers at the end validate the sampler's numeric settings (``finite_number``,
``per_evaluator_numbers``) and refuse cascades that form a cycle (``check_acyclic``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from ragtrace._model import Chunk, RagRecord, RequestStatus

STATUSES = get_args(RequestStatus)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
_RULE_TYPES = {
    "empty_retrieval": bool,
    "feedback": bool,
    "after_failure": bool,
    "app": str,
    "route": str,
    "tenant": str,
}


@dataclass(frozen=True)
class Rule:
    """Always or never sample an evaluator when every given condition matches (None: ignored).

    Attributes:
        action: ``always`` (beats the ratio) or ``never`` (beats everything after it).
        status: Record statuses that match, e.g. ``("error",)``.
        empty_retrieval: True matches records without chunks, False records with some.
        top_score_below: Matches when the best chunk score is below it (no scored chunk: no match).
        app: The record's ``app``.
        route: ``attributes["metadata"]["route"]`` (compared as a string).
        tenant: ``attributes["metadata"]["tenant"]`` (compared as a string).
        metadata: Every key of ``attributes["metadata"]`` equals the value, as a string.
        feedback: True matches records with ``attributes["feedback"]``, False those without.
        evaluators: Evaluator names the rule applies to; empty: all of them.
        name: The reason label ``rule:<name>``; default derived from the action and conditions.
        after_failure: True matches the later turns of a session where a turn failed an
            evaluator, within the limits of the sampler's ``FailedSessions`` (each turn it
            matches counts against them); False the other records. The sampler checks it
            after every other condition (``matches`` ignores it).
    """

    action: Literal["always", "never"]
    status: tuple[str, ...] | None = None
    empty_retrieval: bool | None = None
    top_score_below: float | None = None
    app: str | None = None
    route: str | None = None
    tenant: str | None = None
    metadata: Mapping[str, str] | None = None
    feedback: bool | None = None
    evaluators: tuple[str, ...] = ()
    name: str = ""
    after_failure: bool | None = None
    _wanted: Mapping[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.action not in ("always", "never"):
            raise ValueError(f"Rule: action must be 'always' or 'never', got {self.action!r}")
        if self.status is not None:
            status = (self.status,) if isinstance(self.status, str) else tuple(self.status)
            bad = [s for s in status if s not in STATUSES]
            if bad or not status:
                raise ValueError(f"Rule: status must be some of {', '.join(STATUSES)}, got {bad}")
            object.__setattr__(self, "status", status)
        for key, kind in _RULE_TYPES.items():
            if getattr(self, key) is not None and not isinstance(getattr(self, key), kind):
                raise ValueError(
                    f"Rule: {key} must be a {kind.__name__}, got {getattr(self, key)!r}"
                )
        if self.top_score_below is not None:
            object.__setattr__(
                self,
                "top_score_below",
                finite_number(self.top_score_below, "Rule: top_score_below"),
            )
        if self.metadata is not None:
            meta = {
                str(k): _scalar_str(v, f"Rule: metadata[{k!r}]") for k, v in self.metadata.items()
            }
            object.__setattr__(self, "metadata", MappingProxyType(meta))
        wanted = {
            k: v for k, v in (("route", self.route), ("tenant", self.tenant)) if v is not None
        }
        object.__setattr__(self, "_wanted", {**(self.metadata or {}), **wanted})
        evaluators = (self.evaluators,) if isinstance(self.evaluators, str) else self.evaluators
        if not all(isinstance(e, str) and e for e in evaluators):
            raise ValueError("Rule: evaluators must be evaluator names")
        object.__setattr__(self, "evaluators", tuple(evaluators))
        if not self.name:
            object.__setattr__(self, "name", self._derived_name())
        elif not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"Rule: name must be a short identifier (letters, digits, _; at most 48), "
                f"got {self.name!r}"
            )

    @property
    def reason(self) -> str:
        """The decision reason when this rule decides: ``rule:<name>``."""
        return f"rule:{self.name}"

    def matches(self, record: RagRecord) -> bool:
        """Whether every given condition holds for ``record``."""
        if self.status is not None and record.status not in self.status:
            return False
        if self.empty_retrieval is not None and (not record.chunks) != self.empty_retrieval:
            return False
        if self.top_score_below is not None:
            best = _top_score(record.chunks)
            if best is None or not best < self.top_score_below:
                return False
        if self.app is not None and record.app != self.app:
            return False
        if self.feedback is not None and (
            (record.attributes.get("feedback") is not None) != self.feedback
        ):
            return False
        if not self._wanted:
            return True
        meta = record.attributes.get("metadata")
        if not isinstance(meta, Mapping):
            return False
        return all(
            meta.get(k) is not None and _as_str(meta[k]) == v for k, v in self._wanted.items()
        )

    def _derived_name(self) -> str:
        parts: list[str] = [self.action]
        for key in ("status", "empty_retrieval", "top_score_below", "app", "route", "tenant"):
            value = getattr(self, key)
            if value is None:
                continue
            parts.append(key)
            values = value if isinstance(value, tuple) else (value,)
            if key != "top_score_below" and all(
                isinstance(v, str) and _NAME.fullmatch(v) for v in values
            ):
                parts.extend(values)
        if self.metadata is not None:
            parts.append("metadata")
        if self.feedback is not None:
            parts.append("feedback" if self.feedback else "no_feedback")
        if self.after_failure is not None:
            parts.append("after_failure" if self.after_failure else "no_failure")
        return "_".join(parts)[:48].rstrip("_")


@dataclass(frozen=True)
class Cascade:
    """Run ``evaluator`` only when the score named ``after`` lies in ``[low, high]``.

    ``after`` names the cheaper evaluator, which must emit a score under its own name.
    """

    evaluator: str
    after: str
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        for key in ("evaluator", "after"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise ValueError(f"Cascade: {key} must be an evaluator name")
        if self.evaluator == self.after:
            raise ValueError(f"Cascade: {self.evaluator!r} cannot follow itself")
        low, high = (
            finite_number(self.low, "Cascade: low"),
            finite_number(self.high, "Cascade: high"),
        )
        if low > high:
            raise ValueError(f"Cascade: low ({low}) must not exceed high ({high})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)


def _top_score(chunks: Sequence[Chunk]) -> float | None:
    scores = [c.score for c in chunks if isinstance(c.score, int | float) and c.score == c.score]
    return max(scores) if scores else None


def _as_str(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def _scalar_str(value: object, what: str) -> str:
    if not isinstance(value, str | int | float | bool):
        raise ValueError(f"{what} must be a string or number, got {type(value).__name__}")
    return _as_str(value)


def finite_number(
    value: object, what: str, low: float | None = None, high: float | None = None
) -> float:
    """``value`` as a float if it is a finite number in ``[low, high]``, else a ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise ValueError(f"{what} must be {bounds}, got {value!r}")
    return float(value)


def per_evaluator_numbers(
    value: object, what: str, low: float, high: float | None
) -> dict[str, float]:
    """A ``{evaluator name: number}`` setting, each number checked by ``finite_number``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"Sampler: {what} must be a mapping of evaluator name to number")
    out: dict[str, float] = {}
    for key, number in value.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"Sampler: {what} keys must be evaluator names, got {key!r}")
        out[key] = finite_number(number, f"Sampler: {what}[{key!r}]", low, high)
    return out


def check_acyclic(after: Mapping[str, Sequence[Cascade]]) -> None:
    """Raise a ValueError naming the cycle if cascades (by evaluator) depend on each other."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = [*path[path.index(name) :], name]
            raise ValueError(f"Sampler: cascades form a cycle: {' -> '.join(cycle)}")
        state[name] = 1
        for cascade in after.get(name, ()):
            visit(cascade.after, [*path, name])
        state[name] = 2

    for name in after:
        visit(name, [])
