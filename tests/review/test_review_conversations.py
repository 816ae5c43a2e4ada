"""A flagged turn in its conversation: the store keeps each turn's session, earlier turns and tool
calls (on SQLite and on a real PostgreSQL, migrated from the schema before them), filters the
queue by session, lists a session's queued turns in order, and the record page shows them all,
escaped; the session id never becomes a metric label."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest

import ragtrace
from ragtrace._model import Chunk, Conversation, RagRecord, ToolCall, Turn
from ragtrace._semconv import RAGTRACE_REDACTION
from ragtrace.evaluators import create
from ragtrace.review import _schema as schema
from ragtrace.review._httpd import ReviewServer, serve_review
from ragtrace.review._items import Label, QueueFilter, ReviewItem
from ragtrace.review._pages import TraceLinks
from ragtrace.review._rules import ReviewRules
from ragtrace.review._sink import TRUNCATED_ATTRIBUTE, ContentLimits, ReviewSink
from ragtrace.review._store import SqlReviewStore, open_store
from ragtrace.review._wiring import build_app
from tests.components import Postgres
from tests.review.conftest import T0, make_item
from tests.review.test_cli import cli
from tests.review.test_scale import _matches, _pg_plan, _sqlite_plan, _statements, varied
from tests.review.test_server import IMG, SCRIPT, Client

SESSION = "thread-42"
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
NO_SAMPLE = ReviewRules(sample_rate=0.0)


def mask(text: str) -> str:
    return EMAIL.sub("[email]", text)


def in_session(
    n: int,
    turn: int | None,
    *,
    session: str = SESSION,
    history: tuple[Turn, ...] = (),
    tool_calls: tuple[ToolCall, ...] = (),
    request_ns: int | None = None,
    **kw: object,
) -> ReviewItem:
    """Item ``n`` as turn ``turn`` of ``session``."""
    item = make_item(n, request_ns=request_ns, **kw)  # type: ignore[arg-type]
    conversation = Conversation(session, "u-7", turn, history, None)
    return replace(item, conversation=conversation, tool_calls=tool_calls, llm_calls=len(history))


HISTORY = (
    Turn("user", "Which plans do you sell? \u2603"),
    Turn("assistant", "Basic and Pro."),
    Turn("user", "How much is Pro?"),
    Turn("assistant", "12 euros a month."),
)
CALLS = (
    ToolCall("search_kb", '{"q": "pro plan price"}', "ok", None, 0.25, "call_1"),
    ToolCall("get_invoice", '{"id": 7}', "error", "TimeoutError: billing API", 1.5, None),
)


# --- the store ----------------------------------------------------------------------------------


def test_a_turn_keeps_its_conversation_and_tool_calls(store: SqlReviewStore) -> None:
    item = replace(
        in_session(1, 2, history=HISTORY, tool_calls=CALLS),
        conversation=Conversation(SESSION, "u-7", 2, HISTORY, "And the other plan, Basic?"),
        llm_calls=3,
    )
    item_id = store.enqueue(item)
    plain = store.enqueue(make_item(2))
    got = store.get(item_id)
    assert got is not None
    assert got.conversation == item.conversation
    assert got.session_id == SESSION
    assert got.tool_calls == CALLS
    assert got.llm_calls == 3
    paged = {i.id: i for i in store.page().items}
    assert paged[item_id].conversation == item.conversation
    assert paged[item_id].tool_calls == CALLS
    assert (paged[plain].conversation, paged[plain].tool_calls, paged[plain].llm_calls) == (
        None,
        (),
        0,
    )
    store.add_label(item_id, Label("bad", "hallucination"))
    ((labelled, stored),) = list(store.labelled())  # the label's columns follow the item's
    assert labelled.conversation == item.conversation and labelled.tool_calls == CALLS
    assert stored.label.verdict == "bad"


def test_the_queue_filters_by_session_and_lists_its_turns_in_order(store: SqlReviewStore) -> None:
    # Enqueued out of order; turn 1 twice (a retried turn: ordered by time), one turn number
    # unknown (last), another session and a record without one.
    third = store.enqueue(in_session(1, 2, priority=90))
    first = store.enqueue(in_session(2, 0, request_ns=T0 + 50 * 10**9))
    second_later = store.enqueue(in_session(3, 1, request_ns=T0 + 40 * 10**9))
    second = store.enqueue(in_session(4, 1, request_ns=T0 + 30 * 10**9, reasons=("pii",)))
    unknown = store.enqueue(in_session(5, None))
    store.enqueue(in_session(6, 0, session="thread-7"))
    store.enqueue(make_item(7))
    store.add_label(first, Label("good"))

    turns = store.session_turns(SESSION)
    assert [t.id for t in turns] == [first, second, second_later, third, unknown]
    assert [t.turn for t in turns] == [0, 1, 1, 2, None]
    assert [t.verdict for t in turns] == ["good", None, None, None, None]
    assert turns[0].query == "question 2?" and turns[0].response == "answer 2."
    assert turns[1].primary_reason == "pii"
    assert store.session_turns("no-such-session") == ()
    assert len(store.session_turns(SESSION, limit=2)) == 2

    def ids(**kw: object) -> list[int]:
        return [i.id for i in store.page(QueueFilter(**kw)).items]  # type: ignore[arg-type]

    # Queue order (priority, then newest), the labelled one only with labelled=all.
    assert ids(session=SESSION) == [third, unknown, second, second_later]
    assert ids(session=SESSION, labelled="all") == [third, unknown, second, second_later, first]
    assert store.count(QueueFilter(session=SESSION, labelled="all")) == 5
    assert store.count(QueueFilter(session="thread-7")) == 1
    # Beside a walk of scores or reasons, the session is looked up per item.
    assert ids(session=SESSION, reason="pii") == [second]
    assert ids(session=SESSION, evaluator="groundedness", max_score=0.5) == [
        third,
        unknown,
        second,
        second_later,
    ]
    assert ids(session=SESSION, min_score=0.9) == []
    assert ids(session=SESSION, search="question 4") == [second]
    assert store.neighbours(unknown, QueueFilter(session=SESSION)) == (third, second)
    assert ids(session=" ") == ids()  # blank: no filter


SESSION_FILTERS = [
    QueueFilter(session="s-7"),
    QueueFilter(session="s-7", labelled="all"),
    QueueFilter(session="s-7", app="bank", labelled="all"),
    QueueFilter(session="s-7", reason="pii", labelled="all"),
    QueueFilter(session="s-7", evaluator="groundedness", max_score=0.5),
    QueueFilter(session="s-7", min_score=0.5),
    QueueFilter(session="s-7", search="refund"),
]


def test_the_session_filter_and_a_sessions_turns_are_index_walks(store: SqlReviewStore) -> None:
    """As every filter of the queue (tests/review/test_scale.py): 3,000 turns of 300 sessions."""
    rng = random.Random(3)
    items = [varied(n, rng) for n in range(1, 3001)]
    ids = store.enqueue_many(
        replace(item, conversation=Conversation(f"s-{n % 300}", None, n // 300))
        for n, item in enumerate(items, 1)
    )
    for item_id in ids[::4]:
        store.add_label(item_id, Label("bad"))
    session = {t.id: store.get(t.id) for t in store.session_turns("s-7")}
    assert len(session) == 10
    for f in SESSION_FILTERS:
        # The walk selects and orders what a plain reading of the filter does.
        expected = [i for i, item in session.items() if item is not None and _matches(f, item)]
        expected.sort(key=lambda i: (session[i].priority, i), reverse=True)  # type: ignore[union-attr]
        assert [i.id for i in store.page(f).items] == expected, f
        for sql, params in _statements(store, f):
            if store.dialect.name == "sqlite":
                plan = "\n".join(_sqlite_plan(store, sql, params))
                assert "CORRELATED" not in plan and "SCAN review_queue" not in plan, (f, plan)
                assert "review_items" not in plan.replace("review_items_", ""), (f, plan)
                if f.evaluator is None and f.reason is None:
                    assert "review_queue_session" in plan, (f, plan)
            else:
                for node in _pg_plan(store, sql, params, forced=True):
                    assert node["Node Type"] != "Seq Scan", (f, node)
                    name = node.get("Subplan Name", "")
                    assert not name or name.startswith("hashed"), (f, node)
    turns = store.session_turns("s-7")
    assert len(turns) == 10 and [t.turn for t in turns] == list(range(10))
    with store._read() as cur:
        sql = (
            "SELECT id FROM review_items WHERE session_id = ?"
            " ORDER BY CASE WHEN turn IS NULL THEN 1 ELSE 0 END, turn, request_ns, id LIMIT ?"
        )
        if store.dialect.name == "sqlite":
            plan = " ".join(str(r[3]) for r in cur.all("EXPLAIN QUERY PLAN " + sql, ["s-7", 200]))
            # one index range; its few rows sorted by turn (NULLs last), then time
            assert "INDEX review_items_session (session_id=?)" in plan, plan
    if store.dialect.name != "sqlite":
        nodes = _pg_plan(store, sql, ["s-7", 200], forced=True)
        assert all(n["Node Type"] != "Seq Scan" for n in nodes), nodes


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "old.db")
    postgres: Postgres = request.getfixturevalue("postgres")
    return postgres.create_schema()


def test_a_store_made_before_conversations_is_migrated(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store at schema version 2 (as the ragtrace before this one left it), with an item,
    gains the conversation columns when opened; the old item reads as one without."""
    with monkeypatch.context() as old_ragtrace:
        old_ragtrace.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        with open_store(store_url) as old:
            assert old.migrate() == 2
            with old._write() as cur:
                row = cur.one(
                    "INSERT INTO review_items (record_key, trace_id, span_id, app, model,"
                    " request_ns, queued_ns, status, query, response, chunks_json,"
                    " scores_json, reasons_json, attributes_json, primary_reason, priority)"
                    " VALUES (?, ?, ?, ?, NULL, 1, 1, 'ok', ?, ?, '[]', '[]', '[]', '{}',"
                    " 'score_failed', 50) RETURNING id",
                    ("t:s", "t", "s", "shop", "old question?", "old answer."),
                )
                cur.execute(
                    "INSERT INTO review_queue (item_id, priority, app, request_ns,"
                    " primary_reason) VALUES (?, 50, 'shop', 1, 'score_failed')",
                    (row[0],),
                )
    with open_store(store_url) as store:
        assert store.migrate() == schema.SCHEMA_VERSION == 3
        (old_item,) = store.page().items
        assert old_item.query == "old question?"
        assert (old_item.conversation, old_item.tool_calls, old_item.llm_calls) == (None, (), 0)
        assert store.page(QueueFilter(session=SESSION)).items == ()
        new_id = store.enqueue(in_session(1, 0, tool_calls=CALLS))
        assert [i.id for i in store.page(QueueFilter(session=SESSION)).items] == [new_id]
        assert [t.id for t in store.session_turns(SESSION)] == [new_id]


