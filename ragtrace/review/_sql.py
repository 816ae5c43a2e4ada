"""The SQL the review stores share: rows to items, JSON columns, distinct values.

Statements are written with ``?`` markers; ``Cursor`` turns them into the driver's style, so the
same text runs on sqlite3 and psycopg.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.review._conversations import conversation_from_json, tool_calls_from_json
from ragtrace.review._items import (
    Label,
    Reason,
    ReviewItem,
    StoredLabel,
    StoredScore,
    chunk_from_json,
)
from ragtrace.review._schema import Dialect

ITEM_COLUMNS = (
    "id, trace_id, span_id, app, model, request_ns, queued_ns, status, error, query, response, "
    "reference, chunks_json, scores_json, reasons_json, attributes_json, priority, verdict, "
    "failure_type, labelled_ns, session_id, user_id, turn, conversation_json, tool_calls_json, "
    "llm_calls"
)
ITEM_WIDTH = len(ITEM_COLUMNS.split(","))
"""How many columns ``ITEM_SELECT`` reads (a row that goes on with other columns is cut there)."""
ITEM_SELECT = "SELECT " + ", ".join(f"i.{c.strip()}" for c in ITEM_COLUMNS.split(","))
LABEL_COLUMNS = (
    "l.id, l.item_id, l.created_ns, l.verdict, l.failure_type, l.notes, "
    "l.corrected_answer, l.reviewer"
)


@dataclass(frozen=True)
class Page:
    """One page of the queue: the items, how many match in all, where the page starts.

    A filter on scores, reasons or the question is counted up to ``COUNT_CAP`` matches past
    the page's start: ``more`` is then True and ``total`` a lower bound ("1,000+").
    """

    items: tuple[ReviewItem, ...]
    total: int
    offset: int
    limit: int
    more: bool = False


@dataclass(frozen=True)
class Facets:
    """The values the filters can take: apps, reasons and score names present in the store."""

    apps: tuple[str, ...]
    reasons: tuple[str, ...]
    evaluators: tuple[str, ...]


class Cursor:
    """A DB-API cursor speaking ``?`` parameters whatever the driver's style."""

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self._raw = raw
        self._dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._raw.execute(self._dialect.sql(sql), tuple(params))

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._raw.executemany(self._dialect.sql(sql), [tuple(r) for r in rows])

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self.execute(sql, params)
        return self._raw.fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.execute(sql, params)
        return list(self._raw.fetchall())


def distinct_values(cur: Cursor, table: str, column: str, limit: int) -> tuple[str, ...]:
    """The first ``limit`` distinct values of an indexed column, in order, one index probe
    each (a loose index scan), however many rows hold them. ``table`` and ``column`` are
    names from this package, never user input."""
    rows = cur.all(
        f"WITH RECURSIVE seen(v, n) AS ("
        f" SELECT (SELECT MIN({column}) FROM {table}), 1"
        f" UNION ALL SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > seen.v), n + 1"
        f" FROM seen WHERE seen.v IS NOT NULL AND n < ?)"
        f" SELECT v FROM seen WHERE v IS NOT NULL",
        (limit,),
    )
    return tuple(str(r[0]) for r in rows)


@dataclass(frozen=True)
class QueuePlace:
    """An item's place in the queue, copied onto its score and reason rows."""

    priority: int
    verdict: str | None
    app: str
    request_ns: int


def insert_children(
    cur: Cursor,
    item_id: int,
    scores: Sequence[StoredScore],
    reasons: Sequence[Reason],
    place: QueuePlace,
) -> None:
    where = (place.priority, place.verdict, place.app, place.request_ns)
    cur.many(
        "INSERT INTO review_scores (item_id, name, evaluator, kind, value, passed, has_error,"
        " priority, verdict, app, request_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                item_id,
                s.score.name,
                s.evaluator,
                s.score.evaluator_kind,
                s.to_json()["value"],
                None if s.score.passed is None else int(s.score.passed),
                int(s.score.error is not None),
                *where,
            )
            for s in scores
        ],
    )
    cur.many(
        "INSERT INTO review_reasons (item_id, reason, evaluator, detail, priority, verdict, app,"
        " request_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(item_id, r.name, r.evaluator, r.detail, *where) for r in reasons],
    )


def merge_scores(old: Sequence[StoredScore], new: Sequence[StoredScore]) -> tuple[StoredScore, ...]:
    replaced = {(s.evaluator, s.score.name) for s in new}
    return (*(s for s in old if (s.evaluator, s.score.name) not in replaced), *new)


def merge_reasons(old: Sequence[Reason], new: Sequence[Reason]) -> tuple[Reason, ...]:
    seen = {(r.name, r.evaluator) for r in old}
    return (*old, *(r for r in new if (r.name, r.evaluator) not in seen))


def record_key(item: ReviewItem) -> str:
    if item.trace_id and item.span_id:
        return f"{item.trace_id}:{item.span_id}"
    return f"anonymous:{uuid.uuid4().hex}"


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def load_json(text: object, default: Any) -> Any:
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def scores_from_json(text: object) -> tuple[StoredScore, ...]:
    return tuple(StoredScore.from_json(s) for s in load_json(text, []) if isinstance(s, dict))


def reasons_from_json(text: object) -> tuple[Reason, ...]:
    return tuple(Reason.from_json(r) for r in load_json(text, []) if isinstance(r, dict))


def item_from_row(row: Sequence[Any]) -> ReviewItem:
    return ReviewItem(
        id=int(row[0]),
        trace_id=str(row[1]),
        span_id=str(row[2]),
        app=str(row[3]),
        model=row[4],
        request_ns=int(row[5]),
        queued_ns=int(row[6]),
        status=str(row[7]),
        error=row[8],
        query=row[9],
        response=row[10],
        reference=row[11],
        chunks=tuple(chunk_from_json(c) for c in load_json(row[12], [])),
        scores=scores_from_json(row[13]),
        reasons=reasons_from_json(row[14]),
        attributes=load_json(row[15], {}),
        priority=int(row[16]),
        verdict=row[17],
        failure_type=row[18],
        labelled_ns=None if row[19] is None else int(row[19]),
        conversation=conversation_from_json(row[20], row[21], row[22], load_json(row[23], {})),
        tool_calls=tool_calls_from_json(load_json(row[24], [])),
        llm_calls=int(row[25] or 0),
    )


def label_from_row(row: Sequence[Any]) -> StoredLabel:
    return StoredLabel(
        id=int(row[0]),
        item_id=int(row[1]),
        created_ns=int(row[2]),
        label=Label(
            verdict=str(row[3]),
            failure_type=row[4],
            notes=row[5],
            corrected_answer=row[6],
            reviewer=row[7],
        ),
    )
