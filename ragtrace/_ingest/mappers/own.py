"""ragtrace's own spans (written by ``ragtrace._capture``) to records.

They are OpenInference spans plus ``ragtrace.*`` attributes (``ragtrace._semconv``), so
this mapper is the OpenInference one with these differences: a request begins only at a span
that carries ``ragtrace.app`` (the RAG root), the record's ``app`` is that attribute (the name
given to ``ragtrace.init``), each chunk's ``source`` is its retriever span's
``ragtrace.retrieval.source``, the status is ``ragtrace.request.status`` (``abandoned``,
``incomplete``) and the model the root's ``gen_ai.request.model``.

An agent's turn (the root an AGENT span) has its TOOL spans (``gen_ai.tool.call.id``,
``gen_ai.tool.call.arguments``) and RETRIEVER spans under them, read as for OpenInference;
``llm_calls`` is the root's ``ragtrace.agent.llm_calls``. The conversation's ids are the
root's ``session.id`` / ``user.id``, its turn ``ragtrace.conversation.turn``, its rewritten
question ``ragtrace.conversation.standalone_query``. The earlier turns are not on the spans
as such: the root says how many there were (``ragtrace.conversation.history_turns``) and they
are taken from the first LLM call's prompt (``llm.input_messages``: the user and assistant
messages with text before the last user message), only when it shows that many.
"""

from __future__ import annotations

from typing import cast, get_args

from ragtrace import _semconv as sc
from ragtrace._ingest.mappers import agents as ag
from ragtrace._ingest.mappers import common as cm
from ragtrace._ingest.mappers import messages as msg
from ragtrace._ingest.mappers.openinference import OpenInferenceMapper, messages
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._model import Chunk, Conversation, RequestStatus, Turn, with_used

_STATUSES = frozenset(get_args(RequestStatus))
_OWN_PREFIX = "ragtrace."


def is_own(span: IngestSpan) -> bool:
    """True for a span ragtrace's capture wrote (its scope, or a ``ragtrace.*`` attribute)."""
    if span.scope == "ragtrace":
        return True
    return any(isinstance(k, str) and k.startswith(_OWN_PREFIX) for k in span.attributes)


class RagtraceMapper(OpenInferenceMapper):
    """Maps traces written by ragtrace's own capture; see the module docstring."""

    convention = "ragtrace"

    def detects(self, view: TraceView) -> bool:
        return any(s.text(sc.RAGTRACE_APP) for s in view.spans)

    def is_request_span(self, span: IngestSpan) -> bool:
        return span.text(sc.RAGTRACE_APP) is not None or (
            is_own(span) and super().is_request_span(span)
        )

    def _source(self, span: IngestSpan) -> str | None:
        return cm.text(span.attributes.get(sc.RAGTRACE_CHUNK_SOURCE)) or super()._source(span)

    def _app(self, root: IngestSpan) -> str | None:
        return cm.text(root.attributes.get(sc.RAGTRACE_APP))

    def _status(self, root: IngestSpan) -> RequestStatus | None:
        value = root.attributes.get(sc.RAGTRACE_STATUS)
        if isinstance(value, str) and value in _STATUSES and value != "error":
            return cast(RequestStatus, value)
        return None

    def _root_model(self, root: IngestSpan) -> str | None:
        return cm.model_name(root.attributes.get(sc.GEN_AI_REQUEST_MODEL))

    def _llm_calls(self, root: IngestSpan, llms: list[IngestSpan]) -> int:
        count = _count(root, sc.RAGTRACE_LLM_CALLS)
        return count if count is not None else len(llms)

    def _used(
        self,
        root: IngestSpan,
        retrievers: list[IngestSpan],
        llms: list[IngestSpan],
        chunks: list[Chunk],
        response: str | None,
    ) -> list[Chunk]:
        """What capture decided (``ragtrace.context.used``/``unused`` on the root: places in
        its record's chunks): its LLM spans may show chunks as references
        (``dedupe_prompt_chunks``), not as text. Not known when a retriever span left chunks
        off (``ragtrace.retrieval.documents_omitted``): the places would name others."""
        used = _places(root, sc.RAGTRACE_CONTEXT_USED)
        unused = _places(root, sc.RAGTRACE_CONTEXT_UNUSED)
        if used is None or unused is None or len(used | unused) > len(chunks):
            return chunks
        if any(_count(s, sc.RAGTRACE_DOCUMENTS_OMITTED) for s in retrievers):
            return chunks
        flags = [True if i in used else False if i in unused else None for i in range(len(chunks))]
        return list(with_used(chunks, flags))

    def _conversation(
        self,
        root: IngestSpan,
        llms: list[IngestSpan],
        ids: ag.Ids,
        history: ag.History | None,
        standalone: str | None,
    ) -> Conversation | None:
        earlier: tuple[Turn, ...] = ()
        shown = _count(root, sc.RAGTRACE_HISTORY_TURNS)
        if shown and llms:
            found = msg.earlier_turns(
                [(r or "", c, False) for r, c in messages(llms[0], sc.LLM_INPUT_MESSAGES)]
            )
            if found is not None and len(found[0]) >= shown:
                earlier = found[0][-shown:]
        turn = _count(root, sc.RAGTRACE_TURN)
        return ag.conversation(
            ids,
            None if turn is None and not earlier else (earlier, turn or 0),
            standalone_query=cm.text(root.attributes.get(sc.RAGTRACE_STANDALONE_QUERY)),
        )


def _places(span: IngestSpan, key: str) -> frozenset[int] | None:
    """A list of chunk places (non-negative ints) on ``span``, or None when absent or odd."""
    value = span.attributes.get(key)
    if not isinstance(value, list | tuple):
        return None
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
        return None
    return frozenset(value)


def _count(span: IngestSpan, key: str) -> int | None:
    value = span.attributes.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
