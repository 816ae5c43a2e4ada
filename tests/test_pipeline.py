"""The evaluation pipeline: sampling, queueing, workers, timeouts, bad evaluators, sinks, fork."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._exporters.prometheus import PrometheusSink
from ragtrace._metrics.collection import Metrics
from ragtrace._model import Chunk, Evaluation, RagRecord, Score
from ragtrace._pipeline import EvaluationPipeline, PipelineOptions
from ragtrace._pipeline.queues import MemoryQueue
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.rules import Cascade, Rule
from ragtrace.evaluators import Evaluator, evaluator


class Collect:
    """A score sink keeping what it was given."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.got: list[tuple[RagRecord, tuple[Evaluation, ...]]] = []
        self.closed = 0

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        with self.lock:
            self.got.append((record, tuple(evaluations)))

    def shutdown(self) -> None:
        self.closed += 1

    def scores(self) -> dict[str, list[Score]]:
        out: dict[str, list[Score]] = {}
        for _, evaluations in self.got:
            for ev in evaluations:
                for s in ev.scores:
                    out.setdefault(s.name, []).append(s)
        return out


def record(i: int = 1, response: str | None = "The answer.", **kw: object) -> RagRecord:
    return RagRecord(
        trace_id=f"{i:032x}",
        span_id=f"{i:016x}",
        query="What?",
        chunks=(Chunk("context", id="c1", score=0.8),),
        response=response,
        app="test-app",
        **kw,  # type: ignore[arg-type]
    )


@evaluator(name="length", requires={"response"}, threshold=0.5)
def length(r: RagRecord) -> float:
    return min(1.0, len(r.response or "") / 20)


class Harness:
    def __init__(self, evaluators: Sequence[Evaluator], **kw: object) -> None:
        self.registry = CollectorRegistry()
        self.metrics = Metrics(self.registry, "test-app")
        self.diag = Diagnostics(on_error=self.metrics.count_internal_error)
        self.sink = Collect()
        options = kw.pop("options", None) or PipelineOptions(Config(batch_wait_s=0.01))
        self.pipeline = EvaluationPipeline(
            self.diag,
            self.metrics,
            evaluators=evaluators,
            sinks=[self.sink, PrometheusSink(self.metrics)],
            options=options,  # type: ignore[arg-type]
            **kw,  # type: ignore[arg-type]
        )

    def value(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
def make() -> Iterator[type[Harness]]:
    made: list[Harness] = []

    class Made(Harness):
        def __init__(self, *a: object, **kw: object) -> None:
            super().__init__(*a, **kw)  # type: ignore[arg-type]
            made.append(self)

    yield Made
    for h in made:
        h.pipeline.shutdown(timeout_s=1)


def test_scores_reach_the_sinks_with_outcomes_counted(make: type[Harness]) -> None:
    h = make([length])
    assert h.pipeline.submit(record(1, "short"))
    assert h.pipeline.submit(record(2, "a much longer answer than that"))
    assert h.pipeline.flush(5)
    by_trace = {r.trace_id: evs for r, evs in h.sink.got}
    (low,) = by_trace[f"{1:032x}"][0].scores
    (high,) = by_trace[f"{2:032x}"][0].scores
    assert (low.value, low.passed, low.label) == (0.25, False, "fail")
    assert (high.value, high.passed, high.label) == (1.0, True, "pass")
    ev = by_trace[f"{1:032x}"][0]
    assert ev.evaluator == "length" and ev.end_ns >= ev.start_ns > 0
    assert (
        h.value("ragtrace_evaluations_total", evaluator="length", app="test-app", outcome="pass")
        == 1
    )
    assert (
        h.value("ragtrace_evaluations_total", evaluator="length", app="test-app", outcome="fail")
        == 1
    )


def test_missing_fields_are_skipped_and_counted_not_failed(make: type[Harness]) -> None:
    h = make([length])
    h.pipeline.submit(record(1, response=None))
    h.pipeline.submit(record(2, response="   "))
    assert h.pipeline.flush(5)
    assert h.sink.got == []
    assert (
        h.value("ragtrace_evaluations_total", evaluator="length", app="test-app", outcome="skipped")
        == 2
    )


def test_prime_skips_records_that_lack_a_required_field(make: type[Harness]) -> None:
    calls: list[str | None] = []

    @evaluator(name="counting_length", requires={"response"})
    def counting_length(r: RagRecord) -> float:
        calls.append(r.response)
        return 1.0

    h = make([counting_length])
    assert h.pipeline.prime([record(1, response=None), record(2, "an answer")]) == 0
    assert calls == ["an answer"]
    assert h.diag.counts() == {} and h.sink.got == []


class PoisonInBatch(Evaluator):
    """Scores batches of up to 8 at once; a batch holding "poison" raises as a whole. On "slow"
    it waits a second first, so that the records submitted meanwhile queue up into one batch."""

    name = "poison_in_batch"
    requires = frozenset({"response"})
    batch_size = 8
    timeout_s = 5.0

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        if any(r.response == "slow" for r in records):
            time.sleep(1.0)
        if any(r.response == "poison" for r in records):
            raise ValueError("poisoned record")
        return [[self.score(1.0, details={"batch": len(records)})] for _ in records]

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]


