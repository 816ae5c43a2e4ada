"""The conversation around a queued turn: its session, earlier turns and the agent's tool calls.

A review item is one user turn. What a reviewer needs to judge a follow-up ("and the other
one?") is the conversation it belongs to: the earlier turns the app had (``history``, from the
record), the other turns of the same session the store holds (``SessionTurn``, read by
``SqlReviewStore.session_turns``) and, for an agent, the tools it called. This module keeps them
as JSON in the store's ``conversation_json`` and ``tool_calls_json`` columns::

    stored = conversation_to_json(item.conversation)      # None when there is nothing to keep
    conversation = conversation_from_json(session_id, user_id, turn, stored)
    calls = tool_calls_from_json(tool_calls_to_json(item.tool_calls))

Session and user ids are columns of their own (the session is filtered and grouped on); they
never become metric labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._model import Conversation, ToolCall, Turn

MAX_SESSION_TURNS = 200
"""The most turns of one session the record page lists (the first ones, in turn order)."""


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """Another queued turn of the same session, as the record page lists it.

    Attributes:
        id: Its review item id.
        turn: How many user turns came before it, when known.
        request_ns: When the request ended (UTC ns).
        query: Its question (as stored: redacted and cut).
        response: Its answer.
        verdict: Its latest label's verdict, or None while unlabelled.
        primary_reason: Its most urgent reason.
        status: The request's status.
    """

    id: int
    turn: int | None
    request_ns: int
    query: str | None
    response: str | None
    verdict: str | None
    primary_reason: str
    status: str


def conversation_to_json(conversation: Conversation | None) -> dict[str, Any] | None:
    """What ``conversation_json`` keeps: the earlier turns and the standalone question (the
    ids are columns); None when there are neither."""
    if conversation is None or (not conversation.history and not conversation.standalone_query):
        return None
    return {
        "history": [{"role": t.role, "content": t.content} for t in conversation.history],
        "standalone_query": conversation.standalone_query,
    }


def conversation_from_json(
    session_id: object, user_id: object, turn: object, stored: object
) -> Conversation | None:
    """The inverse of ``conversation_to_json`` with the id columns; None when all are empty."""
    data = stored if isinstance(stored, Mapping) else {}
    history = tuple(
        Turn(str(t.get("role") or "user"), str(t.get("content") or ""))
        for t in data.get("history") or ()
        if isinstance(t, Mapping)
    )
    standalone = data.get("standalone_query")
    number = int(turn) if isinstance(turn, int) and not isinstance(turn, bool) else None
    parts = (session_id, user_id, number, history, standalone)
    if all(p is None or p == () for p in parts):
        return None
    return Conversation(
        session_id=None if session_id is None else str(session_id),
        user_id=None if user_id is None else str(user_id),
        turn=number,
        history=history,
        standalone_query=None if standalone is None else str(standalone),
    )


def tool_calls_to_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]] | None:
    """What ``tool_calls_json`` keeps (None for a turn without tool calls)."""
    if not calls:
        return None
    return [
        {
            "name": c.name,
            "arguments": c.arguments,
            "status": c.status,
            "error": c.error,
            "duration_s": c.duration_s if math.isfinite(c.duration_s) else 0.0,
            "call_id": c.call_id,
        }
        for c in calls
    ]


def tool_calls_from_json(stored: object) -> tuple[ToolCall, ...]:
    """The inverse of ``tool_calls_to_json`` (anything unreadable is left out)."""
    if not isinstance(stored, list):
        return ()
    calls: list[ToolCall] = []
    for c in stored:
        if not isinstance(c, Mapping):
            continue
        duration = c.get("duration_s")
        calls.append(
            ToolCall(
                name=str(c.get("name") or ""),
                arguments=_opt_str(c.get("arguments")),
                status="error" if c.get("status") == "error" else "ok",
                error=_opt_str(c.get("error")),
                duration_s=float(duration)
                if isinstance(duration, int | float) and not isinstance(duration, bool)
                else 0.0,
                call_id=_opt_str(c.get("call_id")),
            )
        )
    return tuple(calls)


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)
