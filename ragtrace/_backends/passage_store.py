"""A file of what the evaluators compute from passages, filled at indexing time.

Most of a cold record's cost is the first sight of its passages: every sentence through MiniLM,
every chunk through spaCy's NER. A RAG corpus is known before it is served, so that work can be
done once, in bulk, when the corpus is indexed: ``ragtrace index`` (``ragtrace._offline.index``)
runs the evaluators over each passage and keeps every sentence vector and entity list they
compute in a ``PassageStore``; evaluation processes that open the store find them there instead
of computing them.

A store is one SQLite file: ``entries(key, value)``, the key a 16-byte BLAKE2b digest of
(namespace, text) as in ``ragtrace._backends.shared_cache``, the value the same raw bytes that
cache holds (vectors as float32, entities as JSON; nothing read is unpickled), and a ``meta``
table naming the format. The namespaces name the model (``embedding:all-MiniLM-L6-v2``), so a
store built with one model never answers for another; a ``namespaces`` table counts the values
of each (``ragtrace._backends.passage_namespaces``), so a reader skips, and logs once, lookups in
a namespace the store has nothing for, and ``describe()`` says what a store was built with.

Evaluation opens it read-only: ``$RAGTRACE_PASSAGE_STORE`` (read by every process on first use,
the worker processes of a pool and ``ragtrace worker`` included) or ``install(PassageStore(path))``.
Lookups that fail (the file removed or damaged under a running service) count as errors and
misses, logged once: the evaluators then compute what they need, as without a store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ragtrace._backends import passage_namespaces
from ragtrace._backends.shared_cache import key_digest
from ragtrace._backends.tier_counts import ERROR, HIT, MISS

ENV = "RAGTRACE_PASSAGE_STORE"
FORMAT = "ragtrace-passage-store/2"
FORMAT_1 = "ragtrace-passage-store/1"  # read, and upgraded by a writer: no namespace catalogue
FLUSH_EVERY = 512  # buffered writes per transaction

log = logging.getLogger(__name__)


class PassageStoreError(ValueError):
    """The path is not a passage store this version can read (or cannot be created)."""


@dataclass
class StoreStats:
    """What this process saw of the store.

    Attributes:
        hits: Lookups that found their value.
        misses: Lookups that did not (failed ones included).
        errors: Lookups or writes SQLite refused (the file gone, locked too long, damaged).
        writes: Values added (writable stores only; a key the file held already is not).
    """

    hits: int = 0
    misses: int = 0
    errors: int = 0
    writes: int = 0


@dataclass(frozen=True)
class StoreSummary:
    """What a store holds (``PassageStore.describe``).

    Attributes:
        path: The file.
        format: Its format.
        values: Values stored.
        size_bytes: The file's size.
        namespaces: Values per namespace (the models and splitters the store was built with),
            or None for a store written before they were counted.
    """

    path: str
    format: str
    values: int
    size_bytes: int
    namespaces: dict[str, int] | None


class PassageStore:
    """A passage store at ``path``.

    Args:
        path: The SQLite file.
        writable: False (default): open an existing store read-only; True: create it if
            missing and accept ``put``.

    Raises:
        PassageStoreError: A read-only path that does not exist, a file that is not a passage
            store (or another format of one), or a store that cannot be created.
    """

    def __init__(self, path: str | os.PathLike[str], *, writable: bool = False) -> None:
        self.path = Path(path)
        self.writable = writable
        self.stats = StoreStats()
        self._local = threading.local()
        self._pending: list[tuple[str, bytes, bytes]] = []  # (namespace, key, value)
        self._written: set[bytes] = set()  # keys written or found here (each written once)
        self._lock = threading.Lock()
        self._failed_once = False
        if self.path.exists() and not self.path.is_file():
            raise PassageStoreError(f"passage store {str(self.path)!r} is not a file")
        exists = self.path.is_file() and self.path.stat().st_size > 0
        if not writable and not exists:
            raise PassageStoreError(f"passage store {str(self.path)!r} does not exist")
        try:
            if exists:  # checked before a writer adds its tables to another program's file
                probe = self._connect(read_only=True)
                try:
                    self._check(probe)
                finally:
                    probe.close()
            self._check(self._connection())
        except sqlite3.Error as exc:
            raise PassageStoreError(
                f"{str(self.path)!r} cannot be opened as a passage store ({exc})"
            ) from exc
        self._guard = (
            None  # what a writer holds changes as it writes
            if writable
            else passage_namespaces.NamespaceGuard(self.namespaces, str(self.path))
        )

    def get(self, namespace: str, key: str) -> bytes | None:
        """The value stored for ``key`` in ``namespace``, or None (also when the lookup fails)."""
        return self.lookup(namespace, key)[0]

    def lookup(self, namespace: str, key: str) -> tuple[bytes | None, str]:
        """The value stored for ``key`` in ``namespace`` (or None) and how the lookup went:
        ``HIT``, ``MISS``, or ``ERROR`` when SQLite refused it (``ragtrace._backends.tier_counts``;
        counted in ``stats`` too)."""
        if self._guard is not None and not self._guard.may_hold(namespace):
            self.stats.misses += 1
            return None, MISS
        digest = key_digest(namespace, key)
        try:
            row = (
                self._connection()
                .execute("SELECT value FROM entries WHERE key = ?", (digest,))
                .fetchone()
            )
        except sqlite3.Error as exc:
            self._failed("read", exc)
            self.stats.misses += 1
            return None, ERROR
        if row is None:
            self.stats.misses += 1
            return None, MISS
        self.stats.hits += 1
        if self.writable:  # held already: a later put of it (re-indexing) writes nothing
            with self._lock:
                self._written.add(digest)
        return bytes(row[0]), HIT

    def put(self, namespace: str, key: str, value: bytes) -> None:
        """Store ``value`` for ``key`` (buffered; written by ``flush`` or every
        ``FLUSH_EVERY`` values; a key this object already wrote, or found by ``get``, is left
        as it is). Raises ``PassageStoreError`` on a read-only store."""
        if not self.writable:
            raise PassageStoreError(f"passage store {str(self.path)!r} is open read-only")
        digest = key_digest(namespace, key)
        with self._lock:
            if digest in self._written:
                return
            self._written.add(digest)
            self._pending.append((namespace, digest, bytes(value)))
            full = len(self._pending) >= FLUSH_EVERY
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the buffered values in one transaction (a failure is raised: indexing must
        not report passages as stored when they are not)."""
        with self._lock:
            rows, self._pending = self._pending, []
        if not rows:
            return
        by_namespace: dict[str, list[tuple[bytes, bytes]]] = defaultdict(list)
        for namespace, digest, value in rows:
            by_namespace[namespace].append((digest, value))
        connection = self._connection()
        added = 0
        with connection:
            for namespace, entries in by_namespace.items():
                # A key another writer (or an earlier run) stored keeps its value: the same
                # bytes, counted once in the catalogue.
                done = connection.executemany(
                    "INSERT OR IGNORE INTO entries VALUES (?, ?)", entries
                )
                stored = max(done.rowcount, 0)
                passage_namespaces.count(connection, namespace, stored)
                added += stored
        self.stats.writes += added

    def __len__(self) -> int:
        """Values stored (flushed ones)."""
        return int(self._connection().execute("SELECT count(*) FROM entries").fetchone()[0])

    def namespaces(self) -> dict[str, int] | None:
        """Values per namespace (flushed ones), or None for a store written by a ragtrace that
        did not count them (format 1, or values added to such a store since)."""
        return passage_namespaces.read(self._connection())

    def describe(self) -> StoreSummary:
        """What the store holds: format, values, file size, values per namespace."""
        connection = self._connection()
        return StoreSummary(
            path=str(self.path),
            format=str(_stored_format(connection)),
            values=len(self),
            size_bytes=self.path.stat().st_size,
            namespaces=self.namespaces(),
        )

    def close(self) -> None:
        """Flush (writable stores) and close this thread's connection.

        A writable store also leaves write-ahead logging when no other connection has it open,
        so the file it leaves is whole on its own: readers on a read-only mount open it without
        the ``-wal`` and ``-shm`` files WAL needs beside it.
        """
        if self.writable:
            self.flush()
        connection = getattr(self._local, "connection", None)
        if connection is None:
            return
        if self.writable and getattr(self._local, "pid", None) == os.getpid():
            # Another writer holding it keeps WAL on: the last one to close switches.
            with contextlib.suppress(sqlite3.Error):
                connection.execute("PRAGMA journal_mode=DELETE").fetchone()
        connection.close()
        self._local.connection = None

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (one per thread and process: SQLite connections cross
        neither)."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid() or local.connection is None:
            local.connection = self._connect()
            local.pid = os.getpid()
        connection: sqlite3.Connection = local.connection
        return connection

    def _connect(self, *, read_only: bool = False) -> sqlite3.Connection:
        if self.writable and not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=30.0)
            with connection:
                # 8 kB pages hold a 1.5 kB vector row in the tree; 4 kB ones spill each row to
                # an overflow page, more than doubling the file (a no-op on an existing file).
                connection.execute("PRAGMA page_size=8192")
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
                )
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS entries "
                    "(key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
                )
                found = _stored_format(connection)
                if found == FORMAT_1:  # upgraded: its catalogue is partial
                    connection.execute("UPDATE meta SET value = ? WHERE name = 'format'", (FORMAT,))
                connection.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?)", (FORMAT,))
                passage_namespaces.create(connection, fresh=found is None)
            return connection
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=5.0, check_same_thread=True)

    def _check(self, connection: sqlite3.Connection) -> None:
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
        if "meta" not in tables or "entries" not in tables:
            raise PassageStoreError(f"{str(self.path)!r} is not a passage store")
        stored = _stored_format(connection)
        if stored not in (FORMAT, FORMAT_1):
            found = "no format" if stored is None else f"format {stored!r}"
            raise PassageStoreError(
                f"{str(self.path)!r} has {found}; this ragtrace reads {FORMAT!r} and {FORMAT_1!r}"
            )

    def _failed(self, what: str, exc: sqlite3.Error) -> None:
        self.stats.errors += 1
        if not self._failed_once:
            self._failed_once = True
            log.error("passage store %s: %s failed (%s); computing instead", self.path, what, exc)


