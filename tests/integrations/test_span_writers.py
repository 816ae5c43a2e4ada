"""Both span writers export the same spans: the direct one (straight to the SDK's processors)
and the one through the ``Tracer`` API, on real LangChain traffic and on drafts written by hand.

What "the same" means: names, kinds, parents, attributes (as the SDK cleans and limits them),
status, events, resource and scope; times ordered as the request ran. Ids differ by nature.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import NonRecordingSpan, SpanContext, StatusCode, TraceFlags, TraceState
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._capture.drafts import SpanDraft
from ragtrace._capture.span_writers import (
    DirectSpanWriter,
    TracerSpanWriter,
    span_writer,
    static_decision,
)
from ragtrace._model import RagRecord
from ragtrace.integrations.langchain import instrument, uninstrument
from tests.integrations.lc_app import ListRetriever, fake_llm, rag_chain

WRITERS = ("direct", "api")


class _Run:
    """One ragtrace instance on its own provider, with the writer asked for."""

    def __init__(self, writer: str, provider: TracerProvider, **config: Any) -> None:
        self.exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.rt = ragtrace.init(
            app="writers",
            tracer_provider=provider,
            registry=CollectorRegistry(),
            evaluators=(),
            direct_spans=writer == "direct",
            **config,
        )
        self.records: list[RagRecord] = []
        self.rt.add_record_sink(self.records.append)
        instrument(self.rt)
        expected = DirectSpanWriter if writer == "direct" else TracerSpanWriter
        assert type(self.rt.capture.span_writer) is expected

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def close(self) -> None:
        uninstrument()
        self.rt.shutdown()


def _run_both(
    traffic: Callable[[], None],
    provider: Callable[[], TracerProvider] = TracerProvider,
    **config: Any,
) -> dict[str, _Run]:
    runs = {}
    for writer in WRITERS:
        run = _Run(writer, provider(), **config)
        try:
            traffic()
        finally:
            run.close()
        runs[writer] = run
    return runs


def _shape(spans: Sequence[ReadableSpan]) -> list[tuple[Any, ...]]:
    """Everything about the spans but ids and times, parents by name, in a stable order."""
    names = {s.context.span_id: s.name for s in spans}
    shaped = [
        (
            s.name,
            s.kind,
            names.get(s.parent.span_id, "<outside>") if s.parent is not None else None,
            dict(s.attributes or {}),
            s.dropped_attributes,
            s.status.status_code,
            s.status.description,
            [(e.name, _without_stack(e.attributes)) for e in s.events],
            dict(s.resource.attributes),
            s.instrumentation_scope.name if s.instrumentation_scope else None,
            s.context.trace_flags,
        )
        for s in spans
    ]
    return sorted(shaped, key=repr)


def _without_stack(attributes: Any) -> dict[str, Any]:
    """An event's attributes, the stack trace reduced to its last line (the frames above it
    name the test's own calls, which differ between the two runs)."""
    shown = dict(attributes or {})
    if "exception.stacktrace" in shown:
        shown["exception.stacktrace"] = shown["exception.stacktrace"].strip().splitlines()[-1]
    return shown


def _assert_same(runs: dict[str, _Run]) -> list[ReadableSpan]:
    direct, api = runs["direct"].spans(), runs["api"].spans()
    assert direct, "no spans exported"
    assert _shape(direct) == _shape(api)
    for run in runs.values():
        _assert_times_nest(run.spans())
        for record in run.records:
            root = [s for s in run.spans() if format(s.context.span_id, "016x") == record.span_id]
            assert len(root) == 1 and format(root[0].context.trace_id, "032x") == record.trace_id
    return direct


def _assert_times_nest(spans: Sequence[ReadableSpan]) -> None:
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        if parent is not None:
            assert parent.start_time <= span.start_time and span.end_time <= parent.end_time


# -- real LangChain traffic ----------------------------------------------------------------------


def test_an_invoke_exports_the_same_three_spans() -> None:
    spans = _assert_same(_run_both(lambda: rag_chain().invoke("When was the lighthouse built?")))
    assert len(spans) == 3
    root = next(s for s in spans if s.parent is None)
    assert root.attributes["ragtrace.request.status"] == "ok"
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id
        for s in spans
        if s is not root
    )


