"""The conversation a request belongs to: its session, its user and its earlier turns.

An app names its conversation in one of three ways, read in this order when a request starts:

- ``ragtrace.session("thread-42", user_id="u-7")`` around the call (a context manager; it
  follows the call into threads started with ``contextvars.copy_context`` and into asyncio
  tasks);
- the framework's request metadata: LangGraph's ``thread_id``, LangChain's ``configurable``
  and ``metadata`` (a ``RunnableWithMessageHistory`` session), LlamaIndex chat memory, under
  one of ``Config.session_id_keys`` / ``Config.user_id_keys``;
- nothing: the record has no session, and its earlier turns still come from the messages the
  app sent (an agent given the whole chat, a chain given ``chat_history``).

The ids go on the request's root span as ``session.id`` / ``user.id`` (OpenInference: Phoenix's
Sessions tab) and ``gen_ai.conversation.id`` (GenAI), and into ``RagRecord.conversation``;
never into a Prometheus label.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from ragtrace._capture.content import TextPolicy
from ragtrace._model import Turn
from ragtrace._text import short_text

SessionIds = tuple[str | None, str | None]
"""(session id, user id), either may be unknown."""

_SESSION: ContextVar[SessionIds | None] = ContextVar("ragtrace_session", default=None)


@contextmanager
def session(session_id: object, user_id: object = None) -> Iterator[None]:
    """Mark every request made inside the block as a turn of conversation ``session_id``.

    Args:
        session_id: The conversation's id (a chat thread, a support ticket); made text.
        user_id: The user's id, when the app has one.

    Raises:
        ValueError: ``session_id`` is None or empty.
    """
    sid = short_text(session_id)
    if not sid:
        raise ValueError("ragtrace.session() needs a session id (a non-empty string)")
    token = _SESSION.set((sid, short_text(user_id) or None))
    try:
        yield
    finally:
        _SESSION.reset(token)


def current_session() -> SessionIds | None:
    """The ids ``ragtrace.session(...)`` set for the current context, if any."""
    return _SESSION.get()


def session_ids(
    metadata: Mapping[str, object] | None,
    session_keys: Sequence[str],
    user_keys: Sequence[str],
) -> SessionIds:
    """The session and user ids of a request: ``ragtrace.session`` first, then ``metadata``."""
    chosen = _SESSION.get()
    sid, uid = chosen if chosen is not None else (None, None)
    if metadata and (sid is None or uid is None):
        if sid is None:
            sid = _first(metadata, session_keys)
        if uid is None:
            uid = _first(metadata, user_keys)
    return sid, uid


def _first(metadata: Mapping[str, object], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = metadata.get(key)
        if value is not None and value != "" and not isinstance(value, bool):
            text = short_text(value)
            if text:
                return text
    return None


def earlier_turns(
    history: Iterable[tuple[str, object]], text: TextPolicy, limit: int, most: int
) -> tuple[tuple[Turn, ...], int, bool]:
    """The earlier turns a record keeps, how many user turns there were, and whether a text
    was cut: user and assistant messages only (no system prompt, no tool traffic), each cut
    to ``limit`` characters and redacted by ``text``'s policy, the latest ``most`` of them."""
    kept: list[Turn] = []
    users = 0
    cut_any = False
    for role, content in history:
        if role not in ("user", "assistant"):
            continue
        users += role == "user"
        clean, cut = text.clean(content, limit)
        if clean:
            kept.append(Turn(role, clean))
            cut_any = cut_any or cut
    return (tuple(kept[-most:]) if most else ()), users, cut_any