def check_one_bad_record_fails_alone(h: Harness) -> None:
    """Submit a slow record, then three (one poisoned) that queue up behind it as one batch:
    the poisoned one alone gets an error Score."""
    h.pipeline.submit(record(1, "slow"))
    time.sleep(0.3)  # the slow record is being scored
    for i, text in enumerate(["fine", "poison", "also fine"]):
        h.pipeline.submit(record(i + 2, text))
    assert h.pipeline.flush(60)
    by_response = {r.response: evs[0].scores[0] for r, evs in h.sink.got}
    assert set(by_response) == {"slow", "fine", "poison", "also fine"}
    assert by_response["poison"].value is None
    assert by_response["poison"].error == "ValueError: poisoned record"
    for text in ("slow", "fine", "also fine"):
        assert by_response[text].value == 1.0 and by_response[text].error is None
    # the three came as one batch, which failed, then ran one record at a time
    assert by_response["fine"].details["batch"] == 1
    assert (
        h.value("ragtrace_evaluations_total", evaluator="poison_in_batch", app="test-app",
                outcome="error") == 1
    )  # fmt: skip


def test_one_bad_record_no_longer_fails_its_batch(make: type[Harness]) -> None:
    h = make([PoisonInBatch()], options=PipelineOptions(Config(workers=1, batch_wait_s=0.01)))
    check_one_bad_record_fails_alone(h)
    stats = h.pipeline._engine.stats["poison_in_batch"]
    assert stats.fallbacks == 1 and stats.records == 1 + 3 + 3


class Misbehaving(Evaluator):
    """Fails as ``mode`` says; "hang" answers its first call (the one that may load models and
    gets the load allowance) and hangs on later ones until released."""

    name = "bad"
    timeout_s = 0.2

    def __init__(self, mode: str, release: threading.Event | None = None) -> None:
        super().__init__()
        self.mode = mode
        self.release = release
        self.calls = 0

    def evaluate(self, record: RagRecord) -> list[Score]:
        self.calls += 1
        if self.mode == "raise":
            raise RuntimeError("model exploded")
        if self.mode == "hang":
            if self.calls > 1:
                assert self.release is not None
                self.release.wait(10)
            return [self.score(0.5)]
        if self.mode == "nan":
            return [self.score(math.nan)]
        if self.mode == "range":
            return [self.score(1.5)]
        if self.mode == "not-a-list":
            return self.score(0.5)  # type: ignore[return-value]
        return ["junk"]  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("raise", "RuntimeError: model exploded"),
        ("hang", "timed out after 0.2 s"),
        ("nan", "ValueError: Score 'bad': value must be a real number or None"),
        ("range", "value 1.5 outside [0, 1]"),
        ("not-a-list", "evaluate returned Score, not a list"),
        ("junk", "evaluate returned str"),
    ],
)
def test_a_failing_evaluator_yields_an_error_score(
    make: type[Harness], mode: str, message: str
) -> None:
    release = threading.Event()
    h = make([Misbehaving(mode, release), length])
    h.pipeline.prime([record(0, "the first call")])  # past the first call's load allowance
    try:
        h.pipeline.submit(record(1, "a long enough answer here"))
        assert h.pipeline.flush(5)
    finally:
        release.set()
    scores = h.sink.scores()
    (bad,) = scores["bad"]
    assert bad.value is None and bad.label == "error"
    assert bad.error is not None and message in bad.error
    assert scores["length"][0].value == 1.0  # the others still ran
    assert (
        h.value("ragtrace_evaluations_total", evaluator="bad", app="test-app", outcome="error") == 1
    )


