"""Retrieval failures versus generation failures, per system (H2O Eval Studio's split).

The catalogue reports, for its checks, "retrieval failures" (the RAG's retrieved contexts that
failed the check) beside "generation failures" (the answers that failed it), and names the
systems "with best and worst context retrieval performance". Over a report's scores this reads:

- a *retrieval* score judges what was retrieved: the ``context_*`` evaluators (relevance,
  precision, recall, entities recall, their judge forms) and ``ragas``' two context
  components, and a check's context side (``tokens_presence.context``, a judge check's
  ``.retrieval`` score); every other score judges the answer (*generation*);
- per system and unperturbed case with a verdict on both sides: the retrieval failed when a
  retrieval score fails, the generation failed when a generation score fails.

``failure_sources(groups, bases)`` counts, per system, those cases, the retrieval failures, the
generation failures, and the generation failures over contexts that passed (the generator's own
fault: it had what it needed); ``failure_insights`` names the best and worst retrieval. Both are
empty when the report has no retrieval score. Unanswered cases are not split here (nothing was
generated; the leaderboards count them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.report.basis import Basis
from ragtrace.report.findings import extremes, rounded
from ragtrace.report.groups import ScoreGroup

RETRIEVAL_EVALUATORS = frozenset(
    {
        "context_relevance",
        "context_precision",
        "context_recall",
        "context_entities_recall",
        "judge_context_precision",
        "judge_context_recall",
        "judge_context_relevancy",
        "judge_context_entities_recall",
    }
)
RETRIEVAL_SCORES = frozenset({"ragas.context_precision", "ragas.context_recall"})
RETRIEVAL_SUFFIXES = (".context", ".retrieval")


def is_retrieval(group: ScoreGroup) -> bool:
    """Whether the score judges what was retrieved (see the module docstring)."""
    return (
        group.evaluator in RETRIEVAL_EVALUATORS
        or group.name.split(".", 1)[0] in RETRIEVAL_EVALUATORS
        or group.name in RETRIEVAL_SCORES
        or group.name.endswith(RETRIEVAL_SUFFIXES)
    )


def failure_sources(
    groups: Sequence[ScoreGroup], bases: Sequence[Basis]
) -> dict[str, dict[str, Any]]:
    """Per system: cases judged on both sides and how many failed on each (see above)."""
    if not any(is_retrieval(g) for g in groups):
        return {}
    sides: dict[str, dict[str, dict[bool, list[bool]]]] = {}
    for group, basis in zip(groups, bases, strict=True):
        retrieval = is_retrieval(group)
        for system, mine in basis.systems.items():
            cases = sides.setdefault(system, {})
            for case, row in group.plain.get(system, {}).items():
                verdict = group.verdict(row) if row.value is not None else None
                if verdict is not None and case in mine.own_values:
                    cases.setdefault(case, {True: [], False: []})[retrieval].append(verdict)
    found = {}
    for system, cases in sides.items():
        both = [v for v in cases.values() if v[True] and v[False]]
        retrieval_failed = [not all(v[True]) for v in both]
        generation_failed = [not all(v[False]) for v in both]
        own_fault = sum(
            g and not r for r, g in zip(retrieval_failed, generation_failed, strict=True)
        )
        n = len(both)
        found[system] = {
            "cases": n,
            "retrieval_failures": sum(retrieval_failed),
            "generation_failures": sum(generation_failed),
            "generation_failures_with_good_retrieval": own_fault,
            "retrieval_failure_rate": _share(sum(retrieval_failed), n),
            "generation_failure_rate": _share(sum(generation_failed), n),
        }
    return found


def failure_insights(sources: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The systems with the best and the worst context retrieval (two or more that differ)."""
    rates = {
        s: v["retrieval_failure_rate"]
        for s, v in sources.items()
        if v["retrieval_failure_rate"] is not None
    }
    words = {"best_retrieval": "best", "worst_retrieval": "worst"}
    return extremes(
        rates,
        "best_retrieval",
        "worst_retrieval",
        lambda kind, system: (
            f"{words[kind]} context retrieval: {system} (retrieval failed on "
            f"{rates[system] * 100:.1f}% of {sources[system]['cases']} case(s))"
        ),
    )


def _share(count: int, n: int) -> float | None:
    return rounded(count / n) if n else None
