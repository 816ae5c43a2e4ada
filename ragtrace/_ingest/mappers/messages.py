"""Chat messages as instrumentations serialise them, read as ``(role, text, calls a tool)``.

An agent's input and output hold its messages in whichever form the framework and the
instrumentation wrote them; every form is read the same way:

- ``{"role": "user", "content": "..."}`` or ``{"type": "human", "content": ...}`` (dicts);
- ``["user", "..."]`` pairs, and a bare string (a user message);
- LangChain's ``messages_to_dict`` form ``{"type": "ai", "data": {"content", "tool_calls"}}``;
- LangChain's serialised messages ``{"lc": 1, "type": "constructor",
  "id": [..., "HumanMessage"], "kwargs": {"content": ..., "tool_calls": [...]}}``;
- GenAI messages ``{"role": ..., "parts": [{"type": "text", "content": ...},
  {"type": "tool_call", ...}]}``.

Roles come out as ``user``, ``assistant``, ``system`` or ``tool`` (others as written)::

    found = messages_of(parse_json(root.text("input.value")))
    query, earlier = last_user_text(found), earlier_turns(found)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace._config import Config
from ragtrace._model import Turn

Message = tuple[str, str | None, bool]
"""(role, text, whether the message calls a tool)."""

MAX_MESSAGES = 1000
MAX_HISTORY_TURNS = Config().max_history_turns
MAX_TEXT_CHARS = 1 << 20
_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
_CLASSES = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "tool",
}


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value[:MAX_TEXT_CHARS]
    return None


def content_text(content: Any) -> str | None:
    """A message content as text: a string, or the joined text parts of a part list."""
    if isinstance(content, str):
        return _text(content)
    if isinstance(content, list):
        parts = []
        for part in content[:MAX_MESSAGES]:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                found = part.get("text", part.get("content"))
                if isinstance(found, str):
                    parts.append(found)
        return _text("".join(parts))
    return None


def message_body(item: Any) -> tuple[str | None, Mapping[str, Any]] | None:
    """(role as written, the dict holding ``content``) of one message dict in any form."""
    if not isinstance(item, Mapping):
        return None
    kwargs, ident = item.get("kwargs"), item.get("id")
    if item.get("lc") == 1 and isinstance(kwargs, Mapping):
        named = ident[-1] if isinstance(ident, list) and ident else None
        role = _CLASSES.get(named) if isinstance(named, str) else None
        return role or _role_of(kwargs), kwargs
    data = item.get("data")
    if isinstance(data, Mapping) and isinstance(item.get("type"), str):
        return item["type"], data
    return _role_of(item), item


def _role_of(body: Mapping[str, Any]) -> str | None:
    role = body.get("role") or body.get("type")
    return role if isinstance(role, str) else None


def read_message(item: Any) -> Message | None:
    """One message as ``(role, text, calls a tool)``, or None when it is not a message."""
    if isinstance(item, str):
        return "user", _text(item), False
    if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str):
        return _ROLES.get(item[0].lower(), item[0]), content_text(item[1]), False
    found = message_body(item)
    if found is None:
        return None
    role, body = found
    if role is None:
        return None
    parts = body.get("parts")
    content = content_text(parts if isinstance(parts, list) else body.get("content"))
    calls = bool(body.get("tool_calls")) or (
        isinstance(parts, list)
        and any(isinstance(p, Mapping) and p.get("type") == "tool_call" for p in parts)
    )
    return _ROLES.get(role.lower(), role), content, calls


def messages_of(value: Any) -> list[Message] | None:
    """The messages of a list of them, or of a dict's ``messages`` (None when neither)."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if not isinstance(value, list):
        return None
    if len(value) == 1 and isinstance(value[0], list) and value[0] and not _is_pair(value[0]):
        value = value[0]  # a batch of one conversation (an LLM call's input)
    found = [read_message(m) for m in value[:MAX_MESSAGES]]
    return [m for m in found if m is not None]


def _is_pair(item: list[Any]) -> bool:
    return len(item) == 2 and isinstance(item[0], str)


def last_user_text(messages: list[Message] | None) -> str | None:
    """Text of the last user message."""
    for role, content, _ in reversed(messages or ()):
        if role == "user":
            return content
    return None


def final_answer(messages: list[Message] | None) -> str | None:
    """Text of the last message when it is the assistant's and calls no tool (an agent that
    stopped mid-way has no answer)."""
    if not messages:
        return None
    role, content, calls = messages[-1]
    return content if role == "assistant" and not calls else None


def earlier_turns(messages: list[Message] | None) -> tuple[tuple[Turn, ...], int] | None:
    """The earlier turns before the last user message, as ragtrace's capture keeps them:
    user and assistant messages with text, none that calls a tool, the latest
    ``Config.max_history_turns``; and how many user turns came before. None when there is no
    message list."""
    if messages is None:
        return None
    last = max((i for i, m in enumerate(messages) if m[0] == "user"), default=-1)
    kept: list[Turn] = []
    users = 0
    for role, content, calls in messages[: max(last, 0)]:
        if calls or role not in ("user", "assistant"):
            continue
        users += role == "user"
        if content:
            kept.append(Turn(role, content))
    return (tuple(kept[-MAX_HISTORY_TURNS:]) if MAX_HISTORY_TURNS else ()), users