# --- the sink -------------------------------------------------------------------------------------


def turn_record(n: int, response: str, **kw: object) -> RagRecord:
    """Turn 2 of ``SESSION`` by an agent, with earlier turns and tool calls full of addresses."""
    fields: dict[str, object] = {
        "trace_id": f"{n:032x}",
        "span_id": f"{n:016x}",
        "query": "And Basic?",
        "chunks": (Chunk("Basic costs 5 euros.", id="kb-1", score=0.9),),
        "response": response,
        "app": "support",
        "conversation": Conversation(
            SESSION,
            "eve@home.net",
            2,
            (
                Turn("user", "I am eve@home.net, which plans are there?"),
                Turn("assistant", "Basic and Pro; write to sales@corp.com."),
                Turn("user", "How much is Pro?"),
                Turn("assistant", "12 euros."),
            ),
            "How much is the Basic plan? (eve@home.net)",
        ),
        "tool_calls": (
            ToolCall("lookup_user", '{"email": "eve@home.net"}', "ok", None, 0.01, "c1"),
            ToolCall("search_kb", '{"q": "basic"}', "error", "Refused for bob@corp.com", 0.2),
        ),
        "llm_calls": 3,
        **kw,
    }
    return RagRecord(**fields)  # type: ignore[arg-type]


