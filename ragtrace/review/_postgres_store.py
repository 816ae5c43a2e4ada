"""The shared review store: PostgreSQL, for several app instances and reviewers.

Same schema and SQL as the SQLite store (``ragtrace.review._sql_store``), through psycopg 3
(``pip install 'psycopg[binary]'``). Writers lock only the rows they touch (an upsert of the
same request from two processes waits on the row, then merges); migrations take a transaction
advisory lock so concurrent processes apply them once. A pooled connection is checked with one
round trip before it is lent, so a server restart costs only the writes made while it was down.
The question search reads ``review_search`` (each question lower-cased, in a narrow table) through
a ``pg_trgm`` GIN index (the extension is created when the role may; otherwise the search reads
that table through, logged)::

    store = PostgresReviewStore("postgresql://ragtrace@db.internal/ragtrace")
"""

from __future__ import annotations

import logging
import re
from typing import Any

from ragtrace.review._schema import POSTGRESQL
from ragtrace.review._sql import Cursor
from ragtrace.review._sql_store import SqlReviewStore

logger = logging.getLogger("ragtrace.review")
MIGRATION_LOCK = 0x7261677472616365  # "ragtrace": the advisory lock key of schema changes
_PASSWORD = re.compile(r"(://[^:/@]+:)[^@]*@")


class PostgresReviewStore(SqlReviewStore):
    """A review store in a PostgreSQL database.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user:pass@host:5432/db``).
        connect_timeout_s: How long opening a connection may take.

    Raises:
        ImportError: psycopg is not installed, naming the package.
        psycopg.OperationalError: The server cannot be reached.
    """

    dialect = POSTGRESQL

    def __init__(self, dsn: str, connect_timeout_s: float = 10.0) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise ImportError(
                "the PostgreSQL review store needs psycopg: pip install 'psycopg[binary]'"
            ) from exc
        super().__init__()
        self._psycopg = psycopg
        self._dsn = dsn
        self._connect_timeout = max(1, int(connect_timeout_s))
        self.migrate()

    @property
    def url(self) -> str:
        return _PASSWORD.sub(r"\1***@", self._dsn)

    def _connect(self) -> Any:
        conn = self._psycopg.connect(
            self._dsn, autocommit=False, connect_timeout=self._connect_timeout
        )
        # The queue's queries are short index walks that stop at a page: parallel workers only
        # add their start-up, which on a busy server is most of a page's time.
        conn.execute("SET max_parallel_workers_per_gather = 0")
        conn.commit()
        return conn

    def _alive(self, conn: Any) -> bool:
        """One round trip on an idle connection: after the server restarted (or dropped it),
        the pool would otherwise lend a dead connection, and lose that transaction's writes.
        The ping opens the transaction the borrower then runs."""
        if conn.closed:
            return False
        try:
            conn.execute("SELECT 1")
        except self._psycopg.Error:
            return False
        return True

    def _begin(self, conn: Any, write: bool) -> None:
        """psycopg opens the transaction with the first statement."""

    def _lock_schema(self, cur: Cursor) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))

    def _prepare_search(self, cur: Cursor) -> bool:
        """``review_search``: each question, lower-cased, in a narrow table (what a trigram
        match rechecks is read there, not in the wide item rows), with a ``pg_trgm`` index
        when the extension can be had."""
        exists = cur.one("SELECT to_regclass('review_search')")[0] is not None
        if not exists:
            cur.execute(
                "CREATE TABLE review_search (item_id BIGINT PRIMARY KEY"
                " REFERENCES review_items (id) ON DELETE CASCADE, query TEXT NOT NULL)"
            )
            cur.execute(
                "INSERT INTO review_search (item_id, query) SELECT id, lower(query)"
                " FROM review_items WHERE query IS NOT NULL"
            )
        cur.execute("SAVEPOINT ragtrace_search")
        try:
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            row = cur.one(
                "SELECT n.nspname FROM pg_extension e"
                " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
            )
            cur.execute(
                "CREATE INDEX IF NOT EXISTS review_search_trgm ON review_search"
                f' USING gin (query "{row[0]}".gin_trgm_ops)'
            )
        except self._psycopg.Error as exc:
            cur.execute("ROLLBACK TO SAVEPOINT ragtrace_search")
            logger.warning(
                "ragtrace review: no pg_trgm index for the question search (%s); it reads "
                "every question. A superuser can run: CREATE EXTENSION pg_trgm",
                str(exc).strip(),
            )
        else:
            cur.execute("RELEASE SAVEPOINT ragtrace_search")
        return True

    def _index_search(self, cur: Cursor, item_id: int, query: str | None) -> None:
        if query:
            cur.execute(
                "INSERT INTO review_search (item_id, query) VALUES (?, lower(?))", (item_id, query)
            )

    def _search_clause(self, text: str, item_id: str) -> tuple[str, list[Any]]:
        escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return (
            f"{item_id} IN (SELECT r.item_id FROM review_search r WHERE r.query LIKE ?)",
            [f"%{escaped}%"],
        )
