"""ragtrace's own spans (written by ``ragtrace.capture``) to records.

They are OpenInference spans plus ``ragtrace.*`` attributes (``ragtrace.capture.semconv``), so
this mapper is the OpenInference one with four differences: a request begins only at a span
that carries ``ragtrace.app`` (the RAG root), the record's ``app`` is that attribute (the name
given to ``ragtrace.init``), each chunk's ``source`` is its retriever span's
``ragtrace.retrieval.source``, the status is ``ragtrace.request.status`` (``abandoned``,
``incomplete``) and the model the root's ``gen_ai.request.model``.
"""

from __future__ import annotations

from typing import cast, get_args

from ragtrace.capture import semconv as sc
from ragtrace.ingest.mappers import common as cm
from ragtrace.ingest.mappers.openinference import OpenInferenceMapper
from ragtrace.ingest.spans import IngestSpan, TraceView
from ragtrace.model import RequestStatus

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
