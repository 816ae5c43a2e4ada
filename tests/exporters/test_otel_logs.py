"""Evaluation results as ``gen_ai.evaluation.result`` log events: what each record carries,
which logger provider they go to (the one given, the app's global one, or ragtrace's own, which
exports OTLP logs and shuts down within its budget), and which results mode writes what."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import _logs
from opentelemetry._logs import SeverityNumber
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.otel_logs import OtelEvaluationLogSink
from ragtrace._model import Conversation, Evaluation, RagRecord, Score
from ragtrace._runtime.logs import BoundedLogProcessor, resolve_logger_provider
from ragtrace._runtime.score_sinks import results_mode
from ragtrace._runtime.tracing import own_resource
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.faulty_otlp import HangingEndpoint
from tests.integrations.lc_app import rag_chain
from tests.otlp_receiver import OtlpReceiver

RECORD = RagRecord(trace_id="ab" * 16, span_id="cd" * 8, query="q", response="r", app="shop")
RUN = Evaluation(
    "faithfulness",
    (
        Score("faithfulness", 0.9, threshold=0.5, passed=True, explanation="4 of 4 claims"),
        Score("hallucination", 0.7, threshold=0.5, passed=False, direction="lower_is_better"),
        Score("contradiction", None, error="model missing"),
    ),
    start_ns=1_000,
    end_ns=5_000,
)


@pytest.fixture
def memory() -> tuple[LoggerProvider, InMemoryLogRecordExporter]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider, exporter


@pytest.fixture
def no_global_logger_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The global logger provider is the API's proxy (as in an app that set none)."""
    monkeypatch.delenv("OTEL_PYTHON_LOGGER_PROVIDER", raising=False)
    monkeypatch.setattr(_logs._internal, "_LOGGER_PROVIDER", None)
    assert isinstance(_logs.get_logger_provider(), ProxyLoggerProvider)


