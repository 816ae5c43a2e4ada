"""``ask``: put a test case's question to the app under test and get the record to score.

::

    record = ask(chain, case)      # a RagRecord: the case's question and reference, the app's
    assert_scores(record, ["faithfulness", "answer_relevance"])   # answer and contexts

The app may be what ``ragtrace eval --system-callable`` accepts (``ragtrace._offline.callables``;
an app of a framework is called by that framework's adapter, ``ragtrace.integrations._adapters``):

- a LangChain runnable: a chain, a ``langchain.agents.create_agent`` agent or a compiled
  LangGraph graph, invoked with the input its schema asks for (the question string,
  ``{"messages": [{"role": "user", "content": question}]}``, ``{"question": question}``) and
  ragtrace's own LangChain capture, which sees the documents retrieved (by retrievers, inside
  tools), the tools called and the model's name whatever the runnable returns, so a chain that
  returns a plain string still yields its contexts and an agent its tool calls;
- a LlamaIndex query engine: ``query(question)``; contexts from the response's source nodes;
- a function of the question returning a string, a mapping (``answer``/``response`` and
  ``contexts``/``source_documents``...) or a LlamaIndex ``Response``; a parameter named
  ``history`` or ``chat_history`` gets the case's earlier turns;
- a factory of one of these (a class, or a function taking no argument), called once.

A multi-turn case (``conversation``: the earlier turns, and an optional ``session_id``) is asked
after its earlier turns: an agent or graph with a checkpointer is asked each earlier user turn in
one thread, then the question; one without gets them as ``messages``, a chain as
``chat_history``, a function as ``history``. Only the last turn is scored; the record's
``conversation.history`` holds the earlier turns.

Each app is wrapped once per process and kept (its capture reused) until the process ends. An
app that raises makes the test fail with the app's own exception; one that returns something
that is not an answer raises ``AnswerError`` saying what it returned.
"""

from __future__ import annotations

import atexit
import dataclasses
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragtrace._model import RagRecord

DEFAULT_APP = "default"  # a RagRecord's app when the case names none

if TYPE_CHECKING:
    from ragtrace._offline.callables import System

QUERY_ID_CHARS = 80

_lock = threading.Lock()
_systems: dict[int, tuple[object, System, threading.Lock]] = {}


def ask(
    app: Any, case: RagRecord | Mapping[str, Any] | str, *, name: str | None = None
) -> RagRecord:
    """The record of ``app``'s answer to ``case``'s question.

    Args:
        app: The app under test (see the module docstring).
        case: A case (a ``RagRecord``, e.g. from ``parametrize_cases``, or a mapping with the
            ``input``/``query`` and optional ``expected_output``/``reference``,
            ``conversation`` and ``session_id``), or a question.
        name: The system's name (default: the answer's model, else the case's app, else the
            app's ``__name__``, else its type's name): the name the scores file, the session's
            table and its gates use.

    Returns:
        A ``RagRecord`` with the case's id, question, reference and metadata, and the app's
        response, retrieved contexts, model, tool calls, LLM calls and conversation;
        ``attributes["system"]`` is the system's name (``ragtrace.evaluate``,
        ``assert_scores`` and the plugin name the system by it).

    Raises:
        ValueError: The case has no question.
        SystemSpecError: ``app`` is none of the supported kinds.
        AnswerError: The app returned something that is not an answer.
    """
    __tracebackhide__ = True
    from ragtrace._offline.asking import answered_record
    from ragtrace._offline.cases import case_record

    if isinstance(case, str):
        case = {"id": case[:QUERY_ID_CHARS], "query": case}
    base = case_record(case, 1)
    query = base.record.query
    if not query:
        raise ValueError(f"case {base.id!r} has no question (input or query) to ask")
    system, lock = _system_for(app, name)
    conversation = base.record.conversation
    with lock:
        answer = system.ask(query) if conversation is None else system.ask(query, conversation)
    record = answered_record(base.record, answer, query, base.id, system.name)
    # The system as the scores file, the session's table and its gates name it.
    label = name or record.model or (record.app if record.app != DEFAULT_APP else "") or system.name
    return dataclasses.replace(record, attributes={**record.attributes, "system": label})


def _system_for(app: Any, name: str | None) -> tuple[System, threading.Lock]:
    from ragtrace._offline.callables import make_system

    with _lock:
        known = _systems.get(id(app))
        if known is not None and known[0] is app:
            return known[1], known[2]
        label = name or getattr(app, "__name__", None) or type(app).__name__
        system = make_system(str(label), app, "ragtrace.testing.ask")
        _systems[id(app)] = (app, system, threading.Lock())
        return system, _systems[id(app)][2]


@atexit.register
def _close_systems() -> None:
    from ragtrace._offline.asking import close_systems

    with _lock:
        systems = [system for _, system, _ in _systems.values()]
        _systems.clear()
    close_systems(systems)
