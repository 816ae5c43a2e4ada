"""The queue's filters as SQL: one walk of one index in queue order, never a subquery per item.

Every row a filter reads carries the item's place in the queue (priority, verdict, app,
request time): ``review_queue`` holds one narrow row per item, and each score and reason row
has the same columns copied in (``ragtrace.review.schema``). A query therefore walks one table
(the *driver*) through an index whose order is the queue's, checks the other conditions on the
index entries it reads, and stops at the end of the page:

- a score filter (evaluator, min, max) drives from ``review_scores`` through
  ``(name | evaluator, priority, item_id, value, verdict, app, request_ns)`` (``(value, ...)``
  for a range over any score);
- else a reason filter drives from ``review_reasons`` through ``(reason, priority, item_id,
  ...)``;
- else ``review_queue`` is the driver (indexes on ``(priority, item_id, ...)``, ``(verdict,
  priority, item_id)``, ``(app, priority, item_id, ...)``).

A reason or question filter beside a score filter is a list computed once from its own index
(``item_id IN (SELECT item_id FROM review_reasons WHERE reason = ?)``; the question through the
backend's trigram index, ``SearchClause``). An item with two rows in the driver (two reasons
of one name, two scores of one name) counts once (``GROUP BY priority, item_id``, which follows
the index order). Counts walk the same index ranges, reading index entries only::

    query = QueueQuery(filters, search, score_column="name")
    sql, params = query.page_ids(offset=0, limit=50)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ragtrace.review.items import MIN_SEARCH_CHARS, QueueFilter

TRIGRAM_MIN_CHARS = MIN_SEARCH_CHARS
"""The shortest question search a trigram index answers (``QueueFilter`` refuses shorter)."""
SearchClause = Callable[[str, str], tuple[str, list[Any]]]
"""(question text, an item id expression) -> (predicate on that expression, its parameters)."""
ScoreColumn = Literal["name", "evaluator"]


@dataclass(frozen=True)
class QueueQuery:
    """The SQL of one filter over the queue.

    Args:
        filters: What to select.
        search: The backend's question-search predicate.
        score_column: What ``filters.evaluator`` names: a score (``name``) or an evaluator.
        pin_driver: Keep the database from driving a query from a list (SQLite does when it
            cannot tell the list's size): lists are checked while the driver's index is walked.
    """

    filters: QueueFilter
    search: SearchClause
    score_column: ScoreColumn = "name"
    pin_driver: bool = False

    @property
    def _scored(self) -> bool:
        f = self.filters
        return f.evaluator is not None or f.min_score is not None or f.max_score is not None

    def driver(self) -> tuple[str, str]:
        """``(table, alias)`` the query walks."""
        if self._scored:
            return "review_scores", "d"
        if self.filters.reason is not None:
            return "review_reasons", "d"
        return "review_queue", "d"

    def where(self) -> tuple[str, list[Any]]:
        """`` WHERE ...`` (or ``""``) over the driver ``d``, and its parameters."""
        f = self.filters
        table, _ = self.driver()
        clauses: list[str] = []
        params: list[Any] = []
        # A list beside a child driver is only checked ("+" keeps SQLite from walking it).
        listed = "+d.item_id" if self.pin_driver and table != "review_queue" else "d.item_id"

        def add(clause: str, *values: Any) -> None:
            clauses.append(clause)
            params.extend(values)

        if table == "review_scores":
            if f.evaluator is not None:
                add(f"d.{self.score_column} = ?", f.evaluator)
            else:
                add("d.value IS NOT NULL")
            if f.min_score is not None:
                add("d.value >= ?", float(f.min_score))
            if f.max_score is not None:
                add("d.value <= ?", float(f.max_score))
            if f.reason is not None:
                add(f"{listed} IN (SELECT r.item_id FROM review_reasons r WHERE r.reason = ?)",
                    f.reason)  # fmt: skip
        elif table == "review_reasons":
            add("d.reason = ?", f.reason)
        if f.labelled == "no":
            add("d.verdict IS NULL")
        elif f.labelled == "yes":
            add("d.verdict IS NOT NULL")
        if f.verdict is not None:
            add("d.verdict = ?", f.verdict)
        if f.app is not None:
            add("d.app = ?", f.app)
        if f.since_ns is not None:
            add("d.request_ns >= ?", int(f.since_ns))
        if f.until_ns is not None:
            add("d.request_ns < ?", int(f.until_ns))
        if f.search is not None:
            add(*_flat(self.search(f.search, listed)))
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def ids(self) -> tuple[str, list[Any]]:
        """The ids of the items the filter selects, each once, in no particular order."""
        table, _ = self.driver()
        where, params = self.where()
        group = "" if table == "review_queue" else " GROUP BY d.priority, d.item_id"
        return f"SELECT d.item_id FROM {table} d" + where + group, params

    def page_ids(self, offset: int, limit: int) -> tuple[str, list[Any]]:
        """The ids of one page, in queue order."""
        sql, params = self.ids()
        order = " ORDER BY d.priority DESC, d.item_id DESC LIMIT ? OFFSET ?"
        return sql + order, [*params, limit, offset]

    def count(self) -> tuple[str, list[Any]]:
        """How many items the filter selects."""
        table, _ = self.driver()
        if table == "review_queue":
            where, params = self.where()
            return "SELECT COUNT(*) FROM review_queue d" + where, params
        sql, params = self.ids()
        return f"SELECT COUNT(*) FROM ({sql}) g", params

    def neighbour(self, priority: int, item_id: int, after: bool) -> tuple[str, list[Any]]:
        """The id just after (or before) ``(priority, item_id)`` in queue order."""
        where, params = self.where()
        table, _ = self.driver()
        glue = " AND " if where else " WHERE "
        if after:
            step = "(d.priority < ? OR (d.priority = ? AND d.item_id < ?))"
            order = " ORDER BY d.priority DESC, d.item_id DESC"
        else:
            step = "(d.priority > ? OR (d.priority = ? AND d.item_id > ?))"
            order = " ORDER BY d.priority ASC, d.item_id ASC"
        sql = f"SELECT d.item_id FROM {table} d" + where + glue + step + order + " LIMIT 1"
        return sql, [*params, priority, priority, item_id]


def _flat(clause: tuple[str, list[Any]]) -> tuple[Any, ...]:
    return (clause[0], *clause[1])