LOOPING = "Open settings. Open settings. Open settings. Open settings. Open settings."


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SqlReviewStore]:
    with open_store(str(tmp_path / "review.db")) as store:
        yield store


def test_the_sink_keeps_the_conversation_redacted_and_cut(
    sqlite: SqlReviewStore, tmp_path: Path
) -> None:
    limits = ContentLimits(max_history_turns=3, max_turn_chars=30, max_tool_calls=1)
    sink = ReviewSink(sqlite, NO_SAMPLE, redact=mask, limits=limits)
    # Marked as redacted already (ingested, say): the conversation is still redacted here.
    marked = turn_record(1, "Basic is 5 euros.", attributes={RAGTRACE_REDACTION: "custom"})
    item = sink.build_item(marked, [])
    conversation = item.conversation
    assert conversation is not None
    assert conversation.session_id == SESSION  # the grouping key, kept as captured
    assert conversation.user_id == "[email]"
    assert conversation.turn == 2
    assert conversation.history == (
        Turn("assistant", "Basic and Pro; write to [email"),  # the oldest turn beyond 3 went
        Turn("user", "How much is Pro?"),
        Turn("assistant", "12 euros."),
    )
    assert conversation.standalone_query == "How much is the Basic plan? ([email])"
    assert item.tool_calls == (
        ToolCall("lookup_user", '{"email": "[email]"}', "ok", None, 0.01, "c1"),
    )
    assert item.llm_calls == 3
    assert item.attributes[TRUNCATED_ATTRIBUTE] == [
        "history turn 1",
        "history (4 > 3 turns)",
        "tool calls (2 > 1)",
    ]
    sqlite.enqueue(item)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("review.db*"))
    assert b"eve@home" not in raw and b"sales@corp" not in raw
    assert SESSION.encode() in raw