def test_a_failing_retriever_exports_the_same_error_and_exception_event() -> None:
    def traffic() -> None:
        with pytest.raises(RuntimeError):
            rag_chain(retriever=ListRetriever(fail=True)).invoke("q")

    spans = _assert_same(_run_both(traffic))
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert failed and all(any(e.name == "exception" for e in s.events) for s in failed)
    assert any("vector store unreachable" in (s.status.description or "") for s in failed)


def test_an_abandoned_stream_exports_the_same_spans() -> None:
    def traffic() -> None:
        stream = rag_chain(llm=fake_llm("one two three four five six")).stream("q")
        next(iter(stream))
        stream.close()

    spans = _assert_same(_run_both(traffic))
    assert {s.attributes.get("ragtrace.request.status") for s in spans} >= {"abandoned"}


def test_a_retriever_alone_and_cut_texts_export_the_same_spans() -> None:
    def traffic() -> None:
        ListRetriever(k=2).invoke("a question that is long enough to be cut " * 4)
        rag_chain().invoke("another question that is long enough to be cut " * 4)

    spans = _assert_same(_run_both(traffic, max_text_chars=40, max_chunk_chars=30))
    assert any("ragtrace.truncated" in s.attributes for s in spans)
    assert len([s for s in spans if s.parent is None]) == 2


def test_a_request_inside_the_apps_span_is_its_child_either_way() -> None:
    runs: dict[str, _Run] = {}
    for writer in WRITERS:
        provider = TracerProvider()
        run = _Run(writer, provider)
        outer = provider.get_tracer("app").start_span("http request")
        with trace.use_span(outer, end_on_exit=True):
            rag_chain().invoke("q")
        run.close()
        runs[writer] = run
        root = next(
            s
            for s in run.spans()
            if s.attributes.get("ragtrace.request.status") == "ok"
            and s.attributes.get("openinference.span.kind") == "CHAIN"
        )
        assert root.parent is not None and root.parent.span_id == outer.get_span_context().span_id
        assert root.context.trace_id == outer.get_span_context().trace_id
    assert _shape(runs["direct"].spans()) == _shape(runs["api"].spans())


# -- drafts written by hand -----------------------------------------------------------------------


def _drafts() -> tuple[SpanDraft, list[SpanDraft]]:
    now = time.time_ns()
    root = SpanDraft("rag", now, {"a": "x" * 40, "n": 3, "ok": True, "f": 0.5})
    step = SpanDraft("retrieve", now + 10, {"list": ["a", "b"], "k": "v" * 40})
    step.add_event("exception", {"exception.message": "m" * 50, "exception.type": "E"})
    step.end(now + 20)
    root.set_attribute("late", "y")
    return root, [step]


def _write(
    writer_kind: str, provider: TracerProvider, parent: Context | None = None
) -> tuple[tuple[str, str], list[ReadableSpan]]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ragtrace")
    writer = span_writer(tracer, direct=writer_kind == "direct")
    root, steps = _drafts()
    written = writer.open(root, parent or Context(), steps)
    written.close({"inline.score": 0.9}, root.start_ns + 30)
    return (written.trace_id, written.span_id), list(exporter.get_finished_spans())


