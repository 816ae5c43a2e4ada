"""``ragtrace ingest``: spans and traces per core, memory per open trace, delay to scores, and
the in-process capture path's cost for the same requests, in one run.

The workload is a real trace: the spans OpenInference's LangChain instrumentation exported for
one request of the deterministic RAG chain (``tests/ingest/fixtures/openinference_langchain.json``,
written by ``tests/ingest/make_fixtures.py``), copied with fresh trace ids.

1. Core: decode (protobuf) + assemble + map, one thread, exports of 50 traces, each export's
   traces completed before the next arrives (steady state); process CPU.
2. HTTP: the whole service (receiver, assembly thread, mappers, pipeline with no evaluators)
   on loopback, fed by a client process over keep-alive; the service process's CPU per trace.
3. Memory: Python heap (tracemalloc) per open trace, beside its encoded size.
4. Delay: traces sent one by one at 10/s to a service with ``quiet_s`` = 1 s and a lexical
   evaluator (``sensitive_data``); from the export's answer to the score reaching a sink.
5. Beside it, in the peers' environment (``.venv-bench``): ``overhead.py`` for the same
   LangChain request with ragtrace's in-process capture and with OpenInference (process CPU
   added per request in the app).

Run::

    .venv/bin/python benchmarks/ingest.py            # about 2 minutes
    .venv/bin/python benchmarks/ingest.py --quick    # smoke test

Prints a table and writes ``benchmarks/results/ingest.json``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ragtrace._ingest.assembly import AssemblyLimits, TraceAssembler
from ragtrace._ingest.decode import decode_traces
from ragtrace._ingest.mappers import map_trace
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._ingest.spans import TraceView
from ragtrace._model import Evaluation, RagRecord

FIXTURE = ROOT / "tests/ingest/fixtures/openinference_langchain.json"
PB = "application/x-protobuf"
PER_EXPORT = 50


def template() -> Any:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from ragtrace._ingest.decode import _ids_to_base64

    message = ExportTraceServiceRequest()
    json_format.ParseDict(_ids_to_base64(json.loads(FIXTURE.read_text()), 0), message)
    return message


def bodies(traces: int, per_export: int, start: int = 1) -> tuple[list[bytes], int]:
    """Exports of ``per_export`` copies of the fixture trace, each with its own trace id."""
    base = template()
    spans_per_trace = sum(len(ss.spans) for rs in base.resource_spans for ss in rs.scope_spans)
    out = []
    for first in range(start, start + traces, per_export):
        export = type(base)()
        for n in range(first, min(first + per_export, start + traces)):
            copy = type(base)()
            copy.CopyFrom(base)
            for rs in copy.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        span.trace_id = n.to_bytes(16, "big")
            export.resource_spans.extend(copy.resource_spans)
        out.append(export.SerializeToString())
    return out, spans_per_trace


def core(traces: int) -> dict[str, Any]:
    payloads, per_trace = bodies(traces, PER_EXPORT)
    now = [0.0]  # a clock that moves past the quiet period between exports: steady state
    assembler = TraceAssembler(AssemblyLimits(quiet_s=0.5, max_age_s=60), clock=lambda: now[0])
    records = 0
    t0 = time.process_time()
    for body in payloads:
        decoded = decode_traces(body, content_type=PB, content_encoding=None, max_bytes=1 << 30)
        assembler.add(decoded.spans)
        now[0] += 1.0
        for done in assembler.due():
            records += len(map_trace(TraceView(done.spans)))
    cpu = time.process_time() - t0
    assert records == traces, (records, traces)
    return {
        "traces": traces,
        "spans_per_trace": per_trace,
        "bytes_per_trace": round(sum(map(len, payloads)) / traces),
        "cpu_s": round(cpu, 3),
        "traces_per_core_s": round(traces / cpu),
        "spans_per_core_s": round(traces * per_trace / cpu),
        "us_per_span": round(cpu / (traces * per_trace) * 1e6, 1),
    }


_CLIENT = """
import http.client, json, sys
port, path = int(sys.argv[1]), sys.argv[2]
bodies = json.load(open(path))
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for hexbody in bodies:
    body = bytes.fromhex(hexbody)
    while True:
        conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        r = conn.getresponse(); r.read()
        if r.status == 200: break
        assert r.status == 429, r.status
"""


def through_http(traces: int) -> dict[str, Any]:
    payloads, per_trace = bodies(traces, PER_EXPORT, start=10_000_000)
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0, max_request_bytes=1 << 30),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=60),
            evaluators=(),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
    )
    handed: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(handed.append)
    service.start()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([b.hex() for b in payloads], f)
    try:
        cpu0, t0 = time.process_time(), time.monotonic()
        subprocess.run(
            [sys.executable, "-c", _CLIENT, str(service.receiver.port), f.name], check=True
        )
        while len(handed) < traces and time.monotonic() - t0 < 120:
            time.sleep(0.01)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    finally:
        service.drain()
        os.unlink(f.name)
    return {
        "traces": traces,
        "records": len(handed),
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 2),
        "traces_per_core_s": round(len(handed) / cpu),
        "spans_per_core_s": round(len(handed) * per_trace / cpu),
        "cpu_ms_per_trace": round(cpu / max(1, len(handed)) * 1e3, 3),
    }


def memory(traces: int) -> dict[str, Any]:
    payloads, _ = bodies(traces, PER_EXPORT, start=20_000_000)
    decoded = [
        decode_traces(b, content_type=PB, content_encoding=None, max_bytes=1 << 30)
        for b in payloads
    ]
    assembler = TraceAssembler(AssemblyLimits(quiet_s=3600, max_age_s=3600))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for d in decoded:
        assembler.add(d.spans)
    # The spans were decoded before tracing began: count them as the buffer holds them.
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    tracemalloc.start()
    again = [
        decode_traces(b, content_type=PB, content_encoding=None, max_bytes=1 << 30)
        for b in payloads
    ]
    spans_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del again
    return {
        "open_traces": assembler.open_traces,
        "buffer_index_bytes_per_trace": round(held / traces),
        "decoded_span_bytes_per_trace": round(spans_bytes / traces),
        "bytes_per_trace_total": round((held + spans_bytes) / traces),
        "encoded_bytes_per_trace": round(assembler.buffered_bytes / traces),
    }


class _Arrivals:
    """A score sink noting when each trace's scores were published."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        self.at.setdefault(record.trace_id, time.monotonic())

    def shutdown(self) -> None:
        """Nothing to release."""


