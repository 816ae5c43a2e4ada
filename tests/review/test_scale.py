"""The queue at scale: every filter is an index walk (checked in the query plans of SQLite and a
real PostgreSQL), paging parameters out of range answer 400, a label from a stale view is
refused, reviewers see who holds an item, and a version-1 store migrates. The time a page takes
at 100,000 items is measured in benchmarks/review_queue.py, not here."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtrace._model import Score
from ragtrace.review._claims import CLAIM_TTL_S
from ragtrace.review._items import Label, QueueFilter, Reason, ReviewItem, StoredScore
from ragtrace.review._label_store import StaleLabel
from ragtrace.review._labels import LabelService
from ragtrace.review._schema import MIGRATIONS, SCHEMA_VERSION, SQLITE
from ragtrace.review._server import Request, Response, ReviewApp
from ragtrace.review._sql_store import MAX_OFFSET
from ragtrace.review._store import SqlReviewStore, open_store
from tests.review.conftest import T0, make_item

APPS = ("shop", "bank", "docs")
REASONS = (("pii", 90), ("score_failed", 50), ("random_sample", 10))
WORDS = "refund order invoice password account card delivery charged twice coupon".split()


def varied(n: int, rng: random.Random) -> ReviewItem:
    reason, priority = REASONS[n % len(REASONS)]
    scores = tuple(
        StoredScore(
            evaluator, Score(name, rng.random(), passed=rng.random() > 0.3, evaluator_kind="model")
        )
        for evaluator, name in (
            ("groundedness", "groundedness"),
            ("judge", "faithfulness"),
            ("looping", "looping.unique_sentences"),
        )
    )
    return ReviewItem(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        app=APPS[n % len(APPS)],
        query=" ".join(rng.choice(WORDS) for _ in range(8)) + "?",
        response="answer",
        scores=scores,
        reasons=(Reason(reason, priority, "groundedness", "d"), Reason("score_failed", 50, "j")),
        priority=priority,
        request_ns=T0 + n * 10**9,
    )


FILTERS: list[QueueFilter] = [
    QueueFilter(),
    QueueFilter(labelled="all"),
    QueueFilter(labelled="yes"),
    QueueFilter(labelled="all", verdict="bad"),
    QueueFilter(app="bank"),
    QueueFilter(since_ns=T0 + 500 * 10**9, until_ns=T0 + 900 * 10**9),
    QueueFilter(reason="pii"),
    QueueFilter(reason="pii", app="docs", labelled="all"),
    QueueFilter(evaluator="groundedness"),
    QueueFilter(evaluator="groundedness", min_score=0.2, max_score=0.4),
    QueueFilter(evaluator="judge", min_score=0.5),  # an evaluator's name, not a score's
    QueueFilter(min_score=0.9, max_score=1.0),
    QueueFilter(search="charged twice"),
    QueueFilter(search="refund", app="shop", labelled="yes"),
    QueueFilter(
        app="shop",
        reason="score_failed",
        evaluator="groundedness",
        max_score=0.5,
        since_ns=T0,
        search="refund",
    ),
]


def _fill(store: SqlReviewStore, items: int = 3000, analyze: bool = True) -> list[int]:
    rng = random.Random(7)
    ids = store.enqueue_many([varied(n, rng) for n in range(1, items + 1)])
    for item_id in ids[::10]:
        store.add_label(item_id, Label(rng.choice(("good", "bad"))))
    if not analyze:
        return ids
    if store.dialect.name == "sqlite":
        with store._write() as cur:
            cur.execute("ANALYZE")
    else:
        conn = store._connect()
        conn.autocommit = True
        conn.execute("ANALYZE")
        conn.close()
    return ids


def _statements(store: SqlReviewStore, f: QueueFilter) -> Iterator[tuple[str, list[Any]]]:
    with store._read() as cur:
        query = store._query(f, cur)
    yield query.count(100)
    yield query.page_ids(0, 50)
    yield query.page_ids(1000, 50)
    yield query.neighbour(50, 1500, after=True)
    yield query.neighbour(50, 1500, after=False)


def _sqlite_plan(store: SqlReviewStore, sql: str, params: list[Any]) -> list[str]:
    with store._read() as cur:
        return [str(row[3]) for row in cur.all("EXPLAIN QUERY PLAN " + sql, params)]


def _pg_plan(
    store: SqlReviewStore, sql: str, params: list[Any], forced: bool
) -> list[dict[str, Any]]:
    with store._read() as cur:
        if forced:  # an index must exist for every access: a seq scan then costs 1e10
            cur.execute("SET LOCAL enable_seqscan = off")
        raw = cur.one("EXPLAIN (FORMAT JSON) " + sql, params)[0]
    plan = raw if isinstance(raw, list) else json.loads(raw)
    nodes: list[dict[str, Any]] = []
    stack = [plan[0]["Plan"]]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.get("Plans", []))
    return nodes


@pytest.mark.parametrize("analyze", [True, False], ids=["statistics", "no-statistics"])
def test_every_filter_is_an_index_walk_without_a_subquery_per_item(
    store: SqlReviewStore, analyze: bool
) -> None:
    """With the planner's statistics and without (a SQLite store nobody ran ANALYZE on, the
    usual case; a PostgreSQL table autovacuum has not reached yet)."""
    _fill(store, analyze=analyze)
    for f in FILTERS:
        assert store.count(f) >= 0
        for sql, params in _statements(store, f):
            if store.dialect.name == "sqlite":
                plan = _sqlite_plan(store, sql, params)
                text = "\n".join(plan)
                assert "CORRELATED" not in text, (f, text)
                for line in plan:
                    table = re.match(r"(?:SCAN|SEARCH) (\w+)", line)
                    if table is None or table.group(1) in ("g",):  # a grouping of the query's own
                        continue
                    assert "INDEX" in line or "PRIMARY KEY" in line, (f, line, text)
                    assert table.group(1) not in ("review_items", "i"), (f, line, text)
            else:
                for forced in (False, True):
                    nodes = _pg_plan(store, sql, params, forced)
                    for node in nodes:
                        name = node.get("Subplan Name", "")
                        assert not name or name.startswith("hashed"), (f, forced, node)
                        if forced:  # on 3,000 items PostgreSQL may prefer a scan unforced
                            assert node["Node Type"] != "Seq Scan", (f, node)


def test_every_filter_selects_what_a_scan_would(sqlite_store: SqlReviewStore) -> None:
    """The index walks select and order exactly the items a plain reading of the filter does."""
    ids = _fill(sqlite_store, 600)
    items = {i: sqlite_store.get(i) for i in ids}
    for f in FILTERS:
        expected = [i for i, item in items.items() if item is not None and _matches(f, item)]
        expected.sort(key=lambda i: (items[i].priority, i), reverse=True)  # type: ignore[union-attr]
        page = sqlite_store.page(f, limit=500)
        assert page.total == len(expected), f
        assert [i.id for i in page.items] == expected[:500], f


def _matches(f: QueueFilter, item: ReviewItem) -> bool:
    if (f.labelled == "no") != (item.verdict is None) and f.labelled != "all":
        return False
    if f.verdict is not None and item.verdict != f.verdict:
        return False
    if f.app is not None and item.app != f.app:
        return False
    if f.since_ns is not None and item.request_ns < f.since_ns:
        return False
    if f.until_ns is not None and item.request_ns >= f.until_ns:
        return False
    if f.reason is not None and f.reason not in {r.name for r in item.reasons}:
        return False
    if f.search is not None and f.search.lower() not in (item.query or "").lower():
        return False
    if f.evaluator is None and f.min_score is None and f.max_score is None:
        return True
    names = {s.score.name for s in item.scores}
    return any(
        s.score.value is not None
        and (
            f.evaluator is None
            or (s.score.name if f.evaluator in names else s.evaluator) == f.evaluator
        )
        and (f.min_score is None or s.score.value >= f.min_score)
        and (f.max_score is None or s.score.value <= f.max_score)
        for s in item.scores
    )


# --- paging parameters ---------------------------------------------------------------------


def _app(store: SqlReviewStore) -> ReviewApp:
    return ReviewApp(store, LabelService(store))


def _get(app: ReviewApp, target: str, session: str | None = None) -> Response:
    headers = {"host": "127.0.0.1"}
    if session is not None:
        headers["cookie"] = f"ragtrace_review_session={session}"
    return app.handle(Request("GET", target, headers))


@pytest.mark.parametrize(
    "query",
    [
        "offset=999999999999999999999",
        "offset=-1",
        "offset=abc",
        "offset=1.5",
        "offset=1e3",
        "offset=%EF%BC%91",  # a full-width digit: isdigit() says yes, int() would read it
        f"offset={MAX_OFFSET + 1}",
        "since=99999999999999999999d",
        "since=9999999999999999999999999999999999999999999999w",
        "until=9999-12-31",
        "min=1e400",
        "max=nan",
        "q=ab",
        "labelled=maybe",
    ],
)
def test_out_of_range_paging_and_filter_parameters_answer_400(
    sqlite_store: SqlReviewStore, query: str
) -> None:
    sqlite_store.enqueue(make_item(1))
    response = _get(_app(sqlite_store), f"/queue?{query}")
    assert response.status == 400, (query, response.body[:500])
    assert b"Something went wrong" not in response.body


def test_the_last_offset_in_range_is_an_empty_page(sqlite_store: SqlReviewStore) -> None:
    sqlite_store.enqueue(make_item(1))
    response = _get(_app(sqlite_store), f"/queue?offset={MAX_OFFSET}")
    assert response.status == 200 and b"Nothing matches" in response.body
    for offset, limit in ((-1, 50), (MAX_OFFSET + 1, 50), (0, 0), (1.5, 50), ("3", 50)):
        with pytest.raises(ValueError, match=r"offset|limit"):
            sqlite_store.page(offset=offset, limit=limit)  # type: ignore[arg-type]


# --- stale views and claims ------------------------------------------------------------------


def _form(body: bytes) -> dict[str, str]:
    page = body.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))
    action = re.search(r'id="label-form" action="([^"]+)"', page)
    assert action and "csrf" in fields and "version" in fields, page
    return {**fields, "_action": action.group(1).replace("&amp;", "&")}


def _post(app: ReviewApp, session: str, form: dict[str, str], **values: str) -> Response:
    from urllib.parse import urlencode

    action = form["_action"]
    body = urlencode({"csrf": form["csrf"], "version": form["version"], **values}).encode()
    headers = {
        "host": "127.0.0.1",
        "cookie": f"ragtrace_review_session={session}",
        "content-type": "application/x-www-form-urlencoded",
        "origin": "http://127.0.0.1",
    }
    return app.handle(Request("POST", action, headers, body))


def test_a_label_from_a_stale_view_is_refused_and_the_newer_one_shown(
    store: SqlReviewStore,
) -> None:
    item_id = store.enqueue(make_item(1))
    app = _app(store)
    ana, bob = "a" * 40, "b" * 40
    ana_view = _form(_get(app, f"/item/{item_id}", ana).body)
    bob_view = _form(_get(app, f"/item/{item_id}", bob).body)
    assert ana_view["version"] == bob_view["version"] == "0"

    saved = _post(app, ana, ana_view, verdict="bad", failure_type="hallucination", reviewer="ana")
    assert saved.status == 303
    refused = _post(app, bob, bob_view, verdict="good", reviewer="bob")
    assert refused.status == 409
    text = refused.body.decode()
    assert "Not saved: item" in text and "labelled &#x27;bad&#x27; by ana" in text
    assert [s.label.verdict for s in store.labels(item_id)] == ["bad"]
    assert store.get(item_id).verdict == "bad"  # type: ignore[union-attr]

    fresh = _form(refused.body)  # the refused page is a fresh view: it may label again
    assert fresh["version"] == str(store.labels(item_id)[0].id)
    assert _post(app, bob, fresh, verdict="good", reviewer="bob").status == 303
    assert [s.label.verdict for s in store.labels(item_id)] == ["good", "bad"]

    with pytest.raises(StaleLabel) as caught:
        store.add_label(item_id, Label("unsure"), expected_label_id=0)
    assert caught.value.latest is not None and caught.value.latest.label.reviewer == "bob"
    assert _post(app, ana, {**ana_view, "version": "x"}, verdict="good").status == 400


def test_reviewers_see_who_holds_an_item(store: SqlReviewStore) -> None:
    first, second = store.enqueue(make_item(1)), store.enqueue(make_item(2))
    app = _app(store)
    ana, bob = "a" * 40, "b" * 40
    headers = {
        "host": "127.0.0.1",
        "cookie": f"ragtrace_review_session={ana}; ragtrace_review_name=Ana%20M.",
    }
    page = app.handle(Request("GET", f"/item/{first}", headers))
    assert b"has had this item open" not in page.body  # Ana's own claim

    bob_page = _get(app, f"/item/{first}", bob).body.decode()
    assert "Ana M. has had this item open since" in bob_page
    queue = _get(app, "/queue", bob).body.decode()
    assert queue.count("open by Ana M.") == 1
    assert "open by" not in _get(app, "/queue", ana).body.decode()  # one's own claim: no badge

    # Labelling releases Ana's claim; Bob then holds the item when he opens it.
    ana_form = _form(page.body)
    headers_post = {
        **headers,
        "content-type": "application/x-www-form-urlencoded",
        "origin": "http://127.0.0.1",
    }
    from urllib.parse import urlencode

    body = urlencode({"csrf": ana_form["csrf"], "version": "0", "verdict": "good"}).encode()
    assert app.handle(Request("POST", f"/item/{first}/label", headers_post, body)).status == 303
    assert "open by" not in _get(app, "/queue?labelled=all", bob).body.decode()
    _get(app, f"/item/{first}", bob)
    assert "open by another reviewer" in _get(app, "/queue?labelled=all", ana).body.decode()

    # Claims expire; a holder renews its own and keeps its start.
    holder = "h" * 32
    claim = store.claim(second, holder, "ana", ttl_s=60, now_ns=T0)
    assert claim is not None and claim.mine and claim.expires_ns == T0 + 60 * 10**9
    other = store.claim(second, "o" * 32, "bob", now_ns=T0 + 10 * 10**9)
    assert other is not None and not other.mine and other.reviewer == "ana"
    renewed = store.claim(second, holder, "ana", now_ns=T0 + 30 * 10**9)
    assert renewed is not None and renewed.claimed_ns == T0
    taken = store.claim(second, "o" * 32, "bob", now_ns=T0 + int(CLAIM_TTL_S * 2e9))
    assert taken is not None and taken.mine and taken.reviewer == "bob"
    assert store.claims([second], holder, now_ns=T0 + int(CLAIM_TTL_S * 10e9)) == {}
    assert store.claim(10**9, holder) is None
    assert store.release(second, "o" * 32) and not store.release(second, "o" * 32)


# --- migration -----------------------------------------------------------------------------


def test_a_version_1_store_migrates_with_its_items_labels_and_search(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE review_schema (version INTEGER NOT NULL)")
    for statement in MIGRATIONS[0][1]:
        conn.execute(statement.format(pk=SQLITE.pk, json=SQLITE.json))
    conn.execute("INSERT INTO review_schema (version) VALUES (1)")
    for n in (1, 2):
        conn.execute(
            "INSERT INTO review_items (id, record_key, trace_id, span_id, app, request_ns,"
            " queued_ns, status, query, chunks_json, scores_json, reasons_json,"
            " attributes_json, primary_reason, priority) VALUES"
            " (?, ?, 't', 's', 'shop', ?, ?, 'ok', ?, '[]', '[]', '[]', '{}', 'pii', ?)",
            (n, f"k{n}", T0 + n, T0 + n, f"where is my refund {n}", 10 * n),
        )
        conn.execute(
            "INSERT INTO review_scores (item_id, name, evaluator, kind, value, passed,"
            " has_error) VALUES (?, 'groundedness', 'groundedness', 'model', ?, 0, 0)",
            (n, n / 10),
        )
        conn.execute(
            "INSERT INTO review_reasons (item_id, reason, detail) VALUES (?, 'pii', '')", (n,)
        )
    conn.execute(
        "INSERT INTO review_labels (item_id, verdict, created_ns)"
        " VALUES (1, 'bad', 1), (1, 'good', 2)"
    )
    conn.execute("UPDATE review_items SET verdict = 'good' WHERE id = 1")
    conn.commit()
    conn.close()

    store = open_store(str(path))
    try:
        assert store.migrate() == SCHEMA_VERSION
        assert [i.id for i in store.page(QueueFilter(labelled="all")).items] == [2, 1]
        assert [
            i.id
            for i in store.page(
                QueueFilter(evaluator="groundedness", max_score=0.15, labelled="all")
            ).items
        ] == [1]
        assert store.count(QueueFilter(reason="pii")) == 1  # item 1 is labelled
        assert [i.id for i in store.page(QueueFilter(search="refund 2")).items] == [2]
        assert store.label_version(1) == store.labels(1)[0].id
        assert [(i.id, s.label.verdict) for i, s in store.labelled()] == [(1, "good")]
        with pytest.raises(StaleLabel):
            store.add_label(1, Label("bad"), expected_label_id=0)
    finally:
        store.close()
