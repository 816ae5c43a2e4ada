"""Work items as bytes: a versioned JSON schema that a queue between processes carries.

Never pickle: a worker must not run code that an application (or anyone who can write to the
stream) put there. ``encode_item`` writes schema version ``SCHEMA_VERSION``; ``decode_item``
reads it back and raises ``CodecError`` (with a short reason fit for a metric label) for
anything else: not JSON, another version, a missing or mistyped field. A worker sends what it
cannot decode to its dead-letter stream instead of crashing on it.

The document (``key``: the record's idempotency key, given by the shipper)::

    {"v": 1, "key": "9f2c...",
     "record": {"trace_id", "span_id", "query", "chunks": [{"text", "id", "score", "metadata",
                "source", "query"?, "step"?, "retrieval"?, "used"?}], "response", "reference",
                "app", "model",
                "start_ns", "end_ns", "error", "status", "attributes",
                "conversation"?: {"session_id", "user_id", "turn", "history": [{"role",
                "content"}], "standalone_query"},
                "tool_calls"?: [{"name", "arguments", "status", "error", "duration_s",
                "call_id"}], "llm_calls"?},
     "evaluators": ["groundedness", ...],
     "done": [{"evaluator", "start_ns", "end_ns", "scores": [{"name", "value", "label",
               "explanation", "direction", "threshold", "passed", "error", "evaluator_kind",
               "model", "details"}]}]}

Keys marked ``?`` are written only when the record has them (a plain chain's item is as it
was) and read as absent otherwise, so workers of either age read both. Metadata, attributes
and details are JSON already (capture makes them JSON-safe); anything that
is not is written as its ``str``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, get_args

from ragtrace._model import (
    Chunk,
    Conversation,
    Direction,
    Evaluation,
    EvaluatorKind,
    RagRecord,
    RequestStatus,
    Score,
    ToolCall,
    ToolStatus,
    Turn,
)
from ragtrace._pipeline.queues.base import WorkItem

SCHEMA_VERSION = 1
MAX_DEPTH = 32
"""Deepest nesting of objects and arrays a work item may have (a real one has about 6)."""
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
"""Largest payload ``decode_item`` reads unless given a smaller bound."""
_STATUSES = get_args(RequestStatus)
_DIRECTIONS = get_args(Direction)
_KINDS = get_args(EvaluatorKind)
_TOOL_STATUSES = get_args(ToolStatus)


class CodecError(ValueError):
    """A payload that is not a work item of a known schema version.

    Attributes:
        reason: A short, bounded label (``not_json``, ``version``, ``schema``).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def encode_item(item: WorkItem) -> bytes:
    """The item as UTF-8 JSON (a lone surrogate becomes U+FFFD characters).

    Raises:
        ValueError: The item names no evaluators yet (``evaluators=None``): the sampler must
            choose before an item leaves the process.
    """
    if item.evaluators is None:
        raise ValueError("a work item must name its evaluators before it is shipped")
    doc: dict[str, Any] = {"v": SCHEMA_VERSION}
    if item.key is not None:
        doc["key"] = item.key
    doc.update({
        "record": _record_doc(item.record),
        "evaluators": list(item.evaluators),
        "done": [_evaluation_doc(e) for e in item.done],
    })  # fmt: skip
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a careless producer
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")


