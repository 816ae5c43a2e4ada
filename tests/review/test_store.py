"""The review store does the same on SQLite and on a real PostgreSQL: upsert, filters, order,
neighbours, labels, the figures behind the metrics, retention, migrations."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._model import Chunk
from ragtrace.review._items import Label, QueueFilter, Reason, StoredScore
from ragtrace.review._schema import SCHEMA_VERSION, SchemaTooNew
from ragtrace.review._store import Retention, SqlReviewStore, open_store
from tests.review.conftest import T0, make_item, score


def test_an_item_comes_back_as_it_was_stored(store: SqlReviewStore) -> None:
    item = make_item(
        1,
        query="Qu'est-ce que c'est ? \u2603 <b>bold</b> 'quote' \"dq\"",
        scores=(
            (
                "groundedness",
                score(
                    "groundedness",
                    0.25,
                    False,
                    kind="model",
                    details={"unsupported": ["answer 1."], "n": [1, 2.5]},
                    explanation="1 of 2 sentences unsupported",
                ),
            ),
            ("looping", score("looping.unique_sentences", 1.0, True)),
            ("judge", score("faithfulness", None, None, kind="judge", error="timed out")),
        ),
    )
    item_id = store.enqueue(item)
    got = store.get(item_id)
    assert got is not None
    assert got.id == item_id
    assert (got.trace_id, got.span_id, got.app, got.model) == (
        item.trace_id,
        item.span_id,
        "shop",
        "model-x",
    )
    assert got.query == item.query
    assert got.response == "answer 1."
    assert got.chunks == (Chunk("chunk text 1", id="doc-1", score=0.8, metadata={"n": 1}),)
    assert got.scores == item.scores
    assert got.reasons == item.reasons
    assert got.priority == 50
    assert got.request_ns == T0 + 10**9
    assert got.queued_ns > 0
    assert (got.verdict, got.failure_type, got.labelled_ns) == (None, None, None)
    assert store.get(item_id + 1000) is None


def test_the_same_request_twice_is_merged_into_one_item(store: SqlReviewStore) -> None:
    first = make_item(1, reasons=("score_failed",), priority=50)
    later = make_item(
        1,
        reasons=("pii",),
        priority=80,
        scores=(
            ("pii_leakage", score("pii_leakage", 0.0, False)),
            ("groundedness", score("groundedness", 0.9, True, kind="model")),
        ),
    )
    a = store.enqueue(first)
    b = store.enqueue(later)
    assert a == b
    got = store.get(a)
    assert got is not None
    assert [r.name for r in got.reasons] == ["score_failed", "pii"]
    assert got.priority == 80
    assert got.primary_reason == "pii"
    by_name = {s.score.name: s.score for s in got.scores}
    assert by_name["groundedness"].value == 0.9  # replaced by the newer score
    assert by_name["pii_leakage"].value == 0.0
    assert store.count(QueueFilter(evaluator="groundedness", max_score=0.5)) == 0
    assert store.count(QueueFilter(reason="pii")) == 1


def test_records_without_trace_ids_are_never_merged(store: SqlReviewStore) -> None:
    a = store.enqueue(make_item(1, trace_id=""))
    b = store.enqueue(make_item(1, trace_id=""))
    assert a != b
    assert store.count() == 2


def test_filters_select_the_right_items(store: SqlReviewStore) -> None:
    store.enqueue(make_item(1, app="shop", reasons=("pii",), query="Where is 100% of my_order?"))
    store.enqueue(
        make_item(
            2,
            app="bank",
            scores=(("judge", score("faithfulness", 0.9, True, kind="judge")),),
            query="How do I close my account?",
        )
    )
    store.enqueue(
        make_item(3, app="shop", reasons=("random_sample",), request_ns=T0 + 3600 * 10**9)
    )

    def ids(**kw: object) -> list[int]:
        return sorted(int(i.span_id, 16) for i in store.page(QueueFilter(**kw)).items)  # type: ignore[arg-type]

    assert ids() == [1, 2, 3]
    assert ids(reason="pii") == [1]
    assert ids(reason="random_sample") == [3]
    assert ids(app="bank") == [2]
    assert ids(evaluator="faithfulness") == [2]
    assert ids(evaluator="judge") == [2]  # the evaluator's name works too
    assert ids(evaluator="groundedness", max_score=0.2) == [1, 3]
    assert ids(evaluator="groundedness", max_score=0.19) == []
    assert ids(min_score=0.5) == [2]
    assert ids(since_ns=T0 + 2 * 10**9) == [2, 3]
    assert ids(until_ns=T0 + 2 * 10**9) == [1]
    assert ids(search="100%") == [1]
    assert ids(search="MY_ORDER") == [1]
    assert ids(search="my_o_der") == []  # _ is literal, not a wildcard
    assert ids(search="account") == [2]


def test_queue_order_paging_and_neighbours(store: SqlReviewStore) -> None:
    low = [store.enqueue(make_item(n, priority=10)) for n in range(1, 4)]
    high = [store.enqueue(make_item(n, priority=90)) for n in range(4, 6)]
    order = [high[1], high[0], low[2], low[1], low[0]]  # priority first, then newest
    page = store.page(limit=2)
    assert page.total == 5
    assert [i.id for i in page.items] == order[:2]
    assert [i.id for i in store.page(offset=2, limit=2).items] == order[2:4]
    assert [i.id for i in store.page(offset=4, limit=2).items] == order[4:]
    assert store.neighbours(order[0]) == (None, order[1])
    assert store.neighbours(order[2]) == (order[1], order[3])
    assert store.neighbours(order[4]) == (order[3], None)
    # After labelling, the item leaves the unlabelled queue but still knows its place.
    store.add_label(order[2], Label("good"))
    assert store.neighbours(order[2], QueueFilter(labelled="no")) == (order[1], order[3])
    assert store.neighbours(order[1], QueueFilter(labelled="no")) == (order[0], order[3])
    assert store.neighbours(999) == (None, None)


def test_labels_keep_history_and_the_latest_counts(store: SqlReviewStore) -> None:
    item_id = store.enqueue(make_item(1))
    first = store.add_label(item_id, Label("bad", "hallucination", notes="n1"), created_ns=T0)
    second = store.add_label(
        item_id, Label("good", None, corrected_answer="fixed", reviewer="ana"), created_ns=T0 + 5
    )
    assert [s.id for s in store.labels(item_id)] == [second.id, first.id]
    assert store.labels(item_id)[1].label == Label("bad", "hallucination", notes="n1")
    got = store.get(item_id)
    assert got is not None
    assert (got.verdict, got.failure_type, got.labelled_ns) == ("good", None, T0 + 5)
    assert store.count(QueueFilter(labelled="no")) == 0
    assert store.count(QueueFilter(labelled="yes")) == 1
    assert store.count(QueueFilter(labelled="all", verdict="bad")) == 0
    with pytest.raises(KeyError):
        store.add_label(item_id + 100, Label("good"))


def test_labelled_items_stream_in_batches_with_their_latest_label(store: SqlReviewStore) -> None:
    ids = [store.enqueue(make_item(n)) for n in range(1, 6)]
    for n, item_id in enumerate(ids):
        if n != 2:
            store.add_label(item_id, Label("bad", notes=f"first {n}"))
            store.add_label(item_id, Label("good", notes=f"second {n}"))
    got = list(store.labelled(batch=2))
    assert [item.id for item, _ in got] == [ids[0], ids[1], ids[3], ids[4]]
    assert [stored.label.notes for _, stored in got] == [
        "second 0",
        "second 1",
        "second 3",
        "second 4",
    ]
    assert all(item.verdict == "good" for item, _ in got)
    assert list(store.labelled(QueueFilter(app="nowhere"))) == []


def test_stats_count_waiting_items_labels_and_agreement(store: SqlReviewStore) -> None:
    def judged(n: int, judge_passed: bool, cheap_passed: bool | None) -> int:
        scores = [("faith", score("faithfulness", 0.5, judge_passed, kind="judge"))]
        if cheap_passed is not None:
            scores.append(("ground", score("groundedness", 0.5, cheap_passed, kind="model")))
        scores.append(("ground2", score("broken", None, None, kind="model", error="boom")))
        return store.enqueue(make_item(n, scores=tuple(scores)))

    a = judged(1, judge_passed=True, cheap_passed=False)  # good: judge agrees, cheap not
    b = judged(2, judge_passed=False, cheap_passed=False)  # bad: both agree
    c = judged(3, judge_passed=True, cheap_passed=None)  # bad, missing context: not compared
    d = judged(4, judge_passed=True, cheap_passed=True)  # unsure: excluded
    judged(5, judge_passed=True, cheap_passed=True)  # unlabelled: waiting
    store.add_label(a, Label("good"))
    store.add_label(b, Label("bad", "hallucination"))
    store.add_label(c, Label("bad", "missing_context"))
    store.add_label(d, Label("unsure"))
    stats = store.stats()
    assert stats.waiting == (("shop", "score_failed", 1),)
    assert sorted(stats.labels) == [
        ("shop", "bad", "hallucination", 1),
        ("shop", "bad", "missing_context", 1),
        ("shop", "good", "", 1),
        ("shop", "unsure", "", 1),
    ]
    rows = {(r.evaluator, r.kind): (r.compared, r.agreed) for r in stats.agreement}
    assert rows == {("faithfulness", "judge"): (2, 2), ("groundedness", "model"): (2, 1)}


def test_a_bad_label_counts_only_against_evaluators_of_its_failure_type(
    store: SqlReviewStore,
) -> None:
    """A reviewer's "bad: pii" says nothing of faithfulness; "bad: other" concerns the
    evaluators of no named failure; "bad" without a type and "good" concern every one."""
    names = {
        "faithfulness": ("faithfulness", "model"),
        "pii_leakage": ("pii_leakage.email", "lexical"),
        "judge": ("judge_faithfulness", "judge"),
        "answer_relevance": ("answer_relevance", "model"),
    }

    def labelled(n: int, passed: dict[str, bool], verdict: str, failure: str | None) -> None:
        scores = tuple(
            (evaluator, score(name, 0.5, passed[evaluator], kind=kind))
            for evaluator, (name, kind) in names.items()
        )
        store.add_label(store.enqueue(make_item(n, scores=scores)), Label(verdict, failure))

    every = dict.fromkeys(names, True)
    labelled(1, {**every, "pii_leakage": False}, "bad", "pii")
    labelled(2, {**every, "faithfulness": False}, "bad", "hallucination")
    labelled(3, {**every, "answer_relevance": False}, "bad", "other")
    labelled(4, {**every, "judge": False, "answer_relevance": False}, "bad", None)
    labelled(5, every, "good", None)
    rows = {(r.evaluator, r.kind): (r.compared, r.agreed) for r in store.stats().agreement}
    assert rows == {
        ("faithfulness", "model"): (3, 2),  # 2 agrees, 4 passed a bad answer, 5 agrees
        ("pii_leakage.email", "lexical"): (3, 2),  # 1, 4, 5
        ("judge_faithfulness", "judge"): (3, 2),  # 2 passed the hallucination, 4, 5
        ("answer_relevance", "model"): (3, 3),  # 3, 4, 5
    }


def test_retention_deletes_old_and_surplus_items_but_spares_labels(store: SqlReviewStore) -> None:
    ids = [store.enqueue(make_item(n)) for n in range(1, 7)]
    store.add_label(ids[0], Label("bad"))
    now = max(i.queued_ns for i in store.page(QueueFilter(labelled="all")).items)
    assert store.prune(Retention(max_items=3, max_age_s=None)) == 2  # ids[1], ids[2]
    assert sorted(i.id for i in store.page(QueueFilter(labelled="all")).items) == [
        ids[0],
        ids[3],
        ids[4],
        ids[5],
    ]
    assert store.prune(Retention(max_items=None, max_age_s=1.0), now_ns=now + 2 * 10**9) == 3
    assert [i.id for i in store.page(QueueFilter(labelled="all")).items] == [ids[0]]
    assert store.labels(ids[0])[0].label.verdict == "bad"
    everything = Retention(max_items=None, max_age_s=1.0, keep_labelled=False)
    assert store.prune(everything, now_ns=now + 2 * 10**9) == 1
    assert store.count(QueueFilter(labelled="all")) == 0
    assert store.stats().labels == ()  # labels went with their item
    with pytest.raises(ValueError, match="max_items"):
        Retention(max_items=0)


def test_facets_list_what_is_in_the_store(store: SqlReviewStore) -> None:
    store.enqueue(make_item(1, app="b-app", reasons=("pii", "score_failed")))
    store.enqueue(make_item(2, app="a-app", scores=(("j", score("faithfulness", 1.0, True)),)))
    facets = store.facets()
    assert facets.apps == ("a-app", "b-app")
    assert facets.reasons == ("pii", "score_failed")
    assert facets.evaluators == ("faithfulness", "groundedness")


def test_migrations_run_once_and_refuse_a_newer_schema(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    first = open_store(path)
    first.enqueue(make_item(1))
    assert first.migrate() == SCHEMA_VERSION
    first.close()
    again = open_store(f"sqlite://{path}")
    assert again.count() == 1
    with again._write() as cur:
        cur.execute("INSERT INTO review_schema (version) VALUES (99)")
    again.close()
    with pytest.raises(SchemaTooNew, match="upgrade ragtrace"):
        open_store(path)


def test_store_rejects_memory_databases_and_closed_use(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="file path"):
        open_store(":memory:")
    store = open_store(str(tmp_path / "closed.db"))
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.count()


def test_a_stored_score_survives_odd_values(store: SqlReviewStore) -> None:
    odd = score("odd", float("inf"), None, details={"nan": float("nan"), "deep": [[[[[[[1]]]]]]]})
    item = make_item(1, scores=(("odd", odd),))
    item_id = store.enqueue(item)
    got = store.get(item_id)
    assert got is not None
    stored = got.scores[0]
    assert stored == StoredScore("odd", stored.score)
    assert stored.score.value is None  # not a finite number: kept as no value
    assert stored.score.details["nan"] == "nan"
    assert got.reasons == (Reason("score_failed", 50, None, "score_failed detail"),)
