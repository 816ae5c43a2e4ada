"""``ragtrace.end_session`` in an application that ships to a worker fleet: the end mark it writes
in the queue's Redis makes the session due once the mark is past its grace, and exactly one
worker scores it, long before the session would go quiet; a mark that cannot be written is a
counted ``False``, and a mark for a session that never shipped a turn is harmless."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._pipeline.queues.redis_sessions import RedisSessions, SessionEndMarks
from tests.components import wait_until
from tests.queues.fleet import Workers, drops, shipping_app
from tests.queues.test_session_scores import turn
from tests.redis_server import RedisServer


def test_an_end_mark_makes_its_open_session_due_once_past_the_grace(
    redis_server: RedisServer,
) -> None:
    sessions = RedisSessions(
        redis_server.client(), "test:work", idle_s=300, max_sessions=10, max_turns=10,
        end_grace_s=0.5,
    )  # fmt: skip
    marks = SessionEndMarks(redis_server.client(), "test:work")
    sessions.track([("s-1", turn("s-1", 0, 1), True)])
    assert marks.mark("s-1")
    assert marks.mark("never-shipped")
    assert sessions.claim_due() == []  # the marks are younger than the grace
    sessions.track([("s-1", turn("s-1", 1, 2), True)])  # the last turn lands after the mark
    time.sleep(0.6)
    (due,) = sessions.claim_due()
    assert (due.session_id, [t.trace_id for t in due.turns]) == ("s-1", [f"{1:032x}", f"{2:032x}"])
    sessions.finished(due)
    assert sessions.claim_due() == []
    assert not redis_server.client().keys("test:work:sessions:*")  # both marks gone too


def test_end_marks_are_bounded(redis_server: RedisServer) -> None:
    marks = SessionEndMarks(redis_server.client(), "test:work", max_marks=1)
    assert marks.mark("a")
    assert marks.mark("a")  # marked again: no new mark
    assert not marks.mark("b")
    assert redis_server.client().ttl("test:work:sessions:ended") > 0


def test_the_fleet_scores_an_ended_session_once_long_before_it_goes_quiet(
    fleet: Workers,
) -> None:
    fleet.settings.write_text(
        "evaluators: [takes_time, dies_on_poison, flags_bad]\n"
        "pipeline: {workers: 1, batch_wait_s: 0.05}\n"
        "sinks: {otel: false}\n"
        "sessions: {idle_s: 300}\n"
    )
    fleet.start("a")
    fleet.start("b")
    log = Path(f"{fleet.published_log}.sessions")
    rt, registry = shipping_app(fleet.url)
    try:
        for i in range(2):
            assert rt.pipeline.submit(turn("s-ended", i, 200 + i))
        started = time.monotonic()
        assert ragtrace.end_session("s-ended")  # at once: the last turn may not be in Redis yet
        assert ragtrace.end_session("s-never-shipped")
        assert rt.flush(10)
    finally:
        rt.shutdown()
    assert drops(registry).get("session_end_failed", 0) == 0

    def scored() -> list[list[str]]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [line.split() for line in lines if line.split()[1].startswith("s-")]

    wait_until("the ended session scored", scored, 60)
    took = time.monotonic() - started
    time.sleep(3)  # past another grace and claim: nobody scores it twice
    (line,) = scored()
    assert line[1] == "s-ended"
    assert line[2].split(",") == ["knowledge_retention", "conversation_completeness"]
    assert line[3] == f"{201:032x}"  # scored on its last turn: both turns were read
    assert took < 60  # the sessions go quiet only after 300 s


@pytest.mark.parametrize("outage", ["stopped", "stalled"])
def test_end_session_without_redis_is_a_quick_counted_false(
    redis_server: RedisServer, app_side_names: None, outage: str
) -> None:
    rt, registry = shipping_app(redis_server.url + "?timeout_s=0.5")
    try:
        if outage == "stopped":
            redis_server.stop()  # refused at once
        else:
            redis_server.pause()  # connects, then no answer: the socket timeout ends it
        started = time.monotonic()
        assert ragtrace.end_session("s-down") is False
        assert time.monotonic() - started < 1.5  # timeout_s 0.5 for the connection + command
        assert drops(registry).get("session_end_failed") == 1
    finally:
        if outage == "stalled":
            redis_server.resume()
        rt.shutdown()


def test_end_session_writes_nothing_when_sessions_are_off(
    redis_server: RedisServer, app_side_names: None
) -> None:
    rt = ragtrace.init(
        app="shipper",
        registry=CollectorRegistry(),
        queue_url=redis_server.url,
        session_idle_s=0,
        export_evaluation_spans=False,
    )
    try:
        assert ragtrace.end_session("s-off") is False
    finally:
        rt.shutdown()
    assert not redis_server.client().keys("*:sessions:*")