def test_a_hung_evaluator_does_not_stall_later_records(make: type[Harness]) -> None:
    release = threading.Event()
    h = make(
        [Misbehaving("hang", release)],
        options=PipelineOptions(Config(workers=1, batch_wait_s=0.01)),
    )
    try:
        for i in range(4):
            h.pipeline.submit(record(i + 1))
            assert h.pipeline.flush(5)
        assert len(h.sink.got) == 4
        first, *later = sorted(h.sink.got, key=lambda got: got[0].trace_id)
        assert first[1][0].scores[0].value == 0.5
        for _record, evaluations in later:
            assert evaluations[0].scores[0].error == "timed out after 0.2 s"
    finally:
        release.set()


def test_a_first_call_that_loads_models_gets_the_load_allowance(make: type[Harness]) -> None:
    class SlowToLoad(Evaluator):
        name = "slow_to_load"
        timeout_s = 0.2

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def evaluate(self, record: RagRecord) -> list[Score]:
            self.calls += 1
            time.sleep(0.6 if self.calls in (1, 3) else 0)  # loads, then a slow third call
            return [self.score(1.0)]

    h = make([SlowToLoad()], options=PipelineOptions(Config(workers=1, batch_wait_s=0.01)))
    for i in range(3):
        h.pipeline.submit(record(i + 1))
        assert h.pipeline.flush(5)
    loaded, warm, slow = (
        evs[0].scores[0] for _r, evs in sorted(h.sink.got, key=lambda got: got[0].trace_id)
    )
    assert loaded.value == 1.0 and warm.value == 1.0
    assert slow.error == "timed out after 0.2 s"


def test_full_queue_drops_and_counts_without_blocking(make: type[Harness]) -> None:
    gate = threading.Event()

    @evaluator(name="slow", timeout_s=30)
    def slow(r: RagRecord) -> float:
        gate.wait(30)
        return 1.0

    h = make([slow], options=PipelineOptions(Config(queue_size=10, workers=1), max_batch=1))
    try:
        started = time.perf_counter()
        accepted = sum(h.pipeline.submit(record(i + 1)) for i in range(200))
        elapsed = time.perf_counter() - started
    finally:
        gate.set()
    assert h.pipeline.flush(10)
    dropped = h.value("ragtrace_dropped_records_total", reason="queue_full")
    assert accepted + dropped == 200
    assert 10 <= accepted <= 11  # the queue, plus at most the one a worker took
    assert len(h.sink.got) == accepted
    assert elapsed < 5  # generous: it must not wait for the blocked worker


def test_model_evaluators_get_batches(make: type[Harness]) -> None:
    sizes: list[int] = []
    gate = threading.Event()

    class Batched(Evaluator):
        name = "batched"
        kind = "model"
        batch_size = 8

        def evaluate(self, record: RagRecord) -> list[Score]:
            return self.evaluate_batch([record])[0]

        def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
            gate.wait(5)
            sizes.append(len(records))
            return [[self.score(1.0)] for _ in records]

    h = make([Batched()], options=PipelineOptions(Config(workers=1), max_batch=32))
    for i in range(20):
        h.pipeline.submit(record(i + 1))
    gate.set()
    assert h.pipeline.flush(5)
    assert sum(sizes) == 20 and max(sizes) == 8 and len(sizes) < 20


