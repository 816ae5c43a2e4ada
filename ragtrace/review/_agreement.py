"""Which labels an evaluator's agreement with people is measured on.

A ``good`` label says every evaluator should have passed the answer. A ``bad`` label says
something went wrong, and its failure type says what: a ``bad`` label with failure type
``pii`` says nothing about whether the answer was faithful, so it must not count as a verdict
``faithfulness`` should have failed. ``FAILURE_PROPERTIES`` names, for each failure type, the
evaluators that measure it; ``compares`` applies the rule:

- ``good``: every evaluator is compared (it should have passed);
- ``bad`` with a failure type: the evaluators that measure that failure (they should have
  failed); with ``other``, the evaluators that measure none of the named failures;
- ``bad`` without a failure type: every evaluator (the reviewer did not say what went wrong,
  so each should have failed; give failure types for sharper figures);
- ``unsure``: none.

An evaluator measures a failure type when its registry name or its score's name is listed, or
starts with a listed name and a dot (``pii_leakage.email``), or is one once a ``judge_`` prefix
or ``_judge`` suffix is taken off (``judge_faithfulness``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from ragtrace._metrics.review import AgreementRow

FAILURE_PROPERTIES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "hallucination": frozenset(
            {
                "faithfulness",
                "groundedness",
                "hallucination",
                "summarization_faithfulness",
                "noise_sensitivity",
            }
        ),
        "irrelevant_retrieval": frozenset(
            {"context_relevance", "context_relevancy", "context_precision"}
        ),
        "missing_context": frozenset({"context_recall", "context_entities_recall"}),
        "unsafe": frozenset(
            {
                "toxicity",
                "toxic",
                "harmful",
                "hateful",
                "malicious",
                "manipulative",
                "self_harm",
                "sexism",
                "sexual",
                "violent",
                "stereotypes",
                "bias",
                "fairness_bias",
                "insensitive",
            }
        ),
        "pii": frozenset({"pii_leakage", "sensitive_data", "contact_leakage"}),
    }
)
OTHER = "other"


def _forms(name: str) -> set[str]:
    base = name.split(".", 1)[0]
    return {base, base.removeprefix("judge_"), base.removesuffix("_judge")}


def measured_failure(evaluator: str, score_name: str) -> str | None:
    """The failure type the evaluator (registry name) or its score measures, if any."""
    forms = _forms(evaluator) | _forms(score_name)
    for failure, names in FAILURE_PROPERTIES.items():
        if forms & names:
            return failure
    return None


def compares(verdict: str, failure_type: str | None, evaluator: str, score_name: str) -> bool:
    """Whether a label (``verdict``, ``failure_type``) says how this evaluator should have
    judged the answer (the module docstring's rule)."""
    if verdict == "good":
        return True
    if verdict != "bad":
        return False
    if not failure_type:
        return True
    measured = measured_failure(evaluator, score_name)
    return measured is None if failure_type == OTHER else measured == failure_type


def agreement_rows(
    counts: Iterable[tuple[str, str, str, str, str, str | None, bool, int]],
) -> tuple[AgreementRow, ...]:
    """Agreement per (app, score name, kind) from counts of (app, score name, evaluator, kind,
    verdict, failure type, passed, labelled items); only labels that ``compares`` counts."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    for app, name, evaluator, kind, verdict, failure_type, passed, n in counts:
        if not compares(verdict, failure_type, evaluator, name):
            continue
        total = totals.setdefault((app, name, kind), [0, 0])
        total[0] += n
        total[1] += n if passed == (verdict == "good") else 0
    return tuple(
        AgreementRow(app, name, kind, compared, agreed)
        for (app, name, kind), (compared, agreed) in sorted(totals.items())
    )
