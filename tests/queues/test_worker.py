"""``ragtrace worker`` processes against a real redis-server: killed mid-batch, poisoned, stopped,
two at once, health. Each test is bounded in time and stops what it starts by its pid."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace._worker import inspect
from tests.components import free_port, wait_until
from tests.queues.fleet import Workers, queue_commands, record, settled, ship, state
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_killed_mid_batch_loses_nothing(fleet: Workers) -> None:
    a = fleet.start("a", eval_s=0.02)
    b = fleet.start("b", eval_s=0.02)
    drops = ship(fleet.url, 400)
    assert drops.get("queue_full", 0) == 0
    wait_until("worker a to publish", lambda: state(fleet.url)["published"] >= 40, timeout_s=60)
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=10)
    final = wait_until("every record published", lambda: settled(fleet.url, 400), timeout_s=90)
    assert final["published"] == 400  # counted once per entry, even if published twice
    assert final["dead_lettered"] == 0 and final["pending"] == 0
    assert b.poll() is None


def test_a_record_that_kills_its_worker_is_dead_lettered_and_the_rest_complete(
    fleet: Workers,
) -> None:
    drops = ship(fleet.url + "&max_deliveries=2", 60, poison={17})
    assert drops == {}
    deadline = time.monotonic() + 120
    restarts = 0
    proc = fleet.start("p0", "--max-deliveries", "2")
    while time.monotonic() < deadline and settled(fleet.url, 60) is None:
        if proc.poll() is not None:  # the supervisor restarts a dead worker, as systemd would
            assert proc.returncode == 3, fleet.log(f"p{restarts}")
            restarts += 1
            assert restarts <= 4
            proc = fleet.start(f"p{restarts}", "--max-deliveries", "2")
        time.sleep(0.2)
    final = settled(fleet.url, 60)
    assert final is not None, state(fleet.url)
    assert (final["published"], final["dead_lettered"]) == (59, 1)
    assert restarts == 2  # delivered twice, then dead-lettered on the third claim
    [letter] = inspect.dead_letters(StreamCommands(*queue_commands(fleet.url)), limit=10)
    assert letter.reason == "max_deliveries"
    assert letter.trace_id == f"{18:032x}"
    assert letter.deliveries == 3


def test_sigterm_finishes_and_acknowledges_the_batches_in_hand(fleet: Workers) -> None:
    proc = fleet.start("t", eval_s=0.05)
    ship(fleet.url, 200)
    wait_until("a first acknowledgement", lambda: state(fleet.url)["published"] > 0, timeout_s=60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, fleet.log("t")
    assert "stopped" in fleet.log("t") and "timed out" not in fleet.log("t")
    client, options = queue_commands(fleet.url)
    consumers = {c["name"]: c for c in client.xinfo_consumers(options.stream, options.group)}
    assert consumers[b"t" if b"t" in consumers else "t"]["pending"] == 0
    s = state(fleet.url)
    assert s["published"] + s["backlog"] == 200  # what it did not read is still there


def test_two_workers_share_the_stream_and_both_serve_metrics(fleet: Workers) -> None:
    ports = [free_port(), free_port()]
    for name, port in zip("xy", ports, strict=True):
        fleet.start(name, "--metrics-port", str(port))
    ship(fleet.url, 300)
    wait_until("all published", lambda: settled(fleet.url, 300), timeout_s=90)
    totals = []
    for port in ports:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        text = body.decode()
        acked = [
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("ragtrace_queue_acknowledged_total")
        ]
        totals.append(acked[0])
        assert (
            'ragtrace_evaluations_total{app="shipper"' in text
            or "ragtrace_evaluations_total{" in text
        )
    assert sum(totals) == 300
    assert all(t > 0 for t in totals)


def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    """A worker's health endpoint: ``(status, details)``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_redis_outage_makes_workers_unready_but_never_dead(
    fleet: Workers, redis_server: RedisServer
) -> None:
    # Kubernetes restarts a pod whose liveness probe fails: during a Redis outage that would
    # restart the whole fleet for nothing. Readiness (and /healthz) says Redis is unreachable.
    port = free_port()
    fleet.start("h", "--metrics-port", str(port), "--health-stale-s", "1")
    for path in ("/readyz", "/healthz", "/livez"):
        wait_until(f"{path} 200", lambda p=path: probe(port, p)[0] == 200, timeout_s=60)
    redis_server.kill()

    def unready() -> tuple[int, dict[str, Any]] | None:
        answer = probe(port, "/readyz")
        return answer if answer[0] == 503 else None

    code, details = wait_until("unready", unready, timeout_s=30)
    assert code == 503 and "last read" in details["problems"][0]
    assert probe(port, "/healthz")[0] == 503
    outage_end = time.monotonic() + 4  # four times --health-stale-s, polled all along
    while time.monotonic() < outage_end:
        live, details = probe(port, "/livez")
        assert live == 200, details
        time.sleep(0.2)
    redis_server.start()
    wait_until("ready again", lambda: probe(port, "/readyz")[0] == 200, timeout_s=60)
    assert fleet.procs[0].poll() is None


