"""Losses the queue cannot prevent are at least seen, and the books balance: a ``FLUSHALL``
between batches is counted (``stream_reset``) by the process that notices it and shown by
``ragtrace queue stats``; a rewound group is a ``group_reset``; foreign and undecodable entries
are lines of their own, so ``unaccounted`` stays 0, before and after ``--purge``. Against a real
redis-server on loopback (the ``redis_server`` fixture stops it)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import Counter

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._metrics.queues import QueueMetrics
from ragtrace._pipeline.queues.codec import encode_item
from ragtrace._pipeline.queues.redis_consumer import RedisConsumer
from ragtrace._pipeline.queues.redis_shipper import RedisShipper
from ragtrace._pipeline.queues.redis_streams import FIELD
from ragtrace._worker.monitor import StreamMonitor
from tests.queues.conftest import item, options
from tests.queues.fleet import ROOT, queue_stats
from tests.queues.test_redis_queue import drain
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


def counted(registry: CollectorRegistry, family: str) -> dict[str, float]:
    """A counter family's ``_total`` samples by ``reason``."""
    return {
        s.labels["reason"]: s.value
        for m in registry.collect()
        if m.name == family
        for s in m.samples
        if s.name.endswith("_total")
    }


def consumer_with_metrics(
    opts: RedisQueueOptions,
) -> tuple[RedisConsumer, StreamMonitor, CollectorRegistry, Counter[str]]:
    """A consumer (its group made) whose events feed a fresh ``QueueMetrics``, and the
    worker's monitor on it (polled by hand)."""
    registry = CollectorRegistry()
    metrics = QueueMetrics(registry)
    events: Counter[str] = Counter()

    def on_event(name: str, n: int) -> None:
        events.update({name: n})
        metrics.count_event(name, n)

    consumer = RedisConsumer(opts, on_event=on_event)
    consumer.get_batch(1, 0.01)
    monitor = StreamMonitor(consumer.commands, metrics, lambda s, e: None, losses=consumer.losses)
    return consumer, monitor, registry, events


def ship(shipper: RedisShipper, first: int, n: int) -> None:
    for i in range(first, first + n):
        assert shipper.put(item(i))
    assert shipper.flush(10)


