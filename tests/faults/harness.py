"""What the fault tests share: an application running ragtrace, its metrics, its own latency.

``FaultApp`` runs ``ragtrace.init`` with a fresh Prometheus registry and an in-memory span
exporter, then plays the application: ``request(i)`` hands one finished request to ragtrace on
the test's thread, exactly as the capture layer does, and keeps how long ragtrace held that
thread (the latency ragtrace adds to the app). Metrics are read from the registry::

    with FaultApp(evaluators=[judge]) as app:
        app.requests(range(5))                     # raises if ragtrace raised into the app
        assert app.slowest_s < 0.25
        app.wait_for("ragtrace_evaluations_total", 5, outcome="error")

Every wait polls and is bounded; a timeout says what it waited for and what it last saw.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from typing import Any, Self

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._exporters.base import ScoreSink
from ragtrace._model import Chunk, RagRecord
from ragtrace._pipeline import PipelineOptions
from ragtrace.evaluators._base import Evaluator
from tests.components import wait_until

APP = "faulty"
REQUEST_BUDGET_S = 0.25
"""Most seconds ragtrace may hold the application's thread for one request while a dependency
is down or hanging: generous (the measured figure is well under a millisecond) because four
test sessions share two cores; the real overhead budget is measured in benchmarks/."""


def record(i: int) -> RagRecord:
    """Request number ``i``: unique trace and span ids, a query, one chunk, an answer."""
    return RagRecord(
        trace_id=f"{i + 1:032x}",
        span_id=f"{i + 1:016x}",
        query=f"What is the refund window for order {i}?",
        response=f"Refunds are accepted within 30 days (order {i}).",
        chunks=(Chunk(text="Refunds are accepted within 30 days of delivery.", id="policy"),),
        app=APP,
        model="chat-model",
    )


class FaultApp:
    """An application with ragtrace in it, for one test (use it as a context manager).

    Args:
        evaluators: The background evaluators.
        score_sinks: More score sinks (a review sink, ...).
        pipeline_options: Queue and worker sizes (default: ragtrace's).
        options: Any other ``ragtrace.init`` option (``metrics_port``, ...).
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        score_sinks: Sequence[ScoreSink] = (),
        pipeline_options: PipelineOptions | None = None,
        **options: Any,
    ) -> None:
        self.registry = CollectorRegistry()
        self.spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.rt = ragtrace.init(
            app=APP,
            tracer_provider=provider,
            registry=self.registry,
            evaluators=list(evaluators),
            score_sinks=list(score_sinks),
            pipeline_options=pipeline_options,
            **options,
        )
        self.latencies: list[float] = []
        self.accepted = 0

    def request(self, i: int) -> float:
        """Hand request ``i`` to ragtrace on this thread; the seconds it took."""
        started = time.perf_counter()
        accepted = self.rt.submit_record(record(i))
        took = time.perf_counter() - started
        self.latencies.append(took)
        self.accepted += int(accepted)
        return took

    def requests(self, numbers: Iterable[int], pause_s: float = 0.0) -> float:
        """Hand on several requests (``pause_s`` apart); the slowest one's seconds."""
        slowest = 0.0
        for i in numbers:
            slowest = max(slowest, self.request(i))
            if pause_s:
                time.sleep(pause_s)
        return slowest

    @property
    def slowest_s(self) -> float:
        """The longest ragtrace held this thread for one request so far."""
        return max(self.latencies, default=0.0)

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples called ``name`` whose labels include ``labels``."""
        return sum(
            sample.value
            for family in self.registry.collect()
            for sample in family.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )

    def wait_for(self, name: str, at_least: float, timeout_s: float = 30.0, **labels: str) -> None:
        """Wait until ``value(name, **labels)`` reaches ``at_least``."""
        wait_until(
            f"{name}{labels} >= {at_least} (now {self.value(name, **labels)})",
            lambda: self.value(name, **labels) >= at_least,
            timeout_s,
            interval_s=0.05,
        )

    def close(self) -> None:
        """Shut ragtrace down (bounded: it must not wait on a dead dependency)."""
        self.rt.shutdown(timeout_s=5.0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stop_process(
    process: subprocess.Popen[Any], kill: bool = False, timeout_s: float = 10.0
) -> None:
    """Stop a process we started, by its id: SIGTERM (or SIGKILL with ``kill``), then SIGKILL
    if it lingers; wait for it so no zombie is left."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout_s)
