"""PostgreSQL, the shared review store, is killed mid-run and restarted.

A real PostgreSQL on loopback (``tests.components.run_postgres``) gets SIGKILL while the review
sink writes to it: requests stay fast, every review item that could not be written is counted
in ``ragtrace_internal_errors_total{site="pipeline.sink.ReviewSink"}``, and once the server is
back the next items are stored, although the pool held connections to the dead server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from ragtrace.evaluators import create
from ragtrace.review import ReviewRules, ReviewSink
from ragtrace.review._postgres_store import PostgresReviewStore
from tests.components import Postgres, run_postgres
from tests.faults.harness import REQUEST_BUDGET_S, FaultApp
from tests.faults.postgres import kill_postgres, restart_postgres
from tests.review.conftest import make_item

SINK_ERRORS = ("ragtrace_internal_errors_total", {"site": "pipeline.sink.ReviewSink"})
DOWN_S = 10.0
"""Most seconds the pipeline may take to give up on a batch while PostgreSQL is down (it
refuses connections at once; ``connect_timeout_s`` bounds a silent one)."""


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with run_postgres() as server:
        yield server


def test_postgres_killed_mid_run_is_counted_and_recovers(postgres: Postgres) -> None:
    store = PostgresReviewStore(postgres.create_schema(), connect_timeout_s=2.0)
    sink = ReviewSink(store, ReviewRules(sample_rate=1.0))  # every request goes to review
    name, site = SINK_ERRORS
    try:
        with FaultApp([create("looping")], score_sinks=[sink]) as app:
            app.requests(range(3))
            assert app.rt.flush(10)
            # Writers on several threads leave the pool full of connections to the server.
            writers = [
                threading.Thread(target=store.enqueue, args=(make_item(100 + i),))
                for i in range(store.max_idle)
            ]
            for writer in writers:
                writer.start()
            for writer in writers:
                writer.join(10)
            stored = store.count()
            assert stored == 3 + store.max_idle

            kill_postgres(postgres)
            down = time.monotonic()
            assert app.requests(range(3, 5)) < REQUEST_BUDGET_S
            app.wait_for(name, 2, timeout_s=DOWN_S, **site)
            assert time.monotonic() - down < DOWN_S
            assert app.value(name, **site) == 2  # one per item that could not be written

            restart_postgres(postgres)
            app.requests(range(5, 10))
            assert app.rt.flush(10)
            assert app.value(name, **site) == 2  # no stale pooled connection fails a write
            assert store.count() == stored + 5
            assert app.slowest_s < REQUEST_BUDGET_S
    finally:
        store.close()