def test_one_record_per_score_on_the_request_span(memory: Any) -> None:
    provider, exporter = memory
    OtelEvaluationLogSink(provider.get_logger("ragtrace")).export(RECORD, [RUN])
    records = [d.log_record for d in exporter.get_finished_logs()]
    assert [r.event_name for r in records] == ["gen_ai.evaluation.result"] * 3
    assert {(r.trace_id, r.span_id) for r in records} == {
        (int(RECORD.trace_id, 16), int(RECORD.span_id, 16))
    }
    assert [r.timestamp for r in records] == [5_000] * 3
    assert [r.severity_number for r in records] == [
        SeverityNumber.INFO,
        SeverityNumber.WARN,
        SeverityNumber.ERROR,
    ]
    assert dict(records[0].attributes or {}) == {
        sc.GEN_AI_EVALUATION_NAME: "faithfulness",
        sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.9,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
        sc.GEN_AI_EVALUATION_EXPLANATION: "4 of 4 claims",
        sc.RAGTRACE_EVALUATOR: "faithfulness",
        sc.RAGTRACE_EVALUATION_KIND: "lexical",
        sc.RAGTRACE_EVALUATION_DIRECTION: "higher_is_better",
        sc.RAGTRACE_EVALUATION_THRESHOLD: 0.5,
        sc.RAGTRACE_EVALUATION_PASSED: True,
        sc.RAGTRACE_APP: "shop",
    }
    assert records[1].attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    assert records[1].attributes[sc.RAGTRACE_EVALUATION_DIRECTION] == "lower_is_better"
    broken = dict(records[2].attributes or {})
    assert broken[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "error"
    assert broken[sc.RAGTRACE_EVALUATION_ERROR] == "model missing"
    assert sc.GEN_AI_EVALUATION_SCORE_VALUE not in broken


def test_a_turn_of_a_conversation_says_which_conversation(memory: Any) -> None:
    provider, exporter = memory
    turn = dataclasses.replace(
        RECORD, conversation=Conversation(session_id="thread-4", user_id="u-1", turn=2)
    )
    OtelEvaluationLogSink(provider.get_logger("ragtrace")).export(turn, [RUN])
    records = [d.log_record for d in exporter.get_finished_logs()]
    assert [(r.attributes or {})[sc.GEN_AI_CONVERSATION_ID] for r in records] == ["thread-4"] * 3
    assert all(sc.USER_ID not in (r.attributes or {}) for r in records)  # ids stay on the trace
    OtelEvaluationLogSink(provider.get_logger("ragtrace")).export(
        dataclasses.replace(RECORD, conversation=Conversation(user_id="u-1")), [RUN]
    )
    later = [d.log_record for d in exporter.get_finished_logs()][3:]
    assert all(sc.GEN_AI_CONVERSATION_ID not in (r.attributes or {}) for r in later)


def test_a_record_without_ids_still_reports_its_scores(memory: Any) -> None:
    provider, exporter = memory
    sink = OtelEvaluationLogSink(provider.get_logger("ragtrace"))
    sink.export(RagRecord(trace_id="", span_id="", query="q"), [RUN])
    records = [d.log_record for d in exporter.get_finished_logs()]
    assert len(records) == 3 and {r.trace_id for r in records} <= {0, None}


def test_the_provider_given_to_init_is_used_and_the_trace_ends_with_the_request(
    memory: Any,
) -> None:
    provider, exporter = memory
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    rt = ragtrace.init(
        app="logs",
        tracer_provider=tp,
        logger_provider=provider,
        registry=CollectorRegistry(),
        evaluators=["looping"],
    )
    try:
        rag_chain().invoke("When?", config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert rt.flush(5)
    finally:
        rt.shutdown()
    finished = spans.get_finished_spans()
    assert len(finished) == 3  # no evaluation span joins the request's trace
    root = next(s for s in finished if s.parent is None)
    records = [d.log_record for d in exporter.get_finished_logs()]
    assert len(records) == 3  # looping's three scores
    assert {(r.trace_id, r.span_id) for r in records} == {
        (root.context.trace_id, root.context.span_id)
    }
    assert all(r.timestamp >= root.end_time for r in records)  # type: ignore[operator]


def test_the_apps_global_logger_provider_is_used(
    memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, _ = memory
    monkeypatch.setattr(_logs._internal, "_LOGGER_PROVIDER", provider)
    given, processor, own = resolve_logger_provider(Config())
    assert (given, processor, own) == (provider, None, False)


@pytest.mark.usefixtures("no_global_logger_provider")
def test_ragtraces_own_provider_exports_otlp_logs_named_after_the_app() -> None:
    with OtlpReceiver() as rx:
        for suffix in ("", "/v1/traces"):  # an endpoint given for traces serves logs too
            config = Config(app="support-bot", otlp_endpoint=rx.endpoint + suffix)
            provider, processor, own = resolve_logger_provider(config)
            assert own and isinstance(processor, BoundedLogProcessor)
            sink = OtelEvaluationLogSink(provider.get_logger("ragtrace"))  # type: ignore[attr-defined]
            sink.export(RECORD, [RUN])
            assert processor.close(5)
        logs = rx.wait_for_logs(6, 5)
    assert {log.trace_id for log in logs} == {RECORD.trace_id}
    assert {log.span_id for log in logs} == {RECORD.span_id}
    assert {log.event_name for log in logs} == {"gen_ai.evaluation.result"}
    resource = logs[0].resource
    assert resource["service.name"] == "support-bot"
    assert resource[sc.OI_PROJECT_NAME] == "support-bot"


@pytest.mark.usefixtures("no_global_logger_provider")
def test_no_otlp_logs_go_to_a_phoenix_that_takes_none() -> None:
    config = Config(otlp_endpoint="http://127.0.0.1:6006", phoenix_endpoint="http://127.0.0.1:6006")
    provider, processor, own = resolve_logger_provider(config)
    assert own and processor is None and isinstance(provider, LoggerProvider)
    _, processor, _ = resolve_logger_provider(Config())
    assert processor is None  # nowhere to export to


@pytest.mark.usefixtures("no_global_logger_provider")
def test_own_provider_shuts_down_within_budget_and_counts_what_was_left() -> None:
    registry = CollectorRegistry()
    with HangingEndpoint() as ep:
        rt = ragtrace.init(
            app="hang",
            tracer_provider=TracerProvider(),
            registry=registry,
            otlp_endpoint=ep.endpoint,
            evaluators=["looping"],
            shutdown_timeout_s=1.0,
        )
        rag_chain().invoke("When?", config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert rt.pipeline.flush(5)
        started = time.monotonic()
        rt.shutdown()
        assert time.monotonic() - started < 2.0
    family = rt.metrics.exports.dropped_log_records  # read after shutdown took it off
    dropped = sum(
        sample.value
        for metric in family.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )
    assert dropped == 3  # looping's three results, counted once each


@pytest.mark.parametrize(
    ("configured", "switch", "mode"),
    [
        ("logs", None, "logs"),
        ("spans", None, "spans"),
        ("both", None, "both"),
        ("none", None, "none"),
        ("logs", True, "both"),
        ("none", True, "spans"),
        ("both", False, "none"),
    ],
)
def test_which_results_are_written(configured: str, switch: bool | None, mode: str) -> None:
    assert results_mode(Config(evaluation_results=configured), switch) == mode


@pytest.mark.parametrize(
    ("otel", "mode"), [(True, "logs"), (False, "none"), ("both", "both"), ("spans", "spans")]
)
def test_the_settings_file_says_which_results_in_sinks_otel(
    tmp_path: Path, otel: object, mode: str
) -> None:
    path = tmp_path / "ragtrace.yaml"  # JSON is YAML
    path.write_text(json.dumps({"sinks": {"otel": otel}}))
    assert Config.resolve(env={}, config_file=str(path)).evaluation_results == mode


def test_a_bad_results_mode_is_refused_and_the_environment_sets_it() -> None:
    with pytest.raises(ValueError, match="evaluation_results: must be one of logs, spans"):
        Config(evaluation_results="events")
    env = {"RAGTRACE_EVALUATION_RESULTS": "both"}
    assert Config.resolve(env=env).evaluation_results == "both"


def test_the_environment_names_the_project_if_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    attrs = own_resource(Config(app="shop")).attributes
    assert (attrs["service.name"], attrs[sc.OI_PROJECT_NAME]) == ("shop", "shop")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"{sc.OI_PROJECT_NAME}=prod-rag")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "shop-api")
    attrs = own_resource(Config(app="shop")).attributes
    assert (attrs["service.name"], attrs[sc.OI_PROJECT_NAME]) == ("shop-api", "prod-rag")
