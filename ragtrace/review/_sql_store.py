"""The review store's behaviour in SQL, the same on every backend.

``SqlReviewStore`` queues items, labels them, filters and pages the queue, prunes it
(``Retention``) and sums up the figures behind the metrics. Its statements run unchanged on
SQLite and PostgreSQL (``ragtrace.review._sql``); a backend subclass (``sqlite_store``,
``postgres_store``) only says how to open a connection and start a transaction, and
``ragtrace.review._store.open_store`` picks the backend from a URL.

Queue order is ``priority`` descending, then newest first; ``neighbours`` walks that order from
any item (even one the filter no longer matches, such as the item just labelled). Pages, counts
and neighbours read the narrow ``review_queue`` table through its indexes
(``ragtrace.review._queries``), so a page costs about the same at 100,000 items as at 100.

``session_turns(session_id)`` lists the queued turns of one conversation (the record page shows
them around the turn it opens); ``QueueFilter(session=...)`` keeps the queue to them.

Labels carry a version check: ``add_label(..., expected_label_id=...)`` refuses (``StaleLabel``)
a label given while looking at an item whose latest label has changed since. ``claim`` records
who has an item open, until when, so reviewers see each other's work (``ragtrace.review._claims``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ragtrace._metrics.review import ReviewStats
from ragtrace._model import Conversation
from ragtrace.review._agreement import agreement_rows
from ragtrace.review._claims import ClaimStore
from ragtrace.review._conversations import (
    MAX_SESSION_TURNS,
    SessionTurn,
    conversation_to_json,
    tool_calls_to_json,
)
from ragtrace.review._items import (
    FAILURE_TYPES,
    VERDICTS,
    QueueFilter,
    ReviewItem,
    StoredLabel,
    chunk_to_json,
)
from ragtrace.review._label_store import LabelStore
from ragtrace.review._queries import QueueQuery, ScoreColumn
from ragtrace.review._rules import REASON_NAMES
from ragtrace.review._sql import (
    ITEM_SELECT,
    ITEM_WIDTH,
    LABEL_COLUMNS,
    Cursor,
    Facets,
    Page,
    QueuePlace,
    distinct_values,
    dump_json,
    insert_children,
    item_from_row,
    label_from_row,
    merge_reasons,
    merge_scores,
    reasons_from_json,
    record_key,
    scores_from_json,
)

MAX_PAGE = 500
MAX_OFFSET = 1_000_000_000
"""The largest offset a page may start at (beyond any queue; it keeps values in range)."""
COUNT_CAP = 1_000
"""A filter on scores, reasons or the question is counted up to this many items past the
page's start (``Page.more`` says there are more): one walk gives the page and its count, and
costs at most that many matches."""


@dataclass(frozen=True)
class Retention:
    """How much the store keeps.

    Attributes:
        max_items: Most items kept; the oldest beyond it are deleted (None: no cap).
        max_age_s: Items queued longer ago than this are deleted (None: kept for ever).
        keep_labelled: Labelled items are the data set: the limits above spare them.
    """

    max_items: int | None = 100_000
    max_age_s: float | None = 30 * 86400.0
    keep_labelled: bool = True

    def __post_init__(self) -> None:
        if self.max_items is not None and self.max_items < 1:
            raise ValueError(f"retention max_items must be >= 1, got {self.max_items}")
        if self.max_age_s is not None and self.max_age_s <= 0:
            raise ValueError(f"retention max_age_s must be > 0, got {self.max_age_s}")


class SqlReviewStore(LabelStore, ClaimStore):
    """The review store's behaviour in SQL, the same on every backend."""

    # The values the review metrics' labels take (``ragtrace._metrics.review``).
    reasons: tuple[str, ...] = REASON_NAMES
    verdicts: tuple[str, ...] = VERDICTS
    failure_types: tuple[str, ...] = FAILURE_TYPES

    # --- what a backend may change -------------------------------------------------------

    def _search_clause(self, text: str, item_id: str) -> tuple[str, list[Any]]:
        """The question-search predicate on the ``item_id`` expression (backends with a
        trigram index override it or index ``lower(query)``)."""
        escaped = text.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
        return (
            f"{item_id} IN (SELECT i.id FROM review_items i"
            " WHERE lower(i.query) LIKE ? ESCAPE '!')",
            [f"%{escaped}%"],
        )

    def _index_search(self, cur: Cursor, item_id: int, query: str | None) -> None:
        """Add a new item's question to the search index, where the backend keeps one."""

    def _query(self, filters: QueueFilter | None, cur: Cursor) -> QueueQuery:
        """The SQL of ``filters``: an evaluator filter names a score, or, when no score has
        that name, an evaluator (``--evaluator judge``)."""
        f = filters or QueueFilter()
        column: ScoreColumn = "name"
        if f.evaluator is not None:
            named = cur.one("SELECT 1 FROM review_scores WHERE name = ? LIMIT 1", (f.evaluator,))
            column = "name" if named is not None else "evaluator"
        return QueueQuery(f, self._search_clause, column, self.dialect.name == "sqlite")

    # --- writing -------------------------------------------------------------------------

    def enqueue(self, item: ReviewItem) -> int:
        """Store ``item``; when its (trace id, span id) is already queued, merge into that.

        A merge keeps the stored content, adds the new scores (replacing same-named ones from
        the same evaluator) and reasons, and keeps the higher priority. Returns the item id.
        """
        with self._write() as cur:
            return self._enqueue(cur, item)

    def enqueue_many(self, items: Iterable[ReviewItem]) -> list[int]:
        """``enqueue`` each item, all in one transaction (an import, a backfill)."""
        with self._write() as cur:
            return [self._enqueue(cur, item) for item in items]

    def _enqueue(self, cur: Cursor, item: ReviewItem) -> int:
        key = record_key(item)
        queued = item.queued_ns or time.time_ns()
        request_ns = item.request_ns or queued
        conversation = item.conversation or Conversation()
        stored_conversation = conversation_to_json(item.conversation)
        stored_calls = tool_calls_to_json(item.tool_calls)
        row = cur.one(
            "INSERT INTO review_items (record_key, trace_id, span_id, app, model, request_ns,"
            " queued_ns, status, error, query, response, reference, chunks_json, scores_json,"
            " reasons_json, attributes_json, primary_reason, priority, session_id, user_id,"
            " turn, conversation_json, tool_calls_json, llm_calls)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (record_key) DO NOTHING RETURNING id",
            (
                key,
                item.trace_id,
                item.span_id,
                item.app,
                item.model,
                request_ns,
                queued,
                item.status,
                item.error,
                item.query,
                item.response,
                item.reference,
                dump_json([chunk_to_json(c) for c in item.chunks]),
                dump_json([s.to_json() for s in item.scores]),
                dump_json([r.to_json() for r in item.reasons]),
                dump_json(dict(item.attributes)),
                item.primary_reason,
                item.priority,
                conversation.session_id,
                conversation.user_id,
                conversation.turn,
                None if stored_conversation is None else dump_json(stored_conversation),
                None if stored_calls is None else dump_json(stored_calls),
                item.llm_calls,
            ),
        )
        if row is not None:
            item_id = int(row[0])
            cur.execute(
                "INSERT INTO review_queue (item_id, priority, app, request_ns,"
                " primary_reason, session_id) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    item_id,
                    item.priority,
                    item.app,
                    request_ns,
                    item.primary_reason,
                    conversation.session_id,
                ),
            )
            place = QueuePlace(item.priority, None, item.app, request_ns)
            insert_children(cur, item_id, item.scores, item.reasons, place)
            self._index_search(cur, item_id, item.query)
            return item_id
        old = cur.one(
            "SELECT id, scores_json, reasons_json, priority, verdict, app, request_ns"
            " FROM review_items WHERE record_key = ?" + self.dialect.for_update,
            (key,),
        )
        item_id = int(old[0])
        scores = merge_scores(scores_from_json(old[1]), item.scores)
        reasons = merge_reasons(reasons_from_json(old[2]), item.reasons)
        merged = ReviewItem("", "", "", None, None, reasons=reasons)
        priority = max(int(old[3]), item.priority)
        cur.execute(
            "UPDATE review_items SET scores_json = ?, reasons_json = ?, priority = ?,"
            " primary_reason = ? WHERE id = ?",
            (
                dump_json([s.to_json() for s in scores]),
                dump_json([r.to_json() for r in reasons]),
                priority,
                merged.primary_reason,
                item_id,
            ),
        )
        cur.execute(
            "UPDATE review_queue SET priority = ?, primary_reason = ? WHERE item_id = ?",
            (priority, merged.primary_reason, item_id),
        )
        cur.execute("DELETE FROM review_scores WHERE item_id = ?", (item_id,))
        cur.execute("DELETE FROM review_reasons WHERE item_id = ?", (item_id,))
        place = QueuePlace(priority, old[4], str(old[5]), int(old[6]))
        insert_children(cur, item_id, scores, reasons, place)
        return item_id

    def prune(self, retention: Retention, now_ns: int | None = None) -> int:
        """Delete what ``retention`` no longer allows; returns how many items went."""
        spare = " AND verdict IS NULL" if retention.keep_labelled else ""
        deleted = 0
        with self._write() as cur:
            if retention.max_age_s is not None:
                cutoff = (now_ns or time.time_ns()) - int(retention.max_age_s * 1e9)
                deleted += _delete_items(cur, "queued_ns < ?" + spare, cutoff)
            if retention.max_items is not None:
                where = " WHERE verdict IS NULL" if retention.keep_labelled else ""
                row = cur.one(
                    "SELECT id FROM review_items" + where + " ORDER BY id DESC LIMIT 1 OFFSET ?",
                    (retention.max_items,),
                )
                if row is not None:
                    deleted += _delete_items(cur, "id <= ?" + spare, row[0])
        return deleted

    # --- reading -------------------------------------------------------------------------

    def get(self, item_id: int) -> ReviewItem | None:
        """The item with this id, or None."""
        with self._read() as cur:
            row = cur.one(ITEM_SELECT + " FROM review_items i WHERE i.id = ?", (item_id,))
        return None if row is None else item_from_row(row)

    def page(self, filters: QueueFilter | None = None, offset: int = 0, limit: int = 50) -> Page:
        """One page of the items ``filters`` selects, in queue order.

        Raises:
            ValueError: ``offset`` outside ``0..MAX_OFFSET`` or ``limit`` outside
                ``1..MAX_PAGE`` (or not integers).
        """
        offset, limit = _paging(offset, limit)
        with self._read() as cur:
            query = self._query(filters, cur)
            if query.counts_exactly:  # the queue's own columns: an index range counts them
                ids = [int(r[0]) for r in cur.all(*query.page_ids(offset, limit))]
                small = offset == 0 and len(ids) < limit
                total = len(ids) if small else int(cur.one(*query.count(COUNT_CAP))[0])
                more = False
            else:  # one walk: the page, and whether more than COUNT_CAP follow it
                found = [int(r[0]) for r in cur.all(*query.page_ids(offset, COUNT_CAP + 1))]
                ids, more = found[:limit], len(found) > COUNT_CAP
                total = offset + min(len(found), COUNT_CAP)
                if not found and offset:  # past the end: how many there are
                    counted = int(cur.one(*query.count(COUNT_CAP))[0])
                    total, more = min(counted, COUNT_CAP), counted > COUNT_CAP
            items = self._items(cur, ids)
        return Page(tuple(items), total, offset, limit, more)

    def _items(self, cur: Cursor, ids: list[int]) -> list[ReviewItem]:
        """The items with these ids, in this order (read by primary key)."""
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        rows = cur.all(ITEM_SELECT + f" FROM review_items i WHERE i.id IN ({marks})", ids)
        by_id = {int(r[0]): item_from_row(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def count(self, filters: QueueFilter | None = None, cap: int | None = None) -> int:
        """How many items ``filters`` selects (at most ``cap + 1`` counted when ``cap`` is
        given and the filter reads scores, reasons or the question)."""
        with self._read() as cur:
            query = self._query(filters, cur)
            return int(cur.one(*query.count(MAX_OFFSET if cap is None else cap))[0])

    def neighbours(
        self, item_id: int, filters: QueueFilter | None = None
    ) -> tuple[int | None, int | None]:
        """The ids before and after ``item_id`` in queue order among the filtered items."""
        with self._read() as cur:
            query = self._query(filters, cur)
            me = cur.one("SELECT priority FROM review_queue WHERE item_id = ?", (item_id,))
            if me is None:
                return None, None
            after = cur.one(*query.neighbour(int(me[0]), item_id, after=True))
            before = cur.one(*query.neighbour(int(me[0]), item_id, after=False))
        return (
            None if before is None else int(before[0]),
            None if after is None else int(after[0]),
        )

    def labelled(
        self, filters: QueueFilter | None = None, batch: int = 500
    ) -> Iterator[tuple[ReviewItem, StoredLabel]]:
        """Labelled items (with their latest label) in id order, read in batches."""
        labelled = replace(filters or QueueFilter(), labelled="yes")
        last = 0
        while True:
            with self._read() as cur:
                ids, params = self._query(labelled, cur).ids()
                rows = cur.all(
                    ITEM_SELECT + ", " + LABEL_COLUMNS + " FROM review_items i"
                    " JOIN review_labels l ON l.id = i.label_id"
                    f" WHERE i.id IN ({ids}) AND i.id > ? ORDER BY i.id LIMIT ?",
                    (*params, last, batch),
                )
            for row in rows:
                yield item_from_row(row[:ITEM_WIDTH]), label_from_row(row[ITEM_WIDTH:])
            if len(rows) < batch:
                return
            last = int(rows[-1][0])

    def session_turns(
        self, session_id: str, limit: int = MAX_SESSION_TURNS
    ) -> tuple[SessionTurn, ...]:
        """The queued turns of one conversation, labelled or not, in turn order (then time;
        turns of unknown number last): one range of the ``(session_id, turn, request_ns)``
        index, at most ``limit`` of them."""
        with self._read() as cur:
            rows = cur.all(
                "SELECT id, turn, request_ns, query, response, verdict, primary_reason, status"
                " FROM review_items WHERE session_id = ?"
                " ORDER BY CASE WHEN turn IS NULL THEN 1 ELSE 0 END, turn, request_ns, id"
                " LIMIT ?",
                (session_id, max(1, int(limit))),
            )
        return tuple(
            SessionTurn(
                id=int(r[0]),
                turn=None if r[1] is None else int(r[1]),
                request_ns=int(r[2]),
                query=r[3],
                response=r[4],
                verdict=r[5],
                primary_reason=str(r[6]),
                status=str(r[7]),
            )
            for r in rows
        )

    def facets(self, limit: int = 200) -> Facets:
        """Apps, reasons and score names present, for the filter menus."""
        with self._read() as cur:
            found = [
                distinct_values(cur, table, column, limit)
                for table, column in (
                    ("review_queue", "app"),
                    ("review_reasons", "reason"),
                    ("review_scores", "name"),
                )
            ]
        return Facets(*found)

    def stats(self) -> ReviewStats:
        """Waiting items by app and reason, labels by verdict, evaluator agreement."""
        with self._read() as cur:
            waiting = cur.all(
                "SELECT app, primary_reason, COUNT(*) FROM review_queue WHERE verdict IS NULL"
                " GROUP BY app, primary_reason"
            )
            labels = cur.all(
                "SELECT i.app, l.verdict, COALESCE(l.failure_type, ''), COUNT(*)"
                " FROM review_labels l JOIN review_queue i ON i.item_id = l.item_id"
                " GROUP BY i.app, l.verdict, COALESCE(l.failure_type, '')"
            )
            compared = cur.all(
                "SELECT q.app, s.name, s.evaluator, s.kind, q.verdict, i.failure_type,"
                " s.passed, COUNT(*) FROM review_queue q"
                " JOIN review_items i ON i.id = q.item_id"
                " JOIN review_scores s ON s.item_id = q.item_id"
                " WHERE q.verdict IN ('good', 'bad')"
                " AND s.passed IS NOT NULL AND s.has_error = 0 AND s.kind <> 'human'"
                " GROUP BY q.app, s.name, s.evaluator, s.kind, q.verdict, i.failure_type,"
                " s.passed"
            )
        return ReviewStats(
            tuple((str(a), str(r), int(n)) for a, r, n in waiting),
            tuple((str(a), str(v), str(f), int(n)) for a, v, f, n in labels),
            agreement_rows(
                (str(a), str(n), str(e), str(k), str(v), f, bool(p), int(c))
                for a, n, e, k, v, f, p, c in compared
            ),
        )


ReviewStore = SqlReviewStore


def _delete_items(cur: Cursor, where: str, bound: int) -> int:
    """Delete the items ``where`` selects (one ``?``, ``bound``); returns how many went."""
    n = int(cur.one("SELECT COUNT(*) FROM review_items WHERE " + where, (bound,))[0])
    if n:
        cur.execute("DELETE FROM review_items WHERE " + where, (bound,))
    return n


def _paging(offset: object, limit: object) -> tuple[int, int]:
    """``offset`` and ``limit`` checked (``limit`` above ``MAX_PAGE`` is cut to it)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise ValueError(f"offset must be a whole number in 0..{MAX_OFFSET}, got {offset!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number >= 1, got {limit!r}")
    return offset, min(MAX_PAGE, limit)
