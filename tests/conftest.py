"""Shared fixtures: an in-memory span exporter, a fresh registry and a ragtrace per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._backends import passage_store
from ragtrace._model import RagRecord

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Capture tests count spans exactly: they run with no evaluators (and so no evaluation spans)
# unless a test asks for some; the pipeline's own tests pass evaluators explicitly.
os.environ.setdefault("RAGTRACE_EVALUATORS", "")
# A passage store named by the developer's environment would change what evaluators compute.
os.environ.pop(passage_store.ENV, None)


@pytest.fixture(autouse=True)
def no_passage_store() -> Iterator[None]:
    """No passage store installed before or after a test (tests that use one install it)."""
    passage_store.install(None)
    yield
    passage_store.install(None)


class Traced:
    """What a test observes: finished spans and records of one ragtrace instance."""

    def __init__(self, rt: ragtrace.Ragtrace, exporter: InMemorySpanExporter) -> None:
        self.rt = rt
        self.exporter = exporter
        self.records: list[RagRecord] = []
        rt.add_record_sink(self.records.append)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def spans_of(self, trace_id: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if format(s.context.trace_id, "032x") == trace_id]

    def only_record(self) -> RagRecord:
        assert len(self.records) == 1, self.records
        return self.records[0]

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        value = self.rt.metrics.registry.get_sample_value(name, labels or {})
        return 0.0 if value is None else value


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


@pytest.fixture
def traced(
    provider: TracerProvider, registry: CollectorRegistry, exporter: InMemorySpanExporter
) -> Iterator[Traced]:
    rt = ragtrace.init(app="test-app", tracer_provider=provider, registry=registry)
    yield Traced(rt, exporter)
    rt.shutdown()
