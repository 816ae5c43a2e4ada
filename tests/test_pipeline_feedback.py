"""Where the sampler runs and how feedback meets a record that is still queued.

In-process, ``submit`` only queues the record; a worker thread asks the sampler. Feedback can
therefore reach a record before, while or after its evaluators are chosen; each case must end
with every chosen evaluator run once and the feedback seen by the sampler.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest

from ragtrace._config import Config
from ragtrace._model import RagRecord
from ragtrace._pipeline import PipelineOptions
from ragtrace._pipeline.feedback import RecentRecords
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.codec import encode_item
from ragtrace._pipeline.queues.memory import MemoryQueue
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.rules import Rule
from ragtrace.evaluators import Evaluator, evaluator

from .test_pipeline import Harness, length, record

WAIT_S = 5.0


@evaluator(name="judge", kind="judge")
def judge(r: RagRecord) -> float:
    return 0.0 if r.attributes.get("feedback") == "thumbs_down" else 1.0


def feedback_sampler(cls: type[Sampler] = Sampler) -> Sampler:
    """``length`` on every record; ``judge`` only on records that carry feedback."""
    return cls(
        evaluator_rates={"judge": 0.0, "length": 1.0},
        rules=[Rule(action="always", feedback=True, evaluators=("judge",), name="feedback")],
    )


class Gate:
    """An evaluator that holds the workers on its first call until ``open`` is called."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

        @evaluator(name="gate")
        def gate(r: RagRecord) -> float:
            self.entered.set()
            self.released.wait(WAIT_S)
            return 1.0

        self.evaluator = gate

    def open(self) -> None:
        self.released.set()


@pytest.fixture
def harnesses() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for h in made:
        h.pipeline.shutdown(timeout_s=2)


def harness(made: list[Harness], evaluators: Sequence[Evaluator], **kw: object) -> Harness:
    options = PipelineOptions(Config(batch_wait_s=0.01, workers=1, **kw), max_batch=1)  # type: ignore[arg-type]
    h = Harness(evaluators, options=options, sampler=feedback_sampler())
    made.append(h)
    return h


