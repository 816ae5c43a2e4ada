"""Conversations scored online, in process: a session is scored once, as a whole, when it goes
quiet or is ended; its scores reach the log events (on the last turn's trace and span, with the
conversation id) and the Prometheus families the turn scores use; sessions are sampled whole,
and the bounds on open sessions and kept turns count what they drop."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from prometheus_client import CollectorRegistry

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._model import Conversation, RagRecord, Score
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.session_store import MemorySessions
from ragtrace._runtime.instance import Ragtrace
from ragtrace.evaluators import Evaluator
from ragtrace.evaluators._question import question_of


def turn(session: str, i: int, query: str, response: str, app: str = "shop") -> RagRecord:
    """Turn ``i`` of ``session``: trace and span ids that say which turn it is."""
    return RagRecord(
        trace_id=f"{abs(hash(session)) % 10**8:08x}{i:024x}",
        span_id=f"{i + 1:016x}",
        query=query,
        response=response,
        app=app,
        start_ns=i * 1000,
        conversation=Conversation(session_id=session, turn=i),
    )


def chat(session: str, *pairs: tuple[str, str]) -> list[RagRecord]:
    return [turn(session, i, q, a) for i, (q, a) in enumerate(pairs)]


MUSEUM = (
    ("My name is Ada. When does the museum open?", "The museum opens at 9 am."),
    ("How much is a museum ticket?", "A museum ticket costs 12 euros."),
    ("Is there parking at the museum?", "Yes, free parking is behind the museum."),
)
REFUSED = (
    ("When does the museum open?", "I don't know."),
    ("How much is a museum ticket?", "I cannot answer that."),
    ("Is there parking?", "Free parking is behind the museum."),
)


class KeywordRelevance(Evaluator):
    """Stands in for answer_relevance: relevant when the answer shares a word with the query."""

    name: ClassVar[str] = "answer_relevance"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold = 0.5

    def evaluate(self, record: RagRecord) -> list[Score]:
        words = {w.strip("?.,").lower() for w in (question_of(record) or "").split() if len(w) > 3}
        shared = words & {w.strip("?.,").lower() for w in (record.response or "").split()}
        return [self.score(1.0 if shared else 0.0)]


class Runtime:
    """A ragtrace instance with an in-memory log exporter and its own registry."""

    def __init__(self, evaluators: Sequence[Evaluator] = (), **config: Any) -> None:
        self.registry = CollectorRegistry()
        self.logs = InMemoryLogRecordExporter()
        provider = LoggerProvider()
        provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        sampler = config.pop("sampler", None)
        self.rt = Ragtrace(
            Config(app="shop", **config),
            registry=self.registry,
            logger_provider=provider,
            evaluators=list(evaluators),
            sampler=sampler,
        )

    def submit(self, records: Sequence[RagRecord]) -> None:
        for record in records:
            assert self.rt.pipeline.submit(record)

    def events(self, name: str) -> list[Any]:
        return [
            d.log_record
            for d in self.logs.get_finished_logs()
            if d.log_record.attributes[sc.GEN_AI_EVALUATION_NAME] == name
        ]

    def value(self, metric: str, **labels: str) -> float:
        return self.registry.get_sample_value(metric, labels) or 0.0


@pytest.fixture
def runtime() -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def make(*evaluators: Evaluator, **config: Any) -> Runtime:
        made.append(Runtime(evaluators, **config))
        return made[-1]

    yield make
    for r in made:
        r.rt.shutdown(timeout_s=2.0)


def wait_for(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_quiet_session_is_scored_once_on_its_last_turn(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=0.2)
    records = chat("s-1", *MUSEUM)
    r.submit(records)
    assert wait_for(lambda: len(r.events("conversation_completeness")) == 1)
    (event,) = r.events("conversation_completeness")
    last = records[-1]
    assert (f"{event.trace_id:032x}", f"{event.span_id:016x}") == (last.trace_id, last.span_id)
    attributes = dict(event.attributes)
    assert attributes[sc.GEN_AI_CONVERSATION_ID] == "s-1"
    assert attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert attributes[sc.RAGTRACE_APP] == "shop"
    (retention,) = r.events("knowledge_retention")
    assert dict(retention.attributes)[sc.GEN_AI_CONVERSATION_ID] == "s-1"
    # the same Prometheus families as turn scores, by evaluator and app
    total = "ragtrace_evaluations_total"
    labels = {"evaluator": "conversation_completeness", "app": "shop", "outcome": "pass"}
    assert r.value(total, **labels) == 1
    assert (
        r.value(
            "ragtrace_evaluation_score_count", evaluator="conversation_completeness", app="shop"
        )
        == 1
    )
    assert (
        r.value("ragtrace_sampling_decisions_total", decision="sampled", reason="session_ratio")
        == 1
    )
    time.sleep(0.5)  # quiet for longer still: not scored again
    assert len(r.events("conversation_completeness")) == 1
    assert r.value(total, **labels) == 1
    # no conversation evaluator without answer_relevance beside it
    assert not r.events("conversation_relevancy")


def test_a_session_that_lost_most_answers_fails(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=0.2)
    r.submit(chat("s-2", *REFUSED))
    assert wait_for(lambda: len(r.events("conversation_completeness")) == 1)
    (event,) = r.events("conversation_completeness")
    assert dict(event.attributes)[sc.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(1 / 3)
    labels = {"evaluator": "conversation_completeness", "app": "shop", "outcome": "fail"}
    assert r.value("ragtrace_evaluations_total", **labels) == 1


def test_a_session_still_talking_is_not_scored(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=0.6)
    records = chat("s-3", *MUSEUM)
    for record in records:
        r.submit([record])
        time.sleep(0.3)  # each turn within the quiet time of the one before
    assert not r.events("conversation_completeness")
    assert wait_for(lambda: len(r.events("conversation_completeness")) == 1)


def test_end_session_scores_at_once(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=300.0)
    r.submit(chat("s-4", *MUSEUM))
    assert not r.rt.end_session("no-such-session")
    assert r.rt.end_session("s-4")
    assert wait_for(lambda: len(r.events("conversation_completeness")) == 1, 3.0)
    assert not r.rt.end_session("s-4")  # scored and gone


def test_relevancy_runs_beside_answer_relevance_and_reuses_it(
    runtime: Callable[..., Runtime],
) -> None:
    r = runtime(KeywordRelevance(), session_idle_s=0.2)
    r.submit(chat("s-5", *MUSEUM))
    assert wait_for(lambda: len(r.events("conversation_relevancy")) == 1)
    (event,) = r.events("conversation_relevancy")
    assert dict(event.attributes)[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    # the turn scores are there too, one per turn
    assert wait_for(lambda: len(r.events("answer_relevance")) == 3)


def test_sessions_are_sampled_whole_and_counted(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=0.2, sampler=Sampler(0.0))
    r.submit(chat("s-6", *MUSEUM))
    dropped = {"decision": "dropped", "reason": "session_ratio_out"}
    assert wait_for(lambda: r.value("ragtrace_sampling_decisions_total", **dropped) == 1)
    assert not r.events("conversation_completeness")
    assert r.rt.pipeline.conversations is not None
    assert r.rt.pipeline.conversations.store.open_sessions() == 0


def test_bounds_drop_and_count(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=0.3, max_open_sessions=1, max_session_turns=2)
    r.submit(chat("s-7", *MUSEUM))
    r.submit(chat("s-8", *MUSEUM[:1]))  # a second open session: refused
    assert r.value("ragtrace_dropped_records_total", reason="session_turns") == 1
    assert r.value("ragtrace_dropped_records_total", reason="sessions_full") == 1
    assert wait_for(lambda: len(r.events("conversation_completeness")) == 1)
    (event,) = r.events("conversation_completeness")
    details = json.loads(dict(event.attributes)[sc.RAGTRACE_EVALUATION_DETAILS])
    assert (details["turns"], details["answered"]) == (2, 2)
    assert dict(event.attributes)[sc.GEN_AI_CONVERSATION_ID] == "s-7"


def test_shutdown_scores_the_sessions_still_open(runtime: Callable[..., Runtime]) -> None:
    r = runtime(session_idle_s=300.0)
    r.submit(chat("s-9", *MUSEUM))
    assert r.rt.shutdown(timeout_s=3.0)
    assert len(r.events("conversation_completeness")) == 1


def test_off_and_bad_names(runtime: Callable[..., Runtime]) -> None:
    assert runtime(session_idle_s=0).rt.pipeline.conversations is None
    assert runtime(session_evaluators=()).rt.pipeline.conversations is None
    with pytest.raises(ValueError, match="unknown conversation evaluator 'coherence'"):
        runtime(session_evaluators=("coherence",))


def test_memory_sessions_hand_a_quiet_session_over_once() -> None:
    now = [0.0]
    store = MemorySessions(10.0, 100, 5, clock=lambda: now[0])
    a, b = chat("a", *MUSEUM[:2]), chat("b", *MUSEUM[:1])
    assert store.track([("a", a[0], True), ("b", b[0], True)]) == []
    now[0] = 5.0
    store.track([("a", a[1], True)])
    now[0] = 12.0  # b quiet, a not
    (due,) = store.claim_due()
    assert (due.session_id, len(due.turns)) == ("b", 1)
    assert store.claim_due() == []
    now[0] = 15.0
    (due,) = store.claim_due()
    assert (due.session_id, due.turns) == ("a", tuple(a))
    assert store.open_sessions() == 0


def test_memory_sessions_claim_at_most_the_limit_oldest_first() -> None:
    now = [0.0]
    store = MemorySessions(1.0, 100, 5, clock=lambda: now[0])
    for i, session in enumerate(("x", "y", "z")):
        now[0] = float(i)
        store.track([(session, turn(session, 0, "q", "a"), True)])
    now[0] = 2.5  # x and y quiet, z not
    assert [d.session_id for d in store.claim_due(limit=1)] == ["x"]
    assert [d.session_id for d in store.claim_due(limit=5)] == ["y"]
    assert store.end("z")
    assert [d.session_id for d in store.claim_due()] == ["z"]
