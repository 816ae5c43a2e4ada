"""The Redis queue's guarantees against a real redis-server: nothing deleted before it is
published, every refusal counted, a dead consumer's entries taken over, poison dead-lettered."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.codec import decode_item
from ragtrace._pipeline.queues.redis_consumer import RedisConsumer
from ragtrace._pipeline.queues.redis_shipper import RedisShipper
from ragtrace._pipeline.queues.redis_streams import FIELD
from tests.components import free_port, wait_until
from tests.queues.conftest import item, options, trace_ids
from tests.redis_server import RedisServer, connection_ids

pytestmark = pytest.mark.integration


def shipper(opts: RedisQueueOptions, drops: Counter[str]) -> RedisShipper:
    return RedisShipper(opts, on_drop=lambda reason, n: drops.update({reason: n}))


def watched(opts: RedisQueueOptions) -> tuple[RedisConsumer, Counter[str]]:
    """A consumer whose events are counted, its group made (nothing read yet)."""
    events: Counter[str] = Counter()
    consumer = RedisConsumer(opts, on_event=lambda name, n: events.update({name: n}))
    consumer.get_batch(1, 0.01)
    return consumer, events


def drain(consumer: RedisConsumer, *, ack: bool = True, limit_s: float = 10.0) -> list[WorkItem]:
    """Read until a read comes back empty (and acknowledge what was read)."""
    got: list[WorkItem] = []
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        batch = consumer.get_batch(100, 0.2)
        if not batch:
            break
        if ack:
            consumer.ack(batch)
        got.extend(batch)
    return got


def test_shipped_items_are_read_published_and_deleted(redis_server: RedisServer) -> None:
    drops: Counter[str] = Counter()
    opts = options(redis_server.url, stream="t:work")
    ship = shipper(opts, drops)
    for i in range(300):
        assert ship.put(item(i))
    assert ship.flush(10)
    events: Counter[str] = Counter()
    consumer = RedisConsumer(opts, on_event=lambda name, n: events.update({name: n}))
    got = drain(consumer)
    assert sorted(trace_ids(got)) == sorted(trace_ids([item(i) for i in range(300)]))
    client = redis_server.client()
    assert client.xlen("t:work") == 0  # acknowledged entries are deleted
    assert consumer.commands.stats() == {"submitted": 300, "published": 300, "groups_created": 1}
    assert events == Counter({"acknowledged": 300})
    assert drops == Counter()


def test_a_closed_shipper_closes_the_connections_it_opened_and_no_others(
    redis_server: RedisServer,
) -> None:
    watcher, given = redis_server.client(), redis_server.client()
    before = connection_ids(watcher)
    ships = [RedisShipper(options(redis_server.url), client=c) for c in (None, given)]
    for ship in ships:  # both kept referenced: no connection closed by the garbage collector
        assert ship.put(item(0)) and ship.flush(10)
        ship.close()
    wait_until(
        "only the given client's connection left of the new ones",
        lambda: connection_ids(watcher) - before == {given.client_id()},
        timeout_s=10,
    )
    watcher.close()
    given.close()


def test_the_stream_is_never_trimmed_and_the_backlog_cap_is_exact(
    redis_server: RedisServer,
) -> None:
    drops: Counter[str] = Counter()
    opts = options(redis_server.url, max_backlog=100, batch=32)
    ship = shipper(opts, drops)
    consumer = RedisConsumer(opts)
    consumer.get_batch(1, 0.01)  # the group exists: nothing read yet
    for i in range(150):
        assert ship.put(item(i))
    assert ship.flush(10)
    assert redis_server.client().xlen(opts.stream) == 100
    assert drops == Counter({"queue_full": 50})
    read = drain(consumer, ack=False)  # all read, none acknowledged: all still there
    assert len(read) == 100
    assert redis_server.client().xlen(opts.stream) == 100
    assert ship.put(item(999)) and ship.flush(10)
    assert drops == Counter({"queue_full": 51})  # pending entries still count
    consumer.ack(read)
    assert ship.put(item(1000)) and ship.flush(10)
    assert drops == Counter({"queue_full": 51})


def test_a_batch_put_back_after_a_failed_send_is_counted_once(tmp_path: Path) -> None:
    # A dead broker: the sender takes the first item, fails, puts it back and backs off. While
    # it sleeps the item is in the buffer once, so the caller can still fill every slot.
    server = RedisServer(tmp_path / "never", port=free_port())  # never started
    drops: Counter[str] = Counter()
    ship = shipper(options(server.url, buffer=5, timeout_s=0.2), drops)
    try:
        assert ship.put(item(0))
        wait_until(
            "a failed send", lambda: ship.connected is False and ship.depth() == 1, timeout_s=10
        )
        time.sleep(0.02)  # inside a backoff sleep (at least 0.025 s) or a failed retry
        assert [ship.put(item(i)) for i in range(1, 5)] == [True] * 4
        assert not ship.put(item(5))  # the sixth: the buffer holds 5 (the caller counts it)
        assert drops == Counter()  # nothing dropped here: the put-back batch fitted
    finally:
        ship.close()


def test_broker_absent_at_start_buffers_then_ships_when_it_starts(tmp_path: Path) -> None:
    port = free_port()
    server = RedisServer(tmp_path / "late", port=port)
    drops: Counter[str] = Counter()
    ship = shipper(options(server.url, buffer=50, timeout_s=0.2), drops)
    started = time.perf_counter()
    accepted = [ship.put(item(i)) for i in range(80)]
    elapsed = time.perf_counter() - started
    assert accepted == [True] * 50 + [False] * 30  # a full buffer refuses (the caller counts)
    assert elapsed < 2.0  # 80 puts, dead broker: no 0.2 s socket timeout each (16 s) on the caller
    assert not ship.flush(0.3)
    assert not ship.connected
    server.start()
    try:
        assert ship.flush(15)
        assert ship.connected
        stored = server.client().xrange(RedisQueueOptions.from_url(server.url).stream)
        assert sorted(decode_item(f[FIELD.encode()]).record.trace_id for _, f in stored) == sorted(
            trace_ids([item(i) for i in range(50)])
        )
        assert drops == Counter()  # the 30 refusals were put's answer, counted by the pipeline
    finally:
        ship.close()
        server.stop()


def test_broker_killed_and_restarted_mid_run_loses_nothing(redis_server: RedisServer) -> None:
    drops: Counter[str] = Counter()
    opts = options(redis_server.url, timeout_s=0.3, batch=16)
    ship = shipper(opts, drops)
    for i in range(100):
        ship.put(item(i))
    assert ship.flush(10)
    redis_server.kill()
    for i in range(100, 200):
        assert ship.put(item(i))
    assert not ship.flush(0.5)
    redis_server.start()  # same port, same AOF
    assert ship.flush(20)
    stored = redis_server.client().xrange(opts.stream)
    ids = {decode_item(f[FIELD.encode()]).record.trace_id for _, f in stored}
    assert ids == set(trace_ids([item(i) for i in range(200)]))  # at least once, none lost
    assert drops == Counter()


def test_an_undecodable_entry_goes_to_the_dead_letter_stream(redis_server: RedisServer) -> None:
    opts = options(redis_server.url)
    client = redis_server.client()
    consumer, events = watched(opts)
    client.xadd(opts.stream, {FIELD: b"\xff\xfe not json"})
    client.xadd(opts.stream, {"other": b"no item field"})
    ship = shipper(opts, Counter())
    ship.put(item(1))
    assert ship.flush(5)
    got = drain(consumer)
    assert trace_ids(got) == [item(1).record.trace_id]
    dead = client.xrange(opts.dead_stream)
    reasons = [b"undecodable:not_json", b"undecodable:not_json"]
    assert sorted(f[b"reason"] for _, f in dead) == reasons
    assert dead[0][1][FIELD.encode()] == b"\xff\xfe not json"  # kept as it came, to inspect
    assert client.xlen(opts.stream) == 0
    assert events["dead_lettered:undecodable"] == 2


def test_two_consumers_share_the_work_without_overlap(redis_server: RedisServer) -> None:
    opts = options(redis_server.url, batch=10)
    ship = shipper(opts, Counter())
    for i in range(500):
        ship.put(item(i))
    assert ship.flush(10)
    a = RedisConsumer(options(redis_server.url, batch=10, consumer="a"))
    b = RedisConsumer(options(redis_server.url, batch=10, consumer="b"))
    seen: dict[str, list[str]] = {"a": [], "b": []}
    for _ in range(200):
        got_a, got_b = a.get_batch(10, 0.05), b.get_batch(10, 0.05)
        a.ack(got_a), b.ack(got_b)
        seen["a"] += trace_ids(got_a)
        seen["b"] += trace_ids(got_b)
        if not got_a and not got_b:
            break
    assert seen["a"] and seen["b"]
    assert not set(seen["a"]) & set(seen["b"])
    assert len(seen["a"]) + len(seen["b"]) == 500


def test_a_dead_consumers_entries_are_reclaimed_then_dead_lettered(
    redis_server: RedisServer,
) -> None:
    opts = options(redis_server.url, reclaim_idle_s=0.3, max_deliveries=2)
    ship = shipper(opts, Counter())
    for i in range(5):
        ship.put(item(i))
    assert ship.flush(5)
    dead = RedisConsumer(options(redis_server.url, consumer="dies"))
    taken = dead.get_batch(5, 0.1)
    assert len(taken) == 5  # ... and the consumer dies without acknowledging
    events: Counter[str] = Counter()
    survivor = RedisConsumer(
        options(redis_server.url, consumer="lives", reclaim_idle_s=0.3, max_deliveries=2),
        on_event=lambda name, n: events.update({name: n}),
    )
    time.sleep(0.4)
    reclaimed = []
    for _ in range(3):
        batch = survivor.get_batch(5, 0.05)
        assert len(batch) == 1  # reclaimed entries come one at a time (poison isolation)
        reclaimed += batch
        survivor.ack(batch)  # published
    held = survivor.get_batch(5, 0.05)
    assert len(held) == 1
    # While a reclaimed entry is held, no second one is handed out: were the held one to kill
    # the process, another thread's reclaimed record would not be delivered again with it.
    assert survivor.get_batch(5, 0.05) == []
    survivor.release(held)  # it "crashed" the survivor: given up unacknowledged
    last = survivor.get_batch(5, 0.05)
    assert len(last) == 1
    survivor.release(last)  # so did this one
    reclaimed += held + last
    assert sorted(trace_ids(reclaimed)) == sorted(trace_ids(taken))
    time.sleep(0.4)
    assert survivor.get_batch(5, 0.05) == []  # third delivery would exceed max_deliveries=2
    client = redis_server.client()
    letters = client.xrange(opts.dead_stream)
    assert sorted(f[b"reason"] for _, f in letters) == [b"max_deliveries"] * 2
    assert client.xlen(opts.stream) == 0
    del events["renewed"]  # the survivor's heartbeat on what it held, however often it beat
    assert events == Counter({"reclaimed": 5, "acknowledged": 3, "dead_lettered:max_deliveries": 2})
    assert survivor.commands.stats() == {
        "submitted": 5,
        "published": 3,
        "dead_lettered": 2,
        "groups_created": 1,
    }


def test_pending_entries_survive_a_broker_restart_with_aof(redis_server: RedisServer) -> None:
    opts = options(redis_server.url, reclaim_idle_s=0.2)
    ship = shipper(opts, Counter())
    for i in range(20):
        ship.put(item(i))
    assert ship.flush(5)
    first = RedisConsumer(options(redis_server.url, consumer="first"))
    held = first.get_batch(20, 0.1)
    assert len(held) == 20
    redis_server.kill()
    redis_server.start()
    pending = redis_server.client().xpending(opts.stream, opts.group)
    assert pending["pending"] == 20
    second = RedisConsumer(options(redis_server.url, consumer="second", reclaim_idle_s=0.2))
    time.sleep(0.3)
    got = drain(second)
    assert sorted(trace_ids(got)) == sorted(trace_ids(held))


def test_a_consumer_recovers_after_the_broker_comes_back(redis_server: RedisServer) -> None:
    opts = options(redis_server.url, timeout_s=0.3)
    errors: list[str] = []
    consumer = RedisConsumer(opts, on_error=lambda site, exc: errors.append(site))
    assert consumer.get_batch(1, 0.05) == []
    redis_server.kill()
    assert consumer.get_batch(1, 0.05) == []  # no exception reaches the worker loop
    assert errors == ["redis_queue.read"]
    redis_server.start()
    ship = shipper(opts, Counter())
    ship.put(item(7))
    assert ship.flush(5)
    wait_until("a read after restart", lambda: consumer.get_batch(1, 0.05), timeout_s=10)


def test_a_deeply_nested_entry_is_dead_lettered_at_once_and_its_batch_goes_on(
    redis_server: RedisServer,
) -> None:
    from tests.queues.test_codec import nested

    opts = options(redis_server.url)
    consumer, events = watched(opts)
    client = redis_server.client()
    ship = shipper(opts, Counter())
    ship.put(item(1))
    assert ship.flush(5)
    client.xadd(opts.stream, {FIELD: nested(5000)})
    ship.put(item(2))
    assert ship.flush(5)
    started = time.monotonic()
    got = consumer.get_batch(10, 0.2)  # one read: the good two, the poison set aside
    assert time.monotonic() - started < 1.0
    assert trace_ids(got) == [item(1).record.trace_id, item(2).record.trace_id]
    consumer.ack(got)
    (letter,) = client.xrange(opts.dead_stream)
    assert letter[1][b"reason"] == b"undecodable:too_deep"
    assert events["dead_lettered:undecodable"] == 1
    assert client.xlen(opts.stream) == 0


def test_a_retry_with_the_same_keys_adds_nothing_twice(redis_server: RedisServer) -> None:
    from dataclasses import replace

    from ragtrace._pipeline.queues.codec import encode_item
    from ragtrace._pipeline.queues.redis_streams import ADDED, DUPLICATE, StreamCommands

    opts = options(redis_server.url)
    commands = StreamCommands(redis_server.client(), opts)
    batch = [replace(item(i), key=f"k{i}") for i in range(3)]
    entries = [(i.key, encode_item(i)) for i in batch]
    assert commands.add(entries) == [ADDED] * 3
    # The first try reached Redis, the client timed out and sends the batch again, with more.
    more = replace(item(3), key="k3")
    assert commands.add([*entries, (more.key, encode_item(more))]) == [DUPLICATE] * 3 + [ADDED]
    assert redis_server.client().xlen(opts.stream) == 4
    assert commands.stats() == {"submitted": 4, "duplicates_refused": 3}


def test_a_record_published_already_is_acknowledged_not_published_again(
    redis_server: RedisServer,
) -> None:
    # The same record twice in the stream (say, requeued from the dead letters after it was
    # published): the second delivery is counted as a duplicate and never reaches the sinks.
    from dataclasses import replace

    from ragtrace._pipeline.queues.codec import encode_item

    opts = options(redis_server.url)
    consumer, events = watched(opts)
    payload = encode_item(replace(item(1), key="same-record"))
    client = redis_server.client()
    client.xadd(opts.stream, {FIELD: payload})
    first = consumer.get_batch(10, 0.2)
    assert consumer.publishable(first) == [True]
    consumer.ack(first)
    client.xadd(opts.stream, {FIELD: payload})
    second = consumer.get_batch(10, 0.2)
    assert consumer.publishable(second) == [False]
    consumer.ack(second)
    assert client.xlen(opts.stream) == 0
    assert consumer.commands.stats()["duplicates"] == 1
    assert events["duplicate:published"] == 1 and events["acknowledged"] == 1


def test_an_entry_reclaimed_by_another_consumer_is_not_published_nor_acked_by_the_first(
    redis_server: RedisServer,
) -> None:
    opts = options(redis_server.url, reclaim_idle_s=0.2, max_hold_s=0.1)
    ship = shipper(opts, Counter())
    ship.put(item(1))
    assert ship.flush(5)
    slow_events: Counter[str] = Counter()
    slow = RedisConsumer(
        options(redis_server.url, consumer="slow", reclaim_idle_s=0.2, max_hold_s=0.1),
        on_event=lambda name, n: slow_events.update({name: n}),
    )
    held = slow.get_batch(1, 0.1)
    time.sleep(0.35)  # held past max_hold_s: no longer renewed, idle past reclaim_idle_s
    other = RedisConsumer(options(redis_server.url, consumer="other", reclaim_idle_s=0.2))
    taken = other.get_batch(1, 0.1)
    assert trace_ids(taken) == trace_ids(held)
    assert slow.publishable(held) == [False]  # the slow one finishes: not its own any more
    slow.ack(held)
    assert other.publishable(taken) == [True]
    other.ack(taken)
    assert slow_events["duplicate:reclaimed"] == 1 and "acknowledged" not in slow_events
    assert other.commands.stats()["published"] == 1


def test_the_heartbeat_renews_every_entry_of_a_batch_and_only_its_own(
    redis_server: RedisServer,
) -> None:
    from ragtrace._pipeline.queues.redis_streams import StreamCommands

    opts = options(redis_server.url, reclaim_idle_s=60)
    ship = shipper(opts, Counter())
    for i in range(6):
        ship.put(item(i))
    assert ship.flush(5)
    mine = RedisConsumer(options(redis_server.url, consumer="mine", reclaim_idle_s=60))
    held = mine.get_batch(10, 0.1)
    assert len(held) == 6
    time.sleep(0.3)
    client = redis_server.client()
    others = StreamCommands(client, options(redis_server.url, consumer="other"))
    receipts = [i.receipt or "" for i in held]
    assert others.renew(receipts) == [False] * 6  # not its own: untouched
    assert mine.renew() == 6
    idle = [
        row["time_since_delivered"]
        for row in client.xpending_range(opts.stream, opts.group, "-", "+", 10)
    ]
    assert max(idle) < 200, idle  # every one renewed, not only the first