def delay(traces: int, quiet_s: float) -> dict[str, Any]:
    payloads, _ = bodies(traces, 1, start=30_000_000)
    sink = _Arrivals()
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=quiet_s, max_age_s=60),
            evaluators=("sensitive_data",),
        ),
        registry=CollectorRegistry(),
        score_sinks=[sink],
    )
    service.start()
    sent: dict[str, float] = {}
    conn = http.client.HTTPConnection("127.0.0.1", service.receiver.port, timeout=30)
    try:
        for n, body in enumerate(payloads):
            conn.request("POST", "/v1/traces", body, {"Content-Type": PB})
            conn.getresponse().read()
            sent[f"{30_000_000 + n:032x}"] = time.monotonic()
            time.sleep(0.1)
        deadline = time.monotonic() + quiet_s + 10
        while len(sink.at) < traces and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        conn.close()
        service.drain()
    delays = sorted(sink.at[t] - sent[t] for t in sent if t in sink.at)
    return {
        "quiet_s": quiet_s,
        "traces": traces,
        "scored": len(delays),
        "p50_s": round(statistics.median(delays), 3),
        "p99_s": round(delays[min(len(delays) - 1, int(0.99 * len(delays)))], 3),
        "beyond_quiet_p50_ms": round((statistics.median(delays) - quiet_s) * 1e3, 1),
    }


def capture_side(requests: int) -> dict[str, Any] | None:
    """``overhead.py`` in the peers' environment: app CPU added per request."""
    python = ROOT / ".venv-bench/bin/python"
    if not python.exists():
        return None
    out = Path(tempfile.mkdtemp()) / "overhead.json"
    subprocess.run(
        [
            str(python),
            str(HERE / "overhead.py"),
            "--configs", "baseline,ragtrace,openinference",
            "--scenarios", "lc-invoke",
            "--rounds", "2",
            "--requests", str(requests),
            "--json", str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    results = json.loads(out.read_text())["results"]["lc-invoke"]
    return {k: round(v["overhead_us"] / 1000, 3) for k, v in results.items() if "overhead_us" in v}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    n = 200 if args.quick else 3000
    result: dict[str, Any] = {"benchmark": "ingest", "command": ["ingest.py", *(argv or [])]}
    result["core"] = core(n)
    result["http"] = through_http(n)
    result["memory"] = memory(200 if args.quick else 2000)
    result["delay"] = delay(10 if args.quick else 50, 1.0)
    result["capture"] = capture_side(100 if args.quick else 400)
    report(result)
    out = HERE / "results" / "ingest.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


def report(r: dict[str, Any]) -> None:
    c, h, m, d = r["core"], r["http"], r["memory"], r["delay"]
    rows = [
        ("trace (OpenInference, LangChain chain)", f"{c['spans_per_trace']} spans, "
         f"{c['bytes_per_trace']} bytes protobuf"),
        ("decode+assemble+map, 1 thread", f"{c['spans_per_core_s']:,} spans/s, "
         f"{c['traces_per_core_s']:,} traces/s per core ({c['us_per_span']} us/span)"),
        ("whole service over HTTP", f"{h['spans_per_core_s']:,} spans/s, "
         f"{h['traces_per_core_s']:,} traces/s per core ({h['cpu_ms_per_trace']} ms CPU/trace)"),
        ("memory per open trace", f"{m['bytes_per_trace_total']:,} bytes of heap "
         f"({m['encoded_bytes_per_trace']:,} encoded)"),
        (f"last span -> score (quiet {d['quiet_s']} s)", f"p50 {d['p50_s']} s, "
         f"p99 {d['p99_s']} s ({d['beyond_quiet_p50_ms']} ms beyond the quiet period)"),
    ]  # fmt: skip
    cap = r.get("capture")
    if cap:
        ingest_ms = h["cpu_ms_per_trace"]
        rows.append(("in-process capture, app CPU/request", f"+{cap.get('ragtrace')} ms"))
        rows.append(
            ("OpenInference in app + ingest CPU/request",
             f"+{cap.get('openinference')} ms (app) + {ingest_ms} ms (ingest)")
        )  # fmt: skip
    width = max(len(k) for k, _ in rows)
    print(f"{'measure'.ljust(width)} | figure")
    print(f"{'-' * width}-|-------")
    for key, value in rows:
        print(f"{key.ljust(width)} | {value}")


if __name__ == "__main__":
    sys.exit(main())
