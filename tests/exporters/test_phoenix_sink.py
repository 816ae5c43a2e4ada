"""Scores as Phoenix span annotations: what each annotation says, batching, waiting for a span
Phoenix does not have yet, retries with backoff, every drop counted with its reason, a bounded
shutdown, and the wiring from ``ragtrace.init``, the environment and a settings file.

The endpoint is a loopback stand-in with scripted faults (``annotation_endpoint``); the real
Phoenix answers the same way (``tests/test_phoenix_live.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._exporters.phoenix import PhoenixAnnotationSink, PhoenixOptions
from ragtrace._exporters.phoenix_annotations import annotation
from ragtrace._metrics.exports import ExportMetrics
from ragtrace._model import Conversation, Evaluation, RagRecord, Score
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.exporters.annotation_endpoint import AnnotationEndpoint
from tests.faulty_otlp import closed_port
from tests.integrations.lc_app import rag_chain

FAST = PhoenixOptions(
    flush_interval_s=0.05, backoff_s=0.05, missing_retry_s=0.05, shutdown_timeout_s=2.0
)


def record(n: int = 1) -> RagRecord:
    return RagRecord(trace_id=f"{n:032x}", span_id=f"{n:016x}", query="q", response="r", app="shop")


def scores(n: int, *, passed: bool = True) -> list[Evaluation]:
    made = tuple(Score(f"s{i}", 0.9, threshold=0.5, passed=passed) for i in range(n))
    return [Evaluation("looping", made, 1, 2)]


@pytest.fixture
def metrics() -> ExportMetrics:
    return ExportMetrics(CollectorRegistry())


def count(metrics: ExportMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, {"sink": "phoenix", **labels})
    return 0.0 if value is None else value


@pytest.fixture
def sinks() -> Iterator[list[PhoenixAnnotationSink]]:
    made: list[PhoenixAnnotationSink] = []
    yield made
    for sink in made:
        sink.close(0.5)


def make(
    sinks: list[PhoenixAnnotationSink], url: str, metrics: ExportMetrics, **options: object
) -> PhoenixAnnotationSink:
    opts = PhoenixOptions(**{**FAST.__dict__, **options})  # type: ignore[arg-type]
    sink = PhoenixAnnotationSink(url, metrics, options=opts)
    sinks.append(sink)
    return sink


def test_each_score_becomes_an_annotation_with_its_verdict() -> None:
    rec = record()
    passed = annotation(rec, "faithfulness", Score("faithfulness", 0.9, threshold=0.5, passed=True))
    assert passed == {
        "span_id": rec.span_id,
        "name": "faithfulness",
        "annotator_kind": "CODE",
        "result": {"label": "pass", "score": 0.9},
        "metadata": {
            "evaluator": "faithfulness",
            "trace_id": rec.trace_id,
            "app": "shop",
            "kind": "lexical",
            "direction": "higher_is_better",
            "threshold": 0.5,
            "passed": True,
        },
        "identifier": "ragtrace",
    }
    judged = Score(
        "judge_faithfulness",
        0.2,
        threshold=0.5,
        passed=False,
        explanation="2 of 5 claims supported",
        evaluator_kind="judge",
        model="qwen",
        label="unfaithful",
    )
    failed = annotation(rec, "judge_faithfulness", judged)
    assert failed["annotator_kind"] == "LLM"
    assert failed["result"] == {
        "label": "fail",
        "score": 0.2,
        "explanation": "2 of 5 claims supported",
    }
    assert failed["metadata"]["evaluator_label"] == "unfaithful"
    assert failed["metadata"]["model"] == "qwen"
    broken = annotation(rec, "toxicity", Score("toxicity", None, error="timeout " * 400))
    assert broken["result"]["label"] == "error"
    assert "score" not in broken["result"]
    assert len(broken["result"]["explanation"]) == 2000
    human = annotation(rec, "human", Score("human", 1.0, evaluator_kind="human", label="good"))
    assert (human["annotator_kind"], human["result"]["label"]) == ("HUMAN", "good")


def test_annotations_go_in_batches_and_are_counted(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint() as ep:
        sink = make(sinks, ep.endpoint, metrics, batch_size=500)
        for n in range(1, 121):
            sink.export(record(n), scores(10))
        assert sink.flush(10)
        assert len(ep.received) == 1200
        assert all(len(r["data"]) <= 500 for r in ep.requests)
        assert len(ep.requests) <= 5
        assert ep.requests[0]["path"] == "/v1/span_annotations?sync=true"
    assert count(metrics, "ragtrace_annotations_sent_total") == 1200
    assert sink.dropped == {}


def test_an_annotation_waits_for_its_span_and_the_rest_of_the_batch_goes_on(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    early, late = record(1), record(2)
    with AnnotationEndpoint(known={early.span_id}) as ep:
        sink = make(sinks, ep.endpoint, metrics)
        sink.export(early, scores(2))
        sink.export(late, scores(3))
        deadline = time.monotonic() + 5
        while len(ep.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert {a["span_id"] for a in ep.received} == {early.span_id}
        ep.learn(late.span_id)  # the app's span processor sent the request's span at last
        assert sink.flush(5)
        assert [a["span_id"] for a in ep.received] == [early.span_id] * 2 + [late.span_id] * 3
        assert 404 in ep.statuses()
    assert sink.dropped == {}


def test_a_span_that_never_arrives_is_given_up_on_and_counted(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint(known={record(1).span_id}) as ep:
        sink = make(sinks, ep.endpoint, metrics, span_wait_s=0.3)
        sink.export(record(1), scores(1))
        sink.export(record(2), scores(4))
        assert sink.flush(5)
        assert len(ep.received) == 1
    assert sink.dropped == {"span_not_found": 4}
    assert count(metrics, "ragtrace_dropped_annotations_total", reason="span_not_found") == 4


def test_an_unavailable_phoenix_is_retried_with_backoff(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint(fail_with=[503, 429, 500]) as ep:
        sink = make(sinks, ep.endpoint, metrics, backoff_s=0.1)
        sink.export(record(), scores(5))
        assert sink.flush(10)
        assert ep.statuses() == [503, 429, 500, 200]
        gaps = [b["at"] - a["at"] for a, b in zip(ep.requests, ep.requests[1:], strict=False)]
        assert gaps[0] >= 0.09 and gaps[1] >= 0.19 and gaps[2] >= 0.39  # 0.1 s, doubling
        assert len(ep.received) == 5
    assert sink.dropped == {}


def test_what_never_gets_through_is_counted_as_export_failed(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint(fail_with=[500] * 10) as ep:
        sink = make(sinks, ep.endpoint, metrics, max_attempts=3)
        sink.export(record(), scores(7))
        assert sink.flush(10)
        assert ep.statuses() == [500, 500, 500]
    assert sink.dropped == {"export_failed": 7}
    assert count(metrics, "ragtrace_dropped_annotations_total", reason="export_failed") == 7


def test_a_refused_batch_is_counted_as_rejected_and_the_key_is_sent(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint(fail_with=[401]) as ep:
        sink = PhoenixAnnotationSink(ep.endpoint, metrics, api_key="sekrit", options=FAST)
        sinks.append(sink)
        sink.export(record(), scores(2))
        sink.export(record(2), scores(1))
        assert sink.flush(5)
        assert ep.requests[0]["headers"]["Authorization"] == "Bearer sekrit"
    assert sink.dropped == {"rejected": 3}


def test_a_full_buffer_and_a_record_without_span_are_counted(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    with AnnotationEndpoint(hang_s=2.0) as ep:
        sink = make(sinks, ep.endpoint, metrics, max_queue=10, batch_size=5)
        started = time.monotonic()
        for n in range(1, 6):
            sink.export(record(n), scores(5))  # 25 scores, room for 10
        assert time.monotonic() - started < 0.5  # never waits on the server
        sink.export(RagRecord(trace_id="", span_id="", query="q"), scores(2))
        assert sink.dropped == {"queue_full": 15, "no_span": 2}
        assert count(metrics, "ragtrace_dropped_annotations_total", reason="queue_full") == 15
        assert count(metrics, "ragtrace_dropped_annotations_total", reason="no_span") == 2
        ep.hang_s = 0.0


def test_shutdown_is_bounded_and_counts_what_was_left(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    sink = make(sinks, url, metrics, backoff_s=5.0)
    sink.export(record(), scores(6))
    time.sleep(0.2)  # the first try failed; the sink now waits 5 s before the next
    started = time.monotonic()
    assert sink.close(0.5) is False
    assert time.monotonic() - started < 1.5
    assert sink.dropped == {"shutdown": 6}
    sink.export(record(2), scores(1))  # after shutdown
    assert sink.dropped == {"shutdown": 7}
    assert sink.close(0.5) is True  # idempotent


def test_a_bad_endpoint_or_option_is_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        PhoenixAnnotationSink("phoenix:6006")
    with pytest.raises(ValueError, match="batch_size"):
        PhoenixOptions(batch_size=0)
    with pytest.raises(ValueError, match="phoenix_endpoint"):
        ragtrace.Config(phoenix_endpoint="phoenix:6006")


@pytest.mark.parametrize("how", ["init", "env", "settings"])
def test_init_posts_each_request_scores_on_its_root_span(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with AnnotationEndpoint() as ep:
        options: dict[str, object] = {}
        if how == "init":
            options["phoenix_endpoint"] = ep.endpoint
        elif how == "env":
            monkeypatch.setenv("RAGTRACE_PHOENIX_ENDPOINT", ep.endpoint)
        else:
            settings = tmp_path / "ragtrace.yaml"
            settings.write_text(f"evaluators: [looping]\nsinks: {{phoenix: {ep.endpoint}}}\n")
            options["config_file"] = str(settings)
        registry = CollectorRegistry()
        rt = ragtrace.init(app="px", registry=registry, evaluators=["looping"], **options)
        records: list[RagRecord] = []
        rt.add_record_sink(records.append)
        try:
            rag_chain().invoke("When?", config={"callbacks": [RagtraceCallbackHandler(rt)]})
            assert rt.flush(10)
            labels = {"sink": "phoenix"}
            assert registry.get_sample_value("ragtrace_annotations_sent_total", labels) == 3
        finally:
            rt.shutdown()
        (rec,) = records
        names = sorted(a["name"] for a in ep.received)
        assert names == [
            "looping.compression_ratio",
            "looping.longest_repeated_substring",
            "looping.unique_sentences",
        ]
        assert {a["span_id"] for a in ep.received} == {rec.span_id}


def test_ingest_annotates_the_apps_own_root_span() -> None:
    from tests.ingest.otlp_bodies import as_protobuf
    from tests.ingest.test_service import post, rag_trace, start

    with AnnotationEndpoint() as ep:
        service, records = start(phoenix_endpoint=ep.endpoint)
        try:
            assert post(service, as_protobuf(rag_trace(0xC1))) == 200
            deadline = time.monotonic() + 10
            while not records and time.monotonic() < deadline:
                time.sleep(0.05)
            assert service.runtime is not None and service.runtime.flush(10)
        finally:
            service.drain()
        (rec,) = records
        assert rec.span_id == f"{2:016x}"  # the app's chain span, under its HTTP span
        assert {a["span_id"] for a in ep.received} == {rec.span_id}
        assert {a["metadata"]["evaluator"] for a in ep.received} == {"sensitive_data", "looping"}
        leaked = [a for a in ep.received if a["name"] == "sensitive_data.answer"]
        assert [a["result"]["label"] for a in leaked] == ["fail"]  # the access key


def test_the_worker_and_ingest_commands_take_a_phoenix_endpoint() -> None:
    from ragtrace._cli import _parser

    parser = _parser()
    for command in (["worker", "--queue", "redis://127.0.0.1:1/0"], ["ingest"]):
        args = parser.parse_args([*command, "--phoenix-endpoint", "http://px:6006"])
        assert args.phoenix_endpoint == "http://px:6006"


def test_init_says_once_when_the_apps_provider_names_no_phoenix_project(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    with AnnotationEndpoint() as ep:
        for resource, told in (
            (Resource.create({"service.name": "shop"}), True),
            (Resource.create({"openinference.project.name": "shop"}), False),
        ):
            caplog.clear()
            with caplog.at_level(logging.INFO, logger="ragtrace"):
                rt = ragtrace.init(
                    app="shop",
                    tracer_provider=TracerProvider(resource=resource),
                    registry=CollectorRegistry(),
                    phoenix_endpoint=ep.endpoint,
                )
                rt.shutdown()
            said = [
                r.getMessage()
                for r in caplog.records
                if "openinference.project.name" in r.getMessage()
            ]
            assert len(said) == (1 if told else 0), said
            if told:
                assert "'default' project" in said[0] and "'shop'" in said[0]


def test_a_forked_child_posts_its_own_annotations(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    import os

    with AnnotationEndpoint() as ep:
        sink = make(sinks, ep.endpoint, metrics)
        pid = os.fork()
        if pid == 0:  # the child: its own thread posts what it exports
            code = 1
            try:
                sink.export(record(9), scores(2))
                code = 0 if sink.flush(10) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert [a["span_id"] for a in ep.received] == [record(9).span_id] * 2


def test_a_score_without_a_verdict_is_labelled_none() -> None:
    """An informational score (no threshold, no label of its own) says so, as docs/phoenix.md
    lists it: ``label == 'none'`` finds it, ``label == 'fail'`` does not."""
    rec = record()
    informational = annotation(rec, "my_metric", Score("my_metric", 0.42))
    assert informational["result"] == {"label": "none", "score": 0.42}
    assert "passed" not in informational["metadata"]


# -- a conversation's scores as session annotations ---------------------------------------------


def last_turn(n: int = 9, session: str = "chat-1") -> RagRecord:
    return dataclasses.replace(record(n), conversation=Conversation(session_id=session, turn=2))


def conversation_scores() -> list[Evaluation]:
    score = Score("conversation_completeness", 1.0, threshold=0.5, passed=True, label="pass")
    return [Evaluation("conversation_completeness", (score,), 1, 2)]


def test_a_conversations_scores_become_session_annotations(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    turn = last_turn()
    with AnnotationEndpoint(sessions={"chat-1"}) as ep:
        sink = make(sinks, ep.endpoint, metrics)
        sink.export(turn, conversation_scores())
        sink.export(turn, scores(2))  # the same turn's own scores stay span annotations
        assert sink.flush(5)
        paths = sorted(r["path"] for r in ep.requests)
    assert paths == ["/v1/session_annotations?sync=true", "/v1/span_annotations?sync=true"]
    (session,) = [a for a in ep.received if "session_id" in a]
    assert "span_id" not in session
    assert session["session_id"] == "chat-1"
    assert session["metadata"]["span_id"] == turn.span_id
    assert session["metadata"]["trace_id"] == turn.trace_id
    assert (session["name"], session["result"]["label"]) == ("conversation_completeness", "pass")
    assert sum("span_id" in a for a in ep.received) == 2
    assert sink.sessions_supported is True
    assert count(metrics, "ragtrace_annotations_sent_total") == 3


def test_a_session_phoenix_lacks_waits_then_goes_on_its_last_turn(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    turn = last_turn()
    with AnnotationEndpoint(sessions=set()) as ep:
        sink = make(sinks, ep.endpoint, metrics, span_wait_s=0.3)
        sink.export(turn, conversation_scores())
        assert sink.flush(5)
    assert [a.get("span_id") for a in ep.received] == [turn.span_id]
    assert ep.requests[0]["path"].startswith("/v1/session_annotations")
    assert ep.requests[0]["status"] == 404
    assert sink.dropped == {}


def test_a_phoenix_without_session_annotations_gets_span_annotations(
    sinks: list[PhoenixAnnotationSink], metrics: ExportMetrics
) -> None:
    turn = last_turn()
    with AnnotationEndpoint() as ep:  # no session route: 404 Not Found, as before Phoenix 12
        sink = make(sinks, ep.endpoint, metrics)
        sink.export(turn, conversation_scores())
        assert sink.flush(5)
        sink.export(last_turn(10), conversation_scores())  # known now: straight to the span
        assert sink.flush(5)
    assert [a["span_id"] for a in ep.received] == [turn.span_id, last_turn(10).span_id]
    assert [r["status"] for r in ep.requests] == [404, 200, 200]
    assert sink.sessions_supported is False
    assert sink.dropped == {}
