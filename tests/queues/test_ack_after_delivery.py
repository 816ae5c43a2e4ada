"""A worker acknowledges a record only after its results were delivered (OTLP log records here).

Real redis-server (AOF on), real ``ragtrace worker`` subprocesses, a real OTLP/HTTP receiver
behind a gate the test opens and closes: while it is closed the gate refuses every export
(400, which the OTLP exporter does not retry), as a collector that is down or paused would lose
them. Nothing may be acknowledged then; once the gate opens, every record's results arrive and
``ragtrace queue stats`` balances. An outage longer than ``max_deliveries`` deliveries
dead-letters each record (reason ``max_deliveries``, naming the sink) and the books still
balance; a worker stopped by SIGTERM while records flow drains, and another delivers the rest,
each result once. Every test is bounded in time and stops what it starts by pid.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from ragtrace._diagnostics import Diagnostics
from ragtrace._exporters.phoenix import PhoenixAnnotationSink, PhoenixOptions
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace._pipeline.sinks import ScoreSinks
from ragtrace._runtime.bounded_export import BoundedBatches
from ragtrace._worker import inspect
from tests.components import wait_until
from tests.otlp_receiver import OtlpReceiver
from tests.queues.delivery import EVALUATORS, Gate, delivered_trace_ids, fleet_exporting, start
from tests.queues.fleet import (
    queue_commands,
    queue_stats,
    record,
    scrape,
    ship,
    state,
)
from tests.redis_server import RedisServer

N = 24
FAILURES = 'ragtrace_queue_delivery_failures_total{sink="otel_logs"}'


def expected_trace_ids() -> set[str]:
    return {record(i).trace_id for i in range(N)}


@pytest.mark.integration
@pytest.mark.parametrize("collector", ["refusing", "paused"])
def test_nothing_is_acknowledged_until_the_collector_takes_it(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    gate: tuple[Gate, OtlpReceiver],
    collector: str,
) -> None:
    door, receiver = gate
    door.hold = collector == "paused"
    fleet = fleet_exporting(tmp_path, redis_server)
    try:
        _, port = start(fleet, "w1", "--otlp-endpoint", door.endpoint)
        assert ship(fleet.url, N) == {}
        # Every record evaluated and published to the sinks; none delivered, none acknowledged.
        wait_until(
            "every record's delivery failed once",
            lambda: scrape(port).get(FAILURES, 0) >= N,
            timeout_s=60,
        )
        assert expected_trace_ids() <= set(fleet.published())
        s = state(fleet.url)
        assert (s["published"], s["pending"], s["dead_lettered"]) == (0, N, 0), s
        metrics = scrape(port)
        assert metrics.get("ragtrace_queue_acknowledged_total", 0) == 0
        assert door.refused > 0
        assert receiver.logs == []

        door.open = True
        try:
            wait_until(
                "all delivered and acknowledged",
                lambda: state(fleet.url)["published"] == N,
                timeout_s=30,
            )
        except TimeoutError:
            print(state(fleet.url), {k: v for k, v in scrape(port).items() if "queue" in k})
            print(fleet.log("w1"), door.refused, len(receiver.logs))
            raise
        assert delivered_trace_ids(receiver) == expected_trace_ids()  # 0 of N lost
        stats = queue_stats(fleet.url)
        assert stats["unaccounted"] == 0, stats
        assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (N, N, 0)
        assert stats["pending"] == 0, stats
    finally:
        fleet.stop_all()


@pytest.mark.integration
@pytest.mark.parametrize("collector", ["refusing", "paused"])
def test_a_worker_killed_while_its_exports_are_held_loses_nothing(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    gate: tuple[Gate, OtlpReceiver],
    collector: str,
) -> None:
    door, receiver = gate
    door.hold = collector == "paused"
    fleet = fleet_exporting(tmp_path, redis_server)
    try:
        first, port = start(fleet, "doomed", "--otlp-endpoint", door.endpoint)
        assert ship(fleet.url, N) == {}
        wait_until(
            "every record published to the sinks, none delivered",
            lambda: expected_trace_ids() <= set(fleet.published()),
            timeout_s=60,
        )
        assert scrape(port).get("ragtrace_queue_acknowledged_total", 0) == 0
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        s = state(fleet.url)
        assert (s["published"], s["pending"]) == (0, N), s

        door.open = True
        start(fleet, "heir", "--otlp-endpoint", door.endpoint)
        wait_until(
            "all delivered and acknowledged by the other worker",
            lambda: state(fleet.url)["published"] == N,
            timeout_s=90,
        )
        assert delivered_trace_ids(receiver) == expected_trace_ids()  # 0 of N lost
        stats = queue_stats(fleet.url)
        assert stats["unaccounted"] == 0, stats
        assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (N, N, 0)
    finally:
        fleet.stop_all()


DEAD_LETTERED = 'ragtrace_queue_dead_lettered_total{reason="max_deliveries"}'
MAX_DELIVERIES = 2


@pytest.mark.integration
def test_an_outage_longer_than_max_deliveries_dead_letters_every_record_and_the_books_balance(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    gate: tuple[Gate, OtlpReceiver],
) -> None:
    door, receiver = gate  # closed, refusing: the results' destination is down throughout
    n = 8
    query = f"reclaim_idle_s=1&max_deliveries={MAX_DELIVERIES}"
    fleet = fleet_exporting(tmp_path, redis_server, query)
    try:
        _, port = start(fleet, "w1", "--otlp-endpoint", door.endpoint)
        assert ship(fleet.url, n) == {}
        try:
            wait_until(
                "every record dead-lettered",
                lambda: state(fleet.url)["dead_lettered"] == n,
                timeout_s=60,
            )
        except TimeoutError:
            print(state(fleet.url), fleet.log("w1"))
            raise
        # Each record was evaluated, published to the sinks, and refused, max_deliveries times.
        published = fleet.published()
        ids = {record(i).trace_id for i in range(n)}
        assert {t: published.count(t) for t in ids} == dict.fromkeys(ids, MAX_DELIVERIES)
        metrics = scrape(port)
        assert metrics.get(FAILURES) == n * MAX_DELIVERIES, metrics
        assert metrics.get(DEAD_LETTERED) == n, metrics
        assert metrics.get("ragtrace_queue_acknowledged_total", 0) == 0
        assert receiver.logs == []
        letters = inspect.dead_letters(StreamCommands(*queue_commands(fleet.url)), limit=100)
        assert {letter.trace_id for letter in letters} == ids
        assert {(letter.reason, letter.deliveries) for letter in letters} == {
            # dead-lettered on the claim after the last, naming the sink that refused
            ("max_deliveries: OtelEvaluationLogSink did not confirm delivery", MAX_DELIVERIES + 1)
        }

        # The destination back: later records complete; the books balance, nothing silent.
        door.open = True
        assert ship(fleet.url, n, first=n) == {}
        wait_until("the later records", lambda: state(fleet.url)["published"] == n, timeout_s=30)
        stats = queue_stats(fleet.url)
        assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (2 * n, n, n)
        assert (stats["dead_letters"], stats["pending"], stats["backlog"]) == (n, 0, 0), stats
        assert stats["unaccounted"] == 0, stats
        later = {record(i).trace_id for i in range(n, 2 * n)}
        assert delivered_trace_ids(receiver) == later
        assert "OtelEvaluationLogSink did not confirm delivery" in fleet.log("w1")
    finally:
        fleet.stop_all()


@pytest.mark.integration
def test_sigterm_while_records_flow_drains_and_another_worker_delivers_the_rest(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    gate: tuple[Gate, OtlpReceiver],
) -> None:
    door, receiver = gate
    door.open = True
    n = 80
    fleet = fleet_exporting(tmp_path, redis_server)
    try:
        first, _ = start(fleet, "first", "--otlp-endpoint", door.endpoint, eval_s=0.05)
        assert ship(fleet.url, n) == {}
        wait_until("a first acknowledgement", lambda: state(fleet.url)["published"] > 0, 60)
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0, fleet.log("first")
        assert "stopped" in fleet.log("first") and "timed out" not in fleet.log("first")
        s = state(fleet.url)
        assert 0 < s["published"] < n, s  # stopped mid-stream
        assert s["published"] + s["backlog"] == n and s["dead_lettered"] == 0, s

        start(fleet, "second", "--otlp-endpoint", door.endpoint)
        wait_until("the rest, by the second", lambda: state(fleet.url)["published"] == n, 60)
        stats = queue_stats(fleet.url)
        assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (n, n, 0)
        assert (stats["pending"], stats["backlog"], stats["unaccounted"]) == (0, 0, 0), stats
        assert delivered_trace_ids(receiver) == {record(i).trace_id for i in range(n)}
        # Drained, not dropped nor repeated: every result once, each record published once.
        results = [
            (log.trace_id, log.attributes["gen_ai.evaluation.name"])
            for log in receiver.logs
            if log.event_name == "gen_ai.evaluation.result"
        ]
        assert len(results) == len(set(results)) == n * EVALUATORS
        assert sorted(fleet.published()) == sorted(record(i).trace_id for i in range(n))
    finally:
        fleet.stop_all()


# -- the delivery confirmation each sink gives ------------------------------------------------


def test_bounded_batches_confirm_only_what_was_exported_with_success() -> None:
    answers = [True]
    sent: list[list[int]] = []

    def export(batch: list[int]) -> bool:
        sent.append(batch)
        return answers[0]

    batches: BoundedBatches[int] = BoundedBatches(export, lambda: None, lambda r, n: None)
    try:
        mark = batches.delivery_mark()
        batches.add(1)
        assert batches.deliver(mark, 5.0)  # sent at once, not after the batch delay
        answers[0] = False
        mark = batches.delivery_mark()
        batches.add(2)
        assert not batches.deliver(mark, 5.0)  # flushed, but the export failed
        answers[0] = True
        mark = batches.delivery_mark()
        batches.add(3)
        assert batches.deliver(mark, 5.0)  # a failure before the mark is not this batch's
        assert sent == [[1], [2], [3]]
    finally:
        batches.close(1.0)


def test_phoenix_confirms_only_annotations_it_posted() -> None:
    status = [500]
    sink = PhoenixAnnotationSink(
        "http://127.0.0.1:1",
        options=PhoenixOptions(flush_interval_s=0.05, max_attempts=1),
        post=lambda url, body, headers, timeout: (status[0], ""),
    )
    rec = RagRecord(f"{1:032x}", f"{1:016x}", "q", response="r")
    evaluations = [Evaluation("e", (Score("e", 0.9, threshold=0.5, passed=True),), 1, 2)]
    try:
        mark = sink.delivery_mark()
        sink.export(rec, evaluations)
        assert not sink.deliver(mark, 5.0)
        status[0] = 200
        mark = sink.delivery_mark()
        sink.export(rec, evaluations)
        assert sink.deliver(mark, 5.0)
    finally:
        sink.close(1.0)


class _Confirming:
    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def export(self, record: RagRecord, evaluations: Any) -> None:
        pass

    def delivery_mark(self) -> int:
        return 7

    def deliver(self, mark: int, timeout_s: float) -> bool:
        return self.ok and mark == 7

    def shutdown(self) -> None:
        pass


class _Raising(_Confirming):
    def export(self, record: RagRecord, evaluations: Any) -> None:
        raise OSError("the review store is down")


def test_score_sinks_name_every_sink_that_did_not_deliver() -> None:
    sinks = ScoreSinks([_Confirming(True), _Raising(True)], Diagnostics())
    rec = RagRecord(f"{1:032x}", f"{1:016x}", "q", response="r")
    mark = sinks.mark()
    assert sinks.publish(rec, [Evaluation("e", (Score("e", 1.0),), 1, 2)]) == {"_Raising"}
    assert sinks.deliver(mark, 1.0) == set()
    sinks.add(_Confirming(False))  # added after the mark: confirms nothing for this batch
    assert sinks.deliver(mark, 1.0) == set()
    assert sinks.deliver(sinks.mark(), 1.0) == {"_Confirming"}
