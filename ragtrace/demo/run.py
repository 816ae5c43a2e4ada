"""``ragtrace demo``: drive the demo app's questions through ragtrace and show what it captured."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TextIO

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace.model import RagRecord


@dataclass(frozen=True)
class DemoOptions:
    requests: int = 28
    stream_every: int = 5
    abandon_every: int = 9
    otlp_endpoint: str | None = None
    as_json: bool = False


def _provider(options: DemoOptions) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if options.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        endpoint = options.otlp_endpoint.rstrip("/") + "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider, exporter


def run_demo(options: DemoOptions, out: TextIO) -> list[RagRecord]:
    """Run the demo and print one line per request and a summary; returns the records."""
    from ragtrace.demo.app import QUESTIONS, build_chain
    from ragtrace.integrations.langchain import instrument, uninstrument

    provider, exporter = _provider(options)
    rt = ragtrace.init(app="aurora-help", tracer_provider=provider, registry=CollectorRegistry())
    records: list[RagRecord] = []
    rt.add_record_sink(records.append)
    instrument(rt)
    chain = build_chain()
    started = time.perf_counter()
    try:
        for i in range(options.requests):
            question = QUESTIONS[i % len(QUESTIONS)]
            if options.abandon_every and i % options.abandon_every == options.abandon_every - 1:
                stream = iter(chain.stream(question))
                next(stream)
                close = getattr(stream, "close", None)
                if callable(close):
                    close()  # the user closed the tab mid-answer
            elif options.stream_every and i % options.stream_every == options.stream_every - 1:
                "".join(chain.stream(question))
            else:
                chain.invoke(question)
            if not options.as_json:
                _print_record(out, i + 1, records[-1])
    finally:
        uninstrument()
        rt.flush()
        elapsed = time.perf_counter() - started
        spans = exporter.get_finished_spans()
        rt.shutdown()
    if options.as_json:
        for record in records:
            out.write(json.dumps(_record_json(record)) + "\n")
    else:
        _print_summary(out, records, len(spans), _attribute_bytes(spans), elapsed)
    return records


def _print_record(out: TextIO, n: int, record: RagRecord) -> None:
    top = record.chunks[0] if record.chunks else None
    top_text = f"{top.id} ({top.score:.2f})" if top and top.score is not None else "-"
    answer = (record.response or "").replace("\n", " ")
    if len(answer) > 70:
        answer = answer[:67] + "..."
    out.write(
        f"{n:>3} {record.status:<9} {record.trace_id[:12]}  chunks={len(record.chunks)} "
        f"top={top_text:<18} {record.query}\n      -> {answer}\n"
    )


def _attribute_bytes(spans: object) -> int:
    total = 0
    for span in spans:  # type: ignore[attr-defined]
        for value in (span.attributes or {}).values():
            total += len(value.encode()) if isinstance(value, str) else 8
    return total


def _print_summary(
    out: TextIO, records: list[RagRecord], n_spans: int, n_bytes: int, elapsed: float
) -> None:
    by_status: dict[str, int] = {}
    for record in records:
        by_status[record.status] = by_status.get(record.status, 0) + 1
    n = max(1, len(records))
    out.write(
        "\nragtrace demo: {} requests traced in {:.2f} s ({}), {} spans ({:.1f} per request), "
        "{:.0f} bytes of span attributes per request.\n".format(
            len(records),
            elapsed,
            ", ".join(f"{k}={v}" for k, v in sorted(by_status.items())),
            n_spans,
            n_spans / n,
            n_bytes / n,
        )
    )
    out.write(
        "Each request became one RagRecord (query, chunks with ids and scores, answer); "
        "the online evaluators score these records.\n"
    )


def _record_json(record: RagRecord) -> dict[str, object]:
    return {
        "trace_id": record.trace_id,
        "status": record.status,
        "query": record.query,
        "response": record.response,
        "chunks": [{"id": c.id, "score": c.score} for c in record.chunks],
        "model": record.model,
    }
