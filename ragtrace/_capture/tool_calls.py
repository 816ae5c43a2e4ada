"""An agent's tool calls: the TOOL span a call gets and the ``ToolCall`` it leaves in the record.

``Capture.begin_tool`` / ``end_tool`` (``tracker``) open and close a tool call's step; what the
step's span carries (OpenInference ``TOOL`` and GenAI ``execute_tool`` attributes, its
arguments and output, its error) and how the call reads in ``RagRecord.tool_calls`` are made
here. ``query_argument`` says which argument of a retrieval tool was the query, for the
RETRIEVER span of the documents a tool returned.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Status, StatusCode

from ragtrace import _semconv as sc
from ragtrace._capture.attributes import describe, mark_error
from ragtrace._capture.content import TextPolicy
from ragtrace._capture.requests import Step
from ragtrace._model import ToolCall
from ragtrace._text import dump_json, short_text

_OK = Status(StatusCode.OK)
_QUERY_NAMES = ("query", "question", "input", "q", "search_query", "text")
_MAX_ARGUMENTS_JSON = 1 << 16


def arguments_text(arguments: object) -> str:
    """A tool call's arguments as text (a mapping as compact JSON)."""
    if isinstance(arguments, str):
        return arguments
    return dump_json(arguments, _MAX_ARGUMENTS_JSON)[0]


def start_attributes(name: str, call_id: object) -> dict[str, Any]:
    """A TOOL span's attributes at the call's start (the arguments are added by the caller,
    when content is captured)."""
    attrs: dict[str, Any] = {
        sc.OI_SPAN_KIND: sc.OI_KIND_TOOL,
        sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_EXECUTE_TOOL,
        sc.TOOL_NAME: name,
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_TYPE: "function",
    }
    ident = short_text(call_id)
    if ident:
        attrs[sc.GEN_AI_TOOL_CALL_ID] = ident
    return attrs


def mark_outcome(step: Step, error: BaseException | str | None, text: TextPolicy) -> str | None:
    """Set a finished call's span status (ERROR with the exception, or the error text the tool
    reported; else OK); returns what went wrong, for the record (None: nothing)."""
    if isinstance(error, BaseException):
        mark_error(step.span, error, text)
        return describe(error, text)
    if error is not None:
        failure = text.short(error, 2000) or "error"
        step.span.set_status(Status(StatusCode.ERROR, failure[:500]))
        return failure
    step.span.set_status(_OK)
    return None


def tool_call(step: Step, failure: str | None, text: TextPolicy, limit: int) -> ToolCall:
    """The record's entry for a finished call (its span ended)."""
    return ToolCall(
        name=step.name,
        arguments=text.short(step.arguments, limit),
        status="error" if failure is not None else "ok",
        error=failure,
        duration_s=max(0, (step.span.end_ns or 0) - step.span.start_ns) / 1e9,
        call_id=step.span.attributes.get(sc.GEN_AI_TOOL_CALL_ID),
    )


def query_argument(arguments: str | None) -> str | None:
    """The query a retrieval tool was called with: its only string argument, or the one
    named like a query; the arguments' text when they are not a JSON object."""
    if not arguments:
        return None
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(parsed, dict):
        return arguments
    texts = {k: v for k, v in parsed.items() if isinstance(v, str) and v}
    for name in _QUERY_NAMES:
        if name in texts:
            return texts[name]
    return next(iter(texts.values())) if len(texts) == 1 else arguments