def test_a_failing_turn_reaches_the_queue_with_its_conversation_through_the_pipeline(
    sqlite: SqlReviewStore,
) -> None:
    registry = CollectorRegistry()
    sink = ReviewSink(sqlite, NO_SAMPLE)
    rt = ragtrace.init(
        app="support",
        tracer_provider=TracerProvider(),
        registry=registry,
        evaluators=[create("looping")],
        score_sinks=[sink],
        redact=mask,
    )
    try:
        assert rt.pipeline.submit(turn_record(1, LOOPING))
        assert rt.pipeline.submit(turn_record(2, "Basic is 5 euros a month."))
        assert rt.flush(10)
        exposed = generate_latest(registry).decode()  # before shutdown unregisters them
    finally:
        rt.shutdown()
    (item,) = sqlite.page(QueueFilter(session=SESSION)).items
    assert item.span_id == f"{1:016x}"
    assert item.conversation is not None and item.conversation.turn == 2
    assert item.conversation.history[0].content == "I am [email], which plans are there?"
    assert [c.name for c in item.tool_calls] == ["lookup_user", "search_kb"]
    assert item.tool_calls[1].error == "Refused for [email]"
    assert "ragtrace_evaluations_total" in exposed
    assert SESSION not in exposed and "u-7" not in exposed


# --- the page -------------------------------------------------------------------------------------


@pytest.fixture
def served(
    sqlite: SqlReviewStore,
) -> Iterator[tuple[ReviewServer, SqlReviewStore, CollectorRegistry]]:
    registry = CollectorRegistry()
    app = build_app(sqlite, registry=registry, links=TraceLinks("jaeger"))
    with serve_review(app, "127.0.0.1", 0) as server:
        yield server, sqlite, registry
    app.close()