def scored(h: Harness, trace: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for rec, evaluations in h.sink.got:
        if rec.trace_id == f"{trace:032x}":
            for ev in evaluations:
                out.setdefault(ev.evaluator, []).extend(s.value for s in ev.scores)
    return out


def test_the_sampler_runs_on_a_worker_thread_not_on_the_request_thread() -> None:
    asked_on: list[str] = []

    class Watching(Sampler):
        def select(self, rec: RagRecord, evaluators: Sequence[Evaluator]) -> list:  # type: ignore[override,type-arg]
            asked_on.append(threading.current_thread().name)
            return super().select(rec, evaluators)

    h = Harness([length], sampler=Watching(), options=PipelineOptions(Config(batch_wait_s=0.01)))
    try:
        assert h.pipeline.submit(record(1, "an answer long enough"))
        assert h.pipeline.flush(WAIT_S)
        assert asked_on and all(name.startswith("ragtrace-worker-") for name in asked_on)
        assert scored(h, 1) == {"length": [1.0]}
    finally:
        h.pipeline.shutdown(timeout_s=2)


def test_feedback_on_a_queued_record_reaches_the_sampler_when_the_worker_chooses(
    harnesses: list[Harness],
) -> None:
    gate = Gate()
    h = harness(harnesses, [gate.evaluator, length, judge])
    assert h.pipeline.submit(record(1, "an answer long enough"))  # holds the only worker
    assert gate.entered.wait(WAIT_S)
    assert h.pipeline.submit(record(2, "another answer long enough"))  # queued, not chosen
    assert h.pipeline.attach_feedback(f"{2:032x}", "thumbs_down") is True
    gate.open()
    assert h.pipeline.flush(WAIT_S)
    assert scored(h, 2) == {"gate": [1.0], "length": [1.0], "judge": [0.0]}
    (published,) = [r for r, _ in h.sink.got if r.trace_id == f"{2:032x}"]
    assert published.attributes["feedback"] == "thumbs_down"
    assert scored(h, 1) == {"gate": [1.0], "length": [1.0]}
    # Chosen now: more feedback finds nothing new to run, and nothing runs twice.
    assert h.pipeline.attach_feedback(f"{2:032x}", "again") is False
    assert h.pipeline.flush(WAIT_S)
    assert scored(h, 2) == {"gate": [1.0], "length": [1.0], "judge": [0.0]}


def test_feedback_waits_for_a_worker_that_is_choosing(harnesses: list[Harness]) -> None:
    choosing = threading.Event()
    go_on = threading.Event()

    class Slow(Sampler):
        def select(self, rec: RagRecord, evaluators: Sequence[Evaluator]) -> list:  # type: ignore[override,type-arg]
            if rec.trace_id == f"{1:032x}" and "feedback" not in rec.attributes:
                choosing.set()
                go_on.wait(WAIT_S)
            return super().select(rec, evaluators)

    h = Harness(
        [length, judge],
        sampler=feedback_sampler(Slow),
        options=PipelineOptions(Config(batch_wait_s=0.01, workers=1)),
    )
    harnesses.append(h)
    assert h.pipeline.submit(record(1, "an answer long enough"))
    assert choosing.wait(WAIT_S)
    answers: list[bool] = []
    attach = threading.Thread(
        target=lambda: answers.append(h.pipeline.attach_feedback(f"{1:032x}", "thumbs_down"))
    )
    attach.start()
    attach.join(0.3)
    assert attach.is_alive() and answers == []  # waits while the worker is choosing
    go_on.set()
    attach.join(WAIT_S)
    assert answers == [True]  # then asks the sampler again, with the feedback
    assert h.pipeline.flush(WAIT_S)
    assert scored(h, 1) == {"length": [1.0], "judge": [0.0]}


def test_a_record_the_full_queue_refused_can_still_be_evaluated_through_feedback(
    harnesses: list[Harness],
) -> None:
    gate = Gate()
    h = harness(harnesses, [gate.evaluator, length, judge], queue_size=1)
    assert h.pipeline.submit(record(1, "an answer long enough"))
    assert gate.entered.wait(WAIT_S)
    assert h.pipeline.submit(record(2, "another answer long enough"))  # fills the queue
    assert h.pipeline.submit(record(3, "a third answer long enough")) is False
    assert h.value("ragtrace_dropped_records_total", reason="queue_full") == 1
    gate.open()
    assert h.pipeline.flush(WAIT_S)
    assert scored(h, 3) == {}
    assert h.pipeline.attach_feedback(f"{3:032x}", "thumbs_down") is True
    assert h.pipeline.flush(WAIT_S)
    assert scored(h, 3) == {"gate": [1.0], "length": [1.0], "judge": [0.0]}


def test_unsampled_records_are_queued_but_never_published(harnesses: list[Harness]) -> None:
    h = Harness(
        [length], sampler=Sampler(rate=0.0), options=PipelineOptions(Config(batch_wait_s=0.01))
    )
    harnesses.append(h)
    assert all(h.pipeline.submit(record(i)) for i in range(1, 21))
    assert h.pipeline.flush(WAIT_S)
    assert h.sink.got == []
    assert (
        h.value("ragtrace_sampling_decisions_total", decision="dropped", reason="ratio_out") == 20
    )


def test_recent_records_forget_the_oldest_and_track_states() -> None:
    recent = RecentRecords(2, wait_s=0.05)
    first, second, third = record(1), record(2), record(3)
    for rec in (first, record(4), record(5)):
        recent.remember(rec, ())
    for rec in (second, third):
        recent.remember(rec)  # waiting for their worker: not counted in the window
    assert recent.attach(first.trace_id, "x") is None  # forgotten: two chosen since
    assert recent.claim(first) == (first, False)
    current, tracked = recent.claim(second)
    assert (current, tracked) == (second, True)
    assert recent.attach(second.trace_id, "x") is None  # still choosing after wait_s
    recent.settle(second, ("length",))
    found = recent.attach(second.trace_id, "x")
    assert found is not None and not found.waiting and found.ran == {"length"}
    assert found.record.attributes["feedback"] == "x"
    assert recent.attach(second.trace_id, "x") is None  # taken out
    waiting = recent.attach(third.trace_id, "y")
    assert waiting is not None and waiting.waiting and waiting.ran == frozenset()
    current, tracked = recent.claim(third)
    assert tracked and current.attributes["feedback"] == "y"
    recent.after_fork()
    assert recent.attach(third.trace_id, "z") is None


def test_an_item_without_a_choice_cannot_be_shipped() -> None:
    with pytest.raises(ValueError, match="must name its evaluators"):
        encode_item(WorkItem(record(1), None))
    assert encode_item(WorkItem(record(1), ("length",)))


def test_a_queued_record_with_feedback_outlives_the_window_until_it_is_chosen() -> None:
    recent = RecentRecords(2)
    queued, quiet = record(1), record(2)
    recent.remember(queued)  # waiting for its worker
    recent.remember(quiet)  # waiting too, but nobody gives it feedback
    found = recent.attach(queued.trace_id, "thumbs_down")
    assert found is not None and found.waiting
    for i in range(3, 8):
        recent.remember(record(i), ())
    assert recent.attach(quiet.trace_id, "late") is None  # aged out like any record
    assert [recent.attach(f"{i:032x}", "x") is None for i in range(3, 8)] == [
        True,
        True,
        True,
        False,
        False,
    ]  # the kept record holds no one else in memory
    current, tracked = recent.claim(queued)  # five newer records later, still here
    assert tracked and current.attributes["feedback"] == "thumbs_down"
    recent.settle(queued, ("length",))
    assert recent.attach(queued.trace_id, "again") is not None  # chosen: ages from now on
    recent.remember(queued, ("length",))
    for i in range(8, 11):
        recent.remember(record(i), ())
    assert recent.attach(queued.trace_id, "again") is None


def test_a_trace_remembered_again_keeps_its_newest_record() -> None:
    recent = RecentRecords(2)
    first, again, other = record(1), record(1, "a second answer in the same trace"), record(2)
    for rec in (first, again, other):
        recent.remember(rec, ())
    found = recent.attach(first.trace_id, "x")  # the oldest remember call aged out, not `again`
    assert found is not None and found.record.response == "a second answer in the same trace"
    assert recent.attach(other.trace_id, "x") is not None


def test_concurrent_submits_and_feedback_run_each_chosen_evaluator_exactly_once(
    harnesses: list[Harness],
) -> None:
    h = Harness(
        [length, judge],
        sampler=feedback_sampler(),
        options=PipelineOptions(
            Config(batch_wait_s=0.001, workers=2, queue_size=100_000), max_batch=8
        ),
    )
    harnesses.append(h)
    per_thread, threads = 300, 4
    accepted: list[int] = []
    fed: list[int] = []

    def app(first: int) -> None:
        for i in range(first, first + per_thread):
            if h.pipeline.submit(record(i, "an answer long enough")):
                accepted.append(i)
            if i % 3 == 0 and h.pipeline.attach_feedback(f"{i:032x}", "thumbs_down"):
                fed.append(i)  # right after its own submit: queued, being chosen, or chosen

    workers = [threading.Thread(target=app, args=(1 + t * per_thread,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert h.pipeline.flush(60)
    runs: dict[tuple[int, str], int] = {}
    for rec, evaluations in h.sink.got:
        for ev in evaluations:
            key = (int(rec.trace_id, 16), ev.evaluator)
            runs[key] = runs.get(key, 0) + 1
    total = per_thread * threads
    assert sorted(accepted) == list(range(1, total + 1))
    assert sorted(fed) == [i for i in range(1, total + 1) if i % 3 == 0]
    assert {k: n for k, n in runs.items() if n != 1} == {}  # nothing ran twice
    assert {i for i, name in runs if name == "length"} == set(accepted)
    assert {i for i, name in runs if name == "judge"} == set(fed)
    assert h.value("ragtrace_internal_errors_total", site="pipeline.attach_feedback") == 0


class HeldLocks:
    """Holds the given locks on another thread, as a worker that lost the GIL would."""

    def __init__(self, *locks: threading.Lock) -> None:
        self.held, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(locks,))

    def _hold(self, locks: Sequence[threading.Lock]) -> None:
        for lock in locks:
            lock.acquire()
        self.held.set()
        self.release.wait(WAIT_S)
        for lock in locks:
            lock.release()

    def __enter__(self) -> HeldLocks:
        self.thread.start()
        assert self.held.wait(WAIT_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(WAIT_S)


def test_remember_and_refuse_take_no_lock_until_window_arrivals_wait() -> None:
    recent = RecentRecords(3)
    queued, refused, third = record(1), record(2), record(3)
    done, filed = threading.Event(), threading.Event()

    def request_path() -> None:
        recent.remember(queued)
        recent.remember(refused)
        recent.refuse(refused)
        done.set()
        recent.remember(third)  # a fourth arrival past the window: files under the lock
        filed.set()

    with HeldLocks(recent._lock):
        app = threading.Thread(target=request_path)
        app.start()
        assert done.wait(WAIT_S)  # three calls while a worker holds the lock
        assert not filed.wait(0.2)  # the fourth waits for it
    assert filed.wait(WAIT_S)
    app.join(WAIT_S)
    found = recent.attach(refused.trace_id, "thumbs_down")  # refused: as if chosen nothing
    assert found is not None and not found.waiting and found.ran == frozenset()
    waiting = recent.attach(queued.trace_id, "thumbs_down")
    assert waiting is not None and waiting.waiting
    assert recent.claim(third) == (third, True)


def test_submit_does_not_wait_for_locks_a_worker_holds(harnesses: list[Harness]) -> None:
    gate = Gate()
    h = harness(harnesses, [gate.evaluator, length])
    assert h.pipeline.submit(record(1))
    assert gate.entered.wait(WAIT_S)  # the only worker is busy: nobody sleeps on the queue
    queue, recent = h.pipeline._local, h.pipeline._recent
    assert isinstance(queue, MemoryQueue) and recent is not None
    submitted = threading.Event()

    def request_path() -> None:
        for i in range(2, 52):
            assert h.pipeline.submit(record(i))
        submitted.set()

    with HeldLocks(queue._lock, recent._lock, h.pipeline._lock):
        app = threading.Thread(target=request_path)
        app.start()
        assert submitted.wait(WAIT_S)
    app.join(WAIT_S)
    gate.open()
    assert h.pipeline.flush(WAIT_S)
    assert sorted(int(r.trace_id, 16) for r, _ in h.sink.got) == list(range(1, 52))
