"""The input a LangChain runnable wants for a question, read from its own input schema.

``input_shape(runnable, query_keys).build(question, history)`` is what the LangChain adapter
(``ragtrace.integrations.langchain._adapter``) invokes a runnable with:

- an input with ``messages`` (``langchain.agents.create_agent``, a LangGraph graph over
  ``MessagesState``): ``{"messages": [*earlier turns, {"role": "user", "content": question}]}``
  (and the question under a query key as well when the input also has one);
- an input with one of ``query_keys`` (``Config.query_keys``: ``query``, ``question``,
  ``input``, ...; a ``StateGraph`` over ``question``/``documents``/``generation``, a prompt
  over ``{question}``): ``{key: question}``, with the earlier turns as LangChain messages under
  ``chat_history`` / ``history`` when the input has that key too;
- anything else (an input that is a plain value, has none of those keys, or whose schema cannot
  be read): the question string itself.

A LangGraph graph compiled with a checkpointer is ``threaded``: it keeps each conversation in a
thread (``configurable.thread_id``), so its earlier turns are asked in the thread one by one
instead of being passed in, and it is never given a ``chat_history``.

The keys come from ``get_input_jsonschema()``, else the fields of ``input_schema``, else a
LangGraph graph's declared state (``builder.input_schema``: a state declared with
``typing.TypedDict`` has no JSON schema on Python 3.11); every read is guarded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._model import Turn, chat_messages

MESSAGES_KEY = "messages"
HISTORY_KEYS = ("chat_history", "history")


@dataclass(frozen=True, slots=True)
class InputShape:
    """How a runnable takes a question.

    Attributes:
        messages: Its input has ``messages``.
        query_key: The first of the query keys its input has, if any.
        history_key: ``chat_history`` or ``history`` when its input has one (never for a
            threaded graph).
        threaded: A LangGraph graph with a checkpointer (it needs a ``thread_id``).
    """

    messages: bool = False
    query_key: str | None = None
    history_key: str | None = None
    threaded: bool = False

    def build(self, question: str, history: Sequence[Turn] = ()) -> Any:
        """The input for ``question`` after the earlier turns ``history`` (oldest first)."""
        if self.messages:
            messages = [*chat_messages(history), {"role": "user", "content": question}]
            found: dict[str, Any] = {MESSAGES_KEY: messages}
            if self.query_key is not None:
                found[self.query_key] = question
            return found
        if self.query_key is None:
            return question
        found = {self.query_key: question}
        if self.history_key is not None:
            found[self.history_key] = langchain_messages(history)
        return found

    @property
    def takes_history(self) -> bool:
        """Whether the earlier turns can be passed in with the question."""
        return not self.threaded and (self.messages or self.history_key is not None)


def input_shape(runnable: Any, query_keys: Sequence[str]) -> InputShape:
    """How ``runnable`` takes a question (the question string when its input is unknown)."""
    threaded = is_threaded(runnable)
    keys = input_keys(runnable)
    if not keys:
        return InputShape(threaded=threaded)
    history_key = None if threaded else next((k for k in HISTORY_KEYS if k in keys), None)
    return InputShape(
        messages=MESSAGES_KEY in keys,
        query_key=next((k for k in query_keys if k in keys), None),
        history_key=history_key,
        threaded=threaded,
    )


def is_threaded(runnable: Any) -> bool:
    """Whether ``runnable`` is a LangGraph graph compiled with a checkpointer."""
    try:
        checkpointer = getattr(runnable, "checkpointer", None)
        return checkpointer not in (None, False) and callable(getattr(runnable, "get_state", None))
    except Exception:
        return False


def input_keys(runnable: Any) -> frozenset[str] | None:
    """The top-level keys of ``runnable``'s input: empty for a plain value, None when unknown."""
    readers: tuple[Callable[[Any], frozenset[str] | None], ...] = (
        _json_schema_keys,
        _schema_keys,
        _graph_state_keys,
    )
    for read in readers:
        try:
            keys = read(runnable)
        except Exception:
            continue
        if keys is not None:
            return keys
    return None


def langchain_messages(turns: Sequence[Turn]) -> list[Any]:
    """``turns`` as LangChain ``HumanMessage`` / ``AIMessage`` objects."""
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        HumanMessage(turn.content) if turn.role == "user" else AIMessage(turn.content)
        for turn in turns
    ]


def _json_schema_keys(runnable: Any) -> frozenset[str] | None:
    schema = runnable.get_input_jsonschema()
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    return frozenset(map(str, properties)) if isinstance(properties, Mapping) else frozenset()


def _schema_keys(runnable: Any) -> frozenset[str] | None:
    return _fields(runnable.input_schema)


def _graph_state_keys(runnable: Any) -> frozenset[str] | None:
    return _fields(runnable.builder.input_schema)


def _fields(schema: object) -> frozenset[str] | None:
    """The field names of a pydantic model or a ``TypedDict`` / annotated class."""
    for name in ("model_fields", "__annotations__"):
        fields = getattr(schema, name, None)
        if isinstance(fields, Mapping) and fields:
            return frozenset(map(str, fields))
    return None