def test_the_record_page_shows_the_conversation_around_the_turn(
    served: tuple[ReviewServer, SqlReviewStore, CollectorRegistry],
) -> None:
    server, store, _ = served
    hostile_history = (*HISTORY, Turn("user", f"What about {SCRIPT}?"), Turn("assistant", IMG))
    hostile_calls = (*CALLS, ToolCall(f"tool{SCRIPT}", f'{{"x": "{IMG}"}}', "error", SCRIPT, 2))
    first = store.enqueue(in_session(1, 0, query="Which plans do you sell?"))
    opened = store.enqueue(
        replace(
            in_session(2, 3, history=hostile_history, tool_calls=hostile_calls),
            conversation=Conversation(SESSION, "u-7", 3, hostile_history, f"Standalone {IMG}"),
        )
    )
    later = store.enqueue(in_session(3, 4, query=f"Later {SCRIPT}"))
    other = store.enqueue(in_session(4, 0, session="thread-7"))
    store.add_label(first, Label("good"))
    client = Client(server)

    page = client.get(f"/item/{opened}?reason=score_failed").body
    assert page.count("<script") == 1  # only the app's own script tag
    assert "<img" not in page
    # The session, linked to its queue; user and turn.
    assert '<a id="session-link" href="/queue?session=thread-42&amp;labelled=all">' in page
    assert "<dt>User</dt><dd>u-7</dd>" in page
    assert "<dt>Turn</dt><dd>4 (3 before it)</dd>" in page
    # The earlier turns, oldest first, escaped.
    history = re.findall(
        r'<li class="turn (user|assistant)"><div class="role">\w+</div>'
        r'<div class="text">(.*?)</div></li>',
        page,
    )
    assert history == [
        ("user", "Which plans do you sell? \u2603"),
        ("assistant", "Basic and Pro."),
        ("user", "How much is Pro?"),
        ("assistant", "12 euros a month."),
        ("user", "What about &lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;?"),
        ("assistant", "&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;"),
    ]
    assert 'Asked as a standalone question: <span id="standalone">Standalone &lt;img' in page
    # The session's queued turns in turn order, each with its verdict; this one marked; links
    # keep the queue's filters; the other session is not there.
    rows = re.findall(r'<tr data-item="(\d+)"( class="current")?>', page)
    assert rows == [(str(first), ""), (str(opened), ' class="current"'), (str(later), "")]
    assert f'<a href="/item/{first}?reason=score_failed">1</a>' in page
    assert "4 <strong>(this turn)</strong>" in page
    assert f'<a href="/item/{later}?reason=score_failed">5</a>' in page
    session_table = page[page.index('<section id="session">') :]
    session_table = session_table[: session_table.index("</section>")]
    assert session_table.count('<span class="badge good">good</span>') == 1
    assert session_table.count('<span class="badge none">unlabelled</span>') == 2
    assert "Later &lt;script&gt;" in session_table
    assert f'data-item="{other}"' not in page
    # The tool calls: name, arguments, status, duration, error.
    tools = page[page.index('<section id="tool-calls">') :]
    tools = tools[: tools.index("</section>")]
    assert "3 calls, 2 failed" in tools
    assert (
        '<tr class="pass"><td>1</td><td>search_kb <small title="call id">call_1</small></td>'
        "<td><pre>{&quot;q&quot;: &quot;pro plan price&quot;}</pre></td>"
        '<td><span class="badge pass">ok</span></td><td>0.250 s</td><td></td></tr>'
    ) in tools
    assert (
        '<tr class="fail"><td>2</td><td>get_invoice</td><td><pre>{&quot;id&quot;: 7}</pre></td>'
        '<td><span class="badge fail">error</span></td><td>1.500 s</td>'
        "<td>TimeoutError: billing API</td></tr>"
    ) in tools
    assert "tool&lt;script&gt;" in tools and "&lt;img src=x" in tools
    # The order of the page: session, earlier turns, question, answer, tool calls, chunks.
    order = [
        page.index(marker)
        for marker in (
            '<section id="session">',
            '<section id="conversation">',
            'id="query"',
            'id="answer"',
            '<section id="tool-calls">',
            "<h2>Retrieved chunks</h2>",
        )
    ]
    assert order == sorted(order)


