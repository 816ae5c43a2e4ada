"""``ReviewSink``: the score sink that fills the review queue.

Hand it to ``ragtrace.init`` beside the OpenTelemetry and Prometheus sinks (the package docstring
shows how). For each evaluated record it asks the rules whether a person should look; if so it
redacts and cuts the content (``ContentLimits``) and writes one item. Nothing is written before
redaction: the policy is the one given here, else the running ragtrace's (``Config.redact``). A
record the pipeline hands over went through that policy already (its ``ragtrace._redaction`` says
so, and its evaluations were redacted before any sink got them) and is not redacted twice; any
other record is redacted here, every text of it and of its scores, metadata and details at any
depth. The conversation's earlier turns, standalone question and user id, and the tool calls'
arguments and errors, go through this sink's policy in every case (a record marked by another
process's policy, as a remote queue's or an ingested one is, was redacted by that policy, which
need not be this one; the built-in policies leave redacted text as it is); the session id is kept as
captured, like the trace id, since turns are grouped by it. A redaction function that raises
replaces the text by a marker, never lets it through. Every ``prune_every`` writes it applies
the store's ``Retention`` (item cap and age).

``Config.review_db`` (``RAGTRACE_REVIEW_DB``, the settings file's ``sinks.review``, ``--review-db``)
makes every ``Ragtrace`` (``init``, ``ragtrace worker``, ``ragtrace ingest``) build one with the
default rules and its own policy (``from_config``).

It runs on the pipeline's worker threads; the store handles concurrency. A failed write raises
into the pipeline, which counts it in ``ragtrace_internal_errors_total`` and carries on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ragtrace._capture.content import TextPolicy
from ragtrace._config import Config, ConfigError, Redactor
from ragtrace._exporters.base import SinkContext
from ragtrace._model import Chunk, Conversation, Evaluation, RagRecord, Score, Turn
from ragtrace._redaction import Redaction, redaction
from ragtrace._redaction.current import current_policy
from ragtrace._text import jsonable
from ragtrace.review._items import ReviewItem, StoredScore
from ragtrace.review._rules import ReviewRules
from ragtrace.review._store import Retention, SqlReviewStore, open_store

TRUNCATED_ATTRIBUTE = "ragtrace.review.truncated"


@dataclass(frozen=True)
class ContentLimits:
    """How much of each text the queue keeps (longer text is cut; the cut is recorded).

    Attributes:
        max_text_chars: Query, answer, reference, error.
        max_chunk_chars: Each chunk's text.
        max_chunks: Chunks kept per record (the first ones, in rank order).
        max_explanation_chars: Each score's explanation.
        max_details_chars: Each score's details as JSON; bigger details are shrunk (long
            strings and lists cut), then replaced by a preview.
        max_attributes_chars: The record's other attributes as JSON.
        max_history_turns: Earlier turns of the conversation kept (the latest ones).
        max_turn_chars: Each earlier turn's text, and each tool call's arguments and error.
        max_tool_calls: Tool calls kept per record (the first ones, in the order they started).
        max_id_chars: The session and user ids.
    """

    max_text_chars: int = 16000
    max_chunk_chars: int = 4000
    max_chunks: int = 20
    max_explanation_chars: int = 4000
    max_details_chars: int = 8000
    max_attributes_chars: int = 4000
    max_history_turns: int = 50
    max_turn_chars: int = 4000
    max_tool_calls: int = 50
    max_id_chars: int = 256

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"content limit {name} must be an integer >= 1, got {value!r}")


class ReviewSink:
    """A ``ScoreSink`` that queues records for human review.

    Args:
        store: A review store, or its URL / path (then the sink opens and closes it).
        rules: What enters the queue (default ``ReviewRules()``).
        redact: The redaction policy every text goes through before it is written (``none``,
            ``secrets``, ``pii``, a function ``str -> str`` or a ``Redaction``); default: the
            current ragtrace's (looked up at each write, so ``init`` may come later).
        limits: How much text is kept.
        retention: What the store keeps, applied every ``prune_every`` writes (default
            ``Retention()``; ``Retention(max_items=None, max_age_s=None)`` keeps everything).
        prune_every: Writes between two retention passes.
    """

    def __init__(
        self,
        store: SqlReviewStore | str,
        rules: ReviewRules | None = None,
        *,
        redact: str | Redactor | Redaction | None = None,
        limits: ContentLimits | None = None,
        retention: Retention | None = None,
        prune_every: int = 500,
    ) -> None:
        if prune_every < 1:
            raise ValueError(f"prune_every must be >= 1, got {prune_every}")
        self._owns_store = isinstance(store, str)
        self.store = open_store(store) if isinstance(store, str) else store
        self.rules = rules or ReviewRules()
        self.limits = limits or ContentLimits()
        self.retention = retention if retention is not None else Retention()
        self._redact = None if redact is None else redaction(redact)
        self._prune_every = prune_every
        self._writes = 0
        self._lock = threading.Lock()
        self.queued = 0

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Queue ``record`` if the rules say so (called on a worker thread)."""
        decision = self.rules.decide(record, evaluations)
        if decision is None:
            return
        item = self.build_item(record, evaluations, decision.reasons, decision.priority)
        self.store.enqueue(item)
        with self._lock:
            self.queued += 1
            self._writes += 1
            prune = self._writes % self._prune_every == 0
        if prune:
            self.store.prune(self.retention)

    def build_item(
        self,
        record: RagRecord,
        evaluations: Sequence[Evaluation],
        reasons: Sequence[Any] = (),
        priority: int = 0,
    ) -> ReviewItem:
        """The item that would be written for ``record``: redacted and cut to the limits."""
        redacting = self._redaction()
        conversation, tool_calls = record.conversation, record.tool_calls
        # The conversation and tool calls go through this sink's policy whether or not the
        # record is marked: a mark may be another process's policy (ingested records, a remote
        # queue's). The built-in policies leave redacted text as it is.
        if redacting.active:
            conversation = _redacted_conversation(conversation, redacting)
            tool_calls = tuple(
                replace(
                    c, arguments=redacting.optional(c.arguments), error=redacting.optional(c.error)
                )
                for c in tool_calls
            )
        if not redacting.applied_to(record):
            record = redacting.record(record)
            evaluations = redacting.evaluations(evaluations)
        policy = TextPolicy()  # cuts only: the texts are redacted
        lim = self.limits
        cut: list[str] = []

        def text(value: object, limit: int, where: str) -> str | None:
            clean, truncated = policy.clean(value, limit)
            if truncated:
                cut.append(where)
            return clean

        chunks = tuple(
            Chunk(
                text=text(c.text, lim.max_chunk_chars, f"chunk {i}") or "",
                id=c.id,
                score=c.score,
                metadata=_clean_json(c.metadata, policy, lim.max_details_chars),
                source=c.source,
                used=c.used,
            )
            for i, c in enumerate(record.chunks[: lim.max_chunks])
        )
        if len(record.chunks) > lim.max_chunks:
            cut.append(f"chunks ({len(record.chunks)} > {lim.max_chunks})")
        scores = tuple(
            StoredScore(ev.evaluator, self._clean_score(score, policy))
            for ev in evaluations
            for score in ev.scores
        )
        # Every text is cut before the attributes are made: they list what was cut.
        query = text(record.query, lim.max_text_chars, "query")
        response = text(record.response, lim.max_text_chars, "response")
        reference = text(record.reference, lim.max_text_chars, "reference")
        error = text(record.error, lim.max_text_chars, "error")
        conversation = self._conversation(conversation, text, cut)
        kept_calls = tuple(
            replace(
                c,
                name=text(c.name, lim.max_id_chars, f"tool call {i} name") or "",
                arguments=text(c.arguments, lim.max_turn_chars, f"tool call {i} arguments"),
                error=text(c.error, lim.max_turn_chars, f"tool call {i} error"),
                call_id=policy.clean(c.call_id, lim.max_id_chars)[0],
            )
            for i, c in enumerate(tool_calls[: lim.max_tool_calls])
        )
        if len(tool_calls) > lim.max_tool_calls:
            cut.append(f"tool calls ({len(tool_calls)} > {lim.max_tool_calls})")
        attributes = _clean_json(record.attributes, policy, lim.max_attributes_chars)
        if cut:
            attributes[TRUNCATED_ATTRIBUTE] = cut
        return ReviewItem(
            trace_id=record.trace_id or "",
            span_id=record.span_id or "",
            app=record.app,
            model=record.model,
            request_ns=record.end_ns or record.start_ns,
            queued_ns=time.time_ns(),
            query=query,
            response=response,
            reference=reference,
            chunks=chunks,
            scores=scores,
            reasons=tuple(reasons),
            priority=priority,
            status=record.status,
            error=error,
            attributes=attributes,
            conversation=conversation,
            tool_calls=kept_calls,
            llm_calls=max(0, int(record.llm_calls)),
        )

    def _conversation(
        self,
        conversation: Conversation | None,
        text: Callable[[object, int, str], str | None],
        cut: list[str],
    ) -> Conversation | None:
        """The conversation as the queue keeps it: ids and texts cut to the limits by ``text``
        (which notes what it cut in ``cut``; the texts were redacted before)."""
        if conversation is None:
            return None
        lim = self.limits
        history = conversation.history
        start = max(0, len(history) - lim.max_history_turns)
        kept = tuple(
            Turn(t.role, text(t.content, lim.max_turn_chars, f"history turn {start + i}") or "")
            for i, t in enumerate(history[start:])
        )
        if start:
            cut.append(f"history ({len(history)} > {lim.max_history_turns} turns)")
        return Conversation(
            session_id=text(conversation.session_id, lim.max_id_chars, "session id"),
            user_id=text(conversation.user_id, lim.max_id_chars, "user id"),
            turn=conversation.turn,
            history=kept,
            standalone_query=text(
                conversation.standalone_query, lim.max_text_chars, "standalone query"
            ),
        )

    def _clean_score(self, score: Score, policy: TextPolicy) -> Score:
        lim = self.limits
        return replace(
            score,
            explanation=policy.clean(score.explanation, lim.max_explanation_chars)[0],
            error=policy.clean(score.error, lim.max_explanation_chars)[0],
            details=_clean_json(score.details, policy, lim.max_details_chars),
        )

    def _redaction(self) -> Redaction:
        return self._redact if self._redact is not None else current_policy()

    def shutdown(self) -> None:
        """Close the store if this sink opened it (idempotent)."""
        if self._owns_store:
            self.store.close()


