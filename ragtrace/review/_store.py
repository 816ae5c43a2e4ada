"""Opening a review store: queued items, their labels, filters and the figures behind the metrics.

``open_store(url)`` opens one: a file path or ``sqlite:///path`` gives the embedded SQLite store
(the default: one file, WAL, safe with several threads and processes), ``postgresql://...`` the
PostgreSQL store for a shared deployment. Both run the same SQL (``SqlReviewStore``, in
``ragtrace.review._sql_store``) on the same schema (``ragtrace.review._schema``)::

    store = open_store("review.db")
    item_id = store.enqueue(item)                       # upsert by (trace id, span id)
    page = store.page(QueueFilter(reason="pii"), offset=0, limit=50)
    store.add_label(item_id, Label("bad", "hallucination", notes="made up the date"))

This module is the only one that knows the backends; the SQL store knows none of them.
"""

from __future__ import annotations

from ragtrace.review._postgres_store import PostgresReviewStore
from ragtrace.review._sql_store import MAX_PAGE, Retention, ReviewStore, SqlReviewStore
from ragtrace.review._sqlite_store import SqliteReviewStore

__all__ = [
    "DEFAULT_SQLITE_PATH",
    "MAX_PAGE",
    "Retention",
    "ReviewStore",
    "SqlReviewStore",
    "open_store",
]

DEFAULT_SQLITE_PATH = "ragtrace-review.db"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(url: str | None = None) -> SqlReviewStore:
    """Open (and create or migrate) a review store.

    Args:
        url: ``postgresql://user@host/db`` (or ``postgres://``) for PostgreSQL; a file path,
            ``sqlite:///abs/path`` or ``sqlite://rel/path`` for SQLite; default
            ``ragtrace-review.db`` in the working directory.

    Raises:
        ValueError: ``:memory:`` (every thread would see its own empty database).
        ImportError: PostgreSQL without psycopg, naming the package to install.
    """
    target = url or DEFAULT_SQLITE_PATH
    if target.startswith(POSTGRES_SCHEMES):
        return PostgresReviewStore(target)
    return SqliteReviewStore(target.removeprefix("sqlite://"))
