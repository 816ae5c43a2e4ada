"""Sampling by conversation: a session ratio that decides every turn of a session alike (in every
process), and the later turns of a session that failed an evaluator, kept within a bounded LRU
memory (cap, time to live, turns per failure), through a real pipeline."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest

import ragtrace
from ragtrace._model import Conversation, Evaluation, RagRecord, Score
from ragtrace._pipeline.sampling import FailedSessions, Sampler, ratio_bound
from ragtrace._pipeline.sampling.rules import Rule
from ragtrace._pipeline.sampling.sessions import session_low64
from ragtrace.evaluators import FunctionEvaluator, evaluator
from ragtrace.evaluators._base import Evaluator


def ev(name: str) -> Evaluator:
    return FunctionEvaluator(lambda r: None, name=name)


A, JUDGE = ev("a"), ev("judge")


def turn(session: str | None, trace: int, number: int | None = None) -> RagRecord:
    conversation = None if session is None else Conversation(session, None, number)
    return RagRecord(
        trace_id=f"{trace:032x}", span_id="0" * 16, query="q", conversation=conversation
    )


def sampled(sampler: Sampler, record: RagRecord, evaluator: Evaluator = A) -> bool:
    [decision] = sampler.select(record, [evaluator])
    return decision.sampled


def failed(name: str = "a", *, error: str | None = None, passed: bool = False) -> Evaluation:
    return Evaluation(name, (Score(name, 0.1, passed=passed, error=error),), 0, 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- a whole session by its id ------------------------------------------------------------------


def test_the_session_ratio_gives_every_turn_of_a_session_the_same_decision() -> None:
    rng = random.Random(7)
    sampler = Sampler(0.3, by="session")
    kept_sessions = 0
    for s in range(2000):
        session = f"thread-{s}-{rng.getrandbits(32):x}"
        decisions = {sampled(sampler, turn(session, rng.getrandbits(128), n)) for n in range(5)}
        assert len(decisions) == 1, session  # whatever each turn's trace id
        (keep,) = decisions
        digest = hashlib.blake2b(session.encode(), digest_size=8).digest()
        assert keep is (int.from_bytes(digest, "big") < ratio_bound(0.3))
        kept_sessions += keep
    assert 520 < kept_sessions < 680  # 30% of 2000 sessions, not of 10,000 turns
    assert sampler.stats() == {
        "sampled:ratio": kept_sessions * 5,
        "dropped:ratio_out": (2000 - kept_sessions) * 5,
    }


def test_a_record_without_a_session_is_decided_on_its_trace_id() -> None:
    rng = random.Random(8)
    by_session, by_trace = Sampler(0.4, by="session"), Sampler(0.4)
    for _ in range(2000):
        trace = rng.getrandbits(128)
        expected = sampled(by_trace, turn(None, trace))
        assert sampled(by_session, turn(None, trace)) is expected
        assert sampled(by_session, turn("", trace)) is expected  # an empty id is none
        no_id = RagRecord(f"{trace:032x}", "0" * 16, "q", conversation=Conversation(None, "u"))
        assert sampled(by_session, no_id) is expected


def test_evaluator_rates_and_the_fast_path_decide_on_the_session_too() -> None:
    rng = random.Random(9)
    nested = Sampler(0.5, by="session", evaluator_rates={"judge": 0.1})
    fast = Sampler(0.5, by="session")  # no rules, no rates: one decision for all evaluators
    for s in range(500):
        turns = [turn(f"s{s}", rng.getrandbits(128), n) for n in range(3)]
        low = session_low64(turns[0])
        for record in turns:
            judged, cheap = (d.sampled for d in nested.select(record, [JUDGE, A]))
            assert judged is (low < ratio_bound(0.1))
            assert cheap is (low < ratio_bound(0.5))
            assert not judged or cheap  # a session the judge sees, the cheap one sees too
            chosen, _ = fast.choose(record, [A, JUDGE])
            assert chosen == (("a", "judge") if cheap else ())


def test_the_session_decision_is_the_same_in_every_process() -> None:
    sessions = [f"conversation-{n}" for n in range(300)] + ["\u00e9t\u00e9 \u2603", "x" * 5000]
    here = [sampled(Sampler(0.5, by="session"), turn(s, n)) for n, s in enumerate(sessions)]
    code = (
        "import sys, json\n"
        "from ragtrace._model import Conversation, RagRecord\n"
        "from ragtrace._pipeline.sampling import Sampler\n"
        "sessions = json.loads(sys.stdin.read())\n"
        "s = Sampler(0.5, by='session')\n"
        "print(json.dumps([s.select(RagRecord(f'{n:032x}', '0' * 16, 'q', conversation="
        "Conversation(x)), [type('E', (), {'name': 'a'})()])[0].sampled"
        " for n, x in enumerate(sessions)]))\n"
    )
    for seed in ("1", "2"):  # str hashes differ between these processes; the decision must not
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(sessions),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
        )
        assert json.loads(done.stdout) == here
    assert 100 < sum(here) < 200


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"by": "user"}, "by must be 'trace' or 'session'"),
        ({"failed_sessions": {"max": 1}}, "failed_sessions must be a FailedSessions"),
    ],
)
def test_the_sampler_checks_its_session_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sampler(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_sessions": 0}, "max_sessions must be a whole number >= 1"),
        ({"max_sessions": 1.5}, "max_sessions must be a whole number >= 1"),
        ({"max_turns": 0}, "max_turns must be a whole number >= 1"),
        ({"ttl_s": 0}, "ttl_s must be a number of seconds > 0"),
        ({"ttl_s": float("inf")}, "ttl_s must be a number of seconds > 0"),
        ({"evaluators": ("",)}, "evaluators must be evaluator or score names"),
    ],
)
def test_failed_sessions_check_their_limits(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FailedSessions(**kwargs)


# --- the turns after a failure --------------------------------------------------------------------


def test_later_turns_of_a_failed_session_are_kept_for_a_count_and_a_time() -> None:
    clock = Clock()
    memory = FailedSessions(max_sessions=100, ttl_s=60, max_turns=2, clock=clock)
    assert not memory.observe(turn("s1", 1, 0), [failed(passed=True)])  # passed: no failure
    assert not memory.observe(turn("s1", 1, 0), [failed(error="timed out")])  # an error: none
    assert not memory.observe(turn(None, 1, 0), [failed()])  # no session: nothing to keep
    assert not memory.keeps(turn("s1", 2, 1))
    assert memory.observe(turn("s1", 1, 0), [failed(passed=True), failed("b")])
    assert memory.observe(turn("s1", 1, 0), [failed("b")])  # the same failure again: once
    assert memory.failures == 1 and len(memory) == 1
    assert not memory.keeps(turn("s1", 1, 0))  # the failing turn itself
    assert not memory.keeps(turn("s2", 2, 1))  # another session
    assert memory.keeps(turn("s1", 2, 1))
    assert memory.keeps(turn("s1", 2, 1))  # chosen again (inline, then background): once
    assert memory.keeps(turn("s1", 3, 2), count=False)  # a look that does not count
    assert memory.keeps(turn("s1", 3, 2))
    assert not memory.keeps(turn("s1", 4, 3))  # max_turns reached
    assert memory.keeps(turn("s1", 3, 2))  # a kept turn stays kept
    assert memory.kept == 2
    # A new failing turn starts the count and the time again; then the time runs out.
    clock.now += 30
    assert memory.observe(turn("s1", 4, 3), [failed()])
    assert memory.failures == 2
    assert memory.keeps(turn("s1", 5, 4))
    clock.now += 59.9
    assert memory.keeps(turn("s1", 6, 5))
    clock.now += 0.1
    assert not memory.keeps(turn("s1", 7, 6))
    assert len(memory) == 0  # expired: forgotten when looked at


def test_only_the_named_evaluators_failures_count() -> None:
    memory = FailedSessions(evaluators=("faithfulness",))
    assert not memory.observe(turn("s", 1), [failed("looping")])
    by_score = Evaluation("judge", (Score("faithfulness", 0.1, passed=False),), 0, 1)
    assert memory.observe(turn("s", 1), [by_score])  # a score of that name
    by_evaluator = Evaluation(
        "faithfulness", (Score("faithfulness.claims", 0.0, passed=False),), 0, 1
    )
    assert memory.observe(turn("t", 2), [by_evaluator])  # or a score of that evaluator


def test_the_memory_is_a_bounded_lru_of_session_ids() -> None:
    memory = FailedSessions(max_sessions=3, ttl_s=3600, max_turns=100)
    for n in range(3):
        memory.observe(turn(f"s{n}", 100 + n), [failed()])
    assert memory.keeps(turn("s0", 1))  # s0 used: s1 is now the least recently used
    memory.observe(turn("s3", 103), [failed()])
    assert len(memory) == 3 and memory.forgotten == 1
    assert not memory.keeps(turn("s1", 2))
    assert all(memory.keeps(turn(s, 3)) for s in ("s0", "s2", "s3"))
    for n in range(4, 1004):  # a flood of failing sessions never holds more than the cap
        memory.observe(turn(f"s{n}", 100 + n), [failed()])
    assert len(memory) == 3 and memory.forgotten == 1001
    memory.forget("s1003")
    assert not memory.keeps(turn("s1003", 1)) and len(memory) == 2
    assert repr(memory) == "<FailedSessions 2/3 ttl_s=3600 max_turns=100>"


def test_an_after_failure_rule_sends_later_turns_to_its_evaluators() -> None:
    memory = FailedSessions(max_turns=3)
    sampler = Sampler(
        0.0,
        evaluator_rates={"a": 1.0},
        rules=[Rule("always", after_failure=True, evaluators=("judge",))],
        failed_sessions=memory,
    )
    assert sampler.rules[0].name == "always_after_failure"
    assert [d.sampled for d in sampler.select(turn("s", 1, 0), [A, JUDGE])] == [True, False]
    sampler.observe(turn("s", 1, 0), [failed()])
    decisions = sampler.select(turn("s", 2, 1), [A, JUDGE])
    assert [(d.sampled, d.reason) for d in decisions] == [
        (True, "ratio"),
        (True, "rule:always_after_failure"),
    ]
    assert memory.kept == 1  # the rule was asked once for the record
    assert not sampled(sampler, turn("other", 3, 1), JUDGE)
    # A "never" rule on the other turns; a default memory when none is given.
    quiet = Sampler(1.0, rules=[Rule("never", after_failure=False, name="quiet")])
    assert isinstance(quiet.failed_sessions, FailedSessions)
    assert not sampled(quiet, turn("s", 2, 1))
    quiet.observe(turn("s", 1, 0), [failed()])
    assert sampled(quiet, turn("s", 2, 1))
    assert quiet.failed_sessions.kept == 0  # looked at, never counted
    assert Sampler(1.0).failed_sessions is None
    Sampler(1.0).observe(turn("s", 1, 0), [failed()])  # nothing to feed: nothing happens


def test_a_broken_memory_never_breaks_sampling() -> None:
    class Broken(FailedSessions):
        def keeps(self, record: RagRecord, count: bool = True) -> bool:
            raise RuntimeError("boom")

        def observe(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> bool:
            raise RuntimeError("boom")

    sampler = Sampler(0.0, rules=[Rule("always", after_failure=True)], failed_sessions=Broken())
    sampler.observe(turn("s", 1), [failed()])
    assert sampler.select(turn("s", 2), [A])[0].reason == "ratio_out"  # the rule did not match


# --- through a pipeline ---------------------------------------------------------------------------


@evaluator(name="polite", requires={"response"}, threshold=0.5)
def polite(r: RagRecord) -> float:
    return 0.0 if "rude" in (r.response or "") else 1.0


@evaluator(name="judge_quality", kind="judge")
def judge_quality(r: RagRecord) -> float:
    return 1.0


class Collect:
    """The evaluators that ran on each turn, by ``session-turn``."""

    def __init__(self) -> None:
        self.ran: dict[str, list[str]] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        assert record.conversation is not None
        key = f"{record.conversation.session_id}-{record.conversation.turn}"
        self.ran[key] = sorted(e.evaluator for e in evaluations)

    def shutdown(self) -> None:
        pass


def chat(session: str, n: int, response: str) -> RagRecord:
    trace = hashlib.blake2b(f"{session}/{n}".encode(), digest_size=16).hexdigest()
    return RagRecord(
        trace_id=trace,
        span_id=trace[:16],
        query=f"question {n}",
        response=response,
        app="chat",
        conversation=Conversation(session, "u-1", n),
    )


def test_a_failing_turn_sends_its_sessions_next_turns_to_the_judge_in_a_pipeline() -> None:
    memory = FailedSessions(max_sessions=1000, ttl_s=600, max_turns=2)
    sampler = Sampler(
        evaluator_rates={"judge_quality": 0.0},
        rules=[Rule("always", after_failure=True, evaluators=("judge_quality",))],
        failed_sessions=memory,
    )
    collect = Collect()
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="chat",
        tracer_provider=TracerProvider(),
        registry=registry,
        evaluators=[polite, judge_quality],
        sampler=sampler,
        score_sinks=[collect],  # the workers feed the memory themselves
        session_idle_s=0,  # turn scores only: no conversation scored at shutdown
    )
    try:
        for session in ("thread-a", "thread-b"):
            assert rt.pipeline.submit(chat(session, 0, "Hello."))
        assert rt.pipeline.submit(chat("thread-a", 1, "That is a rude answer."))
        assert rt.flush(10)  # the failure is known before the next turns are sampled
        for n in range(2, 6):
            for session in ("thread-a", "thread-b"):
                assert rt.pipeline.submit(chat(session, n, "Fine."))
        assert rt.flush(10)
        exposed = generate_latest(registry).decode()
    finally:
        rt.shutdown()
    judged = sorted(k for k, ran in collect.ran.items() if "judge_quality" in ran)
    assert judged == ["thread-a-2", "thread-a-3"]  # the next max_turns turns, then no more
    assert all("polite" in ran for ran in collect.ran.values())
    assert memory.failures == 1 and memory.kept == 2
    assert (
        'ragtrace_sampling_decisions_total{decision="sampled",reason="rule:always_after_failure"}'
        " 2.0" in exposed
    )
    assert "thread-a" not in exposed and "u-1" not in exposed  # never a metric label
