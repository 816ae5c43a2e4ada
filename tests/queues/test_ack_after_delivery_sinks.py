"""A worker acknowledges a record only after its Phoenix annotations or its review row landed.

Real redis-server, real ``ragtrace worker`` subprocesses, and for each sink a destination that
goes away and comes back:

- Phoenix: real Phoenix takes about 30 s and 450 MB to start and answers 404 for annotations
  on spans it never received, so the worker posts its annotations to
  ``tests/exporters/annotation_endpoint.py``, a real HTTP server on loopback answering
  ``POST /v1/span_annotations?sync=true`` as Phoenix 20.26.1 does (checked against the real
  server in ``tests/test_phoenix_live.py``), behind a ``Gate`` that is down (503, which the
  sink retries with backoff) or paused (each request held) until the test opens it.
- The review store: a real PostgreSQL on loopback, killed (connections refused) and restarted,
  or paused (SIGSTOP: connections hang) and continued.

While the destination is away nothing is acknowledged; once it is back every record's results
arrive (each record's review row exactly once: the store merges a record written again) and
``ragtrace queue stats`` balances. A Phoenix outage past ``max_deliveries`` dead-letters each
record with the reason naming the sink, and the books still balance. Every test is bounded in
time and stops what it starts by pid.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace._worker import inspect
from tests.components import run_postgres, wait_until
from tests.exporters.annotation_endpoint import AnnotationEndpoint
from tests.faults.postgres import kill_postgres, paused_postgres, restart_postgres
from tests.queues.delivery import Gate, fleet_exporting, start
from tests.queues.fleet import (
    APP_EVALUATORS,
    queue_commands,
    queue_stats,
    record,
    scrape,
    ship,
    state,
)
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
N = 24
RECLAIM_IDLE_S = 2.0  # tests.queues.delivery.MANY_DELIVERIES


def delivery_failures(port: int, sink: str) -> float:
    return scrape(port).get(f'ragtrace_queue_delivery_failures_total{{sink="{sink}"}}', 0)


def assert_nothing_acknowledged(url: str, port: int) -> None:
    s = state(url)
    assert (s["published"], s["dead_lettered"]) == (0, 0), s
    assert s["pending"] > 0 and s["backlog"] == N, s  # the backlog counts pending entries
    assert scrape(port).get("ragtrace_queue_acknowledged_total", 0) == 0


def assert_books_balance(url: str) -> None:
    stats = queue_stats(url)
    assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (N, N, 0), stats
    assert (stats["pending"], stats["backlog"], stats["unaccounted"]) == (0, 0, 0), stats


# -- Phoenix ----------------------------------------------------------------------------------


@pytest.fixture
def phoenix_gate() -> Iterator[tuple[Gate, AnnotationEndpoint]]:
    """Phoenix's annotation endpoint behind a closed gate that answers 503."""
    with AnnotationEndpoint() as phoenix, Gate(phoenix.endpoint, status=503) as closed_gate:
        yield closed_gate, phoenix


@pytest.mark.parametrize("phoenix", ["down", "paused"])
def test_nothing_is_acknowledged_until_phoenix_accepts_the_annotations(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    phoenix_gate: tuple[Gate, AnnotationEndpoint],
    phoenix: str,
) -> None:
    door, endpoint = phoenix_gate
    door.hold = phoenix == "paused"
    fleet = fleet_exporting(tmp_path, redis_server, sinks="{otel: false}")
    try:
        _, port = start(fleet, "w1", "--phoenix-endpoint", door.endpoint)
        assert ship(fleet.url, N) == {}
        wait_until(
            "every record's delivery failed once",
            lambda: delivery_failures(port, "phoenix") >= N,
            timeout_s=60,
        )
        assert {record(i).trace_id for i in range(N)} <= set(fleet.published())
        assert_nothing_acknowledged(fleet.url, port)
        assert door.refused > 0
        assert endpoint.received == []

        door.open = True
        wait_until("all acknowledged", lambda: state(fleet.url)["published"] == N, timeout_s=45)
        # Every score of every record reached Phoenix (a record published again posts its
        # annotations again: Phoenix replaces them, by the identifier ``ragtrace``).
        with endpoint.lock:
            got = {(a["span_id"], a["name"]) for a in endpoint.received}
            identifiers = {a["identifier"] for a in endpoint.received}
        expected = {(record(i).span_id, name) for i in range(N) for name in APP_EVALUATORS}
        assert got == expected
        assert identifiers == {"ragtrace"}
        assert_books_balance(fleet.url)
    finally:
        fleet.stop_all()


