"""Several ingest replicas behind the Collector: the documented configuration routes by trace id,
and routed that way every trace is whole on one replica; routed otherwise, the split shows in the
metrics (records rebuilt from parts whose parent is on the other replica are marked incomplete
and counted) instead of passing silently.

No OpenTelemetry Collector can be installed here, so its ``loadbalancing`` exporter is played by
``route``: the same rule (one trace id, one backend), over real receivers on loopback.
"""

from __future__ import annotations

import hashlib
import http.client
import re
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import RagRecord
from tests.components import wait_until
from tests.ingest.otlp_bodies import SpanSpec, as_protobuf
from tests.ingest.test_service import rag_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "ingest.md"


def collector_configs() -> list[dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    return [yaml.safe_load(block) for block in blocks]


def test_the_documented_collector_config_routes_a_copy_by_trace_id() -> None:
    full = collector_configs()[0]
    exporters = full["exporters"]
    balancing = exporters["loadbalancing/ragtrace"]
    assert balancing["routing_key"] == "traceID"
    assert balancing["resolver"]["dns"]["port"] == 4317  # ragtrace ingest --grpc-listen
    pipeline = full["service"]["pipelines"]["traces"]
    assert set(pipeline["exporters"]) == {"otlphttp/backend", "loadbalancing/ragtrace"}
    assert set(pipeline["exporters"]) <= set(exporters)
    assert set(pipeline["receivers"]) <= set(full["receivers"])
    single = collector_configs()[1]["exporters"]["otlphttp/ragtrace"]
    assert single["endpoint"].endswith(":4318")  # ragtrace ingest's default HTTP port
    assert single["compression"] == "gzip"
    assert single["headers"]["authorization"].startswith("Bearer ")


def _replica() -> tuple[IngestService, list[RagRecord]]:
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=0.3, max_age_s=1.5),
            evaluators=(),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
    )
    records: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(records.append)
    service.start()
    return service, records


def _send(port: int, spans: list[SpanSpec]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(
        "POST", "/v1/traces", as_protobuf(spans), {"Content-Type": "application/x-protobuf"}
    )
    assert conn.getresponse().status == 200
    conn.close()


def _by_trace_id(spec: SpanSpec, replicas: int) -> int:
    return int(hashlib.sha256(spec.trace_id.encode()).hexdigest(), 16) % replicas


def _split(service: IngestService) -> float:
    """Traces handed on at max age, and records rebuilt without their parent."""
    return sum(
        s.value
        for m in service.registry.collect()
        for s in m.samples
        if (s.name == "ragtrace_ingest_traces_total" and s.labels.get("reason") == "max_age")
        or s.name == "ragtrace_ingest_records_incomplete_total"
    )


def run(route: str) -> tuple[list[list[RagRecord]], float]:
    replicas = [_replica(), _replica()]
    try:
        # 20 requests; each span exported on its own, as batches from many app replicas would.
        for n in range(20):
            for i, spec in enumerate(rag_trace(0x5000 + n)):
                target = _by_trace_id(spec, 2) if route == "trace_id" else (n + i) % 2
                _send(replicas[target][0].receiver.port, [spec])
        wait_until(
            "every trace handed on",
            lambda: all(s.assembler.open_traces == 0 for s, _ in replicas),
            timeout_s=10,
        )
        split = sum(_split(s) for s, _ in replicas)
    finally:
        for service, _ in replicas:
            service.drain()
    return [records for _, records in replicas], split


def test_routed_by_trace_id_every_trace_is_whole_on_one_replica() -> None:
    per_replica, split = run("trace_id")
    records = [r for rs in per_replica for r in rs]
    assert len(records) == 20
    assert len({r.trace_id for r in records}) == 20
    assert all(len(rs) > 0 for rs in per_replica)  # both replicas took a share
    assert all(r.query and r.chunks and r.response and r.status == "ok" for r in records)
    assert split == 0


def test_routed_round_robin_the_split_traces_show_in_the_metrics() -> None:
    per_replica, split = run("round_robin")
    records = [r for rs in per_replica for r in rs]
    whole = [r for r in records if r.query and r.chunks and r.response]
    assert len(whole) < 20  # parts of one request on two replicas
    assert split > 0  # parts without their parent are marked incomplete and counted
    assert sum(r.status == "incomplete" for r in records) == split
