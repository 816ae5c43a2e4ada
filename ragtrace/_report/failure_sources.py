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

Systems are compared on the same cases, as the leaderboards compare them: a case counts when
every system was asked it and each system either left it unanswered or was judged on both sides
(a case an evaluator skipped for one system is left out for all: that is not the system's
doing). On those cases, per system:

- the *retrieval* is compared on the cases every system answered (an unanswered case retrieved
  nothing anyone judged, so it is nobody's retrieval failure, and leaving it out for one system
  only would flatter the one that skipped the hard questions);
- the *generation* is compared on all of them: an unanswered case is a generation failure under
  ``--unanswered fail`` (nothing was generated), and is left out for every system under
  ``paired``;
- the generation failures over contexts that passed (the generator's own fault: it had what it
  needed) are counted on the cases every system answered.

``failure_sources(groups, bases)`` gives those counts per system; ``failure_insights`` names the
best and worst retrieval. Both are empty when the report has no retrieval score. When the
systems were asked different test sets (a score's basis is not shared), each system is taken
over its own cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace._report.basis import Basis
from ragtrace._report.findings import extremes, rounded
from ragtrace._report.groups import ScoreGroup

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
    """Per system: the compared cases and how many failed on each side (see above)."""
    if not any(is_retrieval(g) for g in groups):
        return {}
    systems = list(dict.fromkeys(s for g in groups for s in g.systems))
    sides: dict[str, dict[str, dict[bool, list[bool]]]] = {s: {} for s in systems}
    unanswered: dict[str, set[str]] = {s: set() for s in systems}
    asked: dict[str, set[str]] = {s: set() for s in systems}
    for group in groups:
        retrieval = is_retrieval(group)
        for system in group.systems:
            for case, row in group.plain.get(system, {}).items():
                verdict = group.verdict(row) if row.value is not None else None
                if verdict is not None:
                    sides[system].setdefault(case, {True: [], False: []})[retrieval].append(verdict)
            for case in group.lines.get(system, {}):
                asked[system].add(case)
                if group.status(system, case) == "unanswered":
                    unanswered[system].add(case)
    mode = bases[0].mode if bases else "fail"
    shared = all(b.shared for b in bases)

    def judged(system: str) -> set[str]:
        return {c for c, v in sides[system].items() if v[True] and v[False]}

    common: set[str] = set()
    if shared and systems:
        common = judged(systems[0]) | unanswered[systems[0]]
        for s in systems:
            common &= (judged(s) | unanswered[s]) & asked[s]
    found = {}
    for system in systems:
        cases = common if shared else judged(system) | unanswered[system]
        gave_none = cases & unanswered[system]
        everyone = (
            cases - set().union(*(unanswered[s] for s in systems)) if shared else cases - gave_none
        )
        generation_cases = cases if mode == "fail" else everyone
        verdicts = sides[system]
        retrieval_failed = sum(not all(verdicts[c][True]) for c in everyone)
        generation_failed = sum(
            c in gave_none or not all(verdicts[c][False]) for c in generation_cases
        )
        own_fault = sum(all(verdicts[c][True]) and not all(verdicts[c][False]) for c in everyone)
        found[system] = {
            "cases": len(generation_cases),
            "retrieval_cases": len(everyone),
            "unanswered": len(gave_none & generation_cases),
            "retrieval_failures": retrieval_failed,
            "generation_failures": generation_failed,
            "generation_failures_with_good_retrieval": own_fault,
            "retrieval_failure_rate": _share(retrieval_failed, len(everyone)),
            "generation_failure_rate": _share(generation_failed, len(generation_cases)),
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
            f"{rates[system] * 100:.1f}% of {sources[system]['retrieval_cases']} case(s) "
            "every system answered)"
        ),
    )


def _share(count: int, n: int) -> float | None:
    return rounded(count / n) if n else None