def test_a_phoenix_outage_past_max_deliveries_dead_letters_each_record_naming_the_sink(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    phoenix_gate: tuple[Gate, AnnotationEndpoint],
) -> None:
    door, endpoint = phoenix_gate  # closed (503) throughout
    n, max_deliveries = 8, 2
    query = f"reclaim_idle_s=1&max_deliveries={max_deliveries}"
    fleet = fleet_exporting(tmp_path, redis_server, query, sinks="{otel: false}")
    try:
        _, port = start(fleet, "w1", "--phoenix-endpoint", door.endpoint)
        assert ship(fleet.url, n) == {}
        wait_until("every record dead-lettered", lambda: state(fleet.url)["dead_lettered"] == n, 60)
        letters = inspect.dead_letters(StreamCommands(*queue_commands(fleet.url)), limit=100)
        metrics = scrape(port)
    finally:
        fleet.stop_all()
    assert {letter.trace_id for letter in letters} == {record(i).trace_id for i in range(n)}
    assert {(letter.reason, letter.deliveries) for letter in letters} == {
        ("max_deliveries: PhoenixAnnotationSink did not confirm delivery", max_deliveries + 1)
    }
    failures = 'ragtrace_queue_delivery_failures_total{sink="phoenix"}'
    assert metrics.get(failures) == n * max_deliveries
    assert metrics.get("ragtrace_queue_acknowledged_total", 0) == 0
    assert endpoint.received == []
    stats = queue_stats(fleet.url)
    assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (n, 0, n), stats
    assert (stats["pending"], stats["backlog"], stats["unaccounted"]) == (0, 0, 0), stats


# -- the review store on PostgreSQL -----------------------------------------------------------


def review_rows(url: str) -> tuple[Counter[str], set[tuple[str, ...]]]:
    """How many review items the store holds per trace id, and the items' score names."""
    from ragtrace.review import open_store

    with open_store(url) as store:
        assert store.count() <= N
        items = store.page(limit=N + 1).items
    names = {tuple(sorted(s.score.name for s in item.scores)) for item in items}
    return Counter(item.trace_id for item in items), names


@pytest.mark.parametrize("postgres_state", ["down", "paused"])
def test_nothing_is_acknowledged_until_the_review_rows_are_committed(
    tmp_path: Path,
    redis_server: RedisServer,
    app_side_names: None,
    postgres_state: str,
) -> None:
    with run_postgres() as postgres:
        url = postgres.create_schema()
        fleet = fleet_exporting(tmp_path, redis_server, sinks="{otel: false}")
        try:
            _, port = start(fleet, "w1", "--review-db", url)
            if postgres_state == "down":
                kill_postgres(postgres)
                assert ship(fleet.url, N, bad=frozenset(range(N))) == {}  # each one for review
                wait_until(
                    "every record's review write failed once",
                    lambda: delivery_failures(port, "review") >= N,
                    timeout_s=60,
                )
                assert_nothing_acknowledged(fleet.url, port)
                restart_postgres(postgres)
            else:
                with paused_postgres(postgres):
                    assert ship(fleet.url, N, bad=frozenset(range(N))) == {}
                    wait_until("a batch in hand", lambda: state(fleet.url)["pending"] > 0, 30)
                    time.sleep(2 * RECLAIM_IDLE_S)  # past a claim's lapse: still nothing
                    assert_nothing_acknowledged(fleet.url, port)
                    assert fleet.published() == []  # the review write comes first, and hangs
            wait_until("all acknowledged", lambda: state(fleet.url)["published"] == N, 60)
            rows, score_names = review_rows(url)
        finally:
            fleet.stop_all()
    assert rows == Counter({record(i).trace_id: 1 for i in range(N)})
    assert score_names == {tuple(sorted(APP_EVALUATORS))}  # each score once, however often written
    assert_books_balance(fleet.url)
