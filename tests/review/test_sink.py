"""ReviewSink in a real pipeline: failing records reach the queue, redacted and cut before they
are written; retention is applied as it goes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._model import Chunk, Evaluation, RagRecord
from ragtrace.evaluators import create, evaluator
from ragtrace.review import ContentLimits, QueueFilter, Retention, ReviewRules, ReviewSink
from ragtrace.review._sink import TRUNCATED_ATTRIBUTE
from ragtrace.review._store import SqlReviewStore, open_store

EMAIL = r"[\w.+-]+@[\w-]+\.[\w.-]+"
NO_SAMPLE = ReviewRules(sample_rate=0.0)


@evaluator(name="mentions_email", requires={"response"}, threshold=0.5)
def mentions_email(record: RagRecord):  # type: ignore[no-untyped-def]
    """1.0 when the answer has no email address; details quote the address found."""
    found = re.findall(EMAIL, record.response or "")
    return ragtrace.Score(
        "mentions_email",
        0.0 if found else 1.0,
        passed=not found,
        threshold=0.5,
        explanation=f"found {found[0]}" if found else "no address",
        details={"found": found, "nested": {"where": found}},
    )


def mask(text: str) -> str:
    return re.sub(EMAIL, "[email]", text)


def record(n: int, response: str, query: str = "How do I reset my password?") -> RagRecord:
    return RagRecord(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        query=query,
        chunks=(
            Chunk("Reset it from Settings. Support: help@example.com", id="kb-1", score=0.9),
            Chunk("Passwords expire yearly.", id="kb-2", score=0.4),
        ),
        response=response,
        app="support",
        model="m-1",
        start_ns=1,
        end_ns=2,
    )


LOOPING = "Open settings. Open settings. Open settings. Open settings. Open settings."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlReviewStore]:
    with open_store(str(tmp_path / "review.db")) as store:
        yield store


def run_pipeline(sink: ReviewSink, records: list[RagRecord], **init: object) -> None:
    rt = ragtrace.init(
        app="support",
        tracer_provider=TracerProvider(),
        registry=CollectorRegistry(),
        evaluators=[create("looping"), mentions_email],
        score_sinks=[sink],
        **init,  # type: ignore[arg-type]
    )
    try:
        for r in records:
            assert rt.pipeline.submit(r)
        assert rt.flush(10)
    finally:
        rt.shutdown()


def test_only_records_with_a_failing_score_enter_the_queue(store: SqlReviewStore) -> None:
    sink = ReviewSink(store, NO_SAMPLE)
    run_pipeline(
        sink,
        [
            record(1, "Open Settings and choose Reset password."),
            record(2, LOOPING),
            record(3, "Write to admin@example.org for a reset."),
        ],
    )
    items = {int(i.span_id, 16): i for i in store.page(QueueFilter(labelled="all")).items}
    assert sorted(items) == [2, 3]
    assert sink.queued == 2
    looping = items[2]
    assert {r.name for r in looping.reasons} == {"score_failed"}
    assert {r.evaluator for r in looping.reasons} >= {"looping.unique_sentences"}
    assert looping.app == "support" and looping.model == "m-1"
    assert [c.id for c in looping.chunks] == ["kb-1", "kb-2"]
    names = {s.score.name for s in looping.scores}
    assert {"looping.unique_sentences", "mentions_email"} <= names  # all scores, not only failing
    assert [r.evaluator for r in items[3].reasons] == ["mentions_email"]


def test_runtime_redaction_applies_to_every_text_before_it_is_written(
    store: SqlReviewStore, tmp_path: Path
) -> None:
    sink = ReviewSink(store, NO_SAMPLE)  # no redactor of its own: the runtime's is used
    leaky = record(4, "Mail bob@corp.com, or bob@corp.com again.", query="I am eve@home.net")
    run_pipeline(sink, [leaky], redact=mask)
    (item,) = store.page().items
    assert item.query == "I am [email]"
    assert item.response == "Mail [email], or [email] again."
    assert item.chunks[0].text == "Reset it from Settings. Support: [email]"
    email_score = next(s.score for s in item.scores if s.score.name == "mentions_email")
    assert email_score.explanation == "found [email]"
    assert email_score.details == {
        "found": ["[email]", "[email]"],
        "nested": {"where": ["[email]", "[email]"]},
    }
    raw = (tmp_path / "review.db").read_bytes()
    for wal in tmp_path.glob("review.db-wal"):
        raw += wal.read_bytes()
    assert b"@corp.com" not in raw and b"eve@home" not in raw and b"help@example" not in raw


def test_a_failing_redactor_never_lets_the_text_through(store: SqlReviewStore) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("redactor down")

    sink = ReviewSink(store, NO_SAMPLE, redact=broken)
    item = sink.build_item(record(5, "Write to admin@example.org"), [])
    assert item.query == item.response == "<redaction failed>"
    assert item.chunks[0].text == "<redaction failed>"


def test_limits_cut_long_text_and_say_so(store: SqlReviewStore) -> None:
    limits = ContentLimits(
        max_text_chars=50, max_chunk_chars=10, max_chunks=1, max_details_chars=200
    )
    sink = ReviewSink(store, NO_SAMPLE, limits=limits)
    long = record(6, "x" * 5_000_000, query="\ud800 lone surrogate " + "q" * 100)
    item = sink.build_item(long, [])
    assert item.response == "x" * 50
    assert item.query is not None and item.query.startswith("\ufffd lone surrogate ")
    assert len(item.query) == 50
    assert [c.text for c in item.chunks] == ["Reset it f"]
    assert item.attributes[TRUNCATED_ATTRIBUTE] == [
        "chunk 0",
        "chunks (2 > 1)",
        "query",
        "response",
    ]
    store.enqueue(item)  # a surrogate-free, bounded item is storable


def test_big_details_are_shrunk_to_the_limit(store: SqlReviewStore) -> None:
    limits = ContentLimits(max_details_chars=300)
    sink = ReviewSink(store, NO_SAMPLE, limits=limits)
    huge = {"sentences": [{"text": "s" * 2000, "supported": False}] * 100, "n": 3}
    evaluation = ragtrace.Score("g", 0.1, passed=False, details=huge)
    item = sink.build_item(record(7, "a"), [Evaluation("g", (evaluation,), 0, 1)])
    details = item.scores[0].score.details
    assert details["truncated"] is True and len(details["preview"]) <= 300
    # 3 x 500 characters do not fit in 800: strings are cut to 200 (the second shrink step).
    sink = ReviewSink(store, NO_SAMPLE, limits=ContentLimits(max_details_chars=800))
    small = ragtrace.Score("g", 0.1, passed=False, details={"sentences": [{"text": "s" * 500}] * 3})
    item = sink.build_item(record(8, "a"), [Evaluation("g", (small,), 0, 1)])
    assert item.scores[0].score.details == {"sentences": [{"text": "s" * 200 + "..."}] * 3}


def test_retention_is_applied_while_writing(store: SqlReviewStore) -> None:
    sink = ReviewSink(store, NO_SAMPLE, retention=Retention(max_items=2), prune_every=1)
    run_pipeline(sink, [record(n, LOOPING) for n in range(10, 15)])
    assert sink.queued == 5
    assert store.count() == 2
    with pytest.raises(ValueError, match="prune_every"):
        ReviewSink(store, prune_every=0)


def test_a_sink_given_a_path_owns_its_store(tmp_path: Path) -> None:
    path = str(tmp_path / "owned.db")
    sink = ReviewSink(path, NO_SAMPLE)
    run_pipeline(sink, [record(20, LOOPING)])  # shutdown closes the sink's store
    with pytest.raises(RuntimeError, match="closed"):
        sink.store.count()
    with open_store(path) as reopened:
        assert reopened.count() == 1


def test_a_chunk_the_answer_never_saw_is_stored_and_shown_so(store: SqlReviewStore) -> None:
    from ragtrace.review._pages import RecordView, TraceLinks, record_page

    base = record(4, LOOPING)
    kb1, kb2 = base.chunks
    marked = dataclasses.replace(
        base, chunks=(dataclasses.replace(kb1, used=True), dataclasses.replace(kb2, used=False))
    )
    run_pipeline(ReviewSink(store, NO_SAMPLE), [marked])
    (item,) = store.page(QueueFilter(labelled="all")).items
    assert [(c.id, c.used) for c in item.chunks] == [("kb-1", True), ("kb-2", False)]
    page = record_page(RecordView(item, (), (None, None), QueueFilter(), "csrf", TraceLinks()))
    assert page.count("not seen by the answer's model call") == 1
