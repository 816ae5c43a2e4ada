"""Which evaluated requests deserve a person's look, why, and how urgently.

``ReviewRules().decide(record, evaluations)`` returns a ``Decision`` (reasons and a priority) or
None. The rules, each with its default priority (higher is reviewed first):

- ``secret`` (90): a score of a secret detector (``sensitive_data``) failed.
- ``pii`` (80): a score of a PII detector (``pii_leakage``) failed.
- ``toxicity`` (80): a score of a toxicity evaluator failed.
- ``disagreement`` (70): a cheap evaluator (kind ``lexical`` or ``model``) and an LLM judge
  (kind ``judge``) that measure the same property gave opposite pass/fail verdicts. "The same
  property" means: scores whose names fall in one of ``agreement_groups`` (by default the
  support family groundedness / faithfulness / hallucination, and the two answer-relevance
  variants), or whose names are equal once a ``_judge`` suffix is removed.
- ``score_failed`` (50): any other score failed its threshold (``Score.passed is False``, or
  the value on the wrong side of a threshold given in ``thresholds`` for that score name).

Every score is judged at its evaluator's own verdict (each default one fails at most 5% of
normal answers: docs/evaluators-online.md), except where ``points`` names another operating
point for its evaluator: by default ``faithfulness`` and ``hallucination`` route at
``"lenient"`` (at most 3% of faithful answers flagged on the tuning data, where the default
verdict flags 9-49% by design, a detector tuned for balanced accuracy), so the queue gets the
answers the detector is sure of rather than a quarter of all traffic. ``points={}`` routes on
every verdict as given; an explicit ``thresholds`` entry for a score wins over both.
- ``random_sample`` (10): a small uniform sample of everything evaluated (``sample_rate``),
  so people also see ordinary traffic and the agreement metrics are not measured only on
  flagged requests. Decided by a hash of the trace id (salted, so it is independent of the
  evaluation sampler's own trace-id ratio): the same request gets the same answer everywhere.

Scores with an error never count as failures. A score belongs to an evaluator family ``X`` when
its evaluator is ``X`` or its name is ``X`` or starts with ``X.``. An item's priority is its
most urgent reason's, plus one per further distinct reason (at most nine more).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace.review._items import Reason

DEFAULT_PRIORITIES: Mapping[str, int] = MappingProxyType(
    {
        "secret": 90,
        "pii": 80,
        "toxicity": 80,
        "disagreement": 70,
        "score_failed": 50,
        "random_sample": 10,
    }
)
REASON_NAMES = tuple(DEFAULT_PRIORITIES)
DEFAULT_POINTS: Mapping[str, str] = MappingProxyType(
    {"faithfulness": "lenient", "hallucination": "lenient"}
)
DEFAULT_AGREEMENT_GROUPS: tuple[tuple[str, ...], ...] = (
    ("groundedness", "faithfulness", "hallucination"),
    ("answer_relevance", "answer_relevance_similarity"),
)
_CHEAP = ("lexical", "model")
PointTable = Mapping[str, Mapping[str, float | None]]
_SALT = b"ragtrace-review-sample:"
_LOW64 = (1 << 64) - 1


@dataclass(frozen=True)
class Decision:
    """Why a record goes to the queue and how urgent it is."""

    reasons: tuple[Reason, ...]
    priority: int


@dataclass(frozen=True)
class ReviewRules:
    """The rules that fill the review queue (see the module docstring).

    Attributes:
        failing_scores: Queue records with any failing score.
        thresholds: Score name -> threshold used instead of the evaluator's own.
        pii_evaluators: Evaluator families whose failure means PII in the answer.
        secret_evaluators: Evaluator families whose failure means a leaked secret.
        toxicity_evaluators: Evaluator families whose failure means toxic content.
        agreement_groups: Score names that measure the same property, for ``disagreement``.
        sample_rate: Share of evaluated records queued at random, in [0, 1].
        ignore: Evaluator families the rules never look at.
        priorities: Rule name -> priority (missing names take the defaults).
        points: Evaluator -> the named operating point its scores are judged at here
            (``ragtrace.evaluators._operating_points``; default ``DEFAULT_POINTS``).
    """

    failing_scores: bool = True
    thresholds: Mapping[str, float] = field(default_factory=dict)
    pii_evaluators: tuple[str, ...] = ("pii_leakage",)
    secret_evaluators: tuple[str, ...] = ("sensitive_data",)
    toxicity_evaluators: tuple[str, ...] = ("toxicity",)
    agreement_groups: tuple[tuple[str, ...], ...] = DEFAULT_AGREEMENT_GROUPS
    sample_rate: float = 0.01
    ignore: tuple[str, ...] = ()
    priorities: Mapping[str, int] = field(default_factory=dict)
    points: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_POINTS))
    _tables: Mapping[str, tuple[str, PointTable]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        rate = self.sample_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise ValueError(f"review rules: sample_rate must be in [0, 1], got {rate!r}")
        unknown = sorted(set(self.priorities) - set(DEFAULT_PRIORITIES))
        if unknown:
            raise ValueError(
                f"review rules: unknown rule(s) {unknown} in priorities; known: {REASON_NAMES}"
            )
        for name, value in self.thresholds.items():
            if not isinstance(value, int | float) or math.isnan(value):
                raise ValueError(f"review rules: threshold of {name!r} must be a number")
        object.__setattr__(self, "_tables", _point_tables(self.points))

    def priority(self, rule: str) -> int:
        """The priority of one rule."""
        return int(self.priorities.get(rule, DEFAULT_PRIORITIES[rule]))

    def decide(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> Decision | None:
        """The reasons to queue ``record`` given its evaluations, or None to leave it out."""
        scored = [
            (ev.evaluator, score)
            for ev in evaluations
            for score in ev.scores
            if not _in_family(ev.evaluator, score.name, self.ignore)
        ]
        reasons: list[Reason] = []
        for evaluator, score in scored:
            if self.verdict(score) is not True:
                continue
            rule = self._rule_of(evaluator, score.name)
            if rule is not None:
                reasons.append(Reason(rule, self.priority(rule), score.name, _why(score, self)))
        reasons.extend(self._disagreements(scored))
        if scored and self.sample_rate > 0 and _sampled(record.trace_id, self.sample_rate):
            reasons.append(
                Reason("random_sample", self.priority("random_sample"), None, "calibration")
            )
        if not reasons:
            return None
        top = max(r.priority for r in reasons)
        return Decision(tuple(reasons), top + min(9, len({r.name for r in reasons}) - 1))

    def _rule_of(self, evaluator: str, name: str) -> str | None:
        for rule, family in (
            ("secret", self.secret_evaluators),
            ("pii", self.pii_evaluators),
            ("toxicity", self.toxicity_evaluators),
        ):
            if _in_family(evaluator, name, family):
                return rule
        return "score_failed" if self.failing_scores else None

    def verdict(self, score: Score) -> bool | None:
        """True: ``score`` fails as these rules judge it (its threshold here, or its operating
        point here, else its own verdict); False: it passes; None: no verdict (an error, no
        threshold)."""
        if score.error is not None:
            return None
        threshold = self.thresholds.get(score.name)
        if threshold is None:
            at_point = self._failed_at_point(score)
            if at_point is not None:
                return at_point
        if threshold is None or score.value is None or not math.isfinite(score.value):
            return None if score.passed is None else not score.passed
        if score.direction == "higher_is_better":
            return score.value < threshold
        return score.value > threshold

    def point_of(self, score: Score) -> str | None:
        """The operating point ``score`` is judged at here (None: its own verdict)."""
        if score.name in self.thresholds:
            return None
        return next(
            (point for family, (point, _) in self._tables.items() if _named(score.name, family)),
            None,
        )

    def _failed_at_point(self, score: Score) -> bool | None:
        from ragtrace.evaluators._operating_points import failed_at

        for family, (point, table) in self._tables.items():
            if _named(score.name, family):
                return failed_at(table, point, score)
        return None

    def _disagreements(self, scored: Sequence[tuple[str, Score]]) -> list[Reason]:
        found: list[Reason] = []
        for group in self._groups(scored):
            cheap = [s for s in group if s.evaluator_kind in _CHEAP]
            judges = [s for s in group if s.evaluator_kind == "judge"]
            pair = next(
                (
                    (c, j)
                    for c in cheap
                    for j in judges
                    if self.verdict(c) is not None
                    and self.verdict(j) is not None
                    and self.verdict(c) != self.verdict(j)
                ),
                None,
            )
            if pair is not None:
                c, j = pair
                detail = (
                    f"{c.name} ({c.evaluator_kind}) {_verdict(self.verdict(c))} vs "
                    f"{j.name} (judge) {_verdict(self.verdict(j))}"
                )
                found.append(Reason("disagreement", self.priority("disagreement"), j.name, detail))
        return found

    def _groups(self, scored: Sequence[tuple[str, Score]]) -> list[list[Score]]:
        groups: dict[str, list[Score]] = {}
        for evaluator, score in scored:
            key = _family_key(evaluator, score.name, self.agreement_groups)
            groups.setdefault(key, []).append(score)
        return [g for g in groups.values() if len(g) > 1]


def _named(name: str, family: str) -> bool:
    return name == family or name.startswith(family + ".")


def _point_tables(points: Mapping[str, str]) -> dict[str, tuple[str, PointTable]]:
    """Each named evaluator's operating points, checked (an unknown name or point raises)."""
    from ragtrace.evaluators._registry import factory

    tables = {}
    for evaluator, point in points.items():
        try:
            table = getattr(factory(evaluator), "operating_points", {})
        except KeyError:
            raise ValueError(
                f"review rules: points names an unknown evaluator {evaluator!r}"
            ) from None
        if point not in table:
            known = ", ".join(repr(p) for p in table) or "none"
            raise ValueError(
                f"review rules: {evaluator} has no operating point {point!r} (it has {known})"
            )
        tables[evaluator] = (point, table)
    return tables


def _family_key(evaluator: str, name: str, groups: Sequence[Sequence[str]]) -> str:
    for i, group in enumerate(groups):
        if _in_family(evaluator, name, group):
            return f"group:{i}"
    return name.removesuffix("_judge").replace("_judge.", ".")


def _in_family(evaluator: str, name: str, family: Sequence[str]) -> bool:
    return any(f in (evaluator, name) or name.startswith(f + ".") for f in family)


def _sampled(trace_id: str, rate: float) -> bool:
    if rate >= 1:
        return True
    digest = hashlib.blake2b(_SALT + str(trace_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < round(rate * (_LOW64 + 1))


def _why(score: Score, rules: ReviewRules) -> str:
    value = "no value" if score.value is None else f"{score.value:.3g}"
    point = rules.point_of(score)
    if point is not None:
        return f"{score.name} {value} fails at its {point} operating point"
    threshold = rules.thresholds.get(score.name, score.threshold)
    if threshold is None:
        return f"{score.name} failed ({value}, label {score.label})"
    op = "<" if score.direction == "higher_is_better" else ">"
    return f"{score.name} {value} {op} threshold {threshold:.3g}"


def _verdict(failed: bool | None) -> str:
    return "fail" if failed else "pass"
