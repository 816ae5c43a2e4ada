"""The worst answers of a score, with their texts and per-claim explanations.

``worst_examples(group, limit)`` takes every answer with a value (perturbed ones included, marked
by their perturbation), worst first (direction-aware), and gives what a reader needs to see why:
query, response, reference, the score's explanation, and the claims the evaluator checked.

Claims come from the score's ``details``, in the shapes ragtrace's evaluators write them:

- ``claims``: a list of ``{"claim", "supported", "support" | "p_yes" | "support_by_reference",
  "verdict", "correct"}`` (faithfulness, hallucination, judge_faithfulness, noise_sensitivity);
- ``statements``, ``answer_statements``, ``reference_statements``: lists of ``{"statement",
  "support", "attributed" | "in_reference" | "in_answer"}`` objects or strings (context recall,
  answer correctness);
- ``least_grounded`` and ``sentences``: groundedness' least grounded answer sentence (``text``,
  ``similarity``) and every answer sentence's best context match (``sentence`` index,
  ``similarity``, no text): a sentence is marked supported when its similarity reaches the
  score's threshold (the least grounded one with its text, the others by their index).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ragtrace._report.findings import rounded
from ragtrace._report.groups import ScoreGroup
from ragtrace._report.load import ScoreRow, clean

MAX_CLAIMS = 20
CLAIM_CHARS = 500
_CLAIM_LISTS = (
    ("claims", "claim"),
    ("statements", "statement"),
    ("answer_statements", "statement"),
    ("reference_statements", "statement"),
)
_NOTED = {"answer_statements", "reference_statements"}
_VERDICT_KEYS = ("supported", "correct", "attributed", "in_reference", "in_answer")
_SUPPORT_KEYS = ("support", "p_yes", "support_by_reference", "similarity", "probability")


def worst_examples(group: ScoreGroup, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` worst answers of the score, worst first."""
    rows: list[ScoreRow] = []
    for system in group.systems:
        rows.extend(r for r in group.plain[system].values() if r.value is not None)
        for by_name in group.perturbed[system].values():
            rows.extend(r for r in by_name.values() if r.value is not None)

    def badness(row: ScoreRow) -> tuple[float, str, str]:
        value = row.value if row.value is not None else math.inf
        return (group.goodness(value), row.system, row.id)

    worst = sorted(rows, key=badness)[: max(0, limit)]
    return [
        {
            "system": row.system,
            "case": row.case,
            "id": row.id,
            "perturbation": row.perturbation,
            "value": rounded(row.value),
            "verdict": {True: "pass", False: "fail", None: None}[group.verdict(row)],
            "explanation": row.explanation,
            "query": row.record.query,
            "response": row.record.response,
            "reference": row.record.reference,
            "claims": claims_of(row.details, row.threshold),
        }
        for row in worst
    ]


def claims_of(details: Mapping[str, Any], threshold: float | None = None) -> list[dict[str, Any]]:
    """Per-claim explanations found in a score's ``details`` (at most ``MAX_CLAIMS``);
    ``threshold`` marks groundedness' sentences (supported at or above it)."""
    found: list[dict[str, Any]] = []
    for key, text_key in _CLAIM_LISTS:
        items = details.get(key)
        if isinstance(items, list):
            claims = [c for item in items if (c := _claim(item, text_key)) is not None]
            found.extend({**c, "note": key} if key in _NOTED else c for c in claims)
    least = details.get("least_grounded")
    if isinstance(least, dict):
        found.extend(_grounded_sentences(least, details.get("sentences"), threshold))
    return found[:MAX_CLAIMS]


def _grounded_sentences(
    least: Mapping[str, Any], sentences: object, threshold: float | None
) -> list[dict[str, Any]]:
    """Groundedness' sentences: the least grounded one with its text, then the others by index,
    each supported when its best context similarity reaches ``threshold``."""
    claim = _claim(least, "text")
    if claim is None:
        return []
    found = [{**claim, **_grounded(claim["support"], threshold), "note": "least grounded"}]
    for item in sentences if isinstance(sentences, list) else []:
        if not isinstance(item, dict) or item.get("sentence") == least.get("sentence"):
            continue
        index = item.get("sentence")
        if isinstance(index, int) and not isinstance(index, bool):
            support = _support(item)
            found.append(
                {"text": f"sentence {index + 1}", "support": support}
                | _grounded(support, threshold)
            )
    return found


def _grounded(similarity: float | None, threshold: float | None) -> dict[str, Any]:
    if similarity is None or threshold is None:
        return {"supported": None}
    return {"supported": similarity >= threshold}


def _claim(item: object, text_key: str) -> dict[str, Any] | None:
    if isinstance(item, str):
        return {"text": clean(item, CLAIM_CHARS), "supported": None, "support": None}
    if not isinstance(item, dict):
        return None
    text = item.get(text_key)
    if not isinstance(text, str) or not text:
        return None
    supported = next((item[k] for k in _VERDICT_KEYS if isinstance(item.get(k), bool)), None)
    verdict = item.get("verdict")
    return {
        "text": clean(text, CLAIM_CHARS),
        "supported": supported,
        "support": _support(item),
        **({"verdict": clean(verdict, 40)} if isinstance(verdict, str) else {}),
    }


def _support(item: Mapping[str, Any]) -> float | None:
    for key in _SUPPORT_KEYS:
        value = item.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return rounded(float(value)) if math.isfinite(value) else None
    return None
