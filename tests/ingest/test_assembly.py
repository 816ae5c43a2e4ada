"""Trace assembly: when a trace is complete, and the buffer's bounds (every drop counted)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from ragtrace._ingest.assembly import AssemblyLimits, TraceAssembler
from ragtrace._ingest.spans import IngestSpan


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def span(
    trace: int, span_id: int, parent: int | None = None, size: int = 100, remote: bool = False
) -> IngestSpan:
    return IngestSpan(
        trace_id=f"{trace:032x}",
        span_id=f"{span_id:016x}",
        parent_span_id=None if parent is None else f"{parent:016x}",
        parent_remote=remote,
        name=f"s{span_id}",
        size=size,
    )


def make(**limits: float) -> tuple[TraceAssembler, Clock, Counter[str]]:
    clock = Clock()
    drops: Counter[str] = Counter()

    def count(reason: str, n: int) -> None:
        drops[reason] += n

    base = {"quiet_s": 2.0, "max_age_s": 30.0}
    base.update(limits)
    assembler = TraceAssembler(AssemblyLimits(**base), on_drop=count, clock=clock)  # type: ignore[arg-type]
    return assembler, clock, drops


def test_a_trace_completes_after_its_root_and_a_quiet_period() -> None:
    assembler, clock, _ = make()
    assembler.add([span(1, 2, parent=1)])
    clock.now += 1.9
    assert assembler.due() == []
    assembler.add([span(1, 1)])
    clock.now += 1.9
    assert assembler.due() == []
    assembler.add([span(1, 3, parent=1)])  # a late child restarts the quiet period
    clock.now += 1.9
    assert assembler.due() == []
    clock.now += 0.2
    (done,) = assembler.due()
    assert done.reason == "complete"
    assert done.has_root
    assert sorted(s.span_id for s in done.spans) == [f"{i:016x}" for i in (1, 2, 3)]
    assert assembler.open_traces == 0
    assert assembler.buffered_bytes == 0


def test_a_span_whose_parent_is_remote_is_a_root() -> None:
    # Behind a gateway that propagates traceparent: the app's outermost span has a parent
    # that will never reach ingest, and its exporter says so in the span flags.
    assembler, clock, _ = make(max_age_s=60.0)
    assembler.add([span(1, 2, parent=1, remote=True), span(1, 3, parent=2)])
    clock.now += 1.9
    assert assembler.due() == []
    clock.now += 0.2
    (done,) = assembler.due()
    assert (done.reason, done.has_root) == ("complete", True)


def test_spans_under_one_parent_never_seen_complete_after_the_quiet_period() -> None:
    # The same without flags (an older exporter), or the request's own span lost: every span
    # hangs under one parent that never came. The trace does not wait for max age.
    assembler, clock, _ = make(max_age_s=60.0)
    assembler.add([span(1, 3, parent=2), span(1, 4, parent=2), span(1, 5, parent=4)])
    clock.now += 2.1
    (done,) = assembler.due()
    assert (done.reason, done.has_root) == ("remote_parent", False)
    assert len(done.spans) == 3


def test_a_trace_missing_more_than_one_parent_completes_at_max_age() -> None:
    # Two parts whose parents both never came: a trace split across replicas. Wait, whole.
    assembler, clock, _ = make(max_age_s=10.0)
    assembler.add([span(7, 2, parent=1), span(7, 4, parent=3)])
    clock.now += 9.9
    assert assembler.due() == []
    clock.now += 0.2
    (done,) = assembler.due()
    assert (done.reason, done.has_root) == ("max_age", False)


def test_a_missing_parent_that_arrives_is_no_longer_missing() -> None:
    assembler, clock, _ = make(max_age_s=10.0)
    assembler.add([span(7, 2, parent=1), span(7, 4, parent=3)])
    assembler.add([span(7, 3, parent=1)])  # now everything hangs under 1
    clock.now += 2.1
    (done,) = assembler.due()
    assert done.reason == "remote_parent"


def test_touched_traces_wait_for_the_spans_that_were_refused() -> None:
    assembler, clock, _ = make()
    assembler.add([span(1, 1), span(2, 1)])
    clock.now += 1.5
    assembler.touch([f"{1:032x}", f"{9:032x}"])  # an export for trace 1 got 429
    clock.now += 1.0
    assert [d.trace_id for d in assembler.due()] == [f"{2:032x}"]
    clock.now += 1.1
    assert [d.trace_id for d in assembler.due()] == [f"{1:032x}"]


def test_a_tighter_bound_from_the_caller_refuses_new_traces_only() -> None:
    assembler, _, _ = make()
    assert assembler.add([span(1, 1)], max_open=1).accepted
    assert not assembler.add([span(2, 1)], max_open=1).accepted  # a new trace: no room
    assert assembler.add([span(1, 2, parent=1)], max_open=1).accepted  # an open one: fine
    assert assembler.add([span(1, 3, parent=1)], max_open=0).accepted
    assert assembler.open_traces == 1


def test_spans_after_completion_and_repeats_are_dropped_and_counted() -> None:
    assembler, clock, drops = make()
    assembler.add([span(1, 1), span(1, 2, parent=1)])
    result = assembler.add([span(1, 2, parent=1)])
    assert (result.kept, result.dropped) == (0, 1)
    clock.now += 3
    assert len(assembler.due()) == 1
    assembler.add([span(1, 3, parent=1)])
    assert drops == {"duplicate_span": 1, "late_span": 1}
    assert assembler.open_traces == 0


def test_spans_past_the_per_trace_cap_are_dropped_and_counted() -> None:
    assembler, clock, drops = make(max_spans_per_trace=3)
    result = assembler.add([span(1, i + 1, parent=None if i == 0 else 1) for i in range(10)])
    assert (result.accepted, result.kept, result.dropped) == (True, 3, 7)
    assert drops == {"spans_per_trace": 7}
    clock.now += 3
    assert len(assembler.due()[0].spans) == 3


def test_an_export_that_does_not_fit_is_refused_whole() -> None:
    assembler, _, drops = make(max_open_traces=2, max_buffer_bytes=1000)
    assert assembler.add([span(1, 1), span(2, 1)]).accepted
    refused = assembler.add([span(2, 2, parent=1), span(3, 1)])  # a third trace: no room
    assert not refused.accepted
    assert assembler.open_traces == 2
    assert sum(1 for _ in assembler.drain()) == 2
    assert assembler.add([span(4, 1, size=600), span(4, 2, parent=1, size=300)]).accepted
    assert not assembler.add([span(4, 3, parent=1, size=200)]).accepted  # bytes bound
    assert assembler.buffered_bytes == 900
    assert drops == {}


def test_memory_stays_flat_under_a_flood_past_the_buffer() -> None:
    assembler, clock, _ = make(max_open_traces=50, max_buffer_bytes=50_000, remember_completed=20)
    refused = 0
    for t in range(2000):
        if not assembler.add([span(t + 1, 1, size=500)]).accepted:
            refused += 1
        assert assembler.open_traces <= 50
        assert assembler.buffered_bytes <= 50_000
        if t % 100 == 99:
            clock.now += 3
            assembler.due()
    assert refused > 0
    assert len(assembler._done) <= 20


def test_drain_hands_out_everything_as_shutdown() -> None:
    assembler, _, _ = make()
    assembler.add([span(1, 1), span(2, 2, parent=9)])
    assert sorted((d.reason, d.has_root) for d in assembler.drain()) == [
        ("shutdown", False),
        ("shutdown", True),
    ]
    assert assembler.open_traces == 0


def test_concurrent_adds_keep_every_span_once() -> None:
    assembler, clock, _ = make(max_open_traces=10_000)

    def send(worker: int) -> None:
        for i in range(200):
            assembler.add([span(i + 1, worker * 1000 + i + 1, parent=None)])

    threads = [threading.Thread(target=send, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clock.now += 3
    done = assembler.due()
    assert len(done) == 200
    assert sum(len(d.spans) for d in done) == 800


@pytest.mark.parametrize(
    "bad",
    [{"quiet_s": 0}, {"max_age_s": 1.0, "quiet_s": 2.0}, {"max_open_traces": 0}],
)
def test_bad_limits_are_refused_with_their_name(bad: dict[str, float]) -> None:
    values = {"quiet_s": 2.0, "max_age_s": 30.0}
    values.update(bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        AssemblyLimits(**values)  # type: ignore[arg-type]
