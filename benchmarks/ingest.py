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
5. Overload (``--overload``): an open-loop sender offers exports of 50 traces at twice the rate
   the service took in step 2, for 10 s, with ``ingest_max_in_flight`` at its default and with
   no bound (10,000; ``--bounds 2,4,8`` for others): exports accepted, refused (429 with
   Retry-After: admission, or the assembly's backpressure) and 503, each one's time from when
   it was due to its answer, and the traces rebuilt from the accepted exports (the books:
   every accepted trace is a record).
6. Beside it, in the peers' environment (``.venv-bench``): ``overhead.py`` for the same
   LangChain request with ragtrace's in-process capture and with OpenInference (process CPU
   added per request in the app).

Run::

    .venv/bin/python benchmarks/ingest.py            # about 2 minutes
    .venv/bin/python benchmarks/ingest.py --quick    # smoke test
    .venv/bin/python benchmarks/ingest.py --overload # step 2, then 5 only

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
from ragtrace._ingest.service import APP, IngestOptions, IngestService
from ragtrace._ingest.spans import TraceView
from ragtrace._model import Evaluation, RagRecord
from ragtrace._worker.serving import service_config

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
            service_config(APP, ()),
            receiver=ReceiverOptions(port=0, max_request_bytes=1 << 30),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=60),
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


_OPEN_LOOP = """
import http.client, json, sys, threading, time, queue
port, path, rate = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
bodies = [bytes.fromhex(b) for b in json.load(open(path))]
due, out, lock = queue.Queue(), [], threading.Lock()
def sender():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while True:
        item = due.get()
        if item is None:
            return
        at, body = item
        conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        r = conn.getresponse(); r.read()
        with lock:
            out.append((r.status, time.monotonic() - at))
threads = [threading.Thread(target=sender) for _ in range(64)]
for t in threads: t.start()
t0, i = time.monotonic(), 0
while i < len(bodies):
    at = t0 + i / rate
    time.sleep(max(0.0, at - time.monotonic()))
    due.put((at, bodies[i % len(bodies)])); i += 1
for _ in threads: due.put(None)
for t in threads: t.join()
print(json.dumps(out))
"""


def overload(
    capacity_traces_s: float, bounds: Sequence[int], factor: float = 2.0, seconds: float = 10.0
) -> list[Any]:
    """Exports offered open-loop at ``factor`` x capacity, with the default admission bound
    and with none: accepted, refused, time from due to answer, traces rebuilt."""
    rate = factor * capacity_traces_s / PER_EXPORT  # exports a second
    count = int(rate * seconds)
    rows = []
    for bound in bounds:
        payloads, _ = bodies(count * PER_EXPORT, PER_EXPORT, start=40_000_000)
        service = IngestService(
            IngestOptions(
                service_config(APP, (), ingest_max_in_flight=bound),
                receiver=ReceiverOptions(port=0, max_request_bytes=1 << 30),
                limits=AssemblyLimits(quiet_s=0.2, max_age_s=60),
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
            done = subprocess.run(
                [sys.executable, "-c", _OPEN_LOOP, str(service.receiver.port), f.name,
                 str(rate)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            answers = json.loads(done.stdout)
            accepted = [t for status, t in answers if status == 200]
            refused = [t for status, t in answers if status == 429]
            full = [t for status, t in answers if status == 503]
            t0 = time.monotonic()
            while len(handed) < len(accepted) * PER_EXPORT and time.monotonic() - t0 < 120:
                time.sleep(0.05)
        finally:
            service.drain()
            os.unlink(f.name)

        def pct(values: list[float], q: float) -> float | None:
            ordered = sorted(values)
            return round(ordered[int(q * (len(ordered) - 1))], 3) if ordered else None

        rows.append(
            {
                "max_in_flight": bound,
                "offered_exports_s": round(rate, 1),
                "offered": len(answers),
                "accepted": len(accepted),
                "refused": len(refused),
                "full_503": len(full),
                "other": len(answers) - len(accepted) - len(refused) - len(full),
                "accepted_p50_s": pct(accepted, 0.5),
                "accepted_p99_s": pct(accepted, 0.99),
                "refused_p50_s": pct(refused, 0.5),
                "refused_p99_s": pct(refused, 0.99),
                "records": len(handed),
                "records_expected": len(accepted) * PER_EXPORT,
            }
        )
    return rows


def overload_text(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "max_in_flight | offered exports/s | accepted | refused 429 + 503 "
        "| due -> answer p50/p99, accepted | refused | records / expected"
    ]
    for o in rows:
        lines.append(
            f"{o['max_in_flight']} | {o['offered_exports_s']} | {o['accepted']} "
            f"| {o['refused']} + {o['full_503']} | {o['accepted_p50_s']} / {o['accepted_p99_s']} s "
            f"| {o['refused_p50_s']} / {o['refused_p99_s']} s "
            f"| {o['records']} / {o['records_expected']}"
        )
    return "\n".join(lines)


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
            service_config(APP, ("sensitive_data",)),
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=quiet_s, max_age_s=60),
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
    parser.add_argument("--overload", action="store_true", help="steps 2 and 5 only")
    parser.add_argument("--bounds", help="with --overload: ingest_max_in_flight values, e.g. 2,8")
    args = parser.parse_args(argv)
    n = 200 if args.quick else 3000
    result: dict[str, Any] = {"benchmark": "ingest", "command": ["ingest.py", *(argv or [])]}
    if args.overload:
        result["http"] = through_http(n)
        capacity = result["http"]["traces"] / result["http"]["wall_s"]
        # 10,000: no bound (more exports at once than the sender ever has in flight, 64)
        bounds = [int(b) for b in args.bounds.split(",")] if args.bounds else []
        default = service_config(APP).ingest_max_in_flight
        result["overload"] = overload(capacity, bounds or [default, 10_000])
        print(overload_text(result["overload"]))
        out = HERE / "results" / "ingest_overload.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        return 0
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
