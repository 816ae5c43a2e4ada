"""An agent's turn beside its query, chunks and answer: tool calls, chunk tags, conversation.

Every convention's mapper finds its own TOOL spans, LLM calls and messages; what they mean is
read here the same way for all of them, as ragtrace's capture records it in process:

- ``tool_calls``: one ``ToolCall`` per tool span, in start order. The arguments are the span's
  own (``gen_ai.tool.call.arguments``), else those of the call the model asked for (matched by
  call id, else by name in order, from the LLM outputs or LangGraph's tool node input), as
  compact JSON; else the span's input text. The status is the span's (an ``exception`` event
  gives ``Type: message``), or the tool's own error result (a ``ToolMessage`` with status
  ``error``).
- ``tag_chunks``: each chunk gets the index of the retrieval that returned it
  (``Chunk.retrieval``) and the query that retrieval was asked when it is not the user's
  (``Chunk.query``); chunks retrieved inside a tool call also get its index (``Chunk.step``)
  and the tool's name before the retriever's (``search_docs/HandbookRetriever``); a document
  that several retrievals returned is kept once (``TurnChunks``), as capture keeps it.
- ``mark_used``: whether each chunk's text reached the LLM call that produced the answer
  (``Chunk.used``), read from the LLM spans' input messages as capture reads the prompts
  (``ModelCalls``); unknown where the spans carry no input text.
- ``conversation``: the session and user ids (``session.id``, ``gen_ai.conversation.id``,
  ``user.id`` on any span of the request, root first, then the spans above it; else the
  request metadata's ``thread_id``/``session_id``/``user_id``, as OpenInference's ``metadata``
  JSON or OpenLLMetry's ``traceloop.association.properties.*``), and the earlier turns in the
  root's messages (the graph's state in its output, else the chat it was given).

- ``turn_record``: the record of the turn, its conversation read as above; the last step of
  every convention's mapper::

    calls = tool_calls(tool_spans, requested_in(tool_node_input))
    return turn_record(view, root, spans, self.convention, query=query, ..., tool_calls=calls)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._ingest.mappers import common as cm
from ragtrace._ingest.mappers import messages as msg
from ragtrace._ingest.mappers.base import MappedRecord, build_record, exception_text, parse_json
from ragtrace._ingest.spans import STATUS_ERROR, IngestSpan, TraceView
from ragtrace._model import (
    Chunk,
    Conversation,
    ModelCalls,
    ToolCall,
    Turn,
    TurnChunks,
    probe,
    with_used,
)
from ragtrace._text import dump_json, short_text

_DEFAULTS = Config()
SESSION_KEYS = _DEFAULTS.session_id_keys
USER_KEYS = _DEFAULTS.user_id_keys
HISTORY_KEYS = ("chat_history", "history")
ASSOCIATION_PREFIX = "traceloop.association.properties."
MAX_ERROR_CHARS = 2000
MAX_METADATA_SPANS = 100  # spans whose metadata is read for the ids (every span repeats it)
_QUERY_ARGUMENTS = ("query", "question", "input", "q", "search_query", "text")

History = tuple[tuple[Turn, ...], int]
"""Earlier turns, and how many user turns came before."""
Ids = tuple[str | None, str | None]
"""A request's session and user ids."""
Converse = Callable[[Ids, History | None, str | None], Conversation | None]
"""Ids, earlier turns and the rewritten question -> the request's conversation."""


@dataclass(frozen=True, slots=True)
class ToolSpan:
    """One tool call as a convention's span shows it.

    Attributes:
        span: The span.
        name: The tool's name.
        arguments: The arguments as the span gives them (exact), if it does.
        fallback: The span's input text, for when no call the model asked for matches.
        call_id: The model's id for the call, if the span gives it.
        failure: An error the tool reported in its result (not raised), if any.
    """

    span: IngestSpan
    name: str
    arguments: str | None = None
    fallback: str | None = None
    call_id: str | None = None
    failure: str | None = None


@dataclass(frozen=True, slots=True)
class Requested:
    """A tool call the model asked for (in an LLM's output or a tool node's input)."""

    name: str | None
    call_id: str | None
    arguments: str | None


# -- tool calls ---------------------------------------------------------------------------------


