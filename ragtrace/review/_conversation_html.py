"""HTML of a turn's conversation and tool calls, for the record page (``ragtrace.review._pages``).

Three pieces, each empty when the item has nothing to show: ``conversation_section`` (the
earlier turns the app had, oldest first, and the standalone question it asked in their place),
``session_section`` (every queued turn of the same session, in turn order then time, each with
its own verdict and a link, the open one marked) and ``tool_calls_section`` (the tools an agent
called: name, arguments, status, error, duration). Like the rest of the page, every captured
value is escaped (``html.escape`` with quotes) and no element carries inline script or style.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import urlencode

from ragtrace._model import ToolCall
from ragtrace.review._conversations import SessionTurn
from ragtrace.review._filters import format_time
from ragtrace.review._items import ReviewItem

PREVIEW_CHARS = 200
"""How much of another turn's question and answer the session table shows."""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def session_link(session_id: str) -> str:
    """The queue of every turn of ``session_id``, labelled or not."""
    return "/queue?" + urlencode({"session": session_id, "labelled": "all"})


def meta_rows(item: ReviewItem) -> list[tuple[str, str]]:
    """Rows for the record's facts (escaped HTML): session (a link to its turns), user,
    turn number, LLM calls."""
    conversation = item.conversation
    rows: list[tuple[str, str]] = []
    if conversation is not None and conversation.session_id is not None:
        href = session_link(conversation.session_id)
        rows.append(
            (
                "Session",
                f'<a id="session-link" href="{_e(href)}">{_e(conversation.session_id)}</a>',
            )
        )
    if conversation is not None and conversation.user_id is not None:
        rows.append(("User", _e(conversation.user_id)))
    if conversation is not None and conversation.turn is not None:
        rows.append(("Turn", f"{conversation.turn + 1} ({conversation.turn} before it)"))
    if item.llm_calls:
        rows.append(("LLM calls", str(item.llm_calls)))
    return rows


def conversation_section(item: ReviewItem) -> str:
    """The earlier turns of the conversation, oldest first (empty without any)."""
    conversation = item.conversation
    if conversation is None or not conversation.history:
        return ""
    turns = "".join(
        f'<li class="turn {"user" if t.role == "user" else "assistant"}">'
        f'<div class="role">{_e(t.role)}</div><div class="text">{_e(t.content)}</div></li>'
        for t in conversation.history
    )
    return (
        '<section id="conversation"><h2>Earlier in the conversation '
        f'<span class="count">{len(conversation.history)} messages</span></h2>'
        f'<ol class="history">{turns}</ol></section>'
    )


def standalone_question(item: ReviewItem) -> str:
    """The question as the app rewrote it to stand on its own (empty when it did not)."""
    conversation = item.conversation
    if conversation is None or not conversation.standalone_query:
        return ""
    return (
        '<p class="standalone">Asked as a standalone question: '
        f'<span id="standalone">{_e(conversation.standalone_query)}</span></p>'
    )


def session_section(item: ReviewItem, turns: Sequence[SessionTurn], query: str) -> str:
    """Every queued turn of the item's session, this one marked (empty when the store holds
    no other turn of it). ``query`` is the ``?...`` of the queue filters links keep."""
    if not any(t.id != item.id for t in turns):
        return ""
    rows = "".join(_session_row(t, t.id == item.id, query) for t in turns)
    return (
        '<section id="session"><h2>This session in the queue '
        f'<span class="count">{len(turns)} turns</span></h2>'
        '<table class="session"><thead><tr><th>Turn</th><th>Time (UTC)</th><th>Question</th>'
        "<th>Answer</th><th>Status</th><th>Reason</th><th>Verdict</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _session_row(turn: SessionTurn, current: bool, query: str) -> str:
    number = "?" if turn.turn is None else str(turn.turn + 1)
    if current:
        cell = f"{number} <strong>(this turn)</strong>"
    else:
        href = f"/item/{turn.id}{query}"
        cell = f'<a href="{_e(href)}">{number}</a>'
    verdict = turn.verdict
    badge = (
        '<span class="badge none">unlabelled</span>'
        if verdict is None
        else f'<span class="badge {verdict if verdict in ("good", "bad", "unsure") else "other"}">'
        f"{_e(verdict)}</span>"
    )
    marked = ' class="current"' if current else ""
    return (
        f'<tr data-item="{turn.id}"{marked}><td>{cell}</td>'
        f"<td>{_e(format_time(turn.request_ns))}</td>"
        f'<td class="question">{_e(_preview(turn.query))}</td>'
        f'<td class="question">{_e(_preview(turn.response))}</td>'
        f"<td>{_e(turn.status)}</td><td>{_e(turn.primary_reason.replace('_', ' '))}</td>"
        f"<td>{badge}</td></tr>"
    )


def tool_calls_section(item: ReviewItem) -> str:
    """The tools the agent called, in the order they started (empty without any)."""
    if not item.tool_calls:
        return ""
    rows = "".join(_tool_row(i, call) for i, call in enumerate(item.tool_calls, 1))
    failed = sum(c.status == "error" for c in item.tool_calls)
    summary = f"{len(item.tool_calls)} calls" + (f", {failed} failed" if failed else "")
    return (
        f'<section id="tool-calls"><h2>Tool calls <span class="count">{summary}</span></h2>'
        '<table class="tools"><thead><tr><th>#</th><th>Tool</th><th>Arguments</th>'
        "<th>Status</th><th>Duration</th><th>Error</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _tool_row(index: int, call: ToolCall) -> str:
    status = "fail" if call.status == "error" else "pass"
    call_id = f' <small title="call id">{_e(call.call_id)}</small>' if call.call_id else ""
    return (
        f'<tr class="{status}"><td>{index}</td><td>{_e(call.name)}{call_id}</td>'
        f"<td><pre>{_e(call.arguments or '')}</pre></td>"
        f'<td><span class="badge {status}">{_e(call.status)}</span></td>'
        f"<td>{call.duration_s:.3f} s</td><td>{_e(call.error or '')}</td></tr>"
    )


def _preview(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."
