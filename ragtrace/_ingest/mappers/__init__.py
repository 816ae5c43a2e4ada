"""Mappers from one assembled trace to ``RagRecord``s, one per instrumentation convention.

``select(view)`` picks the first mapper in ``MAPPERS`` that detects its convention in the
trace (ragtrace's own spans, then OpenInference, OpenLLMetry, OpenTelemetry GenAI: the more
specific conventions first, since ragtrace's spans are OpenInference spans too and OpenLLMetry
writes ``gen_ai.*`` attributes); ``map_trace(view)`` maps with it::

    for mapped in map_trace(TraceView(spans)):
        pipeline.submit(mapped.record)
"""

from __future__ import annotations

from ragtrace._ingest.mappers.base import MappedRecord, Mapper, RequestsFailed
from ragtrace._ingest.mappers.genai import GenAIMapper
from ragtrace._ingest.mappers.openinference import OpenInferenceMapper
from ragtrace._ingest.mappers.openllmetry import OpenLLMetryMapper
from ragtrace._ingest.mappers.own import RagtraceMapper
from ragtrace._ingest.spans import TraceView

MAPPERS: tuple[Mapper, ...] = (
    RagtraceMapper(),
    OpenInferenceMapper(),
    OpenLLMetryMapper(),
    GenAIMapper(),
)


def select(view: TraceView) -> Mapper | None:
    """The first mapper of ``MAPPERS`` that detects its convention in ``view``, or None."""
    for mapper in MAPPERS:
        try:
            if mapper.detects(view):
                return mapper
        except Exception:  # detection never raises on odd input
            continue
    return None


def map_trace(view: TraceView) -> list[MappedRecord]:
    """Records of ``view`` by the mapper ``select`` picks (empty if none fits or it fails)."""
    mapper = select(view)
    if mapper is None:
        return []
    try:
        return mapper.map(view)
    except RequestsFailed as failed:
        return failed.records
    except Exception:
        return []


__all__ = ["MAPPERS", "MappedRecord", "Mapper", "RequestsFailed", "map_trace", "select"]
