"""The conversation of a LlamaIndex chat engine's turn: its earlier turns, its session and
whether the engine rewrites the follow-up.

A chat engine (``SimpleChatEngine``, ``ContextChatEngine``, ``CondensePlusContextChatEngine``,
``CondenseQuestionChatEngine``) keeps the chat in its memory. When its ``chat`` (or ``achat``,
``stream_chat``, ``astream_chat``) span begins, the earlier turns are the ``chat_history`` the
call was given, else the messages of a memory that holds them in this process (a
``ChatMemoryBuffer`` or ``ChatSummaryMemoryBuffer`` on a ``SimpleChatStore``): read there,
they cost a dict look-up. A memory that keeps them elsewhere (the default ``Memory`` in
SQLite, a Redis or database chat store) is not read, since that would query a store on the
app's request path; the engines that send the history to their LLM as chat messages (all but
``CondenseQuestionChatEngine``) then give it through the answer call's messages instead.

The condensing engines ask their LLM to rewrite a follow-up before they retrieve: that call's
answer is the turn's standalone question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.memory.types import BaseChatStoreMemory
from llama_index.core.storage.chat_store.simple_chat_store import SimpleChatStore

from ragtrace._capture import Message
from ragtrace.integrations.llama_index import _extract as ex
from ragtrace.integrations.llama_index._agents import memory_session

CHAT_ENGINES = (
    SimpleChatEngine,
    ContextChatEngine,
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
)
"""The chat engines whose turns get their conversation from the engine."""

_HISTORY_ARG = "chat_history"
_USER = "user"


class ChatTurn:
    """What a chat engine's turn shows of its conversation when its span begins.

    Attributes:
        history: The earlier messages, oldest first; None when the engine's memory keeps them
            where capture does not read.
        session_id: The memory's conversation id (``agents.memory_session``), if any.
        condenses: The engine will ask its LLM for a standalone question (its first LLM call).
        history_in_messages: The engine sends the history to its answer LLM as chat messages.
    """

    __slots__ = ("condenses", "history", "history_in_messages", "session_id")

    def __init__(self, instance: Any, bound_args: Any) -> None:
        memory = getattr(instance, "_memory", None)
        self.session_id = memory_session(memory)
        self.history = _history(instance, memory, bound_args)
        condensing = isinstance(instance, CondenseQuestionChatEngine) or (
            isinstance(instance, CondensePlusContextChatEngine)
            and not getattr(instance, "_skip_condense", False)
        )
        self.condenses = condensing and bool(self.history)
        self.history_in_messages = not isinstance(instance, CondenseQuestionChatEngine)


def _history(instance: Any, memory: Any, bound_args: Any) -> list[Message] | None:
    arguments = getattr(bound_args, "arguments", None)
    given = arguments.get(_HISTORY_ARG) if isinstance(arguments, Mapping) else None
    # CondenseQuestionChatEngine reads its memory for an empty history; the others set it.
    if given is not None and (given or not isinstance(instance, CondenseQuestionChatEngine)):
        return ex.chat_messages(given)
    if isinstance(memory, BaseChatStoreMemory) and type(memory.chat_store) is SimpleChatStore:
        return ex.chat_messages(memory.chat_store.get_messages(memory.chat_store_key))
    return None


def sent_history(messages: list[Message]) -> list[Message] | None:
    """The earlier turns in the messages a chat engine sent its LLM: those before the last
    user message (None when there is no user message)."""
    last = max((i for i, (role, _) in enumerate(messages) if role == _USER), default=-1)
    return messages[:last] if last >= 0 else None