@pytest.fixture(
    params=[
        pytest.param({}, id="defaults"),
        pytest.param({"span_limits": SpanLimits(max_span_attributes=3)}, id="few-attributes"),
        pytest.param(
            {"span_limits": SpanLimits(max_span_attribute_length=8, max_attribute_length=8)},
            id="short-values",
        ),
        pytest.param({"span_limits": SpanLimits(max_events=0)}, id="no-events"),
    ]
)
def provider_options(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    yield request.param


def test_hand_drafts_come_out_the_same_under_span_limits(provider_options: dict[str, Any]) -> None:
    shapes = {}
    for kind in WRITERS:
        ids, spans = _write(kind, TracerProvider(**provider_options))
        assert len(spans) == 2
        root = next(s for s in spans if s.name == "rag")
        assert ids == (format(root.context.trace_id, "032x"), format(root.context.span_id, "016x"))
        shapes[kind] = _shape(spans)
    assert shapes["direct"] == shapes["api"]
    root_attributes = next(shape for shape in shapes["direct"] if shape[0] == "rag")[3]
    if "span_limits" not in provider_options:
        assert root_attributes["inline.score"] == 0.9 and root_attributes["late"] == "y"


class _TaggingSampler(Sampler):
    """Samples everything and adds an attribute and a trace state, like a vendor sampler."""

    def should_sample(
        self,
        parent_context,
        trace_id,
        name,
        kind=None,
        attributes=None,
        links=None,
        trace_state=None,
    ) -> SamplingResult:  # type: ignore[no-untyped-def]
        return SamplingResult(
            Decision.RECORD_AND_SAMPLE,
            {**(attributes or {}), "sampler.tag": name},
            TraceState([("vendor", "on")]),
        )

    def get_description(self) -> str:
        return "tagging"


def test_a_samplers_attributes_and_trace_state_reach_the_spans_either_way() -> None:
    results = {}
    for kind in WRITERS:
        _, spans = _write(kind, TracerProvider(sampler=_TaggingSampler()))
        assert {s.attributes["sampler.tag"] for s in spans} == {"rag", "retrieve"}
        assert all(s.context.trace_state.get("vendor") == "on" for s in spans)
        results[kind] = _shape(spans)
    assert results["direct"] == results["api"]


@pytest.mark.parametrize("kind", WRITERS)
def test_nothing_is_exported_when_the_sampler_drops_it_but_the_ids_are_real(kind: str) -> None:
    (trace_id, span_id), spans = _write(kind, TracerProvider(sampler=ALWAYS_OFF))
    assert spans == []
    assert int(trace_id, 16) != 0 and int(span_id, 16) != 0


@pytest.mark.parametrize("kind", WRITERS)
@pytest.mark.parametrize("sampled", [True, False])
def test_a_remote_parent_decides_under_the_parent_based_sampler(kind: str, sampled: bool) -> None:
    remote = SpanContext(0x1234, 0x99, is_remote=True, trace_flags=TraceFlags(1 if sampled else 0))
    parent = trace.set_span_in_context(NonRecordingSpan(remote), Context())
    (trace_id, _), spans = _write(kind, TracerProvider(sampler=ParentBased(ALWAYS_ON)), parent)
    assert trace_id == format(0x1234, "032x")
    assert len(spans) == (2 if sampled else 0)
    if sampled:
        root = next(s for s in spans if s.name == "rag")
        assert root.parent is not None and root.parent.span_id == 0x99


@pytest.mark.parametrize("kind", WRITERS)
def test_a_remote_parents_trace_state_reaches_spans_the_sampler_is_not_asked_for(kind: str) -> None:
    state = TraceState([("vendor", "remote")])
    remote = SpanContext(0x1234, 0x99, is_remote=True, trace_flags=TraceFlags(1), trace_state=state)
    parent = trace.set_span_in_context(NonRecordingSpan(remote), Context())
    _, spans = _write(kind, TracerProvider(sampler=ParentBased(ALWAYS_ON)), parent)
    assert len(spans) == 2
    assert all(s.context.trace_state.get("vendor") == "remote" for s in spans)


def test_only_samplers_that_decide_alone_are_not_asked() -> None:
    local = SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(1))
    local_off = SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(0))
    remote = SpanContext(1, 2, is_remote=True, trace_flags=TraceFlags(1))
    on, off = Decision.RECORD_AND_SAMPLE, Decision.DROP
    assert static_decision(ALWAYS_ON, None) is on
    assert static_decision(ALWAYS_OFF, local) is off
    assert static_decision(ParentBased(ALWAYS_ON), None) is on
    assert static_decision(ParentBased(ALWAYS_OFF), None) is off
    assert static_decision(ParentBased(ALWAYS_OFF), local) is on  # a sampled local parent
    assert static_decision(ParentBased(ALWAYS_ON), local_off) is off
    assert static_decision(ParentBased(ALWAYS_ON, remote_parent_sampled=ALWAYS_OFF), remote) is off
    ratio = ParentBased(TraceIdRatioBased(0.5))
    assert static_decision(ratio, None) is None  # the root's decision needs the sampler
    assert static_decision(ratio, local) is on  # its children follow the parent
    assert static_decision(_TaggingSampler(), local) is None
    assert (
        static_decision(
            ParentBased(_TaggingSampler(), local_parent_sampled=_TaggingSampler()), local
        )
        is None
    )


