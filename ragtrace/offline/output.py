"""The scores file of ``ragtrace eval``: one JSON line per input record, in input order.

Each line::

    {"id": "q-17", "system": "gpt-x", "case": "q-17", "perturbation": null,
     "scores": [{"name": "looping.unique_sentences", "evaluator": "looping", "value": 1.0,
                 "label": "pass", "passed": true, "threshold": 0.75, "direction":
                 "higher_is_better", "explanation": "...", "error": null, "kind": "lexical",
                 "model": null, "details": {...}}, ...],
     "skipped": [{"evaluator": "groundedness", "missing": ["chunks"]}],
     "record": {"query": "How long ...?", "response": "30 days.", "reference": null}}

``system`` names the system that gave the answer (never null), ``case`` the test case it
answers (the input record's id, shared by every system's and every perturbation's answer to
it), ``perturbation`` the perturbation of the question asked (null for the question as written;
the id of a perturbed answer is ``f"{case}~{perturbation}"``). ``record`` holds the texts, each
cut to ``RECORD_TEXT_CHARS`` characters (with "…" appended when cut), so a report can show
examples without the input file.

Lines are UTF-8 with non-ASCII text as is. Text that cannot be UTF-8 (a lone surrogate, which a
``\\ud800`` escape in the input can produce) is written back as the same ``\\uXXXX`` escape, so
every line stays valid JSON. ``details`` that are not JSON-safe (NaN, infinities, objects) are
made so: non-finite numbers become null, numpy numbers plain ones, other objects their ``str``.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

from ragtrace.model import Score
from ragtrace.offline.systems import EvalItem
from ragtrace.pipeline.runner import Outcome

# Writing with errors="backslashreplace" turns a lone surrogate into "\udXXX": inside a JSON
# string (the only place text appears) that is the JSON escape of the same code point.
ENCODING_ERRORS = "backslashreplace"
RECORD_TEXT_CHARS = 4000
ELLIPSIS = "\u2026"


def score_json(evaluator: str, score: Score) -> dict[str, Any]:
    """One Score as a JSON-ready mapping."""
    return {
        "name": score.name,
        "evaluator": evaluator,
        "value": score.value,
        "label": score.label,
        "passed": score.passed,
        "threshold": score.threshold,
        "direction": score.direction,
        "explanation": score.explanation,
        "error": score.error,
        "kind": score.evaluator_kind,
        "model": score.model,
        "details": dict(score.details),
    }


def record_json(item: EvalItem, outcome: Outcome) -> dict[str, Any]:
    """One answer's line as a JSON-ready mapping."""
    record = item.record
    return {
        "id": item.id,
        "system": item.system,
        "case": item.case,
        "perturbation": item.perturbation,
        "scores": [score_json(evaluator, score) for evaluator, score in outcome.scores],
        "skipped": [
            {"evaluator": s.evaluator, "missing": list(s.missing)} for s in outcome.skipped
        ],
        "record": {
            "query": cut_text(record.query),
            "response": cut_text(record.response),
            "reference": cut_text(record.reference),
        },
    }


def cut_text(text: str | None, limit: int = RECORD_TEXT_CHARS) -> str | None:
    """``text`` cut to ``limit`` characters, with "…" appended when cut."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + ELLIPSIS


def dumps(data: Any) -> str:
    """Strict JSON (no NaN) on one line; anything JSON cannot hold is made safe first."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(json_safe(data), ensure_ascii=False, allow_nan=False)


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` with non-finite floats as None, unknown objects as ``str``, keys as strings."""
    if depth > 50:
        return str(value)
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v, depth + 1) for v in value]
    return str(value)
