"""Helpers every mapper shares: finding requests in a trace, reading odd values, making chunks.

A request is the outermost span of a convention (a span of the convention with no ancestor of
the convention): an HTTP server span above it is skipped, two chain invocations under one HTTP
span give two requests. When the request's own span never arrived, its parts (a retriever and an
LLM call, each with nothing of the convention beneath it) hang under one parent that is not in
the trace: they are mapped together as one request under a stand-in for the lost span (its id,
the parts' times and service), and the record is marked ``incomplete``; so is a request whose
parent was lost inside a trace that has its root (part of a trace split across replicas). Values
are read defensively: attributes may have the wrong type, JSON may be broken or huge, so every
reader returns None (or an empty result) instead of raising::

    for root in request_roots(view, is_mine):
        spans = request_spans(view, root)
        query = find_text(parse_json(root.text("input.value")), QUERY_KEYS)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragtrace._config import Config
from ragtrace._ingest.mappers import messages as msg
from ragtrace._ingest.mappers.base import MappedRecord, RequestsFailed, parse_json
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._model import Chunk
from ragtrace._text import as_score, safe_metadata, short_text

_DEFAULTS = Config()
# Keys that hold the user's query in a dict input: ragtrace's own (Config.query_keys) first, then
# LlamaIndex's argument names (a QueryBundle's query_str, retrieve()/query() arguments).
QUERY_KEYS: tuple[str, ...] = (
    *_DEFAULTS.query_keys,
    "query_str",
    "query_bundle",
    "str_or_query_bundle",
)
# Keys that hold the answer in a dict output: ragtrace's own (Config.answer_keys) first.
ANSWER_KEYS: tuple[str, ...] = (*_DEFAULTS.answer_keys, "content")
CHUNK_ID_KEYS = _DEFAULTS.chunk_id_keys
CHUNK_SCORE_KEYS = _DEFAULTS.chunk_score_keys
MAX_TEXT_CHARS = 1 << 20  # longest query, answer or chunk text kept (1 MiB of characters)
MAX_DOCUMENTS = 1000  # most documents read from one span
MAX_SPANS_PER_REQUEST = 10000
_MAX_DEPTH = 8
UNKNOWN_MODEL = "unknown"
RETRIEVAL_DOCUMENTS_ATTR = "ragtrace.retrieval.documents"
"""Record attribute: ids and scores of retrieved documents whose text was not captured."""


def map_requests(
    view: TraceView,
    is_request: Callable[[IngestSpan], bool],
    map_one: Callable[[TraceView, IngestSpan], MappedRecord | None],
) -> list[MappedRecord]:
    """``map_one`` over every request root of the trace, in order.

    Raises:
        RequestsFailed: ``map_one`` raised for some request; it carries the records of the
            others, so one odd request never costs the rest of the trace.
    """
    out: list[MappedRecord] = []
    errors: list[BaseException] = []
    for root, request_view in _requests(view, is_request):
        try:
            mapped = map_one(request_view, root)
        except Exception as exc:
            errors.append(exc)
            continue
        if mapped is not None:
            out.append(_incomplete(mapped) if request_view is not view else mapped)
    if errors:
        raise RequestsFailed(out, errors)
    return out


def _requests(
    view: TraceView, is_request: Callable[[IngestSpan], bool]
) -> list[tuple[IngestSpan, TraceView]]:
    """Each request's root and the view to map it in: the trace's own, or, for the parts of a
    request whose span never arrived, the trace with a stand-in for that span."""
    roots = request_roots(view, is_request)
    rooted = any(s.is_root for s in view.spans)
    parts: dict[str, list[IngestSpan]] = {}
    orphaned: set[str] = set()  # requests whose parent was lost in a trace that has its root
    for root in roots:
        parent = root.parent_span_id
        if parent is None or root.parent_remote or view.get(parent) is not None:
            continue
        if rooted:
            orphaned.add(root.span_id)
        elif not any(_safe(is_request, d) for d in view.descendants(root)):
            parts.setdefault(parent, []).append(root)
    out: list[tuple[IngestSpan, TraceView]] = []
    merged: set[str] = set()
    for root in roots:
        group = parts.get(root.parent_span_id or "", [])
        if root.span_id in orphaned:  # mapped alone, in a view of its own: marked incomplete
            out.append((root, TraceView(view.spans)))
        elif len(group) < 2:
            out.append((root, view))
        elif root.parent_span_id not in merged:
            merged.add(root.parent_span_id or "")
            stand_in = _stand_in(root.parent_span_id or "", group)
            out.append((stand_in, TraceView([*view.spans, stand_in])))
    return out


def _stand_in(span_id: str, parts: Sequence[IngestSpan]) -> IngestSpan:
    """A span in place of a request's lost one: its id, its parts' times and resource."""
    first = parts[0]
    return IngestSpan(
        trace_id=first.trace_id,
        span_id=span_id,
        parent_span_id=None,
        name="",
        start_ns=min(p.start_ns for p in parts),
        end_ns=max(p.end_ns for p in parts),
        resource=first.resource,
    )


def _incomplete(mapped: MappedRecord) -> MappedRecord:
    """``mapped`` as rebuilt without its root: marked ``incomplete`` (unless it failed:
    ``error`` stays)."""
    record = mapped.record
    if record.status != "error":
        record = replace(record, status="incomplete")
    return MappedRecord(record, mapped.convention, mapped.missing, root_lost=True)


def request_roots(view: TraceView, is_mine: Callable[[IngestSpan], bool]) -> list[IngestSpan]:
    """The outermost spans of a convention, oldest first (cycle-safe)."""
    roots = []
    for span in view.spans:
        if _safe(is_mine, span) and not any(_safe(is_mine, a) for a in view.ancestors(span)):
            if view.get(span.parent_span_id) is not None and _in_cycle(view, span):
                continue
            roots.append(span)
    return roots


def _in_cycle(view: TraceView, span: IngestSpan) -> bool:
    """True when following parents from ``span`` comes back to a span already passed."""
    seen = {span.span_id}
    current = view.parent(span)
    while current is not None:
        if current.span_id in seen:
            return True
        seen.add(current.span_id)
        current = view.parent(current)
    return False


def _safe(check: Callable[[IngestSpan], bool], span: IngestSpan) -> bool:
    try:
        return bool(check(span))
    except Exception:
        return False


def request_spans(view: TraceView, root: IngestSpan) -> list[IngestSpan]:
    """``root`` and every span under it, in start-time order (bounded)."""
    spans = [root]
    for span in view.descendants(root):
        if len(spans) >= MAX_SPANS_PER_REQUEST:
            break
        spans.append(span)
    return sorted(spans, key=lambda s: (s.start_ns, s.end_ns))


def outermost(view: TraceView, spans: Sequence[IngestSpan]) -> list[IngestSpan]:
    """The spans of ``spans`` that have no ancestor in ``spans`` (nested retrievers count once)."""
    ids = {s.span_id for s in spans}
    return [s for s in spans if not any(a.span_id in ids for a in view.ancestors(s))]


def text(value: Any) -> str | None:
    """``value`` if it is a non-empty string (cut to ``MAX_TEXT_CHARS``), else None."""
    if isinstance(value, str) and value:
        return value[:MAX_TEXT_CHARS]
    return None


def json_value(span: IngestSpan, key: str) -> Any:
    """The attribute ``key`` parsed as JSON (None if absent, not a string or not JSON)."""
    return parse_json(span.text(key))


def find_text(
    value: Any,
    keys: Sequence[str],
    depth: int = 0,
    from_messages: Callable[[list[msg.Message] | None], str | None] = msg.last_user_text,
) -> str | None:
    """The first text found in ``value``: a string itself, else the first of ``keys`` in a dict
    (looked into when it holds a dict, e.g. ``query_bundle.query_str``), else what
    ``from_messages`` reads in a message list (the value itself, or a dict's ``messages``)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        for key in keys:
            found = value.get(key)
            if found is None or found == "":
                continue
            if isinstance(found, str):
                return text(found)
            if isinstance(found, Mapping | list):
                result = find_text(found, keys, depth + 1, from_messages)
                if result is not None:
                    return result
        if isinstance(value.get("messages"), list):
            return from_messages(msg.messages_of(value))
        return None
    if isinstance(value, list):
        return from_messages(msg.messages_of(value))
    return None


def find_query(value: Any) -> str | None:
    """The user's query in a parsed input: ``QUERY_KEYS``, else the last user message."""
    return find_text(value, QUERY_KEYS, from_messages=msg.last_user_text)


def find_answer(value: Any) -> str | None:
    """The answer in a parsed output: ``ANSWER_KEYS``, else the last message when it is the
    assistant's and calls no tool."""
    return find_text(value, ANSWER_KEYS, from_messages=msg.final_answer)


def last_user_text(messages: Any) -> str | None:
    """Text of the last user message of a message list (any form ``messages`` reads)."""
    return msg.last_user_text(msg.messages_of(messages))


def content_text(content: Any) -> str | None:
    """A message content as text: a string, or the joined text parts of a part list."""
    return msg.content_text(content)


def model_name(value: Any) -> str | None:
    """A model name, or None for a missing one or the placeholder ``unknown``."""
    name = short_text(value) if isinstance(value, str) else None
    return name if name and name.strip().lower() != UNKNOWN_MODEL else None


def make_chunk(
    content: Any,
    doc_id: Any = None,
    score: Any = None,
    metadata: Any = None,
    source: str | None = None,
) -> Chunk | None:
    """A ``Chunk`` as ragtrace's capture builds it: the id, else the first of
    ``Config.chunk_id_keys`` in the metadata; the score, else the first of
    ``Config.chunk_score_keys``. None when there is no text (evaluators would score nothing)."""
    body = text(content)
    if body is None:
        return None
    meta = metadata_dict(metadata)
    return Chunk(
        body,
        id=chunk_id(doc_id, meta),
        score=chunk_score(score, meta),
        metadata=meta,
        source=source,
    )


def metadata_dict(value: Any) -> dict[str, Any]:
    """Chunk metadata from a dict or a JSON string of one ({} otherwise)."""
    if isinstance(value, str):
        value = parse_json(value[:MAX_TEXT_CHARS])
    return safe_metadata(value)


def chunk_id(doc_id: Any, metadata: Mapping[str, Any]) -> str | None:
    """A document id as text, else the first of ``Config.chunk_id_keys`` in the metadata."""
    if isinstance(doc_id, str | int) and not isinstance(doc_id, bool) and doc_id != "":
        return short_text(doc_id)
    for key in CHUNK_ID_KEYS:
        value = metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return short_text(value)
    return None


def chunk_score(score: Any, metadata: Mapping[str, Any]) -> float | None:
    """A finite score, else the first of ``Config.chunk_score_keys`` in the metadata."""
    found = as_score(score) if isinstance(score, int | float) else None
    if found is not None:
        return found
    for key in CHUNK_SCORE_KEYS:
        value = metadata.get(key)
        found = as_score(value) if isinstance(value, int | float) else None
        if found is not None:
            return found
    return None


_INDEXED = re.compile(r"^(\d{1,6})\.(.+)$")


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened list attributes (``prefix.N.field``) as a list of dicts in index order."""
    items: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not isinstance(key, str) or not key.startswith(start):
            continue
        match = _INDEXED.match(key[len(start) :])
        if match is None:
            continue
        index = int(match.group(1))
        if index < MAX_DOCUMENTS:
            items.setdefault(index, {})[match.group(2)] = value
    return [items[i] for i in sorted(items)]


def last_found(spans: Sequence[IngestSpan], read: Callable[[IngestSpan], Any]) -> Any:
    """What ``read`` finds in the last span where it finds anything (None if it finds nothing
    in any): the answer or the model of a request's last LLM call, say."""
    return next((found for found in map(read, reversed(spans)) if found is not None), None)


def span_source(span: IngestSpan, name: str | None = None) -> str | None:
    """The retriever's name for ``Chunk.source``: ``name`` or the span's, less a LlamaIndex
    method suffix (``FixedRetriever.retrieve`` -> ``FixedRetriever``), as ragtrace names it."""
    name = name or span.name
    for suffix in (".retrieve", ".aretrieve", "._retrieve", "._aretrieve", ".task"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name or None