def arguments_text(value: Any) -> str | None:
    """Tool arguments as ragtrace's capture writes them: a JSON object or list (given as
    such or as JSON text) as compact JSON, other text as it is."""
    if isinstance(value, str):
        parsed = parse_json(value.strip())
        if not isinstance(parsed, Mapping | list):
            return cm.text(value)
        value = parsed
    if isinstance(value, Mapping | list):
        try:
            return dump_json(value, cm.MAX_TEXT_CHARS)[0]
        except (TypeError, ValueError):
            return None
    return None


def requested_call(item: Any) -> Requested | None:
    """A tool call dict in any form: LangChain's ``{name, args, id}``, OpenAI's
    ``{id, function: {name, arguments}}``, a GenAI ``tool_call`` part."""
    if not isinstance(item, Mapping):
        return None
    function = item.get("function")
    if isinstance(function, Mapping):
        name, args = function.get("name"), function.get("arguments")
    elif "name" in item and ("args" in item or "arguments" in item):
        name, args = item.get("name"), item.get("args", item.get("arguments"))
    else:
        return None
    ident = item.get("id")
    return Requested(
        name if isinstance(name, str) else None,
        ident if isinstance(ident, str) and ident else None,
        arguments_text(args),
    )


def requested_in(value: Any) -> list[Requested]:
    """The tool calls in a list of them (LangGraph's tool node input) or in messages (an LLM's
    output: ``tool_calls``, GenAI ``tool_call`` parts)."""
    if isinstance(value, Mapping):
        value = value.get("messages", [value])
    if not isinstance(value, list):
        return []
    out: list[Requested] = []
    for item in value[: cm.MAX_DOCUMENTS]:
        call = requested_call(item)
        if call is not None:
            out.append(call)
            continue
        found = msg.message_body(item)
        if found is None:
            continue
        body = found[1]
        for key in ("tool_calls", "parts"):
            calls = body.get(key)
            if isinstance(calls, list):
                out.extend(c for c in map(requested_call, calls[: cm.MAX_DOCUMENTS]) if c)
    return out


def tool_calls(tools: Sequence[ToolSpan], requested: Sequence[Requested]) -> tuple[ToolCall, ...]:
    """One ``ToolCall`` per tool span (in the order given), each matched with the call the
    model asked for: by call id, else the first unmatched one of the same name."""
    matched: list[Requested | None] = [None] * len(tools)
    claimed: set[int] = set()
    span_ids = {t.call_id for t in tools if t.call_id}
    for i, tool in enumerate(tools):
        for j, asked in enumerate(requested):
            if tool.call_id and j not in claimed and asked.call_id == tool.call_id:
                matched[i] = asked
                claimed.add(j)
                break
    for i, tool in enumerate(tools):
        if tool.call_id:
            continue
        for j, asked in enumerate(requested):
            if j in claimed or asked.name != tool.name or asked.call_id in span_ids:
                continue
            matched[i] = asked
            claimed.add(j)
            break
    return tuple(_tool_call(t, m) for t, m in zip(tools, matched, strict=True))


def _tool_call(tool: ToolSpan, asked: Requested | None) -> ToolCall:
    span = tool.span
    error = tool.failure
    if span.status_code == STATUS_ERROR:
        error = exception_text(span) or cm.text(span.status_message) or error or "error"
    return ToolCall(
        name=tool.name,
        arguments=tool.arguments or (asked.arguments if asked else None) or tool.fallback,
        status="error" if error else "ok",
        error=error[:MAX_ERROR_CHARS] if error else None,
        duration_s=max(0, span.end_ns - span.start_ns) / 1e9,
        call_id=tool.call_id or (asked.call_id if asked else None),
    )


def tool_message(value: Any) -> Mapping[str, Any] | None:
    """The ``ToolMessage`` a tool returned, as a parsed output shows it (itself, or under
    ``output``/``outputs``), or None."""
    for candidate in (value, *_wrapped(value)):
        found = msg.message_body(candidate)
        if found is not None and found[0] in ("tool", "ToolMessage"):
            return found[1]
    return None


def _wrapped(value: Any) -> list[Any]:
    if not isinstance(value, Mapping):
        return []
    return [value[k] for k in ("output", "outputs") if k in value]


