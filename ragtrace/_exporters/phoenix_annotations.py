"""One score as an Arize Phoenix span annotation, the JSON Phoenix's REST API takes.

``annotation(record, evaluator, score)`` puts the score on ``record.span_id`` (the request's
RAG root span): ``name`` = the score's name; ``annotator_kind`` ``LLM`` for judge evaluators,
``HUMAN`` for people's labels, else ``CODE``; ``result`` = ``{label: pass | fail | error (else
the evaluator's own label, else ``none``: an informational score, with no threshold), score,
explanation}`` (the error's text when the evaluator failed); ``metadata`` = the evaluator,
trace id, app, kind, direction, threshold, verdict, the evaluator's own label and model;
``identifier`` ``ragtrace``, so a score posted again replaces the earlier one and a person's
annotation of the same name stays apart. The sink that posts
them is ``ragtrace._exporters.phoenix``.

A conversation's scores (``ragtrace.evaluators._conversation``, published on the session's last
turn) become session annotations instead (``session_annotation``: ``session_id`` in place of
``span_id``, which goes into the metadata with the trace id), the form Phoenix's
``/v1/session_annotations`` takes (Phoenix 12 and later); ``session_id_of_annotation`` tells
the two forms apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace._exporters.otel import cut_text, verdict_label
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace.evaluators._conversation import CONVERSATION_EVALUATORS, session_id_of

IDENTIFIER = "ragtrace"
MAX_EXPLANATION_CHARS = 2000
_ANNOTATOR_KINDS = {"judge": "LLM", "human": "HUMAN"}  # any other kind: CODE
NO_VERDICT = "none"
"""The label of a score that gives no verdict and no label of its own (an informational one):
always a string, so a filter on it (``label == 'none'``) works."""


def annotation_label(score: Score) -> str:
    """The annotation's label: ``pass``, ``fail``, ``error``, the evaluator's own label, else
    ``none``."""
    return verdict_label(score) or NO_VERDICT


def annotations_of(record: RagRecord, evaluations: Sequence[Evaluation]) -> list[dict[str, Any]]:
    """The Phoenix span annotations of one record's evaluations (its RAG span must be valid)."""
    return [annotation(record, e.evaluator, score) for e in evaluations for score in e.scores]


def is_conversation_score(record: RagRecord, evaluator: str) -> bool:
    """Whether ``evaluator``'s scores on ``record`` are about its whole session."""
    return evaluator in CONVERSATION_EVALUATORS and session_id_of(record) is not None


def session_annotation(record: RagRecord, evaluator: str, score: Score) -> dict[str, Any]:
    """One conversation score as a Phoenix session annotation (the record is the session's
    last turn, whose span id goes into the metadata)."""
    found = annotation(record, evaluator, score)
    found["metadata"]["span_id"] = found.pop("span_id")
    found["session_id"] = session_id_of(record)
    return found


def session_id_of_annotation(found: dict[str, Any]) -> str | None:
    """The session a session annotation is about; None for a span annotation."""
    session = found.get("session_id")
    return session if isinstance(session, str) else None


def annotation(record: RagRecord, evaluator: str, score: Score) -> dict[str, Any]:
    """One score as a Phoenix span annotation on the record's RAG span."""
    result: dict[str, Any] = {"label": annotation_label(score)}
    if score.value is not None:
        result["score"] = score.value
    explanation = score.error if score.error is not None else score.explanation
    if explanation:
        result["explanation"] = cut_text(explanation, MAX_EXPLANATION_CHARS)
    metadata: dict[str, Any] = {
        "evaluator": evaluator,
        "trace_id": record.trace_id,
        "app": record.app,
        "kind": score.evaluator_kind,
        "direction": score.direction,
    }
    optional = {
        "threshold": score.threshold,
        "passed": score.passed,
        "evaluator_label": score.label,
        "model": score.model,
        "error": score.error,
    }
    metadata.update((k, v) for k, v in optional.items() if v is not None)
    return {
        "span_id": record.span_id,
        "name": score.name,
        "annotator_kind": _ANNOTATOR_KINDS.get(score.evaluator_kind, "CODE"),
        "result": result,
        "metadata": metadata,
        "identifier": IDENTIFIER,
    }
