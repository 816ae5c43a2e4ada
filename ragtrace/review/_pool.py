"""Connections, transactions and schema migrations under the review stores.

``PooledDatabase`` keeps a few idle DB-API connections, lends one per transaction
(``_write()`` / ``_read()``: committed on success, rolled back and dropped on error; an idle one
the backend finds dead, ``_alive``, is dropped before it is lent), and applies
``ragtrace.review._schema`` migrations.
"""

from __future__ import annotations

import contextlib
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Self

from ragtrace.review._schema import VERSION_TABLE, Dialect, statements_after
from ragtrace.review._sql import Cursor


class PooledDatabase(ABC):
    """Connections, transactions and migrations of one database.

    Subclasses say how to open a connection and how a transaction starts. Connections are
    borrowed per transaction from a small pool, so request threads that come and go leave
    nothing open; after ``os.fork`` the child drops the parent's connections and opens its own.
    """

    dialect: Dialect
    max_idle = 8

    def __init__(self) -> None:
        self._pool_lock = threading.Lock()
        self._idle: list[Any] = []
        self._pid = os.getpid()
        self._closed = False
        self.search_indexed = False

    @abstractmethod
    def _connect(self) -> Any:
        """A new DB-API connection."""

    @abstractmethod
    def _begin(self, conn: Any, write: bool) -> None:
        """Start a transaction (a write one takes the lock writers need)."""

    def _lock_schema(self, cur: Cursor) -> None:  # noqa: B027 - optional hook
        """Serialise migrations between processes (SQLite's BEGIN IMMEDIATE already does)."""

    def _prepare_search(self, cur: Cursor) -> bool:
        """Create the question-search index where the database offers one (idempotent);
        whether there is one. Default: none."""
        return False

    @property
    @abstractmethod
    def url(self) -> str:
        """Where the store lives (a path, or a URL without its password)."""

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Cursor]:
        conn = self._borrow()
        try:
            self._begin(conn, write)
            yield Cursor(conn.cursor(), self.dialect)
            conn.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                conn.rollback()
            with contextlib.suppress(Exception):
                conn.close()
            raise
        self._give_back(conn)

    def _write(self) -> AbstractContextManager[Cursor]:
        """A write transaction (committed on success, rolled back on error)."""
        return self._transaction(write=True)

    def _read(self) -> AbstractContextManager[Cursor]:
        """A read transaction (one snapshot for the statements inside)."""
        return self._transaction(write=False)

    def _alive(self, conn: Any) -> bool:
        """Whether an idle connection can still be used (a server that restarted has closed
        them all); a dead one is dropped and the next tried. Default: always."""
        return True

    def _borrow(self) -> Any:
        while True:
            with self._pool_lock:
                if self._closed:
                    raise RuntimeError(f"review store {self.url} is closed")
                if self._pid != os.getpid():  # a forked child: the parent's are not ours
                    self._pid, self._idle = os.getpid(), []
                if not self._idle:
                    break
                conn = self._idle.pop()
            if self._alive(conn):
                return conn
            with contextlib.suppress(Exception):
                conn.close()
        return self._connect()

    def _give_back(self, conn: Any) -> None:
        with self._pool_lock:
            if not self._closed and self._pid == os.getpid() and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        with contextlib.suppress(Exception):
            conn.close()

    def close(self) -> None:
        """Close the pooled connections; later use raises (idempotent)."""
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()

    def migrate(self) -> int:
        """Create or upgrade the tables; returns the schema version now in place.

        Raises:
            SchemaTooNew: The database was migrated by a newer ragtrace.
        """
        with self._write() as cur:
            self._lock_schema(cur)
            cur.execute(VERSION_TABLE)
            current = int(cur.one("SELECT MAX(version) FROM review_schema")[0] or 0)
            for version, statements in statements_after(current, self.dialect):
                for statement in statements:
                    cur.execute(statement)
                cur.execute("INSERT INTO review_schema (version) VALUES (?)", (version,))
                current = version
            self.search_indexed = self._prepare_search(cur)
        return current

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"