def tool_result(body: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(call id, reported error) of a ``ToolMessage`` body."""
    if body is None:
        return None, None
    ident = body.get("tool_call_id")
    failure = None
    if body.get("status") == "error":
        failure = msg.content_text(body.get("content")) or "error"
    return (ident if isinstance(ident, str) and ident else None), failure


def tool_output_failure(value: Any) -> str | None:
    """The error a LlamaIndex tool reported (a ``ToolOutput`` with ``is_error``, itself or
    as a ``ToolCallResult``'s ``tool_output``), or None."""
    if isinstance(value, Mapping) and isinstance(value.get("tool_output"), Mapping):
        value = value["tool_output"]
    if not isinstance(value, Mapping) or value.get("is_error") is not True:
        return None
    raw = value.get("raw_output")
    return cm.text(raw) or msg.content_text(value.get("blocks")) or "error"


def artifact_chunks(body: Mapping[str, Any] | None, source: str | None) -> list[Chunk]:
    """The documents in a ``ToolMessage``'s artifact (plain or LangChain-serialised
    ``Document``s, or ``[document, score]`` pairs) as chunks."""
    artifact = body.get("artifact") if body is not None else None
    if isinstance(artifact, Mapping):
        artifact = [artifact]
    if not isinstance(artifact, list):
        return []
    chunks: list[Chunk] = []
    for entry in artifact[: cm.MAX_DOCUMENTS]:
        item, score = entry, None
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], int | float):
            item, score = entry
        if not isinstance(item, Mapping):
            return []
        doc = item.get("kwargs") if item.get("lc") == 1 else item
        if not isinstance(doc, Mapping) or "page_content" not in doc:
            return []
        chunk = cm.make_chunk(
            doc.get("page_content"), doc.get("id"), score, doc.get("metadata"), source
        )
        if chunk is not None:
            chunks.append(chunk)
    return chunks


def query_argument(arguments: str | None) -> str | None:
    """The query a retrieval tool was called with: its only string argument, or the one
    named like a query; the arguments' text when they are not a JSON object."""
    parsed = parse_json(arguments)
    if not isinstance(parsed, Mapping):
        return arguments or None
    texts = {k: v for k, v in parsed.items() if isinstance(v, str) and v}
    for name in _QUERY_ARGUMENTS:
        if name in texts:
            return texts[name]
    return next(iter(texts.values())) if len(texts) == 1 else arguments


# -- chunks -------------------------------------------------------------------------------------


def tag_chunks(
    view: TraceView,
    steps: Iterable[tuple[IngestSpan, Sequence[Chunk], str | None]],
    tools: Sequence[ToolSpan],
    query: str | None,
) -> list[Chunk]:
    """The chunks of each retrieval step ``(span, chunks, query asked)``, in the order given,
    each document once (``TurnChunks``: the retrievals numbered in that order, those that
    returned nothing left out), each with its retrieval's index and the query it was asked
    when that is not the user's (``retrieval``, ``query``); those retrieved inside a tool call
    tagged with it (``step``, ``source``)."""
    index = {t.span.span_id: (i, t.name) for i, t in enumerate(tools)}
    turn = TurnChunks()
    retrieval = 0
    for span, chunks, asked in steps:
        if not chunks:
            continue
        tool = next(
            (index[s.span_id] for s in (span, *view.ancestors(span)) if s.span_id in index), None
        )
        tagged = asked if asked != query else None
        for found in chunks:
            chunk = replace(found, query=tagged) if found.query != tagged else found
            if tool is not None:
                step, name = tool
                source = found.source
                if source != name and not (source or "").startswith(name + "/"):
                    source = f"{name}/{source}" if source else name
                chunk = replace(chunk, source=source, step=step)
            turn.add(chunk, retrieval, asked)
        retrieval += 1
    return turn.chunks


def prompt_text(messages: Iterable[tuple[str | None, str | None]]) -> str | None:
    """The text of an LLM call's input messages, one after another (None: none has text)."""
    return "\n".join(content for _, content in messages if content) or None


def mark_used(
    chunks: Sequence[Chunk],
    calls: Iterable[tuple[str | None, str | None]],
    answer: str | None,
) -> list[Chunk]:
    """``chunks`` marked with whether each reached the LLM call that produced ``answer``
    (``Chunk.used``, as ``ModelCalls`` decides), from each LLM call's ``(input text, output
    text)`` in the order they ran; left unmarked when that is not known."""
    if not chunks:
        return list(chunks)
    probes = [probe(c.text) for c in chunks]
    seen = ModelCalls()
    for prompt, output in calls:
        seen.answered(seen.saw(prompt, probes), output)
    return list(with_used(chunks, seen.used(probes, answer)))


# -- conversation -------------------------------------------------------------------------------


