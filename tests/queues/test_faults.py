"""The worker fleet against a real redis-server's failures: its data lost (``FLUSHALL``, a
restart without AOF), a stall longer than the socket timeout (``kill -STOP``), a slow but
healthy worker past ``reclaim_idle_s``, a stuck one past ``max_hold_s``, and a killed one left
in the group. Each case ends with ``ragtrace queue stats`` reconciling and no record published
twice (every worker writes what it publishes to one file). Every test is bounded in time and
stops what it starts by its pid.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.components import free_port, wait_until
from tests.queues.fleet import (
    Workers,
    drops,
    queue_commands,
    queue_stats,
    record,
    scrape,
    settled,
    ship,
    shipping_app,
    write_settings,
)
from tests.queues.test_worker import probe
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


def reconciled(url: str) -> dict[str, Any]:
    """``ragtrace queue stats``, asserting that every entry added is accounted for."""
    stats = queue_stats(url)
    assert stats["unaccounted"] == 0, stats
    assert stats["submitted"] == (
        stats["published"] + stats["duplicates"] + stats["dead_lettered"] + stats["backlog"]
    )
    return stats


def repeats(fleet: Workers) -> dict[str, int]:
    """Records published more than once by the fleet."""
    return {t: n for t, n in Counter(fleet.published()).items() if n > 1}


def metric_sum(ports: list[int], name: str) -> float:
    return sum(v for port in ports for k, v in scrape(port).items() if k.startswith(name))


def lose_data_and_heal(fleet: Workers, lose: Any) -> None:
    """Two workers publish 100 records; Redis loses its data (``lose()``); 100 more must be
    published within seconds with nothing done by hand."""
    ports = [free_port(), free_port()]
    for name, port in zip("ab", ports, strict=True):
        fleet.start(name, "--metrics-port", str(port))
    for port in ports:
        wait_until("both workers up", lambda p=port: probe(p, "/livez")[0] == 200, 60)
    assert ship(fleet.url, 100) == {}
    wait_until("the first 100 published", lambda: settled(fleet.url, 100), timeout_s=60)
    lose()
    lost_at = time.monotonic()
    assert ship(fleet.url, 100, first=100) == {}
    wait_until("the next 100 published", lambda: settled(fleet.url, 100), timeout_s=30)
    healed_s = time.monotonic() - lost_at
    assert healed_s < 10, f"healed after {healed_s:.1f}s"
    stats = reconciled(fleet.url)  # the counters start again with the data
    assert (stats["submitted"], stats["published"]) == (100, 100)
    assert metric_sum(ports, "ragtrace_queue_group_recreated_total") >= 1
    assert all(probe(port, "/readyz")[0] == 200 for port in ports)
    assert sorted(set(fleet.published())) == [record(i).trace_id for i in range(200)]
    assert repeats(fleet) == {}


def test_a_flushall_heals_within_seconds(fleet: Workers, redis_server: RedisServer) -> None:
    lose_data_and_heal(fleet, lambda: redis_server.client().flushall())


def test_a_restart_without_aof_heals_within_seconds(tmp_path: Path, app_side_names: None) -> None:
    server = RedisServer(tmp_path / "redis", aof=False)
    server.start()
    fleet = Workers(tmp_path, server.url + "?reclaim_idle_s=1&batch=16", write_settings(tmp_path))
    try:

        def restart_empty() -> None:
            server.kill()  # nothing survives it: no AOF (the counters start again, below)
            server.start()

        lose_data_and_heal(fleet, restart_empty)
    finally:
        fleet.stop_all()
        server.stop()


def test_a_stall_past_the_socket_timeout_adds_and_publishes_each_record_once(
    fleet: Workers, redis_server: RedisServer
) -> None:
    # The app's sends time out while the server is stopped; their commands wait in its socket
    # buffers and run when it continues, and the app sends the same batches again.
    url = fleet.url + "&timeout_s=0.5"
    for name in "ab":
        fleet.start(name, url=url)
    rt, registry = shipping_app(url)
    stalled = threading.Event()

    def stall() -> None:
        time.sleep(0.5)
        redis_server.pause()
        stalled.set()
        time.sleep(3.0)  # six socket timeouts
        redis_server.resume()

    staller = threading.Thread(target=stall)
    staller.start()
    try:
        for i in range(3000):
            assert rt.pipeline.submit(record(i))
            if i % 50 == 49:
                time.sleep(0.04)
        staller.join()
        assert stalled.is_set()
        assert rt.flush(30)
    finally:
        rt.shutdown()
    assert drops(registry) == {}
    wait_until("all 3000 published", lambda: settled(fleet.url, 3000), timeout_s=90)
    stats = reconciled(fleet.url)
    assert (stats["submitted"], stats["published"], stats["duplicates"]) == (3000, 3000, 0)
    assert len(fleet.published()) == 3000 and repeats(fleet) == {}


def test_a_slow_worker_keeps_its_batch_past_reclaim_idle_s(fleet: Workers) -> None:
    # Batches of 4 records at 0.5 s each: 2 s per batch, twice --reclaim-idle-s (1 s). The
    # heartbeat keeps them claimed, so the fast worker never takes them over.
    url = fleet.url + "&batch=4"
    ports = [free_port(), free_port()]
    fleet.start("slow", "--metrics-port", str(ports[0]), eval_s=0.5, url=url)
    fleet.start("fast", "--metrics-port", str(ports[1]), eval_s=0.01, url=url)
    for port in ports:
        wait_until("both workers up", lambda p=port: probe(p, "/livez")[0] == 200, 60)
    assert ship(url, 60) == {}
    wait_until("all 60 published", lambda: settled(fleet.url, 60), timeout_s=90)
    assert repeats(fleet) == {}
    assert len(fleet.published()) == 60
    assert metric_sum(ports, "ragtrace_queue_reclaimed_total") == 0
    assert metric_sum(ports, "ragtrace_queue_claims_renewed_total") > 0
    slow = scrape(ports[0])
    assert slow["ragtrace_queue_acknowledged_total"] > 0  # the slow one did its share
    stats = reconciled(fleet.url)
    assert (stats["published"], stats["duplicates"]) == (60, 0)


def test_a_stuck_workers_batch_is_taken_over_and_never_published_twice(fleet: Workers) -> None:
    # 2 records at 4 s each hold a batch 8 s, past max_hold_s (1.5 s): the stuck worker stops
    # renewing, the other takes its records over and publishes them; when the stuck one
    # finishes, it finds them no longer its own and counts them instead of publishing again.
    url = fleet.url + "&batch=2&max_hold_s=1.5"
    stuck_port, fast_port = free_port(), free_port()
    stuck = fleet.start("stuck", "--metrics-port", str(stuck_port), eval_s=4.0, url=url)
    wait_until("the stuck worker up", lambda: probe(stuck_port, "/livez")[0] == 200, 60)
    assert ship(url, 4) == {}
    wait_until("the stuck worker holding", lambda: queue_stats(url)["pending"] >= 1, 30)
    fleet.start("fast", "--metrics-port", str(fast_port), eval_s=0.01, url=url)
    wait_until(
        "the stuck worker not alive",
        lambda: probe(stuck_port, "/livez")[0] == 503,
        timeout_s=30,
    )
    wait_until("all 4 published", lambda: settled(fleet.url, 4), timeout_s=60)
    taken = 'ragtrace_queue_duplicates_total{reason="reclaimed"}'

    def skipped() -> float | None:  # the stuck worker finished: what it held, it did not publish
        held = scrape(fast_port)["ragtrace_queue_reclaimed_total"]
        return held if held and scrape(stuck_port).get(taken) == held else None

    wait_until("the stuck worker's late results skipped", skipped, timeout_s=30)
    assert repeats(fleet) == {} and len(fleet.published()) == 4
    assert stuck.poll() is None
    reconciled(fleet.url)


def test_a_killed_consumer_with_nothing_pending_leaves_the_group(fleet: Workers) -> None:
    url = fleet.url + "&consumer_idle_s=1"
    ports = [free_port(), free_port()]
    gone = fleet.start("gone", "--metrics-port", str(ports[0]), url=url, eval_s=0.02)
    fleet.start("stays", "--metrics-port", str(ports[1]), url=url, eval_s=0.02)
    for port in ports:
        wait_until("both workers up", lambda p=port: probe(p, "/livez")[0] == 200, 60)
    assert ship(url, 100) == {}
    wait_until("all 100 published", lambda: settled(fleet.url, 100), timeout_s=60)
    client, options = queue_commands(url)

    def consumers() -> set[str]:
        rows = client.xinfo_consumers(options.stream, options.group)
        return {r["name"].decode() if isinstance(r["name"], bytes) else r["name"] for r in rows}

    wait_until("both consumers in the group", lambda: {"gone", "stays"} <= consumers(), 30)
    gone.send_signal(signal.SIGKILL)
    gone.wait(timeout=10)
    wait_until("the killed consumer removed", lambda: consumers() == {"stays"}, timeout_s=20)
    reconciled(url)
