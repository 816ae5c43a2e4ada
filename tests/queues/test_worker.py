"""``ragtrace worker`` processes against a real redis-server: killed mid-batch, poisoned, stopped,
two at once, health. Each test is bounded in time and stops what it starts by its pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace.model import RagRecord
from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.pipeline.queues.redis_streams import StreamCommands
from ragtrace.worker import inspect
from tests.components import free_port, wait_until
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


class Workers:
    """Worker subprocesses started by a test; all stopped (by pid) at the end."""

    def __init__(self, tmp_path: Path, url: str, settings: Path) -> None:
        self.tmp_path, self.url, self.settings = tmp_path, url, settings
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *extra: str, eval_s: float = 0.01) -> subprocess.Popen[bytes]:
        env = {**os.environ, "RAGTRACE_TEST_EVAL_S": str(eval_s), "PYTHONPATH": str(ROOT)}
        env.pop("RAGTRACE_EVALUATORS", None)  # the settings file names them: env would win
        log = (self.tmp_path / f"{name}.log").open("ab")
        args = [sys.executable, "-m", "tests.queues.worker_app", "--queue", self.url]
        args += ["--config", str(self.settings), "--consumer", name, *extra]
        proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
def fleet(tmp_path: Path, redis_server: RedisServer) -> Iterator[Workers]:
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "evaluators: [takes_time, dies_on_poison, flags_bad]\n"
        "pipeline: {workers: 2, batch_wait_s: 0.05}\n"
        "sinks: {otel: false}\n"
    )
    workers = Workers(tmp_path, redis_server.url + "?reclaim_idle_s=1&batch=16", settings)
    try:
        yield workers
    finally:
        workers.stop_all()


def ship(
    url: str, n: int, poison: frozenset[int] = frozenset(), bad: frozenset[int] = frozenset()
) -> dict[str, float]:
    """Submit ``n`` records through an application in ship-only mode; its drop counters."""
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="shipper",
        registry=registry,
        queue_url=url,
        evaluators=["takes_time_app", "dies_on_poison_app", "flags_bad_app"],
        export_evaluation_spans=False,
    )
    try:
        for i in range(n):
            query = f"POISON {i}" if i in poison else f"BAD {i}" if i in bad else f"question {i}"
            rt.pipeline.submit(RagRecord(f"{i + 1:032x}", f"{i + 1:016x}", query, response="a"))
        assert rt.flush(15)
    finally:
        rt.shutdown()
    return {
        s.labels["reason"]: s.value
        for m in registry.collect()
        if m.name == "ragtrace_dropped_records"
        for s in m.samples
        if s.name.endswith("_total")
    }


@pytest.fixture(autouse=True)
def app_side_names() -> Iterator[None]:
    """The app only needs the evaluators' names to sample: register stand-ins."""
    from ragtrace.evaluators import evaluator, register, unregister

    names = ("takes_time", "dies_on_poison", "flags_bad")
    for app_name, real in ((f"{n}_app", n) for n in names):
        stub = evaluator(name=real, requires={"query"})(lambda record: 1.0)
        register(app_name, lambda stub=stub, **_: stub, replace=True)
    yield
    for name in names:
        unregister(f"{name}_app")


def state(url: str) -> dict[str, Any]:
    return inspect.queue_state(StreamCommands(*_commands(url)))


def settled(url: str, submitted: int) -> dict[str, Any] | None:
    s = state(url)
    done = s["published"] + s["dead_lettered"] == submitted and s["backlog"] == 0
    return s if done else None


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
    [letter] = inspect.dead_letters(StreamCommands(*_commands(fleet.url)), limit=10)
    assert letter.reason == "max_deliveries"
    assert letter.trace_id == f"{18:032x}"
    assert letter.deliveries == 3


def _commands(url: str) -> tuple[Any, RedisQueueOptions]:
    from ragtrace.pipeline.queues.redis_streams import connect

    options = RedisQueueOptions.from_url(url)
    return connect(options), options


def test_sigterm_finishes_and_acknowledges_the_batches_in_hand(fleet: Workers) -> None:
    proc = fleet.start("t", eval_s=0.05)
    ship(fleet.url, 200)
    wait_until("a first acknowledgement", lambda: state(fleet.url)["published"] > 0, timeout_s=60)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, fleet.log("t")
    assert "stopped" in fleet.log("t") and "timed out" not in fleet.log("t")
    client, options = _commands(fleet.url)
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


def test_health_reflects_reading_not_liveness(fleet: Workers, redis_server: RedisServer) -> None:
    port = free_port()
    fleet.start("h", "--metrics-port", str(port), "--health-stale-s", "1")

    def health() -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=3) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    wait_until("healthy", lambda: health()[0] == 200, timeout_s=60, retry_on=(OSError,))
    redis_server.kill()

    def unhealthy() -> tuple[int, dict[str, Any]] | None:
        answer = health()
        return answer if answer[0] == 503 else None

    code, details = wait_until("unhealthy", unhealthy, timeout_s=30)
    assert code == 503 and "last read" in details["problems"][0]
    redis_server.start()
    wait_until("healthy again", lambda: health()[0] == 200, timeout_s=60)


def test_workers_queue_failing_records_for_review_in_postgresql(fleet: Workers) -> None:
    from tests.components import run_postgres

    with run_postgres() as postgres:
        url = postgres.create_schema()
        for name in ("r1", "r2"):
            fleet.start(name, "--review-db", url)
        ship(fleet.url, 80, bad=frozenset(range(0, 80, 8)))
        wait_until("all published", lambda: settled(fleet.url, 80), timeout_s=90)
        from ragtrace.review import open_store

        store = open_store(url)
        queued = {item.trace_id for item in store.page(limit=100).items}
    assert queued >= {f"{i + 1:032x}" for i in range(0, 80, 8)}
