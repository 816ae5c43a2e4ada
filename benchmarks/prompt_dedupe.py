"""What the prompt dedupe saves: span bytes per request with ``dedupe_prompt_chunks`` on and off.

The dedupe replaces chunk text repeated in an LLM prompt by ``[ragtrace.chunk:N]``, so the
text travels once per trace (on the retriever span). It is off by default: a prompt with
references replays without its context in a trace UI's playground. This measures the price of
that choice on two apps: the overhead benchmark's LangChain app (four ~500-character chunks)
and the demo's help-centre chain (short articles). For each: spans, attributes and attribute
bytes per request (UTF-8 text, 8 bytes a number), and OTLP/protobuf bytes per request::

    .venv/bin/python benchmarks/prompt_dedupe.py            # 200 requests per app, ~10 s

Prints a table and writes ``benchmarks/results/prompt_dedupe.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def measure(app: str, dedupe: bool, requests: int) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace.integrations.langchain import RagtraceCallbackHandler

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    rt = ragtrace.init(
        app=app,
        tracer_provider=provider,
        registry=CollectorRegistry(),
        evaluators=[],
        dedupe_prompt_chunks=dedupe,
    )
    config: Any = {"callbacks": [RagtraceCallbackHandler(rt)]}
    try:
        if app == "overhead-app":
            from _overhead_apps import build_langchain_chain, query

            chain = build_langchain_chain()
            for i in range(requests):
                chain.invoke(query(i), config=config)
        else:
            from ragtrace.demo.app import build_chain
            from ragtrace.demo.corpus import QUESTIONS

            chain = build_chain(seed=1)
            for i in range(requests):
                with contextlib.suppress(Exception):  # the demo model fails now and then
                    chain.invoke(QUESTIONS[i % len(QUESTIONS)], config=config)
    finally:
        rt.shutdown()
    spans = memory.get_finished_spans()
    attrs = [v for s in spans for v in (s.attributes or {}).values()]
    size = sum(len(v.encode()) if isinstance(v, str) else 8 for v in attrs)
    return {
        "app": app,
        "dedupe": dedupe,
        "spans_per_request": len(spans) / requests,
        "attributes_per_request": len(attrs) / requests,
        "attribute_bytes_per_request": size / requests,
        "otlp_bytes_per_request": len(encode_spans(spans).SerializeToString()) / requests,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    rows = [
        measure(app, dedupe, args.requests)
        for app in ("overhead-app", "demo")
        for dedupe in (False, True)
    ]
    print(f"{'app':<14}{'dedupe':<8}{'spans':>7}{'attrs':>8}{'attr bytes':>12}{'OTLP bytes':>12}")
    for r in rows:
        print(
            f"{r['app']:<14}{'on' if r['dedupe'] else 'off':<8}{r['spans_per_request']:>7.1f}"
            f"{r['attributes_per_request']:>8.1f}{r['attribute_bytes_per_request']:>12,.0f}"
            f"{r['otlp_bytes_per_request']:>12,.0f}"
        )
    out = HERE / "results" / "prompt_dedupe.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "prompt_dedupe", "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