def _stored_format(connection: sqlite3.Connection) -> str | None:
    """The format a store's ``meta`` table names, or None."""
    row = connection.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
    return None if row is None else str(row[0])


_current: PassageStore | None = None
_from_env: tuple[str, PassageStore | None] = ("", None)
_env_lock = threading.Lock()


def install(store: PassageStore | None) -> None:
    """Make ``store`` the one this process's backends use, before ``$RAGTRACE_PASSAGE_STORE``
    (None: back to the variable)."""
    global _current
    _current = store


def install_path(path: str) -> None:
    """``install`` the store at ``path``, read-only; one that cannot be opened is logged and
    leaves this process without a store (a worker process must not die of it)."""
    try:
        install(PassageStore(path))
    except PassageStoreError as exc:
        log.error("passage store not opened: %s; evaluating without it", exc)


def current() -> PassageStore | None:
    """The store this process uses: the installed one, else the one
    ``$RAGTRACE_PASSAGE_STORE`` names (opened read-only on first use; a path that cannot be
    opened is logged once and means no store), else None."""
    if _current is not None:
        return _current
    global _from_env
    path = os.environ.get(ENV, "")
    if path == _from_env[0]:
        return _from_env[1]
    with _env_lock:
        store = None
        if path:
            try:
                store = PassageStore(path)
            except PassageStoreError as exc:
                log.error("%s: %s; evaluating without it", ENV, exc)
        _from_env = (path, store)
    return store


def open_configured() -> PassageStore | None:
    """The store ``$RAGTRACE_PASSAGE_STORE`` names, opened now (raises
    ``PassageStoreError`` for a bad one: commands check it as they start), or None when unset."""
    path = os.environ.get(ENV, "")
    return PassageStore(path) if path else None


def configured_problem() -> str | None:
    """What is wrong with the store ``$RAGTRACE_PASSAGE_STORE`` names, or None (also when
    unset): commands that evaluate check it as they start and refuse to run with a bad one."""
    try:
        open_configured()
    except PassageStoreError as exc:
        return f"${ENV}: {exc}"
    return None


def installed() -> PassageStore | None:
    """The store given to ``install``, if any (not one the variable names)."""
    return _current


def installed_path() -> str | None:
    """The path of the store installed with ``install`` (not one named by the variable, which
    a new process reads itself), for the processes a pool starts."""
    return None if _current is None else str(_current.path)
