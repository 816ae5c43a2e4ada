"""The embedded review store: one SQLite file in WAL mode.

Safe with several threads and several processes writing at once: every write is a
``BEGIN IMMEDIATE`` transaction (SQLite's single writer lock, taken up front so two writers
never deadlock upgrading read locks), waits for the lock up to ``busy_timeout_s``, and readers
never block writers (WAL). ``synchronous=NORMAL`` is WAL's usual setting: a power cut may lose
the last transactions, never corrupt the file.

The question search reads an FTS5 table with the trigram tokenizer (``review_search``, rows
deleted with their item by a trigger): a substring of 3 characters or more is found through
that index. Where SQLite was built without FTS5, the search reads every question (logged).

``SqliteReviewStore("review.db")`` creates the file (and its folder) and the tables.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import time
from typing import Any

from ragtrace.review._queries import TRIGRAM_MIN_CHARS
from ragtrace.review._schema import SQLITE
from ragtrace.review._sql import Cursor
from ragtrace.review._sql_store import SqlReviewStore

logger = logging.getLogger("ragtrace.review")


class SqliteReviewStore(SqlReviewStore):
    """A review store in one SQLite file.

    Args:
        path: The database file (created with its folder when missing).
        busy_timeout_s: How long a writer waits for another writer's lock before failing.

    Raises:
        ValueError: An in-memory database (each connection would see its own empty one).
    """

    dialect = SQLITE

    def __init__(self, path: str | os.PathLike[str], busy_timeout_s: float = 30.0) -> None:
        text = os.fspath(path)
        if not text or text == ":memory:" or text.startswith("file::memory:"):
            raise ValueError("the SQLite review store needs a file path, not an in-memory database")
        super().__init__()
        self.path = os.path.abspath(text)
        self.busy_timeout_s = busy_timeout_s
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        self.migrate()

    @property
    def url(self) -> str:
        return self.path

    def _connect(self) -> Any:
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout_s,
            isolation_level=None,  # we issue BEGIN ourselves
            check_same_thread=False,  # borrowed by one thread at a time from the pool
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        self._use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _use_wal(self, conn: Any) -> None:
        """Switch a new database to WAL (a setting kept in the file).

        The switch needs the database to itself, and SQLite answers "database is locked" at
        once, without its busy handler, when another connection is busy: so several processes
        opening a fresh store together retry here, up to ``busy_timeout_s``.
        """
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + random.random() * 0.04)

    def _begin(self, conn: Any, write: bool) -> None:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _prepare_search(self, cur: Cursor) -> bool:
        if cur.one("SELECT 1 FROM sqlite_master WHERE name = 'review_search'") is not None:
            return True
        try:
            cur.execute("CREATE VIRTUAL TABLE review_search USING fts5(query, tokenize='trigram')")
        except sqlite3.OperationalError as exc:
            logger.warning(
                "ragtrace review: SQLite %s has no FTS5 trigram tokenizer (%s): the question "
                "search reads every question",
                sqlite3.sqlite_version,
                exc,
            )
            return False
        cur.execute(
            "INSERT INTO review_search (rowid, query) SELECT id, query FROM review_items"
            " WHERE query IS NOT NULL"
        )
        cur.execute(
            "CREATE TRIGGER review_search_delete AFTER DELETE ON review_items"
            " BEGIN DELETE FROM review_search WHERE rowid = old.id; END"
        )
        return True

    def _index_search(self, cur: Cursor, item_id: int, query: str | None) -> None:
        if self.search_indexed and query:
            cur.execute("INSERT INTO review_search (rowid, query) VALUES (?, ?)", (item_id, query))

    def _search_clause(self, text: str, item_id: str) -> tuple[str, list[Any]]:
        if not self.search_indexed or len(text) < TRIGRAM_MIN_CHARS:
            return super()._search_clause(text, item_id)
        phrase = '"' + text.replace('"', '""') + '"'  # a phrase of trigrams: the substring
        return (
            f"{item_id} IN (SELECT rowid FROM review_search WHERE review_search MATCH ?)",
            [phrase],
        )
