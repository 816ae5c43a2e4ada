"""Conversations scored across a worker fleet: the open sessions live in the queue's Redis, and
exactly one worker scores a quiet session, whichever workers read its turns; a claim whose worker
died lapses and another worker scores the session; the bounds hold fleet-wide."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from ragtrace._model import Conversation, RagRecord
from ragtrace._pipeline.queues.codec import decode_item
from ragtrace._pipeline.queues.redis_sessions import RedisSessions
from ragtrace._pipeline.queues.redis_streams import entry_field
from ragtrace._pipeline.session_store import SESSION_TURNS, SESSIONS_FULL
from tests.components import wait_until
from tests.queues.fleet import Workers, shipping_app
from tests.redis_server import RedisServer


def turn(session: str, i: int, trace: int) -> RagRecord:
    return RagRecord(
        f"{trace:032x}",
        f"{trace:016x}",
        f"question {i} of {session}",
        response=f"The answer to question {i}.",
        start_ns=i,
        conversation=Conversation(session_id=session, turn=i),
    )


def store(server: RedisServer, **options: Any) -> RedisSessions:
    options = {"idle_s": 0.3, "max_sessions": 100, "max_turns": 10, **options}
    return RedisSessions(server.client(), "test:work", **options)


def test_a_quiet_session_is_claimed_by_one_store_only(redis_server: RedisServer) -> None:
    a, b = store(redis_server), store(redis_server)  # two workers: two clients
    turns = [turn("s-1", i, i + 1) for i in range(3)]
    assert a.track([("s-1", turns[0], True)]) == []
    assert b.track([("s-1", turns[1], True), ("s-1", turns[2], True)]) == []
    assert a.claim_due() == b.claim_due() == []  # not quiet yet
    time.sleep(0.4)
    claims = a.claim_due() + b.claim_due()
    assert [(d.session_id, d.turns, d.sampled) for d in claims] == [("s-1", tuple(turns), True)]
    a.finished(claims[0])
    time.sleep(0.4)
    assert a.claim_due() == b.claim_due() == []
    assert a.open_sessions() == 0
    assert not redis_server.client().keys("test:work:sessions:*")  # nothing left behind


def test_a_claim_whose_worker_died_lapses_to_another(redis_server: RedisServer) -> None:
    a, b = store(redis_server, claim_timeout_s=0.5), store(redis_server, claim_timeout_s=0.5)
    a.track([("s-2", turn("s-2", 0, 7), True)])
    time.sleep(0.4)
    (first,) = a.claim_due()  # a dies here, before finishing
    assert b.claim_due() == []
    time.sleep(0.6)
    (again,) = b.claim_due()
    assert (again.session_id, again.turns) == (first.session_id, first.turns)
    b.finished(again)
    time.sleep(0.6)
    assert a.claim_due() == b.claim_due() == []


def test_turns_after_a_claim_start_the_next_round(redis_server: RedisServer) -> None:
    a = store(redis_server)
    a.track([("s-3", turn("s-3", 0, 1), True)])
    time.sleep(0.4)
    (first,) = a.claim_due()
    a.track([("s-3", turn("s-3", 1, 2), True)])  # while the first round is being scored
    time.sleep(0.4)
    assert a.claim_due() == []  # one round at a time
    a.finished(first)
    (second,) = a.claim_due()
    assert [t.trace_id for t in second.turns] == [f"{2:032x}"]


def test_bounds_unsampled_and_ended_sessions(redis_server: RedisServer) -> None:
    a = store(redis_server, idle_s=60, max_sessions=2, max_turns=2)
    drops = a.track([("s-4", turn("s-4", i, i + 1), True) for i in range(3)])
    assert drops == [SESSION_TURNS]
    assert a.track([("s-5", turn("s-5", 0, 9), False)]) == []
    assert a.track([("s-6", turn("s-6", 0, 10), True)]) == [SESSIONS_FULL]
    assert a.open_sessions() == 2
    assert a.end("s-4") and a.end("s-5") and not a.end("s-6")
    claims = {d.session_id: d for d in a.claim_due()}
    assert [t.trace_id for t in claims["s-4"].turns] == [f"{2:032x}", f"{3:032x}"]
    assert (claims["s-5"].sampled, claims["s-5"].turns) == (False, ())


def test_two_workers_read_a_sessions_turns_and_one_scores_it_once(
    fleet: Workers, tmp_path: Path
) -> None:
    # one evaluation thread per worker, each turn taking 1 s: a worker evaluating a turn is not
    # reading, so the next turn goes to the other worker
    fleet.settings.write_text(
        "evaluators: [takes_time, dies_on_poison, flags_bad]\n"
        "pipeline: {workers: 1, batch_wait_s: 0.05}\n"
        "sinks: {otel: false}\n"
        "sessions: {idle_s: 3}\n"
    )
    fleet.start("a", eval_s=1.0)
    fleet.start("b", eval_s=1.0)
    log = Path(f"{fleet.published_log}.sessions")
    rt, _ = shipping_app(fleet.url)
    try:
        wait_until("both workers reading", lambda: all(_reading(fleet, n) for n in "ab"), 60)
        for i in range(3):
            assert rt.pipeline.submit(turn("s-fleet", i, 100 + i))
            assert rt.flush(10)
            time.sleep(0.3)
    finally:
        rt.shutdown()

    def lines() -> list[list[str]]:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    wait_until("the session scored", lambda: any(x[1] == "s-fleet" for x in lines()), 60)
    time.sleep(4)  # quiet for longer than session_idle_s again: nobody scores it twice
    readers = {x[0] for x in lines() if x[1] == "turn"}
    assert readers == {"a", "b"}, lines()
    scored = [x for x in lines() if x[1] == "s-fleet"]
    assert len(scored) == 1, lines()
    assert scored[0][2].split(",") == ["knowledge_retention", "conversation_completeness"]


def _reading(fleet: Workers, name: str) -> bool:
    return f"ragtrace worker {name}: reading" in fleet.log(name)


def test_the_app_ships_every_turn_of_a_sampled_session(
    redis_server: RedisServer, app_side_names: None
) -> None:
    """Sampling by trace at 0.5: a turn whose trace is sampled out still goes to the workers
    when its session is kept (they score the conversation), and not when it is not."""
    import ragtrace
    from ragtrace._pipeline.sampling import Sampler
    from ragtrace._pipeline.sampling.sessions import session_low64
    from tests.queues.fleet import APP_EVALUATORS, queue_commands

    def kept(session: str) -> bool:
        return session_low64(turn(session, 0, 1)) < 1 << 63

    ids = [f"chat-{i}" for i in range(40)]
    inside = next(s for s in ids if kept(s))
    outside = next(s for s in ids if not kept(s))
    sampled_out = (1 << 64) - 1  # a trace id whose low 64 bits the ratio never keeps
    rt = ragtrace.init(
        app="shipper",
        registry=CollectorRegistry(),
        queue_url=redis_server.url,
        evaluators=[f"{name}_app" for name in APP_EVALUATORS],
        sampler=Sampler(0.5),
        export_evaluation_spans=False,
    )
    try:
        for i, session in enumerate((inside, outside)):
            assert rt.pipeline.submit(turn(session, 0, sampled_out - i))
        assert rt.flush(10)
    finally:
        rt.shutdown()
    client, options = queue_commands(redis_server.url)
    entries = client.xrange(options.stream)
    shipped = [decode_item(entry_field(fields)).record for _, fields in entries]
    assert [(r.conversation.session_id if r.conversation else None) for r in shipped] == [inside]
