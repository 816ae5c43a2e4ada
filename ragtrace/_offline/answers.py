"""What a system returned, as an ``Answer``: the response, the contexts it read, its model.

``answer_from(value)`` accepts what RAG code usually returns:

- a string: the response, no contexts;
- a mapping: the response under ``response``, ``answer``, ``output``, ``result`` or ``text``;
  the contexts under ``contexts``, ``context``, ``source_documents``, ``source_nodes`` or
  ``documents``; the model under ``model``;
- a framework's response object (a LlamaIndex ``Response``, a LangChain message): the
  framework's adapter reads it as such a mapping (``ragtrace.integrations._adapters``).

What the answer cost, when the system says: a mapping's ``usage`` (``input_tokens`` /
``prompt_tokens``, ``output_tokens`` / ``completion_tokens``, ``cost_usd``) and a top-level
``cost_usd`` become ``Answer.usage`` (``usage_from``); ``ragtrace eval`` writes it into the
scores line, and ``ragtrace report`` names the cheapest and the most expensive system.

Contexts may be strings, mappings (``text``/``page_content``/``content``, ``id``, ``score``,
``metadata``, ``used``) or a framework's documents and nodes (LangChain ``Document``,
LlamaIndex ``NodeWithScore``), which its adapter reads as such a mapping; no framework is
imported here. Anything else raises ``AnswerError`` saying what came back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ragtrace._model import Chunk, Conversation, ToolCall
from ragtrace.integrations._adapters import adapters

RESPONSE_KEYS = ("response", "answer", "output", "result", "text")
CONTEXT_KEYS = ("contexts", "context", "source_documents", "source_nodes", "documents")
TEXT_KEYS = ("text", "page_content", "content")
INPUT_TOKEN_KEYS = ("input_tokens", "prompt_tokens")
OUTPUT_TOKEN_KEYS = ("output_tokens", "completion_tokens")


class AnswerError(ValueError):
    """A system returned something that is not an answer; the message says what it was."""


@dataclass(frozen=True, slots=True)
class Usage:
    """What one answer cost, as far as the system reported it (None: not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    def as_json(self) -> dict[str, int | float]:
        """The known fields, JSON-ready."""
        found = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }
        return {k: v for k, v in found.items() if v is not None}


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer of a system.

    Attributes:
        response: The answer text (None when the system gave none).
        chunks: The contexts it answered from, in rank order.
        model: The model that answered, when known.
        usage: Tokens and cost of the answer, when the system reported them.
        tool_calls: The tools an agent called while answering (from ragtrace's capture).
        llm_calls: How many LLM calls the answer took (from ragtrace's capture; 0: unknown).
        conversation: The conversation the answer belongs to, as the capture saw it (None:
            the scored record keeps the case's own).
    """

    response: str | None
    chunks: tuple[Chunk, ...] = ()
    model: str | None = None
    usage: Usage | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    llm_calls: int = 0
    conversation: Conversation | None = None


def answer_from(value: object) -> Answer:
    """``value`` (what a system returned) as an ``Answer``.

    Raises:
        AnswerError: ``value`` has no recognisable response, or junk contexts.
    """
    if isinstance(value, str):
        return Answer(value)
    if isinstance(value, Mapping):
        key = next((k for k in RESPONSE_KEYS if k in value), None)
        if key is None:
            raise AnswerError(
                f"returned a mapping without any of {', '.join(RESPONSE_KEYS)} "
                f"(keys: {', '.join(map(str, list(value)[:8]))})"
            )
        contexts = next((value[k] for k in CONTEXT_KEYS if k in value), None)
        return Answer(
            _text(value[key], key),
            chunks_from(contexts),
            _optional_str(value.get("model")),
            usage_from(value.get("usage"), value.get("cost_usd")),
        )
    for adapter in adapters():
        reply = adapter.reply(value)
        if reply is not None:
            return answer_from(reply)
    raise AnswerError(
        f"returned {_kind(value)}; expected a string, a mapping with an 'answer' or 'response', "
        "or an object with a .response"
    )


def usage_from(usage: object, cost_usd: object = None) -> Usage | None:
    """Tokens and cost from a ``usage`` mapping (OpenAI's or the GenAI conventions' key names)
    and a separate ``cost_usd``; None when neither says anything usable. Values that are not
    non-negative finite numbers are ignored."""
    mapping = usage if isinstance(usage, Mapping) else {}
    found = Usage(
        input_tokens=tokens(next((mapping[k] for k in INPUT_TOKEN_KEYS if k in mapping), None)),
        output_tokens=tokens(next((mapping[k] for k in OUTPUT_TOKEN_KEYS if k in mapping), None)),
        cost_usd=amount(cost_usd if cost_usd is not None else mapping.get("cost_usd")),
    )
    return found if found.as_json() else None


def tokens(value: object) -> int | None:
    """A token count: a non-negative finite number, as a whole number; else None."""
    found = amount(value)
    return None if found is None else int(found)


def amount(value: object) -> float | None:
    """A non-negative finite number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def chunks_from(contexts: object) -> tuple[Chunk, ...]:
    """Contexts (see the module docstring) as chunks; None gives none.

    Raises:
        AnswerError: Contexts that are not a string, a list or a tuple, or a junk item.
    """
    if contexts is None:
        return ()
    if isinstance(contexts, str):
        return (Chunk(contexts),)
    if not isinstance(contexts, list | tuple):
        raise AnswerError(f"contexts must be a list, got {_kind(contexts)}")
    return tuple(chunk_from(item, i) for i, item in enumerate(contexts))


def chunk_from(item: object, rank: int = 0) -> Chunk:
    """One context as a ``Chunk`` (``rank`` names it in an error).

    Raises:
        AnswerError: ``item`` has no text.
    """
    if isinstance(item, str):
        return Chunk(item)
    if isinstance(item, Mapping):
        text = next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str)), None)
        if text is None:
            raise AnswerError(f"context {rank} has no text ({', '.join(TEXT_KEYS)})")
        metadata = item.get("metadata")
        chunk = _chunk(text, item.get("id"), item.get("score"), metadata)
        used = item.get("used")  # whether the answer's model call saw it, when the app says
        return replace(chunk, used=used) if isinstance(used, bool) else chunk
    for adapter in adapters():
        try:
            context = adapter.context(item)
        except Exception as exc:
            raise AnswerError(
                f"context {rank}: reading the {adapter.name} object failed: {exc}"
            ) from None
        if context is not None:
            return chunk_from(context, rank)
    raise AnswerError(f"context {rank} is {_kind(item)}, not a text, mapping or document")


def _chunk(text: str, chunk_id: object, score: object, metadata: object) -> Chunk:
    number = (
        float(score)
        if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score)
        else None
    )
    return Chunk(
        text,
        id=None if chunk_id is None else str(chunk_id),
        score=number,
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
    )


def _text(value: object, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise AnswerError(f"'{key}' is {_kind(value)}, not a string")


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _kind(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = "<unprintable>"
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {shown}"
