"""LlamaIndex agent workflows: what marks a run as one user turn, and what its steps say.

An agent workflow (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``, ``AgentWorkflow``, all
from ``llama_index.core.agent.workflow``) runs on the ``workflows`` package, which opens one
``<Class>.run`` span per ``agent.run(...)`` (awaited or streamed) with the start event among its
arguments, and one span per step below it, parented by span id across the run's asyncio tasks.
``LlamaIndexTracer`` makes that run span the request (its query: the start event's
``user_msg``) and each ``call_tool`` step, whose input event is a ``ToolCall``, a tool call.
These functions read those events and that span: input of an unexpected shape gives ``None``
(an object that breaks when read may raise; the tracer catches and counts that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.agent.workflow import (
    AgentInput,
    AgentOutput,
    AgentWorkflow,
    BaseWorkflowAgent,
    ToolCall,
    ToolCallResult,
)

# Re-exported without __all__ (from llama-index-instrumentation, as ``get_dispatcher`` is).
from llama_index.core.instrumentation.dispatcher import (  # type: ignore[attr-defined, unused-ignore]
    active_instrument_tags,
)
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY

from ragtrace._capture import Message, RawChunk
from ragtrace.integrations.llama_index import _extract as ex

AGENT_TYPES: tuple[type, ...] = (BaseWorkflowAgent, AgentWorkflow)
"""Workflows whose ``run`` span is one user turn."""

RUN_METHOD = "run"
_EVENT_ARG = "ev"  # a workflow step's input event
_USER = "user"
_FRAMEWORK_TAG = "llamaindex."  # the workflows package's own instrument tags

ToolStart = tuple[str | None, object, str | None]
"""(tool name, arguments, call id) of a tool call."""


def start_event(bound_args: Any) -> Any:
    """The start event of a workflow's ``run`` span (None when the run resumes a context)."""
    arguments = getattr(bound_args, "arguments", None)
    return arguments.get("start_event") if isinstance(arguments, Mapping) else None


def user_query(start: Any) -> Any:
    """The user's message of a start event: ``user_msg``, else the last user message of
    ``chat_history``."""
    if start is None:
        return None
    try:
        query = ex.query_text(start.get("user_msg"))
        if query is None:
            for message in reversed(start.get("chat_history") or ()):
                if _role(message) == _USER:
                    return ex.query_text(message)
        return query
    except Exception:
        return None


def request_metadata(start: Any, tags: Any, session_keys: Sequence[str]) -> dict[str, Any] | None:
    """A run's metadata: the app's instrument tags (less the framework's own) and, under the
    first of ``session_keys``, the session id of the memory it was given (``session_of``).

    The run span is entered with no tags of its own (``tags`` is None): the app's are those
    active around it, inside the ``instrument_tags`` block the workflow opens for the run.
    """
    if not tags:
        tags = active_instrument_tags.get()
    metadata: dict[str, Any] = {}
    if isinstance(tags, Mapping):
        metadata = {k: v for k, v in tags.items() if not str(k).startswith(_FRAMEWORK_TAG)}
    session = session_of(start)
    if session is not None and session_keys:
        metadata.setdefault(session_keys[0], session)
    return metadata or None


def session_of(start: Any) -> str | None:
    """The conversation id of the memory a start event brings: ``Memory.session_id``, or a
    ``ChatMemoryBuffer``'s ``chat_store_key`` when it is not the default one."""
    if start is None:
        return None
    try:
        memory = start.get("memory")
    except Exception:
        return None
    return memory_session(memory)


def memory_session(memory: Any) -> str | None:
    """The conversation id of a LlamaIndex memory: ``Memory.session_id``, or a
    ``ChatMemoryBuffer``'s ``chat_store_key`` when it is not the default one."""
    if memory is None:
        return None
    session = getattr(memory, "session_id", None)
    if isinstance(session, str) and session:
        return session
    key = getattr(memory, "chat_store_key", None)
    if isinstance(key, str) and key and key != DEFAULT_CHAT_STORE_KEY:
        return key
    return None


def agent_input(bound_args: Any) -> AgentInput | None:
    """A step's input event when it is an ``AgentInput`` (the memory's messages, the user's
    own last)."""
    arguments = getattr(bound_args, "arguments", None)
    event = arguments.get(_EVENT_ARG) if isinstance(arguments, Mapping) else None
    return event if isinstance(event, AgentInput) else None


def conversation(event: AgentInput) -> tuple[list[Message], Any]:
    """(earlier messages, the user's message) of an agent's input: the messages before its
    last user message, and that message's text (None when it has none)."""
    messages = ex.chat_messages(event.input)
    last = max((i for i, (role, _) in enumerate(messages) if role == _USER), default=-1)
    if last < 0:
        return messages, None
    return messages[:last], messages[last][1]


def tool_start(bound_args: Any) -> ToolStart | None:
    """(name, arguments, call id) when a step's input event is an agent's ``ToolCall``."""
    arguments = getattr(bound_args, "arguments", None)
    event = arguments.get(_EVENT_ARG) if isinstance(arguments, Mapping) else None
    if not isinstance(event, ToolCall) or isinstance(event, ToolCallResult):
        return None
    return event.tool_name, event.tool_kwargs, event.tool_id or None


def tool_end(
    result: Any, keep: int, errors: list[BaseException]
) -> tuple[Any, list[RawChunk] | None, BaseException | str | None]:
    """(output text, documents, error) of a ``call_tool`` step's ``ToolCallResult``.

    The documents are the source nodes of a ``Response`` the tool returned as its raw output
    (a query engine tool), read as ``extract.raw_chunks`` reads them (``keep``, ``errors``),
    else None; the error is the exception the tool raised, else its text when the output says
    it failed (an unknown tool).
    """
    if not isinstance(result, ToolCallResult):
        return None, None, None
    output = result.tool_output
    content = output.content
    nodes = getattr(output.raw_output, "source_nodes", None)
    documents = list(ex.raw_chunks(nodes, keep, errors)) if isinstance(nodes, list) else None
    error: BaseException | str | None = None
    if output.is_error:
        error = output.exception or content or "tool error"
    return content, documents, error


def answer(result: Any) -> Any:
    """The final answer of a run: the ``StopEvent``'s ``AgentOutput`` response text."""
    value = getattr(result, "result", result)
    if isinstance(value, AgentOutput):
        return value.response.content
    return value if isinstance(value, str) else None


def _role(message: Any) -> Any:
    role = getattr(message, "role", None)
    return getattr(role, "value", role)