def test_a_turn_alone_in_its_session_or_without_one_shows_no_conversation(
    served: tuple[ReviewServer, SqlReviewStore, CollectorRegistry],
) -> None:
    server, store, _ = served
    alone = store.enqueue(in_session(1, 0, session="thread-solo"))
    plain = store.enqueue(make_item(2))
    client = Client(server)
    page = client.get(f"/item/{alone}").body
    assert 'href="/queue?session=thread-solo&amp;labelled=all"' in page  # its queue, still
    for absent in ('<section id="session">', '<section id="conversation">', "tool-calls"):
        assert absent not in page
    page = client.get(f"/item/{plain}").body
    for absent in ("session-link", "<dt>Turn</dt>", '<section id="session">', "tool-calls"):
        assert absent not in page


def test_the_queue_page_filters_by_session(
    served: tuple[ReviewServer, SqlReviewStore, CollectorRegistry],
) -> None:
    server, store, registry = served
    mine = [store.enqueue(in_session(n, n)) for n in (1, 2)]
    store.enqueue(in_session(3, 0, session="thread-7"))
    store.add_label(mine[0], Label("bad"))
    client = Client(server)
    page = client.get("/queue?session=thread-42&labelled=all").body
    listed = [int(i) for i in re.findall(r'<tr data-href="/item/(\d+)', page)]
    assert listed == [mine[1], mine[0]]
    assert '<input type="search" name="session" value="thread-42">' in page
    assert f"/item/{mine[1]}?labelled=all&amp;session=thread-42" in page
    assert [
        int(i) for i in re.findall(r'<tr data-href="/item/(\d+)', client.get("/queue").body)
    ] == sorted([mine[1], store.page(QueueFilter(session="thread-7")).items[0].id], reverse=True)
    # Metrics: waiting items by app and reason; no session or user id in any label.
    exposed = client.get("/metrics").body
    assert "ragtrace_review_queue_size" in exposed
    assert "thread-42" not in exposed and "thread-7" not in exposed and "u-7" not in exposed
    assert "thread-42" not in generate_latest(registry).decode()


# --- the terminal ---------------------------------------------------------------------------------


def test_the_cli_lists_a_session_and_shows_a_turns_conversation(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    with open_store(str(db)) as store:
        ids = [store.enqueue(in_session(n, n - 1, history=HISTORY[: 2 * (n - 1)])) for n in (1, 2)]
        last = store.enqueue(in_session(3, 2, history=HISTORY, tool_calls=CALLS))
        store.enqueue(in_session(4, 0, session="thread-7"))
    code, _, err = cli(db, "list", "--session", SESSION)
    assert code == 0 and err == "1-3 of 3 items\n"
    code, out, _ = cli(db, "list", "--session", SESSION, "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted([*ids, last])
    assert {r["session_id"] for r in rows} == {SESSION}
    assert sorted(r["turn"] for r in rows) == [0, 1, 2]
    code, out, _ = cli(db, "show", str(last))
    assert code == 0
    for expected in (
        "session thread-42  user u-7  turn 3",
        "Earlier in the conversation:\n  user: Which plans do you sell? \u2603\n",
        "  assistant: 12 euros a month.\n",
        'Tool calls:\n  #1 search_kb ok 0.250s {"q": "pro plan price"}\n',
        '  #2 get_invoice error 1.500s {"id": 7}\n     error: TimeoutError: billing API\n',
    ):
        assert expected in out
    code, out, _ = cli(db, "show", str(last), "--json")
    data = json.loads(out)
    assert data["session_id"] == SESSION and data["turn"] == 2 and data["llm_calls"] == 4
    assert data["conversation"]["history"][0] == {
        "role": "user",
        "content": "Which plans do you sell? \u2603",
    }
    assert [c["name"] for c in data["tool_calls"]] == ["search_kb", "get_invoice"]
    assert data["tool_calls"][1]["status"] == "error"
