"""The demo fills the review queue: its LangChain app traced by ragtrace with the demo's
evaluators and a ReviewSink queues exactly the requests with a failing score (plus the random
calibration sample), and the queue works end to end: label, metrics, export."""

from __future__ import annotations

import contextlib
import io
import json
import random
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._model import Evaluation, RagRecord
from ragtrace.demo._app import build_chain
from ragtrace.demo._corpus import QUESTIONS
from ragtrace.demo._evaluators import demo_evaluators
from ragtrace.demo._run import APP
from ragtrace.integrations.langchain import instrument, uninstrument
from ragtrace.review import Label, QueueFilter, ReviewRules, ReviewSink
from ragtrace.review._export import export_jsonl
from ragtrace.review._store import open_store
from ragtrace.review._wiring import app_for_runtime

REQUESTS = 60


class Seen:
    """A score sink that keeps what the pipeline published, to compare the queue with."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_span: dict[str, tuple[RagRecord, list[Evaluation]]] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        with self._lock:
            self.by_span[record.span_id] = (record, list(evaluations))

    def shutdown(self) -> None:
        """Nothing to release."""


def test_the_demo_fills_the_queue_with_the_requests_that_deserve_a_look(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "demo-review.db"))
    rules = ReviewRules(sample_rate=0.05)
    sink = ReviewSink(store, rules)
    seen = Seen()
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app=APP,
        tracer_provider=TracerProvider(),
        registry=registry,
        evaluators=demo_evaluators(),
        score_sinks=[sink, seen],
    )
    instrument(rt)
    try:
        chain = build_chain(seed=3)
        questions = random.Random(3)
        for _ in range(REQUESTS):
            # The demo model fails on purpose now and then; ragtrace records it.
            with contextlib.suppress(Exception):
                chain.invoke(questions.choice(QUESTIONS))
        assert rt.flush(30)
    finally:
        uninstrument()

    # Failing as the rules judge it: each score at its verdict, faithfulness at its lenient
    # operating point (the default verdict flags a share of good answers by design).
    failing = {
        span
        for span, (_, evaluations) in seen.by_span.items()
        if any(rules.verdict(s) is True for e in evaluations for s in e.scores)
    }
    sampled = {
        span
        for span, (record, evaluations) in seen.by_span.items()
        if rules.decide(record, evaluations) is not None and span not in failing
    }
    queued = {item.span_id: item for item in store.page(limit=500).items}
    assert len(seen.by_span) >= REQUESTS * 0.9
    assert len(failing) >= 5  # the demo model loops and leaks contacts by schedule
    assert set(queued) == failing | sampled
    assert sink.queued == len(queued)
    specific = {"secret", "pii", "toxicity"}  # failures these rules name more precisely
    for span in failing:
        names = {r.name for r in queued[span].reasons}
        assert names & ({"score_failed"} | specific)
        failed_scores = {
            s.name for e in seen.by_span[span][1] for s in e.scores if rules.verdict(s) is True
        }
        assert {
            r.evaluator for r in queued[span].reasons if r.name in {"score_failed"} | specific
        } == failed_scores
    for span in sampled:
        assert [r.name for r in queued[span].reasons] == ["random_sample"]
    contacts = [
        i
        for i in queued.values()
        if i.score_named("tokens_presence.answer")
        and i.score_named("tokens_presence.answer").score.passed is False
    ]  # type: ignore[union-attr]
    assert contacts and all(
        "@" in (i.response or "") or "+" in (i.response or "") for i in contacts
    )

    # A person works through two of them; the labels show up as metrics and a data set.
    app = app_for_runtime(rt, store)
    try:
        first, second = store.page(limit=2).items
        app.labels.label(first.id, Label("bad", "pii", corrected_answer="See the help centre."))
        app.labels.label(second.id, Label("good"))
        human = {
            outcome: registry.get_sample_value(
                "ragtrace_evaluations_total", {"evaluator": "human", "app": APP, "outcome": outcome}
            )
            for outcome in ("pass", "fail")
        }
        assert human == {"pass": 1.0, "fail": 1.0}
        waiting = sum(
            s.value
            for family in registry.collect()
            if family.name == "ragtrace_review_queue_size"
            for s in family.samples
        )
        assert waiting == len(queued) - 2
        out = io.StringIO()
        assert export_jsonl(store, out, QueueFilter()) == 2
        rows = [json.loads(line) for line in out.getvalue().splitlines()]
        assert {r["metadata"]["review"]["verdict"] for r in rows} == {"bad", "good"}
        sources = {r["metadata"]["review"]["reference_source"] for r in rows}
        assert sources == {"corrected", "approved"}
    finally:
        app.close()
        rt.shutdown()
        store.close()
