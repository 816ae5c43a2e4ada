"""The queue's filters as SQL: one walk of one index in queue order, never a subquery per item.

Every row a filter reads carries the item's place in the queue (priority, verdict, app,
request time): ``review_queue`` holds one narrow row per item, and each score and reason row
has the same columns copied in (``ragtrace.review._schema``). A query walks one table (the
*driver*, ``d``) through an index whose order is the queue's, checks the other conditions on
the entries it reads, and stops at the end of the page:

- an evaluator filter (with or without a score range) drives from ``review_scores`` through
  ``(name | evaluator, priority, item_id, value, verdict, app, request_ns)``;
- else a reason filter drives from ``review_reasons`` through ``(reason, priority, item_id,
  ...)``;
- else ``review_queue`` is the driver (``(priority, item_id, ...)``, ``(verdict, priority,
  item_id)``, ``(app, priority, item_id, ...)``, ``(session_id, priority, item_id, ...)``).

A reason or a session beside an evaluator, or a score range without an evaluator, is a join
that looks each walked item up by id (``review_reasons (item_id, reason)``, ``review_scores
(item_id, value)``, ``review_queue``'s primary key); the question is a list computed once from
the backend's trigram index (``SearchClause``). An item with two rows (two scores of one
name, two reasons of one name) counts once: ``GROUP BY priority, item_id``, which follows the
walk's order. A filter on the queue's own columns is
counted exactly from an index; any other count stops past a cap, so no page reads more than
the cap's worth of entries::

    query = QueueQuery(filters, search, score_column="name")
    sql, params = query.page_ids(offset=0, limit=50)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ragtrace.review._items import MIN_SEARCH_CHARS, QueueFilter

ORDER = " ORDER BY d.priority DESC, d.item_id DESC"
JOIN = "CROSS JOIN"
"""How the walk joins a table it looks items up in (the condition is in the WHERE clause):
SQLite keeps a cross join's order, the driver first; PostgreSQL plans it as any join."""
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
        pin_driver: Spell the walk out for a planner that cannot tell the sizes (SQLite): a
            lookup is a ``CROSS JOIN`` (whose order SQLite keeps: the driver first) and a list
            is only checked (``+``), never driven from. Without it (PostgreSQL), a lookup is an
            ``EXISTS`` the planner makes a semi-join, free to walk the driver's index in order.
    """

    filters: QueueFilter
    search: SearchClause
    score_column: ScoreColumn = "name"
    pin_driver: bool = False

    def driver(self) -> str:
        """The table the query walks (as ``d``)."""
        if self.filters.evaluator is not None:
            return "review_scores"
        if self.filters.reason is not None:
            return "review_reasons"
        return "review_queue"

    def _from(self) -> tuple[str, str, list[Any], bool]:
        """`` FROM ...``, `` WHERE ...`` (or ``""``), the parameters, and whether an item may
        come out twice (a driver or a join with several rows per item)."""
        f = self.filters
        table = self.driver()
        joins: list[str] = []
        clauses: list[str] = []
        params: list[Any] = []

        def add(clause: str, *values: Any) -> None:
            clauses.append(clause)
            params.extend(values)

        def lookup(source: str, conditions: list[str], values: list[Any]) -> None:
            """Each walked item looked up by id in ``source`` (``<table> <alias>``)."""
            alias = source.rsplit(maxsplit=1)[-1]
            match = [f"{alias}.item_id = d.item_id", *conditions]
            if self.pin_driver:
                joins.append(f"{JOIN} {source}")
                add(" AND ".join(match), *values)
            else:
                add(f"EXISTS (SELECT 1 FROM {source} WHERE {' AND '.join(match)})", *values)

        bounds = [("min_score", ">="), ("max_score", "<=")]
        if table == "review_scores":
            add(f"d.{self.score_column} = ?", f.evaluator)
            for name, op in bounds:
                if getattr(f, name) is not None:
                    add(f"d.value {op} ?", float(getattr(f, name)))
        elif f.min_score is not None or f.max_score is not None:
            # A range over any score: each item of the walk looks its scores up by item id.
            ranges = [
                (f"s.value {op} ?", getattr(f, n)) for n, op in bounds if getattr(f, n) is not None
            ]
            lookup("review_scores s", ["s.value IS NOT NULL", *(c for c, _ in ranges)],
                   [float(v) for _, v in ranges])  # fmt: skip
        # A reason, a session: a condition on the driver when it holds the column (the
        # session's index on review_queue walks in queue order), else looked up by item id.
        for value, source, column in (
            (f.reason, "review_reasons r", "reason"),
            (f.session, "review_queue q", "session_id"),
        ):
            name, alias = source.split()
            if value is None:
                continue
            if table == name:
                add(f"d.{column} = ?", value)
            else:
                lookup(source, [f"{alias}.{column} = ?"], [value])
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
            # the trigram index's matches, computed once; beside a walk of scores or reasons
            # only checked ("+": SQLite then never drives from them)
            pinned = self.pin_driver and table != "review_queue"
            add(*_flat(self.search(f.search, "+d.item_id" if pinned else "d.item_id")))
        tables = f" FROM {table} d" + "".join(" " + j for j in joins)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        return tables, where, params, table != "review_queue" or bool(joins)

    def ids(self) -> tuple[str, list[Any]]:
        """The ids of the items the filter selects, each once, in no particular order."""
        tables, where, params, repeats = self._from()
        group = " GROUP BY d.priority, d.item_id" if repeats else ""
        return "SELECT d.item_id" + tables + where + group, params

    def page_ids(self, offset: int, limit: int) -> tuple[str, list[Any]]:
        """The ids of one page, in queue order."""
        sql, params = self.ids()
        return sql + ORDER + " LIMIT ? OFFSET ?", [*params, limit, offset]

    @property
    def counts_exactly(self) -> bool:
        """Whether ``count`` counts every match: a filter on the queue's own columns (an index
        range); one that reads scores, reasons or the question stops past its cap."""
        f = self.filters
        return (
            self.driver() == "review_queue"
            and f.search is None
            and not (f.min_score is not None or f.max_score is not None)
        )

    def count(self, cap: int) -> tuple[str, list[Any]]:
        """How many items the filter selects (see ``counts_exactly``; else at most
        ``cap + 1``, walking in queue order)."""
        tables, where, params, _ = self._from()
        if self.counts_exactly:
            return "SELECT COUNT(*)" + tables + where, params
        ids, params = self.ids()
        return f"SELECT COUNT(*) FROM ({ids}{ORDER} LIMIT ?) g", [*params, cap + 1]

    def neighbour(self, priority: int, item_id: int, after: bool) -> tuple[str, list[Any]]:
        """The id just after (or before) ``(priority, item_id)`` in queue order."""
        tables, where, params, _ = self._from()
        glue = " AND " if where else " WHERE "
        if after:
            step = "(d.priority < ? OR (d.priority = ? AND d.item_id < ?))"
            order = ORDER
        else:
            step = "(d.priority > ? OR (d.priority = ? AND d.item_id > ?))"
            order = " ORDER BY d.priority ASC, d.item_id ASC"
        query = "SELECT d.item_id" + tables + where + glue + step + order + " LIMIT 1"
        return query, [*params, priority, priority, item_id]


def _flat(clause: tuple[str, list[Any]]) -> tuple[Any, ...]:
    return (clause[0], *clause[1])
