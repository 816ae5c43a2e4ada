"""The scores file of ``ragtrace eval``: one JSON line per input record, in input order.

Each line::

    {"id": "q-17", "system": "gpt-x", "case": "q-17", "perturbation": null,
     "scores": [{"name": "looping.unique_sentences", "evaluator": "looping", "value": 1.0,
                 "label": "pass", "passed": true, "threshold": 0.75, "direction":
                 "higher_is_better", "explanation": "...", "error": null, "kind": "lexical",
                 "model": null, "details": {...}}, ...],
     "skipped": [{"evaluator": "groundedness", "missing": ["chunks"]}],
     "record": {"query": "How long ...?", "response": "30 days.", "reference": null},
     "error": null, "latency_s": 0.412, "usage": {"input_tokens": 812, "output_tokens": 64}}

``system`` names the system that gave the answer (never null), ``case`` the test case it
answers (the input record's id, shared by every system's and every perturbation's answer to
it), ``perturbation`` the perturbation of the question asked (null for the question as written;
the id of a perturbed answer is ``f"{case}~{perturbation}"``). ``record`` holds the texts, each
cut to ``RECORD_TEXT_CHARS`` characters (with "…" appended when cut), so a report can show
examples without the input file.

What a report needs to judge the system beside its scores:

- ``error``: why the system gave no answer (a callable system that raised, a question that
  could not be asked, or an input record's own ``error``), else null. Such an answer is
  *unanswered*: ``ragtrace report`` counts it against the system instead of leaving it out;
- ``latency_s``: seconds the system took to answer (measured around a callable system's call;
  for an input file, its record's ``metadata.latency_s`` or ``metadata.latency_ms``), present
  only when known;
- ``usage``: ``input_tokens``, ``output_tokens`` and ``cost_usd``, those the system reported
  (the LangChain capture's ``gen_ai.usage.*``, a callable's ``usage`` mapping, or an input
  record's ``metadata`` keys of the same names), present only when known.

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

from ragtrace import _semconv as sc
from ragtrace._engine.outcomes import Outcome
from ragtrace._model import RagRecord, Score
from ragtrace._offline.answers import amount
from ragtrace._offline.asking import COST_ATTRIBUTE
from ragtrace._offline.systems import EvalItem

# Writing with errors="backslashreplace" turns a lone surrogate into "\udXXX": inside a JSON
# string (the only place text appears) that is the JSON escape of the same code point.
ENCODING_ERRORS = "backslashreplace"
RECORD_TEXT_CHARS = 4000
MAX_ERROR_CHARS = 500
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
        "error": cut_text(record.error, MAX_ERROR_CHARS),
        **answer_costs(record),
    }


def answer_costs(record: RagRecord) -> dict[str, Any]:
    """``latency_s`` and ``usage`` of the answer, those that are known (see the module doc)."""
    found: dict[str, Any] = {}
    attributes = record.attributes
    latency = None
    if record.start_ns > 0 and record.end_ns >= record.start_ns:
        latency = (record.end_ns - record.start_ns) / 1e9
    elif (seconds := amount(attributes.get("latency_s"))) is not None:
        latency = seconds
    elif (millis := amount(attributes.get("latency_ms"))) is not None:
        latency = millis / 1000.0
    if latency is not None:
        found["latency_s"] = round(latency, 6)
    usage = {
        "input_tokens": _first(attributes, sc.GEN_AI_USAGE_INPUT_TOKENS, "input_tokens"),
        "output_tokens": _first(attributes, sc.GEN_AI_USAGE_OUTPUT_TOKENS, "output_tokens"),
        "cost_usd": _first(attributes, COST_ATTRIBUTE, "cost_usd"),
    }
    known = {k: (v if k == "cost_usd" else int(v)) for k, v in usage.items() if v is not None}
    if known:
        found["usage"] = known
    return found


def _first(attributes: Mapping[str, Any], *keys: str) -> float | None:
    return next((v for k in keys if (v := amount(attributes.get(k))) is not None), None)


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
