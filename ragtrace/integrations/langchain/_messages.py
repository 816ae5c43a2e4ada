"""Chat messages as LangChain hands them over: the user's question, the answer, earlier turns.

LangChain and LangGraph accept a message in many forms: a message object, a dict with ``role``
(``user``, ``assistant``) or ``type`` (``human``, ``ai``), a ``(role, text)`` pair, a plain
string, content as text or as a list of content blocks. ``message`` reads any of them as
``(role, text, calls_a_tool)`` with the roles ``user``, ``assistant``, ``system`` and ``tool``;
``find_query`` and ``find_answer`` pick the request's question and answer out of a chain's or
graph's input and output, ``history`` the earlier turns before the user's last message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
MESSAGES = "messages"
HISTORY_KEYS = ("chat_history", "history")


def content_text(message: Any) -> Any:
    """Text of a message's content (a string, or the text parts of a content-block list)."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    return content


def find_query(inputs: Any, keys: Sequence[str]) -> Any:
    """The user's query in a chain input: a string, a dict key, or the last user message."""
    if isinstance(inputs, str | bytes):
        return inputs or None
    if isinstance(inputs, BaseMessage):
        return content_text(inputs) or None
    if isinstance(inputs, Mapping):
        for key in keys:
            value = inputs.get(key)
            if value is None or value == "":
                continue
            if isinstance(value, list | tuple):
                return find_query(value, keys)
            return content_text(value) if isinstance(value, BaseMessage) else value
        messages = inputs.get(MESSAGES)
        if isinstance(messages, str):
            return messages or None  # a graph given one message as a plain string
        return last_user_text(messages) if isinstance(messages, list | tuple) else None
    if isinstance(inputs, list | tuple):
        return last_user_text(inputs)
    return None


def last_user_text(messages: Sequence[Any]) -> Any:
    """The text of the last user message in a message list (a lone string counts as one)."""
    if isinstance(messages, tuple) and message(messages) is not None:
        messages = [messages]  # a single ("user", text) pair
    for item in reversed(messages):
        found = message(item)
        if found is not None and found[0] == "user":
            return found[1] or None
    return None


def message(item: Any) -> tuple[str, Any, bool] | None:
    """(role, text, whether it calls a tool) of one message in any form LangChain accepts:
    a message object, a dict with ``role`` or ``type``, a ``(role, text)`` pair or a string."""
    if isinstance(item, BaseMessage):
        role = ROLES.get(item.type, item.type)
        return role, content_text(item), bool(getattr(item, "tool_calls", None))
    if isinstance(item, str):
        return "user", item, False
    if isinstance(item, Mapping):
        named = item.get("role") or item.get("type")
        if not isinstance(named, str):
            return None
        return (
            ROLES.get(named, named),
            content_text(item.get("content")),
            bool(item.get("tool_calls")),
        )
    if isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str):
        return ROLES.get(item[0], item[0]), content_text(item[1]), False
    return None


def earlier_turns(payload: Any, *, from_messages: bool = True) -> list[tuple[str, Any]] | None:
    """The earlier turns in a chain's input or a graph's output: the messages before the
    last user message (``messages``, unless ``from_messages`` is False), or a ``chat_history`` /
    ``history`` list; None when there is none."""
    if not isinstance(payload, Mapping):
        return None
    messages = payload.get(MESSAGES) if from_messages else None
    if isinstance(messages, list | tuple) and messages:
        parsed = [message(m) for m in messages]
        last_user = max((i for i, m in enumerate(parsed) if m and m[0] == "user"), default=-1)
        return [(m[0], m[1]) for m in parsed[:last_user] if m is not None and not m[2]]
    for key in HISTORY_KEYS:
        earlier = payload.get(key)
        if isinstance(earlier, list | tuple):
            found = [message(m) for m in earlier]
            return [(m[0], m[1]) for m in found if m is not None and not m[2]]
    return None


def find_answer(outputs: Any, keys: Sequence[str]) -> Any:
    """The answer in a chain output: a string, a message, a dict key, or the last AI message
    of a ``messages`` list when it calls no tool (an agent that stopped mid-way has none)."""
    if outputs is None or isinstance(outputs, str):
        return outputs
    if isinstance(outputs, BaseMessage):
        return content_text(outputs)
    if isinstance(outputs, Mapping):
        for key in keys:
            if key in outputs:
                return find_answer(outputs[key], keys)
        messages = outputs.get(MESSAGES)
        if isinstance(messages, list | tuple) and messages:
            last = message(messages[-1])
            if last is not None and last[0] == "assistant" and not last[2]:
                return last[1]
        return None
    return outputs if isinstance(outputs, bytes) else None
