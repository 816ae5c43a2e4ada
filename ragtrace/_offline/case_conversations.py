"""Multi-turn test cases: the earlier turns a case's question is asked after.

A case (a line of a JSON Lines data set, or a mapping in code) may hold the conversation its
question belongs to::

    {"id": "follow-up", "query": "And how long is the warranty on it?",
     "conversation": [{"role": "user", "content": "Which stove should I buy?"},
                      {"role": "assistant", "content": "The Aurora 2 suits a small kitchen."}],
     "session_id": "chat-17", "reference": "Two years."}

``conversation`` (or ``turns``, or ``history``: the same field) lists the earlier turns, oldest
first, each ``{"role": "user" | "assistant", "content": "..."}`` (``human`` / ``ai`` are read as
``user`` / ``assistant``); ``session_id`` (a string) names the conversation, and ``turn`` (an
integer >= 0) the case's place in it. The case's record gets them as ``RagRecord.conversation``
(``history``, ``session_id``, and ``turn``: the one given, else the number of earlier user
turns); ``ragtrace eval`` scores the rows of each session together too
(``ragtrace._offline.session_lines``). The systems that ask the question
(``ragtrace._offline.callables``) read it from there. A case with neither field has no conversation.

``CaseParser`` is the input parser (``ragtrace._offline.records.RecordParser``) that reads these
fields too; ``conversation_from(data)`` reads them from one decoded object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ragtrace._model import Conversation, Turn
from ragtrace._offline.records import MAX_LINE_BYTES, InputRecord, LineError, RecordParser

CONVERSATION_KEYS = ("conversation", "turns", "history")
"""Names of the earlier turns in a case (one of them at most)."""
SESSION_KEY = "session_id"
TURN_KEY = "turn"
CONVERSATION_FIELDS = (*CONVERSATION_KEYS, SESSION_KEY, TURN_KEY)
"""Every field of a case this module reads."""
ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant"}


def conversation_from(data: Mapping[str, Any]) -> Conversation | None:
    """The conversation a case (one decoded object) holds, None when it holds none.

    Raises:
        LineError: Two names of the turns given, or a field of the wrong shape.
    """
    given = [key for key in CONVERSATION_KEYS if key in data]
    if len(given) > 1:
        raise LineError(f"{' and '.join(repr(k) for k in given)} are the same field; give one")
    turns = _turns(data[given[0]], given[0]) if given else ()
    session_id = data.get(SESSION_KEY)
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise LineError(f"'{SESSION_KEY}' must be a non-empty string or null")
    turn = data.get(TURN_KEY)
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise LineError(f"'{TURN_KEY}' must be an integer >= 0 or null")
    if not turns and session_id is None:
        return None
    return Conversation(
        session_id=session_id,
        turn=turn if turn is not None else sum(t.role == "user" for t in turns),
        history=turns,
    )


def _turns(value: object, key: str) -> tuple[Turn, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise LineError(f"'{key}' must be a list of turns, got {type(value).__name__}")
    turns: list[Turn] = []
    for i, item in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(item, Mapping):
            raise LineError(
                f"'{where}' must be an object with 'role' and 'content', got {type(item).__name__}"
            )
        role = ROLES.get(str(item.get("role", "")).lower())
        if role is None:
            raise LineError(
                f"'{where}.role' must be 'user' or 'assistant', got {item.get('role')!r}"
            )
        content = item.get("content")
        if not isinstance(content, str):
            raise LineError(f"'{where}.content' must be a string, got {type(content).__name__}")
        turns.append(Turn(role, content))
    return tuple(turns)


class CaseParser(RecordParser):
    """A ``RecordParser`` that also reads a case's conversation (see the module docstring).

    Args:
        require_response, warn, max_line_bytes: As ``RecordParser``.
        inner: Parse the other fields with this parser (its settings, its unknown-key
            warnings) instead of this one's own.
    """

    def __init__(
        self,
        *,
        require_response: bool = False,
        warn: Callable[[str], None] | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        inner: RecordParser | None = None,
    ) -> None:
        if inner is not None:
            require_response, max_line_bytes = inner.require_response, inner.max_line_bytes
        super().__init__(
            require_response=require_response, warn=warn, max_line_bytes=max_line_bytes
        )
        self._inner = inner

    @classmethod
    def around(cls, parser: RecordParser) -> CaseParser:
        """``parser`` (returned as is when it is a ``CaseParser``) reading conversations too."""
        return parser if isinstance(parser, CaseParser) else cls(inner=parser)

    def parse_object(self, data: Mapping[str, Any], number: int) -> InputRecord:
        rest = {k: v for k, v in data.items() if k not in CONVERSATION_FIELDS}
        if self._inner is not None:
            item = self._inner.parse_object(rest, number)
        else:
            item = super().parse_object(rest, number)
        conversation = conversation_from(data)
        if conversation is None:
            return item
        return replace(item, record=replace(item.record, conversation=conversation))
