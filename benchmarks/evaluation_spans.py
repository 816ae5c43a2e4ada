"""Evaluation span volume: spans and OTLP bytes per request in each layout of
``OtelEvaluationSink`` (a span per score, per evaluator run, per record), beside the request's
own spans, for the default online suite.

The deterministic LangChain app of ``_overhead_apps.py`` answers ``--requests`` questions with
ragtrace capturing and the online suite (``ONLINE_SUITE``) evaluating every record; the
evaluations are kept and written again by each layout into an in-memory exporter. Sizes are
the protobuf ``ExportTraceServiceRequest`` a collector would receive.

Run::

    .venv/bin/python benchmarks/evaluation_spans.py            # 20 requests, about 1 minute

Prints a table and writes ``benchmarks/results/evaluation_spans.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _overhead_apps import apply_offline_env


def _memory_provider() -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def _size(spans: Any) -> int:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return int(encode_spans(spans).ByteSize()) if spans else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args(argv)
    apply_offline_env(os.environ)
    import _overhead_apps as apps
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace._exporters.otel import LAYOUTS, OtelEvaluationSink
    from ragtrace.evaluators._registry import ONLINE_SUITE
    from ragtrace.integrations.langchain import instrument

    provider, memory = _memory_provider()
    kept: list[tuple[Any, Any]] = []

    class Keep:
        def export(self, record: Any, evaluations: Any) -> None:
            kept.append((record, list(evaluations)))

        def shutdown(self) -> None:
            """Nothing to release."""

    rt = ragtrace.init(
        app="spans", tracer_provider=provider, registry=CollectorRegistry(),
        evaluators=ONLINE_SUITE, export_evaluation_spans=False, score_sinks=[Keep()],
    )  # fmt: skip
    instrument()
    chain = apps.build_langchain_chain()
    for n in range(args.requests):
        chain.invoke(f"{apps.query(n)} ({n})")
    rt.flush(timeout_s=300)
    rt.shutdown(timeout_s=30)
    request_spans = list(memory.get_finished_spans())
    n = len(kept)
    rows: dict[str, Any] = {
        "request": {"spans": len(request_spans) / n, "bytes": _size(request_spans) / n}
    }
    for layout in LAYOUTS:
        out, mem = _memory_provider()
        sink = OtelEvaluationSink(out.get_tracer("ragtrace"), layout)
        for record, evaluations in kept:
            sink.export(record, evaluations)
        spans = list(mem.get_finished_spans())
        rows[layout] = {"spans": len(spans) / n, "bytes": _size(spans) / n}
    scores = sum(len(e.scores) for _, evs in kept for e in evs) / n
    print(f"{n} requests, {len(ONLINE_SUITE)} evaluators, {scores:.1f} scores per request")
    print("spans of          | spans/request | OTLP bytes/request | vs per score")
    print("------------------|---------------|--------------------|-------------")
    base = rows["score"]
    for name, row in rows.items():
        ratio = ""
        if name != "request":
            ratio = f"{row['bytes'] / base['bytes']:.2f}x bytes, "
            ratio += f"{row['spans'] / base['spans']:.2f}x spans"
        label = "the request" if name == "request" else f"per {name}"
        print(f"{label:<17} | {row['spans']:>13.1f} | {row['bytes']:>18,.0f} | {ratio}")
    result = {
        "benchmark": "evaluation_spans",
        "command": ["evaluation_spans.py", *(argv or [])],
        "requests": n,
        "scores_per_request": scores,
        "rows": rows,
    }
    out_path = HERE / "results" / "evaluation_spans.json"
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
