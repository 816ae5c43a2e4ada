"""The embedded review store: one SQLite file in WAL mode.

Safe with several threads and several processes writing at once: every write is a
``BEGIN IMMEDIATE`` transaction (SQLite's single writer lock, taken up front so two writers
never deadlock upgrading read locks), waits for the lock up to ``busy_timeout_s``, and readers
never block writers (WAL). ``synchronous=NORMAL`` is WAL's usual setting: a power cut may lose
the last transactions, never corrupt the file.

``SqliteReviewStore("review.db")`` creates the file (and its folder) and the tables.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from typing import Any

from ragtrace.review.schema import SQLITE
from ragtrace.review.sql_store import SqlReviewStore


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
