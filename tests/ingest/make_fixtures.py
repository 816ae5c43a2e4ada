"""Write the mapper fixtures: spans from the REAL instrumentations, and ragtrace's own record.

Run in the benchmark environment, which has the peers installed::

    .venv-bench/bin/python tests/ingest/make_fixtures.py            # every fixture
    .venv-bench/bin/python tests/ingest/make_fixtures.py openinference langchain

For each instrumentation (``openinference``, ``openllmetry``, ``ragtrace``) and framework
(``langchain``, ``llama_index``) a fresh process builds the deterministic app of
``benchmarks/_overhead_apps.py``, turns on that instrumentation AND ragtrace's own capture in the
same process, answers one query, and writes

- ``fixtures/<instr>_<framework>.json``: the instrumentation's finished spans as one OTLP/JSON
  ``ExportTraceServiceRequest`` (hex trace and span ids, as the OTLP specification writes them);
- ``fixtures/<instr>_<framework>.expected.json``: the ``RagRecord`` ragtrace's own handler
  captured for the same request.

The peer and ragtrace export to two separate tracer providers, so a peer's fixture holds only
the peer's spans (what a Collector would receive from an app instrumented with it alone).

OpenTelemetry GenAI: no instrumentation on PyPI emits GenAI retrieval spans for LangChain or
LlamaIndex (Traceloop's package holds the ``opentelemetry-instrumentation-langchain`` name and
writes its own attributes). The GenAI fixtures come from the official emitter the
opentelemetry-python-contrib instrumentations share, ``opentelemetry-util-genai``, driven by a
small harness with the benchmark app's query, chunks and answer; run it in a throwaway venv::

    python -m venv /tmp/genai-venv
    /tmp/genai-venv/bin/pip install opentelemetry-util-genai opentelemetry-sdk \
        opentelemetry-exporter-otlp-proto-common
    /tmp/genai-venv/bin/python tests/ingest/make_fixtures.py genai

It writes ``genai_utilgenai_content.json`` (content captured on spans, ``SPAN_ONLY``) and
``genai_utilgenai_nocontent.json`` (the default: no content), each with its ``.expected.json``
built from the app's constants (there is no ragtrace capture in that process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
INSTRUMENTATIONS = ("openinference", "openllmetry", "ragtrace")
FRAMEWORKS = ("langchain", "llama_index")
SERVICE_NAME = "shop-assistant"
RAGTRACE_APP = "shop"


def otlp_json(spans: Any) -> dict[str, Any]:
    """Finished SDK spans as an OTLP/JSON export request with hex ids."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message = encode_spans(spans)
    data = json_format.MessageToDict(message, use_integers_for_enums=True)
    from tests.ingest.otlp_bodies import hex_ids

    return hex_ids(data)


def run_one(instr: str, framework: str) -> None:
    """Produce one fixture pair in this process (instrumentors patch globally: one per process)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import _overhead_apps as apps
    from tests.ingest.peer_app import exporting_provider, instrumented_app

    provider = exporting_provider(None, SERVICE_NAME)
    ask, records = instrumented_app(instr, framework, provider, app=RAGTRACE_APP)
    answer = str(ask(apps.query(0)))
    provider.force_flush()
    assert answer == apps.ANSWER, answer
    assert len(records) == 1, records
    spans = provider.memory.get_finished_spans()
    assert spans, f"{instr}/{framework}: no spans"
    FIXTURES.mkdir(exist_ok=True)
    stem = FIXTURES / f"{instr}_{framework}"
    body = json.dumps(otlp_json(spans), indent=1, ensure_ascii=False)
    stem.with_suffix(".json").write_text(body + "\n", encoding="utf-8")
    from tests.ingest.peer_app import record_json

    expected = json.dumps(record_json(records[0]), indent=1, ensure_ascii=False)
    Path(f"{stem}.expected.json").write_text(expected + "\n", encoding="utf-8")
    print(f"{stem.name}.json: {len(spans)} spans, {len(body) // 1024} KiB")


def run_genai(content: bool) -> None:
    """GenAI spans from ``opentelemetry-util-genai``: workflow > retrieval, inference."""
    sys.path.insert(0, str(ROOT))
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    mode = "SPAN_ONLY" if content else "NO_CONTENT"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = mode
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import (
        InputMessage,
        OutputMessage,
        RetrievalDocument,
        TextPart,
    )

    from benchmarks import _overhead_apps as apps
    from tests.ingest.peer_app import exporting_provider

    provider = exporting_provider(None, SERVICE_NAME)
    exporter = provider.memory
    handler = TelemetryHandler(tracer_provider=provider)
    question = apps.query(0)
    context = "\n\n".join(c.text for c in apps.CHUNKS)
    with handler.workflow("rag") as workflow:
        workflow.input_messages = [InputMessage("user", [TextPart(question)])]
        with handler.retrieval(data_source_id="handbook", provider="bench") as retrieval:
            retrieval.query_text = question
            retrieval.documents = [RetrievalDocument(c.id, c.score) for c in apps.CHUNKS]
        with handler.inference("bench", request_model="bench-fixed") as llm:
            llm.system_instruction = [TextPart(f"Answer using only this context.\n\n{context}")]
            llm.input_messages = [InputMessage("user", [TextPart(question)])]
            llm.output_messages = [OutputMessage("assistant", [TextPart(apps.ANSWER)], "stop")]
            llm.response_model_name = "bench-fixed"
        workflow.output_messages = [OutputMessage("assistant", [TextPart(apps.ANSWER)], "stop")]
    provider.force_flush()
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.parent is None)
    expected = {
        "trace_id": f"{root.context.trace_id:032x}",
        "span_id": f"{root.context.span_id:016x}",
        "app": SERVICE_NAME,
        "query": question if content else None,
        "response": apps.ANSWER if content else None,
        "model": "bench-fixed",
        "status": "ok",
        "error": None,
        "chunks": [],
        "documents": [{"id": c.id, "score": c.score} for c in apps.CHUNKS] if content else [],
    }
    stem = FIXTURES / f"genai_utilgenai_{'content' if content else 'nocontent'}"
    FIXTURES.mkdir(exist_ok=True)
    body = json.dumps(otlp_json(spans), indent=1, ensure_ascii=False)
    stem.with_suffix(".json").write_text(body + "\n", encoding="utf-8")
    Path(f"{stem}.expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(f"{stem.name}.json: {len(spans)} spans, {len(body) // 1024} KiB")


def main(argv: list[str]) -> int:
    if argv == ["genai"]:
        for content in (True, False):
            done = subprocess.run([sys.executable, __file__, "genai", str(content)], check=False)
            if done.returncode:
                return 1
        return 0
    if len(argv) == 2 and argv[0] == "genai":
        run_genai(argv[1] == "True")
        return 0
    if len(argv) == 2:
        run_one(argv[0], argv[1])
        return 0
    failed = 0
    for instr in INSTRUMENTATIONS:
        for framework in FRAMEWORKS:
            done = subprocess.run([sys.executable, __file__, instr, framework], check=False)
            failed += done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
