"""Which namespaces a passage store holds values for, and how many: its catalogue.

A store's keys are digests, so the namespaces (``embedding:all-MiniLM-L6-v2``, ``ner:...``,
``sentences:...``) cannot be read back from them. Writers therefore count the values they add
per namespace in a ``namespaces`` table, in the same transaction as the values. With it:

- ``ragtrace index --describe`` says what a store was built with;
- a reading process skips lookups in a namespace the store has nothing for, and logs once,
  naming what the store holds: a store indexed with other models or options than the service
  runs answers nothing, and would otherwise say so only through its hit ratio.

Stores of format 1 (written before the catalogue existed) have none; a writer that adds values
to one counts only its own, so the catalogue is marked ``partial`` and readers do not rely on
it. ``read`` returns None for both.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping

COMPLETE, PARTIAL = "complete", "partial"
REFRESH_S = 60.0  # how long a reader trusts the catalogue it read (an indexer may add to it)

log = logging.getLogger("ragtrace._backends.passage_store")


def create(connection: sqlite3.Connection, *, fresh: bool) -> None:
    """Add the catalogue to a store being opened for writing: ``complete`` when the store is
    new, else ``partial`` unless it has one already (the caller commits)."""
    connection.execute(
        "CREATE TABLE IF NOT EXISTS namespaces "
        "(name TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID"
    )
    state = COMPLETE if fresh else PARTIAL
    connection.execute("INSERT OR IGNORE INTO meta VALUES ('namespaces', ?)", (state,))


def count(connection: sqlite3.Connection, namespace: str, added: int) -> None:
    """Add ``added`` values of ``namespace`` to the catalogue (in the writer's transaction)."""
    if added > 0:
        connection.execute(
            "INSERT INTO namespaces VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET count = count + excluded.count",
            (namespace, added),
        )


def read(connection: sqlite3.Connection) -> dict[str, int] | None:
    """Values per namespace, or None when the store's catalogue is missing or partial."""
    state = connection.execute("SELECT value FROM meta WHERE name = 'namespaces'").fetchone()
    if state is None or state[0] != COMPLETE:
        return None
    rows = connection.execute("SELECT name, count FROM namespaces ORDER BY name").fetchall()
    return {str(name): int(n) for name, n in rows}


class NamespaceGuard:
    """Says whether a lookup in a namespace can find anything, from a catalogue read at most
    every ``REFRESH_S`` seconds; logs once per namespace that the store lacks.

    Args:
        load: Reads the catalogue (``read`` on a connection); None when unknown. A load that
            raises ``sqlite3.Error`` counts as unknown: lookups go on and meet the error there.
        path: The store's path, for the log.
    """

    def __init__(self, load: Callable[[], Mapping[str, int] | None], path: str) -> None:
        self._load = load
        self._path = path
        self._lock = threading.Lock()
        self._known: Mapping[str, int] | None = None
        self._read_at = float("-inf")
        self._told: set[str] = set()

    def may_hold(self, namespace: str) -> bool:
        """False only when the catalogue is known and lacks ``namespace``."""
        known = self._current()
        if known is None or namespace in known:
            return True
        with self._lock:
            first = namespace not in self._told
            self._told.add(namespace)
        if first:
            held = ", ".join(f"{name} ({n:,})" for name, n in known.items()) or "nothing"
            log.warning(
                "passage store %s holds no values for %s (it holds: %s); index with the models "
                "and options this service runs (ragtrace index --config ...)",
                self._path,
                namespace,
                held,
            )
        return False

    def _current(self) -> Mapping[str, int] | None:
        now = time.monotonic()
        if now - self._read_at < REFRESH_S:
            return self._known
        with self._lock:
            if now - self._read_at >= REFRESH_S:
                try:
                    self._known = self._load()
                except sqlite3.Error:
                    self._known = None
                self._read_at = now
        return self._known
