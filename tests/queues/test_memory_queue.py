"""The in-process queue: lock-free puts, wake-ups that are never missed, flush waiting for
finished work, and a close that accounts for every item once while others still put."""

from __future__ import annotations

import random
import sys
import threading
import time

import pytest

from ragtrace._model import RagRecord
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues import memory as memory_module
from ragtrace._pipeline.queues.memory import MemoryQueue
from tests.queues.conftest import item


def test_bound_close_and_take_remaining() -> None:
    queue = MemoryQueue(2)
    assert [queue.put(item(i)) for i in range(3)] == [True, True, False]
    assert queue.depth() == 2
    with pytest.raises(RuntimeError, match="closed queue"):
        queue.take_remaining()
    queue.close()
    assert queue.put(item(9)) is False
    assert queue.get_batch(8, 0.01) == []  # closed: what is left is the closer's to count
    assert queue.take_remaining() == 2
    assert queue.depth() == 0 and queue.flush(0.01)
    with pytest.raises(ValueError, match="queue_size"):
        MemoryQueue(0)


def test_flush_waits_for_taken_items_to_be_done() -> None:
    queue = MemoryQueue()
    assert queue.flush(0.01)
    for i in range(3):
        queue.put(item(i))
    assert not queue.flush(0.01)
    batch = queue.get_batch(2, 0.01)
    assert len(batch) == 2 and queue.depth() == 1
    assert not queue.flush(0.01)  # two taken but not done, one waiting
    queue.task_done(2)
    assert not queue.flush(0.01)
    assert len(queue.get_batch(8, 0.01)) == 1
    done = threading.Timer(0.05, queue.task_done, args=(1,))
    done.start()
    started = time.monotonic()
    assert queue.flush(5.0)  # woken by task_done, not by its timeout
    assert time.monotonic() - started < 2.0
    done.join()


def test_a_put_between_the_consumers_look_and_its_sleep_is_seen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race the handshake closes, made certain: the put lands after ``get_batch`` found
    the deque empty and before it announced its sleep (its second clock reading), when the
    put sees nobody to notify. Without the second look the consumer would sleep its 5 s."""
    queue = MemoryQueue()
    readings: list[float] = []

    class Clock:
        def monotonic(self) -> float:
            readings.append(time.monotonic())
            if len(readings) == 2:
                assert queue.put(item(1))
            return readings[-1]

    monkeypatch.setattr(memory_module, "time", Clock())
    started = time.monotonic()
    batch = queue.get_batch(1, 5.0)
    assert [b.record.query for b in batch] == ["question 1"]
    assert len(readings) == 2 and time.monotonic() - started < 2.0


def test_a_sleeping_consumer_is_always_woken_by_a_put() -> None:
    """Puts take no lock unless a consumer announced that it sleeps; these rounds put at
    random points of the consumer's loop, with threads switching as often as they can, so a
    missed wake-up would leave it waiting its whole 5 s."""
    queue = MemoryQueue()
    rounds, waits = 500, []
    rng = random.Random(7)
    got: list[list[WorkItem]] = []

    def consume() -> None:
        for _ in range(rounds):
            started = time.monotonic()
            batch = queue.get_batch(1, 5.0)
            waits.append(time.monotonic() - started)
            got.append(batch)

    consumer = threading.Thread(target=consume)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between almost any two bytecodes
    try:
        consumer.start()
        for i in range(rounds):
            for _ in range(rng.randrange(300)):  # a put at a random point of the consumer's
                pass
            queue.put(item(i))
            while queue.depth():  # the next put only once the consumer took this one
                time.sleep(0)
        consumer.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not consumer.is_alive()
    assert [b[0].record.query for b in got] == [f"question {i}" for i in range(rounds)]
    assert max(waits) < 2.0


def test_close_while_threads_put_accounts_for_every_item_once() -> None:
    queue = MemoryQueue(100_000)
    accepted = [0] * 4
    taken: list[int] = []
    stop = threading.Event()

    def produce(slot: int) -> None:
        i = 0
        while not stop.is_set() and i < 50_000:
            i += 1
            if queue.put(item(slot * 100_000 + i)):
                accepted[slot] += 1

    def consume() -> None:
        while True:
            batch = queue.get_batch(16, 0.01)
            if not batch:
                if stop.is_set():
                    return
                continue
            taken.append(len(batch))
            queue.task_done(len(batch))

    threads = [threading.Thread(target=produce, args=(s,)) for s in range(4)]
    threads.append(threading.Thread(target=consume))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # producers are caught between their check and their append
    try:
        for t in threads:
            t.start()
        time.sleep(0.2)
        queue.close()
        remaining = queue.take_remaining()
        stop.set()
        for t in threads:
            t.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    assert queue.take_remaining() == 0  # nothing slipped in after the closer counted
    assert sum(accepted) == sum(taken) + remaining
    assert sum(taken) > 0


class Touchy:
    """An attribute value that refuses comparison, as odd application objects may."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("not comparable")

    __hash__ = object.__hash__


def touchy_item(i: int) -> WorkItem:
    record = RagRecord(f"{i:032x}", f"{i:016x}", "question", attributes={"odd": Touchy()})
    return WorkItem(record, ("looping",))


def test_a_put_that_appends_after_the_close_takes_its_item_back() -> None:
    """Made certain: the queue closes after ``put`` passed its closed check (while it reads
    the bound) and before it appends; the closer empties it before or after that append."""

    class ClosesWhileBoundIsRead(MemoryQueue):
        close_now = False
        empty_too = True
        counted = -1

        @property
        def maxsize(self) -> int:
            if self.close_now:
                self.close_now = False
                self.close()
                if self.empty_too:
                    self.counted = self.take_remaining()
            return 10

        @maxsize.setter
        def maxsize(self, value: int) -> None:
            pass

    queue = ClosesWhileBoundIsRead()
    assert queue.put(item(1))
    queue.close_now = True
    assert queue.put(item(2)) is False  # taken back: the caller counts it
    assert queue.counted == 1  # the item put before the close, counted by the closer
    assert queue.depth() == 0 and queue.take_remaining() == 0

    # Not emptied yet: the one taken back is the put's own (by identity: these records
    # cannot even be compared), and the closer counts the other.
    queue = ClosesWhileBoundIsRead()
    queue.empty_too = False
    assert queue.put(touchy_item(1))
    queue.close_now = True
    assert queue.put(touchy_item(1)) is False
    assert queue.take_remaining() == 1
