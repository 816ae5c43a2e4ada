"""An application that ships to Redis samples on its sending thread, not on the request path:
what reaches the stream names the evaluators the sampler chose, and nothing it sampled out
leaves the process (against a real redis-server)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._metrics.collection import Metrics
from ragtrace._model import RagRecord
from ragtrace._pipeline import EvaluationPipeline, PipelineOptions
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.redis_consumer import RedisConsumer
from ragtrace._pipeline.queues.redis_shipper import RedisShipper
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.rules import Rule
from ragtrace.evaluators import Evaluator
from tests.queues.conftest import options
from tests.redis_server import RedisServer
from tests.test_pipeline import length, record
from tests.test_pipeline_feedback import judge

pytestmark = pytest.mark.integration


class Watching(Sampler):
    """Remembers the thread each record was sampled on."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.threads: list[str] = []

    def select(self, rec: RagRecord, evaluators: Sequence[Evaluator]) -> list:  # type: ignore[override,type-arg]
        self.threads.append(threading.current_thread().name)
        return super().select(rec, evaluators)


@pytest.fixture
def shipping(redis_server: RedisServer) -> Iterator[tuple[EvaluationPipeline, Watching, Metrics]]:
    sampler = Watching(
        rate=0.0,
        evaluator_rates={"length": 0.0, "judge": 0.0},
        rules=[
            Rule("always", status=("error",), evaluators=("length",), name="errors"),
            Rule("always", feedback=True, evaluators=("judge",), name="feedback"),
        ],
    )
    registry = CollectorRegistry()
    metrics = Metrics(registry, "test-app")
    pipeline = EvaluationPipeline(
        Diagnostics(on_error=metrics.count_internal_error),
        metrics,
        evaluators=[length, judge],
        sampler=sampler,
        options=PipelineOptions(Config(batch_wait_s=0.01)),
        shipper=RedisShipper(options(redis_server.url, stream="t:sampling")),
    )
    yield pipeline, sampler, metrics
    pipeline.shutdown(timeout_s=5)


def read_all(redis_server: RedisServer) -> list[WorkItem]:
    consumer = RedisConsumer(options(redis_server.url, stream="t:sampling"))
    got: list[WorkItem] = []
    while batch := consumer.get_batch(100, 0.2):
        consumer.ack(batch)
        got.extend(batch)
    return got


def test_the_shipper_thread_samples_and_only_chosen_records_leave(
    shipping: tuple[EvaluationPipeline, Watching, Metrics], redis_server: RedisServer
) -> None:
    pipeline, sampler, metrics = shipping
    for i in range(1, 21):
        status = "error" if i % 5 == 0 else "ok"
        assert pipeline.submit(record(i, "an answer long enough", status=status, error=None))
    assert pipeline.flush(10)
    got = read_all(redis_server)
    assert sorted(int(w.record.trace_id, 16) for w in got) == [5, 10, 15, 20]
    assert {w.evaluators for w in got} == {("length",)}
    assert sampler.threads and set(sampler.threads) == {"ragtrace-redis-shipper"}
    sampled_out = metrics.registry.get_sample_value(
        "ragtrace_sampling_decisions_total", {"decision": "dropped", "reason": "ratio_out"}
    )
    assert sampled_out == 16 * 2 + 4  # 16 records x 2 evaluators, judge on the 4 errors


def test_feedback_on_a_shipped_record_ships_it_again_for_what_it_skipped(
    shipping: tuple[EvaluationPipeline, Watching, Metrics], redis_server: RedisServer
) -> None:
    pipeline, _, _ = shipping
    assert pipeline.submit(record(1, "an answer long enough"))
    assert pipeline.flush(10)
    assert read_all(redis_server) == []
    assert pipeline.attach_feedback(f"{1:032x}", "thumbs_down") is True
    assert pipeline.flush(10)
    (shipped,) = read_all(redis_server)
    assert shipped.evaluators == ("judge",)
    assert shipped.record.attributes["feedback"] == "thumbs_down"