def decode_item(payload: bytes | str, max_bytes: int = MAX_PAYLOAD_BYTES) -> WorkItem:
    """The work item in ``payload``.

    Raises:
        CodecError: The payload is over ``max_bytes``, nested deeper than ``MAX_DEPTH``, not
            JSON, has another schema version, or a field is missing or of the wrong type.
    """
    if len(payload) > max_bytes:
        raise CodecError("too_large", f"work item of {len(payload)} bytes, over {max_bytes}")
    try:
        doc = json.loads(payload)
    except RecursionError:
        raise CodecError("too_deep", f"work item nested deeper than {MAX_DEPTH}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CodecError("not_json", f"work item is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise CodecError("schema", "work item is not a JSON object")
    _check_depth(doc, payload)
    version = doc.get("v")
    if version != SCHEMA_VERSION:
        raise CodecError(
            "version", f"work item schema version {version!r}; this worker reads {SCHEMA_VERSION}"
        )
    try:
        record = _record(_mapping(doc, "record"))
        evaluators = tuple(_str_list(doc.get("evaluators", []), "evaluators"))
        done = tuple(_evaluation(_as_mapping(e, "done[]")) for e in _list(doc, "done"))
    except (TypeError, ValueError, KeyError) as exc:
        raise CodecError("schema", f"work item: {exc}") from None
    key = doc.get("key")
    if key is not None and not (isinstance(key, str) and 0 < len(key) <= 128):
        raise CodecError("schema", "work item: key must be a string of 1-128 characters")
    return WorkItem(record, evaluators, done, key=key)


def _check_depth(doc: dict[str, Any], payload: bytes | str) -> None:
    """Raise ``CodecError("too_deep")`` for a document nested deeper than ``MAX_DEPTH``
    (walked only when the payload has that many brackets at all)."""
    opening = (b"{", b"[") if isinstance(payload, bytes) else ("{", "[")
    if payload.count(opening[0]) + payload.count(opening[1]) <= MAX_DEPTH:  # type: ignore[arg-type]
        return
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise CodecError("too_deep", f"work item nested deeper than {MAX_DEPTH}")
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


# -- writing ----------------------------------------------------------------------------------


def _record_doc(record: RagRecord) -> dict[str, Any]:
    doc = {
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "query": record.query,
        "chunks": [_chunk_doc(c) for c in record.chunks],
        "response": record.response,
        "reference": record.reference,
        "app": record.app,
        "model": record.model,
        "start_ns": record.start_ns,
        "end_ns": record.end_ns,
        "error": record.error,
        "status": record.status,
        "attributes": dict(record.attributes),
    }
    conversation = record.conversation
    if conversation is not None:
        doc["conversation"] = {
            "session_id": conversation.session_id,
            "user_id": conversation.user_id,
            "turn": conversation.turn,
            "history": [{"role": t.role, "content": t.content} for t in conversation.history],
            "standalone_query": conversation.standalone_query,
        }
    if record.tool_calls:
        doc["tool_calls"] = [
            {
                "name": t.name,
                "arguments": t.arguments,
                "status": t.status,
                "error": t.error,
                "duration_s": _finite(t.duration_s),
                "call_id": t.call_id,
            }
            for t in record.tool_calls
        ]
    if record.llm_calls:
        doc["llm_calls"] = record.llm_calls
    return doc


def _chunk_doc(chunk: Chunk) -> dict[str, Any]:
    doc = {
        "text": chunk.text,
        "id": chunk.id,
        "score": _finite(chunk.score),
        "metadata": dict(chunk.metadata),
        "source": chunk.source,
    }
    if chunk.query is not None:
        doc["query"] = chunk.query
    if chunk.step is not None:
        doc["step"] = chunk.step
    if chunk.retrieval is not None:
        doc["retrieval"] = chunk.retrieval
    if chunk.used is not None:
        doc["used"] = chunk.used
    return doc


def _evaluation_doc(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "evaluator": evaluation.evaluator,
        "start_ns": evaluation.start_ns,
        "end_ns": evaluation.end_ns,
        "scores": [
            {
                "name": s.name,
                "value": _finite(s.value),
                "label": s.label,
                "explanation": s.explanation,
                "direction": s.direction,
                "threshold": _finite(s.threshold),
                "passed": s.passed,
                "error": s.error,
                "evaluator_kind": s.evaluator_kind,
                "model": s.model,
                "details": dict(s.details),
            }
            for s in evaluation.scores
        ],
    }


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


# -- reading ----------------------------------------------------------------------------------


def _record(doc: Mapping[str, Any]) -> RagRecord:
    status = doc.get("status", "ok")
    if status not in _STATUSES:
        raise ValueError(f"record.status {status!r} is not one of {_STATUSES}")
    return RagRecord(
        trace_id=_str(doc, "trace_id"),
        span_id=_str(doc, "span_id"),
        query=_opt_str(doc, "query"),
        chunks=tuple(_chunk(_as_mapping(c, "chunks[]")) for c in _list(doc, "chunks")),
        response=_opt_str(doc, "response"),
        reference=_opt_str(doc, "reference"),
        app=_str(doc, "app"),
        model=_opt_str(doc, "model"),
        start_ns=_int(doc, "start_ns"),
        end_ns=_int(doc, "end_ns"),
        error=_opt_str(doc, "error"),
        status=status,
        attributes=_mapping(doc, "attributes"),
        conversation=_conversation(doc.get("conversation")),
        tool_calls=tuple(
            _tool_call(_as_mapping(t, "tool_calls[]")) for t in doc.get("tool_calls") or ()
        ),
        llm_calls=_opt_int(doc, "llm_calls") or 0,
    )


def _chunk(doc: Mapping[str, Any]) -> Chunk:
    return Chunk(
        text=_str(doc, "text"),
        id=_opt_str(doc, "id"),
        score=_opt_float(doc, "score"),
        metadata=_mapping(doc, "metadata"),
        source=_opt_str(doc, "source"),
        query=_opt_str(doc, "query"),
        step=_opt_int(doc, "step"),
        retrieval=_opt_int(doc, "retrieval"),
        used=_opt_bool(doc, "used"),
    )


def _conversation(doc: object) -> Conversation | None:
    if doc is None:
        return None
    found = _as_mapping(doc, "conversation")
    history = found.get("history") or []
    if not isinstance(history, list):
        raise TypeError("conversation.history must be a list")
    return Conversation(
        session_id=_opt_str(found, "session_id"),
        user_id=_opt_str(found, "user_id"),
        turn=_opt_int(found, "turn"),
        history=tuple(
            Turn(_str(t, "role"), _str(t, "content"))
            for t in (_as_mapping(h, "history[]") for h in history)
        ),
        standalone_query=_opt_str(found, "standalone_query"),
    )


def _tool_call(doc: Mapping[str, Any]) -> ToolCall:
    status = doc.get("status", "ok")
    if status not in _TOOL_STATUSES:
        raise ValueError(f"tool_calls[].status {status!r} is not one of {_TOOL_STATUSES}")
    return ToolCall(
        name=_str(doc, "name"),
        arguments=_opt_str(doc, "arguments"),
        status=status,
        error=_opt_str(doc, "error"),
        duration_s=_opt_float(doc, "duration_s") or 0.0,
        call_id=_opt_str(doc, "call_id"),
    )


def _evaluation(doc: Mapping[str, Any]) -> Evaluation:
    return Evaluation(
        evaluator=_str(doc, "evaluator"),
        scores=tuple(_score(_as_mapping(s, "scores[]")) for s in _list(doc, "scores")),
        start_ns=_int(doc, "start_ns"),
        end_ns=_int(doc, "end_ns"),
    )


def _score(doc: Mapping[str, Any]) -> Score:
    direction = doc.get("direction", "higher_is_better")
    kind = doc.get("evaluator_kind", "lexical")
    passed = doc.get("passed")
    if direction not in _DIRECTIONS or kind not in _KINDS:
        raise ValueError(f"score {doc.get('name')!r}: bad direction or evaluator_kind")
    if passed is not None and not isinstance(passed, bool):
        raise TypeError("score.passed must be a boolean or null")
    return Score(
        name=_str(doc, "name"),
        value=_opt_float(doc, "value"),
        label=_opt_str(doc, "label"),
        explanation=_opt_str(doc, "explanation"),
        direction=direction,
        threshold=_opt_float(doc, "threshold"),
        passed=passed,
        error=_opt_str(doc, "error"),
        evaluator_kind=kind,
        model=_opt_str(doc, "model"),
        details=_mapping(doc, "details"),
    )


def _str(doc: Mapping[str, Any], key: str) -> str:
    value = doc[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string")
    return value


def _opt_str(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return None if value is None else _str(doc, key)


def _int(doc: Mapping[str, Any], key: str) -> int:
    value = doc.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key} must be an integer")
    return value


def _opt_int(doc: Mapping[str, Any], key: str) -> int | None:
    return None if doc.get(key) is None else _int(doc, key)


def _opt_bool(doc: Mapping[str, Any], key: str) -> bool | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{key} must be a boolean or null")
    return value


def _opt_float(doc: Mapping[str, Any], key: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{key} must be a number or null")
    return float(value)


def _mapping(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return _as_mapping(doc.get(key, {}), key)


def _as_mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be an object")
    return value


def _list(doc: Mapping[str, Any], key: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list")
    return value


def _str_list(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{what} must be a list of strings")
    return value
