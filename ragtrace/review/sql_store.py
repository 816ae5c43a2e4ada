"""The review store's behaviour in SQL, the same on every backend.

``SqlReviewStore`` queues items, labels them, filters and pages the queue, prunes it
(``Retention``) and sums up the figures behind the metrics. Its statements run unchanged on
SQLite and PostgreSQL (``ragtrace.review.sql``); a backend subclass (``sqlite_store``,
``postgres_store``) only says how to open a connection and start a transaction, and
``ragtrace.review.store.open_store`` picks the backend from a URL.

Queue order is ``priority`` descending, then newest first; ``neighbours`` walks that order from
any item (even one the filter no longer matches, such as the item just labelled).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from ragtrace.review.agreement import agreement_rows
from ragtrace.review.items import Label, QueueFilter, ReviewItem, StoredLabel, chunk_to_json
from ragtrace.review.pool import PooledDatabase
from ragtrace.review.sql import (
    ITEM_SELECT,
    LABEL_COLUMNS,
    QUEUE_ORDER,
    Facets,
    Page,
    ReviewStats,
    dump_json,
    filter_fields,
    insert_children,
    item_from_row,
    label_from_row,
    merge_reasons,
    merge_scores,
    reasons_from_json,
    record_key,
    scores_from_json,
    where_clause,
)

MAX_PAGE = 500


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


class SqlReviewStore(PooledDatabase):
    """The review store's behaviour in SQL, the same on every backend."""

    # --- writing -------------------------------------------------------------------------

    def enqueue(self, item: ReviewItem) -> int:
        """Store ``item``; when its (trace id, span id) is already queued, merge into that.

        A merge keeps the stored content, adds the new scores (replacing same-named ones from
        the same evaluator) and reasons, and keeps the higher priority. Returns the item id.
        """
        key = record_key(item)
        queued = item.queued_ns or time.time_ns()
        request_ns = item.request_ns or queued
        with self._write() as cur:
            row = cur.one(
                "INSERT INTO review_items (record_key, trace_id, span_id, app, model, request_ns,"
                " queued_ns, status, error, query, response, reference, chunks_json, scores_json,"
                " reasons_json, attributes_json, primary_reason, priority)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
                ),
            )
            if row is not None:
                item_id = int(row[0])
                insert_children(cur, item_id, item.scores, item.reasons)
                return item_id
            old = cur.one(
                "SELECT id, scores_json, reasons_json, priority FROM review_items"
                " WHERE record_key = ?" + self.dialect.for_update,
                (key,),
            )
            item_id = int(old[0])
            scores = merge_scores(scores_from_json(old[1]), item.scores)
            reasons = merge_reasons(reasons_from_json(old[2]), item.reasons)
            merged = ReviewItem("", "", "", None, None, reasons=reasons)
            cur.execute(
                "UPDATE review_items SET scores_json = ?, reasons_json = ?, priority = ?,"
                " primary_reason = ? WHERE id = ?",
                (
                    dump_json([s.to_json() for s in scores]),
                    dump_json([r.to_json() for r in reasons]),
                    max(int(old[3]), item.priority),
                    merged.primary_reason,
                    item_id,
                ),
            )
            cur.execute("DELETE FROM review_scores WHERE item_id = ?", (item_id,))
            cur.execute("DELETE FROM review_reasons WHERE item_id = ?", (item_id,))
            insert_children(cur, item_id, scores, reasons)
            return item_id

    def add_label(self, item_id: int, label: Label, created_ns: int | None = None) -> StoredLabel:
        """Label an item (the newest label counts).

        Raises:
            KeyError: No item has this id.
        """
        created = created_ns or time.time_ns()
        with self._write() as cur:
            if (
                cur.one(
                    "SELECT id FROM review_items WHERE id = ?" + self.dialect.for_update, (item_id,)
                )
                is None
            ):
                raise KeyError(f"no review item {item_id}")
            row = cur.one(
                "INSERT INTO review_labels (item_id, verdict, failure_type, notes,"
                " corrected_answer, reviewer, created_ns) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (
                    item_id,
                    label.verdict,
                    label.failure_type,
                    label.notes,
                    label.corrected_answer,
                    label.reviewer,
                    created,
                ),
            )
            cur.execute(
                "UPDATE review_items SET verdict = ?, failure_type = ?, labelled_ns = ?"
                " WHERE id = ?",
                (label.verdict, label.failure_type, created, item_id),
            )
        return StoredLabel(int(row[0]), item_id, created, label)

    def prune(self, retention: Retention, now_ns: int | None = None) -> int:
        """Delete what ``retention`` no longer allows; returns how many items went."""
        spare = " AND verdict IS NULL" if retention.keep_labelled else ""
        deleted = 0
        with self._write() as cur:
            if retention.max_age_s is not None:
                cutoff = (now_ns or time.time_ns()) - int(retention.max_age_s * 1e9)
                n = cur.one(
                    "SELECT COUNT(*) FROM review_items WHERE queued_ns < ?" + spare, (cutoff,)
                )[0]
                if n:
                    cur.execute("DELETE FROM review_items WHERE queued_ns < ?" + spare, (cutoff,))
                    deleted += int(n)
            if retention.max_items is not None:
                where = " WHERE verdict IS NULL" if retention.keep_labelled else ""
                row = cur.one(
                    "SELECT id FROM review_items" + where + " ORDER BY id DESC LIMIT 1 OFFSET ?",
                    (retention.max_items,),
                )
                if row is not None:
                    n = cur.one(
                        "SELECT COUNT(*) FROM review_items WHERE id <= ?" + spare, (row[0],)
                    )[0]
                    cur.execute("DELETE FROM review_items WHERE id <= ?" + spare, (row[0],))
                    deleted += int(n)
        return deleted

    # --- reading -------------------------------------------------------------------------

    def get(self, item_id: int) -> ReviewItem | None:
        """The item with this id, or None."""
        with self._read() as cur:
            row = cur.one(ITEM_SELECT + " FROM review_items i WHERE i.id = ?", (item_id,))
        return None if row is None else item_from_row(row)

    def page(self, filters: QueueFilter | None = None, offset: int = 0, limit: int = 50) -> Page:
        """One page of the items ``filters`` selects, in queue order."""
        filters = filters or QueueFilter()
        offset, limit = max(0, int(offset)), max(1, min(MAX_PAGE, int(limit)))
        where, params = where_clause(filters)
        with self._read() as cur:
            total = int(cur.one("SELECT COUNT(*) FROM review_items i" + where, params)[0])
            rows = cur.all(
                ITEM_SELECT + " FROM review_items i" + where + QUEUE_ORDER + " LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
        return Page(tuple(item_from_row(r) for r in rows), total, offset, limit)

    def count(self, filters: QueueFilter | None = None) -> int:
        """How many items ``filters`` selects."""
        where, params = where_clause(filters or QueueFilter())
        with self._read() as cur:
            return int(cur.one("SELECT COUNT(*) FROM review_items i" + where, params)[0])

    def neighbours(
        self, item_id: int, filters: QueueFilter | None = None
    ) -> tuple[int | None, int | None]:
        """The ids before and after ``item_id`` in queue order among the filtered items."""
        where, params = where_clause(filters or QueueFilter())
        glue = " AND " if where else " WHERE "
        with self._read() as cur:
            me = cur.one("SELECT priority FROM review_items WHERE id = ?", (item_id,))
            if me is None:
                return None, None
            p = int(me[0])
            after = cur.one(
                "SELECT i.id FROM review_items i"
                + where
                + glue
                + "(i.priority < ? OR (i.priority = ? AND i.id < ?))"
                + QUEUE_ORDER
                + " LIMIT 1",
                (*params, p, p, item_id),
            )
            before = cur.one(
                "SELECT i.id FROM review_items i"
                + where
                + glue
                + "(i.priority > ? OR (i.priority = ? AND i.id > ?))"
                + " ORDER BY i.priority ASC, i.id ASC LIMIT 1",
                (*params, p, p, item_id),
            )
        return (
            None if before is None else int(before[0]),
            None if after is None else int(after[0]),
        )

    def labels(self, item_id: int) -> list[StoredLabel]:
        """Every label of an item, newest first."""
        with self._read() as cur:
            rows = cur.all(
                "SELECT " + LABEL_COLUMNS + " FROM review_labels l WHERE l.item_id = ?"
                " ORDER BY l.id DESC",
                (item_id,),
            )
        return [label_from_row(r) for r in rows]

    def labelled(
        self, filters: QueueFilter | None = None, batch: int = 500
    ) -> Iterator[tuple[ReviewItem, StoredLabel]]:
        """Labelled items (with their latest label) in id order, read in batches."""
        base = filters or QueueFilter()
        where, params = where_clause(QueueFilter(**{**filter_fields(base), "labelled": "yes"}))
        last = 0
        while True:
            with self._read() as cur:
                rows = cur.all(
                    ITEM_SELECT + ", " + LABEL_COLUMNS + " FROM review_items i"
                    " JOIN review_labels l ON l.id ="
                    " (SELECT MAX(l2.id) FROM review_labels l2 WHERE l2.item_id = i.id)"
                    + where
                    + " AND i.id > ? ORDER BY i.id LIMIT ?",
                    (*params, last, batch),
                )
            for row in rows:
                yield item_from_row(row[:20]), label_from_row(row[20:])
            if len(rows) < batch:
                return
            last = int(rows[-1][0])

    def facets(self, limit: int = 200) -> Facets:
        """Apps, reasons and score names present, for the filter menus."""
        with self._read() as cur:
            apps = cur.all("SELECT DISTINCT app FROM review_items ORDER BY app LIMIT ?", (limit,))
            reasons = cur.all(
                "SELECT DISTINCT reason FROM review_reasons ORDER BY reason LIMIT ?", (limit,)
            )
            names = cur.all(
                "SELECT DISTINCT name FROM review_scores ORDER BY name LIMIT ?", (limit,)
            )
        return Facets(*(tuple(str(r[0]) for r in rows) for rows in (apps, reasons, names)))

    def stats(self) -> ReviewStats:
        """Waiting items by app and reason, labels by verdict, evaluator agreement."""
        with self._read() as cur:
            waiting = cur.all(
                "SELECT app, primary_reason, COUNT(*) FROM review_items WHERE verdict IS NULL"
                " GROUP BY app, primary_reason"
            )
            labels = cur.all(
                "SELECT i.app, l.verdict, COALESCE(l.failure_type, ''), COUNT(*)"
                " FROM review_labels l JOIN review_items i ON i.id = l.item_id"
                " GROUP BY i.app, l.verdict, COALESCE(l.failure_type, '')"
            )
            compared = cur.all(
                "SELECT i.app, s.name, s.evaluator, s.kind, i.verdict, i.failure_type,"
                " s.passed, COUNT(*) FROM review_items i JOIN review_scores s"
                " ON s.item_id = i.id WHERE i.verdict IN ('good', 'bad')"
                " AND s.passed IS NOT NULL AND s.has_error = 0 AND s.kind <> 'human'"
                " GROUP BY i.app, s.name, s.evaluator, s.kind, i.verdict, i.failure_type,"
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