def test_cascade_runs_the_expensive_one_only_in_the_band(make: type[Harness]) -> None:
    calls: list[str] = []

    @evaluator(name="judge", kind="judge")
    def judge(r: RagRecord) -> float:
        calls.append(r.trace_id)
        return 1.0

    sampler = Sampler(cascades=[Cascade(evaluator="judge", after="length", low=0.3, high=0.7)])
    h = make([judge, length], sampler=sampler)
    h.pipeline.submit(record(1, "x" * 2))  # length 0.1: below the band
    h.pipeline.submit(record(2, "x" * 10))  # 0.5: in the band
    h.pipeline.submit(record(3, "x" * 40))  # 1.0: above
    assert h.pipeline.flush(5)
    assert calls == [f"{2:032x}"]
    reasons = {
        s.labels["reason"]
        for m in h.registry.collect()
        if m.name == "ragtrace_sampling_decisions"
        for s in m.samples
        if s.labels.get("decision") == "dropped"
    }
    assert any(r.startswith("cascade") for r in reasons)


def test_rules_and_ratio_decide_and_are_counted(make: type[Harness]) -> None:
    sampler = Sampler(rate=0.0, rules=[Rule(action="always", status=("error",), name="errors")])
    h = make([length], sampler=sampler)
    h.pipeline.submit(record(1, "ok answer"))
    h.pipeline.submit(record(2, "failed answer", status="error", error="boom"))
    assert h.pipeline.flush(5)
    assert [r.trace_id for r, _ in h.sink.got] == [f"{2:032x}"]
    assert (
        h.value("ragtrace_sampling_decisions_total", decision="sampled", reason="rule:errors") == 1
    )
    assert h.value("ragtrace_sampling_decisions_total", decision="dropped", reason="ratio_out") == 1


def test_submit_never_raises_even_when_the_sampler_breaks(make: type[Harness]) -> None:
    class Broken(Sampler):
        def select(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> list:  # type: ignore[override,type-arg]
            raise RuntimeError("sampler bug")

    h = make([length], sampler=Broken())
    assert h.pipeline.submit(record(1)) is True  # the sampler is asked on the worker thread
    assert h.pipeline.flush(5)
    assert h.sink.got == []
    assert h.value("ragtrace_internal_errors_total", site="pipeline.sample") == 1
    assert h.value("ragtrace_dropped_records_total", reason="sampler_error") == 1


def test_record_sinks_see_every_record_even_unsampled(make: type[Harness]) -> None:
    h = make([length], sampler=Sampler(rate=0.0))
    seen: list[RagRecord] = []
    h.pipeline.add_record_sink(seen.append)
    h.pipeline.add_record_sink(lambda r: 1 / 0)  # a broken sink is counted, others go on
    h.pipeline.submit(record(1))
    assert len(seen) == 1 and h.sink.got == []
    assert h.value("ragtrace_internal_errors_total", site="pipeline.record_sink") == 1


def test_shutdown_flushes_closes_sinks_and_later_submits_are_counted(make: type[Harness]) -> None:
    h = make([length])
    for i in range(50):
        h.pipeline.submit(record(i + 1, f"answer number {i}"))
    h.pipeline.shutdown(timeout_s=5)
    h.pipeline.shutdown(timeout_s=5)
    assert len(h.sink.got) == 50 and h.sink.closed == 1
    assert h.pipeline.submit(record(99)) is False
    assert h.value("ragtrace_dropped_records_total", reason="shutdown") == 1


def test_queue_depth_is_exported(make: type[Harness]) -> None:
    gate = threading.Event()

    @evaluator(name="blocked", timeout_s=30)
    def blocked(r: RagRecord) -> float:
        gate.wait(30)
        return 1.0

    h = make([blocked], options=PipelineOptions(Config(workers=1, batch_wait_s=0.01), max_batch=1))
    try:
        for i in range(6):
            h.pipeline.submit(record(i + 1))
        deadline = time.monotonic() + 5
        while h.value("ragtrace_queue_depth") != 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert h.value("ragtrace_queue_depth") == 5
    finally:
        gate.set()
    assert h.pipeline.flush(5)
    assert h.value("ragtrace_queue_depth") == 0


def test_duplicate_evaluator_names_are_refused() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry, "a")
    with pytest.raises(ValueError, match="repeated: \\['length'\\]"):
        EvaluationPipeline(Diagnostics(), metrics, evaluators=[length, length])