def session_ids(
    view: TraceView, root: IngestSpan, spans: Sequence[IngestSpan]
) -> tuple[str | None, str | None]:
    """(session id, user id) of a request: the attributes on its spans (root first, then its
    descendants, then the spans above it), else its metadata's."""
    order = [root, *(s for s in spans if s is not root), *view.ancestors(root)]
    session = _first_attr(order, (sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID))
    user = _first_attr(order, (sc.USER_ID,))
    if session is None or user is None:
        for span in order[:MAX_METADATA_SPANS]:
            meta = _metadata(span)
            session = session or _first_key(meta, SESSION_KEYS)
            user = user or _first_key(meta, USER_KEYS)
            if session is not None and user is not None:
                break
    return session, user


def _first_attr(spans: Sequence[IngestSpan], keys: Sequence[str]) -> str | None:
    for span in spans:
        for key in keys:
            value = span.attributes.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return short_text(value)
    return None


def _metadata(span: IngestSpan) -> dict[str, Any]:
    """The request metadata a span carries: OpenInference's ``metadata`` JSON and
    OpenLLMetry's ``traceloop.association.properties.*``."""
    found: dict[str, Any] = {}
    parsed = cm.json_value(span, sc.METADATA)
    if isinstance(parsed, Mapping):
        found.update(parsed)
    for key, value in span.attributes.items():
        if isinstance(key, str) and key.startswith(ASSOCIATION_PREFIX):
            found.setdefault(key[len(ASSOCIATION_PREFIX) :], value)
    return found


def _first_key(metadata: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return short_text(value)
    return None


def history_in(value: Any) -> History | None:
    """The earlier turns in a parsed input or output: the messages before the last user
    message, or a ``chat_history`` list; None when it holds neither."""
    found = msg.messages_of(value)
    if found is not None:
        return msg.earlier_turns(found)
    if isinstance(value, Mapping):
        for key in HISTORY_KEYS:
            earlier = msg.messages_of(value.get(key))
            if earlier is not None:
                return msg.earlier_turns([*earlier, ("user", None, False)])
    return None


def request_history(given: Any, returned: Any) -> History | None:
    """A request's earlier turns, as capture keeps them: those in its output (a graph with a
    checkpointer returns the whole thread), else those in its input (the chat it was given)."""
    after = history_in(returned)
    if after is not None and (after[0] or after[1]):
        return after
    before = history_in(given)
    return before if before is not None else after


def rewritten(asked: Sequence[str | None], query: str | None) -> str | None:
    """The question as the app rewrote it: the first retrieval query (outside tool calls)
    that is not the user's own (kept by ``conversation`` only for a follow-up)."""
    return next((q for q in asked if q is not None and q != query), None)


def conversation(
    ids: tuple[str | None, str | None],
    history: History | None,
    *,
    turn: int | None = None,
    standalone_query: str | None = None,
) -> Conversation | None:
    """The conversation of a request, or None when nothing is known of one (no ids and no
    earlier turns), as capture builds it."""
    session, user = ids
    turns, users = history if history is not None else ((), None)
    turn = turn if turn is not None else users
    follow_up = bool(turns) or bool(turn)
    if session is None and user is None and not follow_up:
        return None
    return Conversation(
        session_id=session,
        user_id=user,
        turn=turn,
        history=turns,
        standalone_query=standalone_query if follow_up else None,
    )


def _conversation_of(
    ids: Ids, history: History | None, standalone: str | None
) -> Conversation | None:
    return conversation(ids, history, standalone_query=standalone)


def turn_record(
    view: TraceView,
    root: IngestSpan,
    spans: Sequence[IngestSpan],
    convention: str,
    *,
    query: str | None,
    asked: Sequence[str | None],
    given: Any,
    returned: Any,
    converse: Converse = _conversation_of,
    **found: Any,
) -> MappedRecord:
    """The record of the turn under ``root`` (``build_record``: ``found`` holds its chunks,
    response, model, tool calls, ...). Its conversation: the ids on the request's ``spans``
    (``session_ids``), the earlier turns of its output or input (``request_history`` of
    ``returned``, ``given``) and the question as its retrievals ``asked`` it (``rewritten``),
    put together by ``converse`` (a mapper that reads a conversation of its own gives one)."""
    history = request_history(given, returned)
    found["conversation"] = converse(
        session_ids(view, root, spans), history, rewritten(asked, query)
    )
    return build_record(view=view, root=root, convention=convention, query=query, **found)