def test_a_flushall_between_batches_is_counted_and_shown(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    opts = options(redis_server.url)
    consumer, monitor, registry, events = consumer_with_metrics(opts)
    resets: Counter[str] = Counter()
    shipper = RedisShipper(opts, on_reset=lambda name, n: resets.update({name: n}))
    try:
        ship(shipper, 0, 50)
        got = consumer.get_batch(20, 0.5)
        consumer.ack(got)
        ship(shipper, 50, 10)
        monitor.poll()  # the worker last saw 60 - 20 entries in the stream
        before = queue_stats(redis_server.url)
        assert before["resets"]["count"] == 0 and before["epoch"]["id"]
        with caplog.at_level(logging.WARNING, "ragtrace._pipeline.queues.redis_losses"):
            redis_server.client().flushall()
            assert consumer.get_batch(10, 0.2) == []  # NOGROUP: the group is made again
            ship(shipper, 60, 5)  # the shipper notices the new epoch too: the same reset
            drain(consumer)
        assert len(caplog.records) == 2, [r.getMessage() for r in caplog.records]
        assert all("stream_reset" in r.getMessage() for r in caplog.records)

        assert counted(registry, "ragtrace_queue_data_lost") == {
            "stream_reset": 40.0,
            "group_reset": 0.0,
        }
        assert counted(registry, "ragtrace_queue_resets") == {
            "stream_reset": 1.0,
            "group_reset": 0.0,
        }
        assert events["group_recreated"] == 1
        assert resets == Counter()  # the worker recorded it first, with the larger estimate

        after = queue_stats(redis_server.url)
        assert after["epoch"]["id"] != before["epoch"]["id"]
        assert (after["submitted"], after["published"], after["unaccounted"]) == (5, 5, 0)
        assert after["resets"]["count"] == 1
        assert after["resets"]["by_reason"] == {"stream_reset": 1}
        assert after["resets"]["last_reason"] == "stream_reset"
        assert after["resets"]["possibly_lost"] == 40
        assert after["resets"]["last_at"] >= after["epoch"]["created_at"]

        # a second loss, noticed by the shipper first (its last add saw 3 entries)
        monitor.poll()
        ship(shipper, 65, 3)
        redis_server.client().flushall()
        ship(shipper, 68, 1)
        assert resets == Counter({"queue_reset:stream_reset": 1, "data_lost:stream_reset": 3})
        drain(consumer)
        # the first reset's record went with the data; the second is recorded anew
        assert queue_stats(redis_server.url)["resets"]["possibly_lost"] == 3
    finally:
        shipper.close()
        consumer.close()


def test_a_group_rewound_behind_what_a_worker_read_is_a_group_reset(
    redis_server: RedisServer,
) -> None:
    opts = options(redis_server.url)
    consumer, monitor, registry, events = consumer_with_metrics(opts)
    shipper = RedisShipper(opts)
    try:
        ship(shipper, 0, 5)
        assert len(drain(consumer)) == 5
        monitor.poll()
        assert events["queue_reset:group_reset"] == 0
        redis_server.client().xgroup_setid(opts.stream, opts.group, "0")  # back in time
        monitor.poll()
        assert counted(registry, "ragtrace_queue_resets")["group_reset"] == 1.0
        monitor.poll()  # seen once
        assert counted(registry, "ragtrace_queue_resets")["group_reset"] == 1.0
        stats = queue_stats(redis_server.url)
        assert stats["resets"]["by_reason"] == {"group_reset": 1}
        assert stats["unaccounted"] == 0
    finally:
        shipper.close()
        consumer.close()


def test_foreign_and_undecodable_entries_balance_before_and_after_purge(
    redis_server: RedisServer,
) -> None:
    opts = options(redis_server.url)
    consumer, _, _, events = consumer_with_metrics(opts)
    shipper = RedisShipper(opts)
    client = redis_server.client()
    try:
        ship(shipper, 0, 5)
        for _ in range(3):
            client.xadd(opts.stream, {FIELD: b"\xff\xfe not json"})
        client.xadd(opts.stream, {"other": b"no item field"})
        client.xadd(opts.stream, {FIELD: encode_item(item(99))})  # a work item added by hand
        queued = queue_stats(redis_server.url)
        assert (queued["submitted"], queued["foreign"], queued["backlog"]) == (5, 5, 10)
        assert queued["unaccounted"] == 0

        assert len(drain(consumer)) == 6
        done = queue_stats(redis_server.url)
        assert done["foreign"] == 5
        assert (done["published"], done["dead_lettered"], done["undecodable"]) == (6, 4, 4)
        assert done["unaccounted"] == 0
        assert events["dead_lettered:undecodable"] == 4

        purge = ["queue", "dead-letters", "--purge", "--queue", redis_server.url]
        run = subprocess.run(
            [sys.executable, "-m", "ragtrace", *purge],
            capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
        )  # fmt: skip
        assert run.returncode == 0 and "purged 4" in run.stdout, run.stderr
        purged = queue_stats(redis_server.url)
        assert purged["dead_letters"] == 0 and purged["unaccounted"] == 0
    finally:
        shipper.close()
        consumer.close()


def test_a_stream_behind_what_a_worker_read_is_a_stream_reset(redis_server: RedisServer) -> None:
    opts = options(redis_server.url)
    consumer, monitor, registry, _ = consumer_with_metrics(opts)
    shipper = RedisShipper(opts)
    client = redis_server.client()
    try:
        ship(shipper, 0, 5)
        assert len(drain(consumer)) == 5
        ship(shipper, 5, 3)
        monitor.poll()  # 3 entries not read yet
        # a failover to a replica that lags: the same epoch, an older copy of the stream
        client.delete(opts.stream)
        client.xadd(opts.stream, {FIELD: encode_item(item(0))}, id="1-1")
        monitor.poll()
        assert counted(registry, "ragtrace_queue_data_lost")["stream_reset"] == 3.0
        assert counted(registry, "ragtrace_queue_resets")["stream_reset"] == 1.0
        assert queue_stats(redis_server.url)["resets"]["possibly_lost"] == 3
    finally:
        shipper.close()
        consumer.close()


def test_the_apps_part_of_a_loss_is_counted_as_dropped_records(redis_server: RedisServer) -> None:
    """A shipping app that notices the reset first counts the records it had shipped and that
    were not evaluated as drops (``queue_lost``), beside the workers' own counters."""
    from ragtrace._diagnostics import Diagnostics
    from ragtrace._metrics.collection import Metrics
    from ragtrace._runtime.queues import shipping_queue

    registry = CollectorRegistry()
    metrics = Metrics(registry, "shop")
    shipper = shipping_queue(redis_server.url, metrics, Diagnostics(metrics.count_internal_error))
    try:
        ship(shipper, 0, 7)
        redis_server.client().flushall()
        ship(shipper, 7, 1)  # the next add sees the new epoch: 7 shipped, none evaluated
        value = registry.get_sample_value(
            "ragtrace_dropped_records_total", {"reason": "queue_lost"}
        )
        assert value == 7.0
    finally:
        shipper.close()
