"""A RAG app instrumented by a peer's real instrumentation, exporting OTLP/HTTP: run it in the
peers' environment (``.venv-bench``, see ``requirements/peers.txt``)::

    .venv-bench/bin/python tests/ingest/peer_app.py --instrumentation openinference \\
        --framework langchain --endpoint http://127.0.0.1:4318/v1/traces --requests 3

The app is the deterministic LangChain chain or LlamaIndex engine of ``benchmarks/``. The chosen
instrumentation (``openinference``, ``openllmetry`` or ``ragtrace``) exports to ``--endpoint``;
ragtrace's own capture watches the same requests on a provider that exports nothing (unless it
is the chosen one) and its records are printed as JSON lines: what ``ragtrace ingest`` must
rebuild from the exported spans.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

INSTRUMENTATIONS = ("openinference", "openllmetry", "ragtrace")
FRAMEWORKS = ("langchain", "llama_index")


def record_json(record: Any) -> dict[str, Any]:
    """The fields of a ``RagRecord`` that the rebuilt record is compared on, as JSON."""
    return {
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "app": record.app,
        "query": record.query,
        "response": record.response,
        "model": record.model,
        "status": record.status,
        "error": record.error,
        "chunks": [
            {
                "id": c.id,
                "score": c.score,
                "text": c.text,
                "source": c.source,
                "metadata": dict(c.metadata),
            }
            for c in record.chunks
        ],
    }


def exporting_provider(endpoint: str | None, service: str) -> Any:
    """An SDK provider with ``service.name`` that exports OTLP/HTTP to ``endpoint`` (or keeps
    the spans in memory when ``endpoint`` is None; ``provider.memory`` holds them)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if endpoint is None:
        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        provider.memory = memory  # type: ignore[attr-defined]
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def instrumented_app(
    instrumentation: str, framework: str, provider: Any, app: str = "peer-app"
) -> tuple[Any, list[Any]]:
    """The app with ``instrumentation`` exporting through ``provider`` and ragtrace (as
    ``app``) capturing the same requests; returns ``(ask, records)`` where ``ask(question)``
    runs one request and ``records`` collects ragtrace's records. Instrumentors patch the
    frameworks globally: one call per process."""
    from _overhead_apps import apply_offline_env
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from prometheus_client import CollectorRegistry

    import ragtrace

    apply_offline_env(os.environ)
    trace.set_tracer_provider(provider)
    if instrumentation != "ragtrace":
        from _overhead_apps import _load

        _load(instrumentation, framework)().instrument(tracer_provider=provider)
    own = provider if instrumentation == "ragtrace" else TracerProvider()
    rt = ragtrace.init(app=app, tracer_provider=own, registry=CollectorRegistry(), evaluators=())
    records: list[Any] = []
    rt.add_record_sink(records.append)
    import _overhead_apps as apps

    if framework == "langchain":
        from ragtrace.integrations.langchain import instrument

        instrument()
        chain = apps.build_langchain_chain()
        return chain.invoke, records
    from ragtrace.integrations.llama_index import instrument as instrument_li

    instrument_li()
    engine = apps.build_llama_index_engine()
    return engine.query, records


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instrumentation", choices=INSTRUMENTATIONS, required=True)
    parser.add_argument("--framework", choices=FRAMEWORKS, required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--service", default="peer-app")
    args = parser.parse_args()
    import _overhead_apps as apps

    provider = exporting_provider(args.endpoint, args.service)
    ask, records = instrumented_app(args.instrumentation, args.framework, provider)
    for n in range(args.requests):
        ask(apps.query(n))
    if not provider.force_flush(30_000):
        print("export did not finish", file=sys.stderr)
        return 1
    provider.shutdown()
    for record in records:
        print(json.dumps(record_json(record)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