def test_workers_queue_failing_records_for_review_in_postgresql(fleet: Workers) -> None:
    from tests.components import run_postgres

    with run_postgres() as postgres:
        url = postgres.create_schema()
        for name in ("r1", "r2"):
            fleet.start(name, "--review-db", url)
        ship(fleet.url, 80, bad=frozenset(range(0, 80, 8)))
        wait_until("all published", lambda: settled(fleet.url, 80), timeout_s=90)
        from ragtrace.review import open_store

        with open_store(url) as store:
            queued = {item.trace_id for item in store.page(limit=100).items}
    assert queued >= {f"{i + 1:032x}" for i in range(0, 80, 8)}


@pytest.mark.parametrize("source", ["env", "file"])
def test_a_review_store_named_by_its_option_fills_from_a_worker_with_its_policy(
    fleet: Workers, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """No ``--review-db``: the store comes from ``RAGTRACE_REVIEW_DB`` or the settings file's
    ``sinks.review``, as in ``init``. What goes into it went through the worker's policy
    (``--redact pii``; the application redacts nothing), the conversation's earlier turns
    included."""
    from ragtrace._model import Conversation, Turn
    from ragtrace.review import open_store
    from tests.queues.fleet import shipping_app

    db = fleet.tmp_path / "review.db"
    monkeypatch.delenv("RAGTRACE_REDACT", raising=False)
    if source == "env":
        monkeypatch.setenv("RAGTRACE_REVIEW_DB", str(db))
    else:
        monkeypatch.delenv("RAGTRACE_REVIEW_DB", raising=False)
        settings = fleet.settings.read_text()
        assert "sinks: {otel: false}" in settings
        fleet.settings.write_text(
            settings.replace("{otel: false}", f"{{otel: false, review: {db}}}")
        )
    fleet.start("r1", "--redact", "pii")
    history = (Turn("user", "write to alice@corp.example"),)
    rt, _ = shipping_app(fleet.url)
    try:
        for i in range(20):
            query = f"BAD {i}" if i % 4 == 0 else None
            shipped = record(i, query)
            conversation = Conversation(session_id=f"s-{i}", history=history)
            rt.pipeline.submit(replace(shipped, conversation=conversation))
        assert rt.flush(15)
    finally:
        rt.shutdown()
    wait_until("all published", lambda: settled(fleet.url, 20), timeout_s=90)

    def queued() -> list[Any] | None:
        if not db.exists():
            return None
        with open_store(str(db)) as store:
            items = store.page(limit=100).items
        return items if len(items) >= 5 else None

    items = wait_until("the flagged records in the store", queued, timeout_s=30)
    assert {item.trace_id for item in items} >= {f"{i + 1:032x}" for i in range(0, 20, 4)}
    for item in items:
        assert item.conversation is not None, fleet.log("r1")
        (turn,) = item.conversation.history
        assert "alice@corp.example" not in turn.content and turn.content.startswith("write to")