class _StartCounter(SpanProcessor):
    """A processor that acts when a span starts (so the direct writer must step aside)."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        self.started.append(span.name)
        span.set_attribute("seen.at.start", True)


def test_a_processor_that_acts_at_start_gets_real_spans_even_when_added_later() -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    writer = span_writer(provider.get_tracer("ragtrace"))
    assert isinstance(writer, DirectSpanWriter)
    root, steps = _drafts()
    writer.open(root, Context(), steps).close({}, root.start_ns + 30)
    assert all("seen.at.start" not in s.attributes for s in exporter.get_finished_spans())

    counter = _StartCounter()
    provider.add_span_processor(counter)
    exporter.clear()
    root, steps = _drafts()
    writer.open(root, Context(), steps).close({}, root.start_ns + 30)
    assert sorted(counter.started) == ["rag", "retrieve"]
    assert all(s.attributes["seen.at.start"] is True for s in exporter.get_finished_spans())


class _FilteringProcessor(SimpleSpanProcessor):
    """An exporter's own processor: a subclass that changes only what happens at the end."""

    def on_end(self, span: ReadableSpan) -> None:
        if span.name != "retrieve":
            super().on_end(span)


class _TaggingProcessor(SimpleSpanProcessor):
    """A subclass that acts when a span starts."""

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        span.set_attribute("tagged.at.start", True)


@pytest.mark.parametrize(
    ("processor", "direct"), [(_FilteringProcessor, True), (_TaggingProcessor, False)]
)
def test_a_subclass_is_written_directly_only_when_it_leaves_on_start_alone(
    processor: type[SimpleSpanProcessor], direct: bool
) -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(processor(exporter))
    writer = span_writer(provider.get_tracer("ragtrace"))
    root, steps = _drafts()
    writer.open(root, Context(), steps).close({}, root.start_ns + 30)
    spans = exporter.get_finished_spans()
    tagged = [s.name for s in spans if "tagged.at.start" in s.attributes]
    assert tagged == ([] if direct else ["retrieve", "rag"])
    assert [s.name for s in spans] == (["rag"] if direct else ["retrieve", "rag"])


def test_a_tracer_that_is_not_the_sdks_is_written_through_its_api() -> None:
    writer = span_writer(trace.NoOpTracer())
    assert isinstance(writer, TracerSpanWriter)
    root, steps = _drafts()
    written = writer.open(root, Context(), steps)
    written.close({}, root.start_ns + 30)
    assert written.trace_id == "0" * 32


class _BrokenSampler(Sampler):
    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        raise RuntimeError("sampler bug")

    def get_description(self) -> str:
        return "broken"


class _StepSamplerBug(Sampler):
    """Samples the root and raises for its children."""

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, *args: Any, **kwargs: Any
    ) -> SamplingResult:
        if name != "rag":
            raise RuntimeError("sampler bug")
        return ALWAYS_ON.should_sample(parent_context, trace_id, name, *args, **kwargs)

    def get_description(self) -> str:
        return "fails for steps"


class _Balance(SpanProcessor):
    def __init__(self) -> None:
        self.started = self.ended = 0

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1


def test_a_root_started_through_the_api_is_ended_when_a_step_fails() -> None:
    provider = TracerProvider(sampler=_StepSamplerBug())
    balance = _Balance()
    provider.add_span_processor(balance)
    writer = span_writer(provider.get_tracer("ragtrace"))
    assert isinstance(writer, DirectSpanWriter)  # it steps aside for _Balance's on_start
    root, steps = _drafts()
    with pytest.raises(RuntimeError, match="sampler bug"):
        writer.open(root, Context(), steps)
    assert balance.started == balance.ended == 1


@pytest.mark.parametrize("kind", WRITERS)
def test_a_writer_that_fails_is_counted_and_the_record_still_goes_out(kind: str) -> None:
    run = _Run(kind, TracerProvider(sampler=_BrokenSampler()))
    try:
        assert rag_chain().invoke("q") == "The lighthouse was built in 1850."
        errors = run.rt.metrics.registry.get_sample_value(
            "ragtrace_internal_errors_total", {"site": "capture.write_spans"}
        )
    finally:
        run.close()
    assert errors == 1
    assert len(run.records) == 1 and run.records[0].response
    assert run.records[0].trace_id == "0" * 32
