"""``IngestService`` end to end on loopback: spans in, records through the real pipeline,
scores out as Prometheus metrics (``app`` = service name) and evaluation spans in the original
trace; drops, floods and ragtrace's own results coming back are counted, never fatal."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import RagRecord
from tests.components import wait_until
from tests.ingest.otlp_bodies import SpanSpec, as_json, as_protobuf
from tests.otlp_receiver import OtlpReceiver as SpanCollector

PB = "application/x-protobuf"
QUESTION = "How long do refunds take?"
ANSWER = "Refunds take five business days. Log in with key AKIAIOSFODNN7EXAMPLE."
CHUNK = "Refunds are paid back to the card within five business days."


def rag_trace(
    trace: int, service: str = "shop-assistant", http_root: bool = True
) -> list[SpanSpec]:
    """An OpenInference RAG request (chain -> retriever, LLM) under an HTTP server span."""
    top = 1 if http_root else None
    spans = [
        SpanSpec(trace, 2, top, "RunnableSequence", {
            "openinference.span.kind": "CHAIN", "input.value": QUESTION, "output.value": ANSWER,
        }, service),
        SpanSpec(trace, 3, 2, "Retriever", {
            "openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
            "retrieval.documents.0.document.id": "kb-7",
            "retrieval.documents.0.document.score": 0.82,
            "retrieval.documents.0.document.content": CHUNK,
        }, service),
        SpanSpec(trace, 4, 2, "ChatModel", {
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-test",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": ANSWER,
        }, service),
    ]  # fmt: skip
    if http_root:
        spans.insert(0, SpanSpec(trace, 1, None, "POST /chat", {"http.route": "/chat"}, service))
    return spans


def post(service: IngestService, body: bytes, kind: str = PB) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", service.receiver.port, timeout=10)
    conn.request("POST", "/v1/traces", body, {"Content-Type": kind})
    status = conn.getresponse().status
    conn.close()
    return status


def samples(service: IngestService, prefix: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for m in service.registry.collect()
        for s in m.samples
        if s.name.startswith(prefix)
    }


@pytest.fixture
def collector() -> Iterator[SpanCollector]:
    with SpanCollector() as rx:
        yield rx


def start(**options: object) -> tuple[IngestService, list[RagRecord]]:
    values: dict = {
        "receiver": ReceiverOptions(port=0),
        "limits": AssemblyLimits(quiet_s=0.2, max_age_s=2.0),
        "evaluators": ("sensitive_data", "looping"),
        "tick_s": 0.05,
    }
    values.update(options)
    service = IngestService(IngestOptions(**values), registry=CollectorRegistry())  # type: ignore[arg-type]
    records: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(records.append)
    service.start()
    return service, records


def test_scores_go_out_as_metrics_and_log_events_on_the_original_trace(
    collector: SpanCollector,
) -> None:
    service, records = start(otlp_endpoint=collector.endpoint + "/v1/traces")
    try:
        assert post(service, as_protobuf(rag_trace(0xA1))) == 200
        assert (
            post(service, as_json(rag_trace(0xA2, service="billing-bot")), "application/json")
            == 200
        )
        wait_until("two records", lambda: len(records) == 2, timeout_s=10)
        service.runtime.flush(5)  # type: ignore[union-attr]
        logs = collector.wait_for_logs(8, timeout_s=10)
        metrics = samples(service, "ragtrace_")
    finally:
        service.drain()
    first = next(r for r in records if r.trace_id == f"{0xA1:032x}")
    assert (first.query, first.response, first.app, first.model) == (
        QUESTION,
        ANSWER,
        "shop-assistant",
        "gpt-test",
    )
    assert [(c.id, c.score, c.text) for c in first.chunks] == [("kb-7", 0.82, CHUNK)]
    assert first.span_id == f"{2:016x}"  # the chain, not the HTTP span above it
    evaluation = [log for log in logs if log.trace_id == first.trace_id]
    assert {log.attributes["ragtrace.evaluation.evaluator"] for log in evaluation} == {
        "sensitive_data",
        "looping",
    }
    assert all(log.span_id == first.span_id for log in evaluation)  # on the app's own span
    assert {log.event_name for log in evaluation} == {"gen_ai.evaluation.result"}
    assert collector.spans == []  # nothing added to the app's traces
    leaked = ("app", "shop-assistant"), ("evaluator", "sensitive_data.answer"), ("outcome", "fail")
    assert metrics[("ragtrace_evaluations_total", leaked)] == 1  # the access key in the answer
    other = ("app", "billing-bot"), ("evaluator", "sensitive_data.answer"), ("outcome", "fail")
    assert metrics[("ragtrace_evaluations_total", other)] == 1
    assert metrics[("ragtrace_ingest_records_total", (("convention", "openinference"),))] == 2
    assert metrics[("ragtrace_ingest_traces_total", (("reason", "complete"),))] == 2


def test_ragtraces_own_evaluation_spans_coming_back_are_dropped_and_counted() -> None:
    service, records = start()
    own = SpanSpec(0xB1, 9, 2, "ragtrace.evaluation", {
        "openinference.span.kind": "EVALUATOR", "gen_ai.evaluation.name": "looping",
    }, scope="ragtrace")  # fmt: skip
    try:
        assert post(service, as_protobuf([own])) == 200
        assert post(service, as_protobuf(rag_trace(0xB2))) == 200
        wait_until("one record", lambda: len(records) == 1, timeout_s=10)
        metrics = samples(service, "ragtrace_ingest")
    finally:
        service.drain()
    assert metrics[("ragtrace_ingest_dropped_spans_total", (("reason", "evaluation_span"),))] == 1
    assert service.assembler.open_traces == 0


REMOTE = 0x300  # SpanFlags: "is remote" known, and set


@pytest.mark.parametrize("flags", [REMOTE, 0], ids=["flagged-remote", "no-flags"])
def test_a_request_whose_parent_is_elsewhere_is_scored_after_the_quiet_period(
    flags: int,
) -> None:
    # Behind a gateway that propagates traceparent: the chain's parent never reaches ingest.
    # With the SDK's flags it is a root at once; without them, once its trace is quiet.
    service, records = start(limits=AssemblyLimits(quiet_s=0.5, max_age_s=60.0))
    spans = [replace(s, flags=flags) if s.span == 2 else s for s in rag_trace(0xC1) if s.span != 1]
    try:
        t0 = time.monotonic()
        assert post(service, as_json(spans), "application/json") == 200
        wait_until("the request", lambda: len(records) == 1, timeout_s=10)
        waited = time.monotonic() - t0
        metrics = samples(service, "ragtrace_ingest_traces")
    finally:
        service.drain()
    assert 0.5 <= waited < 0.5 + 1.0  # the quiet period plus a second, not max_age_s
    reason = "complete" if flags else "remote_parent"
    assert metrics[("ragtrace_ingest_traces_total", (("reason", reason),))] == 1
    (record,) = records
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    assert record.span_id == f"{2:016x}"


def test_a_request_whose_own_span_never_arrives_is_one_incomplete_record() -> None:
    # The retriever and the LLM call arrived; the chain above them (and the HTTP span) did not.
    service, records = start(limits=AssemblyLimits(quiet_s=0.3, max_age_s=60.0))
    parts = [s for s in rag_trace(0xC2) if s.span in (3, 4)]
    try:
        assert post(service, as_protobuf(parts)) == 200
        wait_until("the record", lambda: len(records) == 1, timeout_s=10)
        time.sleep(0.5)  # nothing more comes
        metrics = samples(service, "ragtrace_ingest")
    finally:
        service.drain()
    (record,) = records  # one record, not two halves
    assert record.status == "incomplete"
    assert record.span_id == f"{2:016x}"  # the lost chain's id, under which the parts hang
    assert record.query == QUESTION  # from the retriever's input
    assert record.response == ANSWER  # from the LLM's output
    assert [c.id for c in record.chunks] == ["kb-7"]
    assert record.app == "shop-assistant"
    convention = (("convention", "openinference"),)
    assert metrics[("ragtrace_ingest_records_incomplete_total", convention)] == 1
    assert metrics[("ragtrace_ingest_traces_total", (("reason", "remote_parent"),))] == 1


@pytest.mark.parametrize(
    ("trace_id", "span_id", "why"),
    [
        ("0" * 32, "00f067aa0ba902b7", "traceId is all zeros"),
        ("4bf92f3577b34da6a3ce929d0e0e4736", "0" * 16, "spanId is all zeros"),
        ("4bf92f3577b34da6", "00f067aa0ba902b7", "traceId of 1 bytes"),
        ("zz" * 16, "00f067aa0ba902b7", "traceId of 1 bytes"),
    ],
    ids=["zero-trace", "zero-span", "short", "not-hex"],
)
def test_an_export_with_an_invalid_id_is_refused_with_400_and_counted(
    trace_id: str, span_id: str, why: str
) -> None:
    service, records = start()
    body = json.loads(as_json(rag_trace(0xC3)))
    bad = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    bad["traceId"], bad["spanId"] = trace_id, span_id
    try:
        conn = http.client.HTTPConnection("127.0.0.1", service.receiver.port, timeout=10)
        conn.request("POST", "/v1/traces", json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        status, message = answer.status, json.loads(answer.read())["message"]
        conn.close()
        metrics = samples(service, "ragtrace_ingest")
    finally:
        service.drain()
    assert status == 400
    assert why in message
    assert records == []  # refused whole: nothing of it was kept
    assert metrics[("ragtrace_ingest_requests_total", (("outcome", "invalid_id"),))] == 1
    assert metrics[("ragtrace_ingest_dropped_spans_total", (("reason", "invalid_id"),))] == 4


def test_a_flood_past_the_buffer_gets_429_and_memory_stays_bounded() -> None:
    service, records = start(
        limits=AssemblyLimits(quiet_s=30, max_age_s=60, max_open_traces=20),
        evaluators=(),
    )
    statuses = []
    try:
        for t in range(60):
            statuses.append(post(service, as_protobuf(rag_trace(0xD000 + t))))
            assert service.assembler.open_traces <= 20
        metrics = samples(service, "ragtrace_ingest")
    finally:
        service.drain()
    assert statuses.count(200) == 20
    assert statuses.count(429) == 40
    assert metrics[("ragtrace_ingest_requests_total", (("outcome", "busy"),))] == 40
    assert metrics[("ragtrace_ingest_spans_refused_total", ())] == 160
    assert len(records) == 20  # drain hands on every accepted trace


def test_uncaptured_content_reaches_evaluators_as_missing_never_guessed() -> None:
    service, records = start(evaluators=("looping", "context_relevance"))
    genai = [
        SpanSpec(0xE1, 1, None, "invoke_agent", {"gen_ai.operation.name": "invoke_agent"}),
        SpanSpec(0xE1, 2, 1, "retrieval kb", {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.documents": json.dumps([{"id": "kb-1", "score": 0.5}]),
        }),
        SpanSpec(0xE1, 3, 1, "chat gpt-test", {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test",
        }),
    ]  # fmt: skip
    try:
        assert post(service, as_protobuf(genai)) == 200
        wait_until("the GenAI record", lambda: len(records) == 1, timeout_s=10)
        service.runtime.flush(5)  # type: ignore[union-attr]
        metrics = samples(service, "ragtrace_")
    finally:
        service.drain()
    (record,) = records
    assert (record.query, record.response, record.chunks) == (None, None, ())
    assert record.model == "gpt-test"
    missing = {
        dict(labels)["field"]
        for (name, labels), value in metrics.items()
        if name == "ragtrace_ingest_missing_fields_total" and value
    }
    assert missing >= {"query", "response", "chunk_text"}
    skipped = {
        dict(labels)["evaluator"]
        for (name, labels), value in metrics.items()
        if name == "ragtrace_evaluations_total" and dict(labels)["outcome"] == "skipped" and value
    }
    assert skipped == {"looping", "context_relevance"}


def test_a_token_is_required_when_configured() -> None:
    service, _ = start(receiver=ReceiverOptions(port=0, token="t0ken"))
    try:
        assert post(service, as_protobuf(rag_trace(0xF1))) == 401
    finally:
        service.drain()


def test_records_ship_to_redis_for_workers(tmp_path: Path) -> None:
    from ragtrace._worker.service import Worker, WorkerOptions
    from tests.redis_server import RedisServer, connection_ids

    server = RedisServer(tmp_path)
    server.start()
    watcher = server.client()
    before = connection_ids(watcher)
    try:
        service, records = start(queue_url=server.url)
        try:
            assert post(service, as_protobuf(rag_trace(0x1A))) == 200
            wait_until("the shipped record", lambda: len(records) == 1, timeout_s=10)
            assert service.runtime is not None
            assert service.runtime.flush(10)
        finally:
            service.drain()
        scored: list[str] = []

        class Sink:
            def export(self, record: RagRecord, evaluations: object) -> None:
                scored.append(record.app)

            def shutdown(self) -> None:
                """Nothing to release."""

        worker = Worker(
            WorkerOptions(queue_url=server.url, evaluators=("looping",)),
            registry=CollectorRegistry(),
            score_sinks=[Sink()],
        )
        worker.start()
        try:
            wait_until("worker scores", lambda: scored == ["shop-assistant"], timeout_s=20)
        finally:
            worker.stop()
            worker.drain()
        # stopped, the ingest's shipper and the worker leave no connection open behind them
        wait_until("no connection left", lambda: connection_ids(watcher) == before, timeout_s=10)
        watcher.close()
    finally:
        server.stop()


def test_requests_carry_the_senders_service_and_the_app_cap_is_set_and_reported() -> None:
    service, records = start(max_app_labels=3, evaluators=("looping",))
    try:
        for n, name in enumerate(("shop", "bank", "mail", "news", "shop")):
            assert post(service, as_protobuf(rag_trace(0x3A0 + n, service=name))) == 200
        wait_until("five records", lambda: len(records) == 5, timeout_s=10)
        service.runtime.flush(5)  # type: ignore[union-attr]
        metrics = samples(service, "ragtrace_")
    finally:
        service.drain()

    def requests(app: str) -> float:
        return metrics[("ragtrace_requests_total", (("app", app), ("status", "ok")))]

    # ingest's own name holds a slot of the 3 (its internal telemetry), shop and bank the rest
    assert (requests("shop"), requests("bank"), requests("other")) == (2, 1, 2)
    assert requests("ragtrace-ingest") == 0
    assert metrics[("ragtrace_app_labels_folded", ())] == 2  # mail, news