def from_config(config: Config, context: SinkContext) -> ReviewSink | None:
    """A ``ReviewSink`` on the store at ``Config.review_db`` (closed at shutdown), with the
    default rules and the instance's redaction policy; None without one.

    Raises:
        ConfigError: The store cannot be opened (a path that cannot be created, a refused
            connection), naming it and why.
        ImportError: PostgreSQL without psycopg, naming the package to install.
    """
    if not config.review_db:
        return None
    try:
        return ReviewSink(config.review_db, redact=context.redaction)
    except ImportError:
        raise
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        raise ConfigError([f"review_db: cannot open {config.review_db!r} ({why})"]) from None


def _redacted_conversation(
    conversation: Conversation | None, redacting: Redaction
) -> Conversation | None:
    """The conversation's texts through the policy: earlier turns, the standalone question
    and the user id (the session id is the key turns are grouped by: kept as captured, like
    trace ids)."""
    if conversation is None:
        return None
    return replace(
        conversation,
        user_id=redacting.optional(conversation.user_id),
        history=tuple(Turn(t.role, redacting.text(t.content)) for t in conversation.history),
        standalone_query=redacting.optional(conversation.standalone_query),
    )


def _clean_json(value: object, policy: TextPolicy, limit: int) -> dict[str, Any]:
    """A JSON-safe copy of a mapping (its strings cut by ``policy``), at most ``limit``
    characters as JSON."""
    if not isinstance(value, Mapping):
        return {}
    data = _strings(jsonable(dict(value)), lambda s: policy.clean(s, limit)[0])
    for max_str, max_items in ((1000, 50), (200, 10)):
        if len(_dumps(data)) <= limit:
            return data  # type: ignore[no-any-return]
        data = _strings(data, partial(_shorten, max_str), max_items)
    text = _dumps(data)
    if len(text) <= limit:
        return data  # type: ignore[no-any-return]
    return {"truncated": True, "preview": text[: max(0, limit - 40)]}


def _strings(value: Any, cut: Callable[[str], Any], max_items: int | None = None) -> Any:
    """``value`` with ``cut`` applied to every string in it, at any depth, and each mapping
    and list kept to its first ``max_items`` entries (None: all)."""
    if isinstance(value, str):
        return cut(value)
    if isinstance(value, dict):
        return {k: _strings(v, cut, max_items) for k, v in list(value.items())[:max_items]}
    if isinstance(value, list):
        return [_strings(v, cut, max_items) for v in value[:max_items]]
    return value


def _shorten(max_chars: int, text: str) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
