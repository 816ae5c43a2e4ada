"""Metric updates queued on the request path and applied in a batch (``DeferredUpdates``)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, Counter

from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.deferred import DeferredUpdates
from ragtrace._model import Chunk, RagRecord
from tests.components import missing_component


def record(status: str = "ok", scores: tuple[float | None, ...] = (0.2, 0.9)) -> RagRecord:
    chunks = tuple(Chunk(f"text {i}", id=f"c{i}", score=s) for i, s in enumerate(scores))
    return RagRecord(
        trace_id="ab" * 16, span_id="cd" * 8, query="q", chunks=chunks, response="a",
        status=status, app="app-1",  # type: ignore[arg-type]
    )  # fmt: skip


def test_updates_wait_for_the_batch_and_a_scrape_applies_them_first() -> None:
    registry = CollectorRegistry()
    deferred = DeferredUpdates(registry, interval_s=3600)
    counter = Counter("probe", "probe", registry=registry)
    deferred.defer(counter.inc, 2)
    deferred.defer(counter.inc, 3)
    assert deferred.pending == 2
    assert counter._value.get() == 0  # not applied yet: nothing ran on the request path
    assert registry.get_sample_value("probe_total") == 5  # collecting applies the queue first
    assert deferred.pending == 0
    deferred.close()


def test_the_thread_applies_the_queue_within_its_interval() -> None:
    registry = CollectorRegistry()
    deferred = DeferredUpdates(registry, interval_s=0.05)
    seen: list[int] = []
    deferred.defer(seen.append, 1)
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [1]
    assert any(t.name == "ragtrace-metrics-batch" for t in threading.enumerate())
    deferred.close()
    assert deferred._thread is not None and not deferred._thread.is_alive()


def test_order_is_kept_and_a_failing_update_is_counted_not_fatal() -> None:
    errors: list[BaseException] = []
    deferred = DeferredUpdates(None, interval_s=3600, on_error=errors.append)
    seen: list[int] = []
    deferred.defer(seen.append, 1)
    deferred.defer(lambda: 1 / 0)
    deferred.defer(seen.append, 2)
    assert deferred.drain() == 3
    assert seen == [1, 2]
    assert deferred.failures == 1 and isinstance(errors[0], ZeroDivisionError)
    deferred.close()


def test_polls_run_after_each_batch_and_a_failing_one_is_counted() -> None:
    errors: list[BaseException] = []
    registry = CollectorRegistry()
    deferred = DeferredUpdates(registry, interval_s=3600, on_error=errors.append)
    order: list[str] = []
    deferred.poll(lambda: order.append("poll"))
    deferred.poll(lambda: 1 / 0)
    deferred.defer(order.append, "update")
    assert deferred.drain() == 1
    assert order == ["update", "poll"]  # after the queue
    list(registry.collect())  # a scrape runs them too, with nothing queued
    assert order == ["update", "poll", "poll"]
    assert deferred.failures == 2 and all(isinstance(e, ZeroDivisionError) for e in errors)
    deferred.close()


def test_a_full_queue_is_applied_on_the_spot_never_dropped() -> None:
    deferred = DeferredUpdates(None, interval_s=3600, max_pending=10)
    seen: list[int] = []
    for i in range(25):
        deferred.defer(seen.append, i)
    assert deferred.pending < 10
    deferred.drain()
    assert seen == list(range(25))
    deferred.close()


def test_a_burst_wakes_the_thread_before_its_interval() -> None:
    deferred = DeferredUpdates(None, interval_s=3600, max_pending=1_000, wake_at=20)
    seen: list[int] = []
    for i in range(19):
        deferred.defer(seen.append, i)
    time.sleep(0.2)
    assert seen == []  # under wake_at: waits for the (hour-long) interval
    deferred.defer(seen.append, 19)
    deadline = time.monotonic() + 5
    while len(seen) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == list(range(20))  # applied by the thread, not by defer
    assert deferred.pending == 0
    for i in range(20, 40):  # the thread sleeps again and wakes for the next burst too
        deferred.defer(seen.append, i)
    deadline = time.monotonic() + 5
    while len(seen) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == list(range(40))
    deferred.close()


def test_after_close_updates_apply_at_once() -> None:
    deferred = DeferredUpdates(None, interval_s=3600)
    deferred.close()
    seen: list[int] = []
    deferred.defer(seen.append, 7)
    assert seen == [7]


@pytest.mark.parametrize(
    "bad", [{"interval_s": 0}, {"interval_s": -1}, {"max_pending": 0}, {"wake_at": 0}]
)
def test_bad_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DeferredUpdates(None, **bad)  # type: ignore[arg-type]


def test_a_forked_child_starts_its_own_thread_and_applies_its_updates() -> None:
    if not hasattr(os, "fork"):
        missing_component("os.fork is not available on this platform")
    deferred = DeferredUpdates(None, interval_s=0.05)
    deferred.defer(lambda: None)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its updates must still be applied by a thread of its own
        try:
            done = threading.Event()
            deferred.defer(done.set)
            os.write(write, b"1" if done.wait(5) else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    deferred.close()
    assert answer == b"1"


def test_metrics_count_requests_and_sampling_through_the_batch() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry, "app-1")
    metrics.observe_record(record())
    metrics.observe_record(record("error", scores=(None,)))
    metrics.observe_record(
        RagRecord("ab" * 16, "cd" * 8, query=None, chunks=(), response="a", app="app-1")
    )
    metrics.count_sampling("sampled", "ratio", 3)
    assert metrics.deferred.pending == 4
    get = registry.get_sample_value
    assert get("ragtrace_requests_total", {"app": "app-1", "status": "ok"}) == 2
    assert get("ragtrace_requests_total", {"app": "app-1", "status": "error"}) == 1
    # a request with neither query nor chunks is not a retrieval
    assert get("ragtrace_retrieval_chunks_count", {"app": "app-1"}) == 2
    assert get("ragtrace_retrieval_chunks_sum", {"app": "app-1"}) == 3
    assert get("ragtrace_retrieval_top_score_sum", {"app": "app-1"}) == pytest.approx(0.9)
    assert get("ragtrace_sampling_decisions_total", {"decision": "sampled", "reason": "ratio"}) == 3
    metrics.unregister()
    assert get("ragtrace_requests_total", {"app": "app-1", "status": "ok"}) is None
