"""Small extractors from LlamaIndex objects to the plain values ``Capture`` takes.

Each is tolerant of anything: a field that is missing or odd gives ``None``, never an error,
except where noted (the callers guard those and count what goes wrong).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.chat_engine.types import AgentChatResponse, StreamingAgentChatResponse

from ragtrace._capture import Message, RawChunk

_UUID_SUFFIX = 37  # "-" + str(uuid4()): LlamaIndex span ids are "<Class>.<method>-<uuid>"
_UNKNOWN_MODEL = "unknown"  # LLMMetadata.model_name's default
_SKIPPED: RawChunk = (None, None, None, None)


def span_name(span_id: str) -> str:
    """``Class.method`` of a LlamaIndex span id (the id itself when it has no uuid suffix)."""
    return span_id[:-_UUID_SUFFIX] if len(span_id) > _UUID_SUFFIX else span_id


def span_class(span_id: str) -> str:
    """``Class`` of a LlamaIndex span id: the component that opened the span."""
    return span_name(span_id).rpartition(".")[0] or span_name(span_id)


def span_method(span_id: str) -> str:
    """``method`` of a LlamaIndex span id."""
    return span_name(span_id).rpartition(".")[2]


# What a root span returned, which says where its answer is.
ANSWER, STRING, TOKEN_STREAM, CHAT_STREAM, OTHER = range(5)
RESULT_KINDS: dict[type, int] = {
    Response: ANSWER,  # .response
    PydanticResponse: ANSWER,
    AgentChatResponse: ANSWER,
    str: STRING,
    StreamingResponse: TOKEN_STREAM,  # .response_gen, read later
    AsyncStreamingResponse: TOKEN_STREAM,
    StreamingAgentChatResponse: CHAT_STREAM,  # written by a thread or task of its own
    type(None): OTHER,
}


def result_kind(result: object, cache: dict[type, int]) -> int:
    """The kind of ``result`` (a subclass takes its base's kind; remembered in ``cache``)."""
    cls = type(result)
    kind = cache.get(cls)
    if kind is None:
        kind = next((cache[c] for c in cls.__mro__ if c in cache), OTHER)
        cache[cls] = kind
    return kind


def query_text(value: Any) -> Any:
    """The query of a ``str | QueryBundle`` argument (a QueryBundle's ``query_str``)."""
    if value is None or isinstance(value, str):
        return value
    query = getattr(value, "query_str", None)
    if query is not None:
        return query
    content = getattr(value, "content", None)  # a ChatMessage given as the chat message
    return content if isinstance(content, str) else None


def first_argument(bound_args: Any) -> Any:
    """The first argument (after ``self``) of a span's bound call, or None."""
    arguments = getattr(bound_args, "arguments", None)
    if not arguments:
        return None
    return next(iter(arguments.values()))


def raw_chunks(
    nodes: Iterable[Any] | None, keep: int, errors: list[BaseException]
) -> Iterator[RawChunk]:
    """``(text, id, score, metadata)`` per ``NodeWithScore``, in rank order.

    Only the first ``keep`` are read; the rest are yielded as empty placeholders so that
    ``Capture`` still counts them as dropped without paying for their text. A node that cannot
    be read gives a placeholder text and its error is appended to ``errors``.
    """
    for i, scored in enumerate(nodes or ()):
        if i >= keep:
            yield _SKIPPED
            continue
        try:
            node = getattr(scored, "node", scored)
            yield (
                node.get_content(),
                getattr(node, "node_id", None),
                getattr(scored, "score", None),
                getattr(node, "metadata", None),
            )
        except Exception as exc:
            errors.append(exc)
            yield (f"<unreadable {type(scored).__name__}>", None, None, None)


def chat_messages(messages: Iterable[Any] | None) -> list[Message]:
    """``(role, content)`` of LlamaIndex ``ChatMessage`` objects."""
    out: list[Message] = []
    for message in messages or ():
        role = getattr(message, "role", "user")
        role = getattr(role, "value", role)
        try:
            content: object = message.content
        except Exception:
            content = None
        out.append((role if isinstance(role, str) else "user", content))
    return out


def model_of(model_dict: Any) -> tuple[str | None, str | None]:
    """(model, provider) from an LLM's ``to_payload()``: metadata model name and class name."""
    if not isinstance(model_dict, Mapping):
        return None, None
    model = model_dict.get("model") or model_dict.get("model_name")
    if not isinstance(model, str) or model == _UNKNOWN_MODEL:
        model = None
    name = model_dict.get("class_name")
    provider = name.lower().removesuffix("_llm") or None if isinstance(name, str) else None
    return model, provider


def response_text(response: Any) -> Any:
    """The text of a ``ChatResponse`` (its message content) or ``CompletionResponse``."""
    if response is None:
        return None
    message = getattr(response, "message", None)
    if message is not None:
        return getattr(message, "content", None)
    return getattr(response, "text", None)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def usage_of(response: Any) -> tuple[Any, Any, Any]:
    """(response model, input tokens, output tokens) from an LLM response's raw payload.

    Reads ``raw.model`` and ``raw.usage.{prompt,completion,input,output}_tokens`` (dict or
    object), else ``additional_kwargs.{prompt,completion}_tokens``. May raise on a hostile
    ``raw`` object; the caller guards it.
    """
    if response is None:
        return None, None, None
    raw = getattr(response, "raw", None)
    model = n_in = n_out = None
    if raw is not None:
        model = _field(raw, "model")
        usage = _field(raw, "usage")
        if usage is not None:
            n_in = _field(usage, "prompt_tokens")
            if n_in is None:
                n_in = _field(usage, "input_tokens")
            n_out = _field(usage, "completion_tokens")
            if n_out is None:
                n_out = _field(usage, "output_tokens")
    if n_in is None and n_out is None:
        extra = getattr(response, "additional_kwargs", None)
        if isinstance(extra, Mapping):
            n_in, n_out = extra.get("prompt_tokens"), extra.get("completion_tokens")
    return (model if isinstance(model, str) else None), n_in, n_out