def test_a_forked_child_evaluates_with_fresh_workers(make: type[Harness]) -> None:
    h = make([length])
    h.pipeline.submit(record(1, "parent answer is long enough"))
    assert h.pipeline.flush(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report how many records its own sink got, then exit
        code = 1
        try:
            before = len(h.sink.got)
            h.pipeline.submit(record(2, "child answer is long enough too"))
            ok = h.pipeline.flush(5)
            os.write(write, f"{before},{len(h.sink.got)},{ok}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    got = os.read(read, 100).decode()
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert got == "1,2,True"


def test_feedback_attached_later_sends_the_record_to_skipped_evaluators(
    make: type[Harness],
) -> None:
    @evaluator(name="judge", kind="judge")
    def judge(r: RagRecord) -> float:
        return 0.0 if r.attributes.get("feedback") == "thumbs_down" else 1.0

    sampler = Sampler(
        evaluator_rates={"judge": 0.0, "length": 1.0},
        rules=[Rule(action="always", feedback=True, evaluators=("judge",), name="feedback")],
    )
    h = make([length, judge], sampler=sampler)
    h.pipeline.submit(record(1, "an answer long enough"))
    assert h.pipeline.flush(5)
    assert sorted(h.sink.scores()) == ["length"]

    assert h.pipeline.attach_feedback(f"{1:032x}", "thumbs_down") is True
    assert h.pipeline.flush(5)
    assert h.sink.scores()["judge"][0].value == 0.0
    assert len(h.sink.scores()["length"]) == 1  # evaluators that ran do not run twice
    assert h.pipeline.attach_feedback(f"{1:032x}", "again") is False  # nothing new to run
    assert h.pipeline.attach_feedback(f"{99:032x}", "unknown") is False
    assert (
        h.value("ragtrace_sampling_decisions_total", decision="sampled", reason="rule:feedback")
        == 1
    )


def test_shutdown_that_times_out_accounts_each_record_once(make: type[Harness]) -> None:
    @evaluator(name="slowish", timeout_s=5)
    def slowish(r: RagRecord) -> float:
        time.sleep(0.05)
        return 1.0

    h = make([slowish], options=PipelineOptions(Config(workers=1, batch_wait_s=0.01), max_batch=1))
    for i in range(20):
        h.pipeline.submit(record(i + 1))
    h.pipeline.shutdown(timeout_s=0.1)
    time.sleep(0.3)  # a worker that outlived the join must not publish what was counted dropped
    dropped = h.value("ragtrace_dropped_records_total", reason="shutdown")
    assert 0 < dropped < 20
    assert len(h.sink.got) + dropped == 20


def test_a_queue_missing_part_of_the_interface_is_refused_when_built() -> None:
    class OldQueue:  # a WorkQueue written before publishable, task_done and take_remaining
        role = "local"  # queues written when the pipeline asked a role still work: ignored
        full_reason = "queue_full"

        def put(self, item: object) -> bool:
            return True

        get_batch = ack = flush = release = depth = close = put

    lacks = r"OldQueue is not a WorkQueue: it lacks publishable, task_done, take_remaining "
    with pytest.raises(TypeError, match=lacks):
        Harness([length], queue=OldQueue())

    class Complete(OldQueue):
        task_done = take_remaining = publishable = OldQueue.put

    with pytest.raises(TypeError, match=r"OldQueue is not a WorkConsumer: it lacks publishable"):
        Harness([length], consumer=OldQueue())
    with pytest.raises(TypeError, match=r"is not a Shipper: it lacks connected, choose_with, room"):
        Harness([length], shipper=Complete())
    with pytest.raises(ValueError, match="one of queue, shipper and consumer"):
        Harness([length], queue=MemoryQueue(), consumer=MemoryQueue())


def test_a_queue_written_for_the_role_interface_is_both_ends() -> None:
    class RoleQueue:  # the whole interface of the single queue protocol, ``role`` included
        role = "local"

        def __init__(self) -> None:
            inner = MemoryQueue(100)
            self.full_reason = inner.full_reason
            for name in (
                "put get_batch publishable ack release task_done flush depth close take_remaining"
            ).split():
                setattr(self, name, getattr(inner, name))

    h = Harness([length], queue=RoleQueue())
    for i in range(5):
        assert h.pipeline.submit(record(i + 1))
    assert h.pipeline.flush(timeout_s=5.0)
    assert len(h.sink.got) == 5
    assert h.pipeline.shutdown(timeout_s=1.0)
