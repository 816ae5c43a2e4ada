"""The judge response cache: SQLite, keyed by prompt, model and parameters.

Only answers that parsed and validated are stored, so a garbled answer is asked again next time.
A cache that cannot be read or written (a full disk) is skipped and counted, never fails a call.
The default file is ``$RAGTRACE_JUDGE_CACHE`` when set (a file path; the ragtrace pytest plugin
sets it to one under the pytest cache directory), else ``$RAGTRACE_CACHE_DIR/judge_cache.sqlite``
(else under ``$XDG_CACHE_HOME/ragtrace`` or ``~/.cache/ragtrace``). One connection per thread, WAL
mode: several worker threads and processes may share a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._backends._loading import cache_dir
from ragtrace._diagnostics import Diagnostics

CACHE_ERROR_SITE = "judge.cache"
_diagnostics = Diagnostics()  # logs a failing cache once a minute, with how many were skipped

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    logprobs TEXT,
    created REAL NOT NULL
)
"""


JUDGE_CACHE_ENV = "RAGTRACE_JUDGE_CACHE"


def default_cache_path() -> Path:
    """The judge cache file of clients made with ``cache=True`` (see the module docstring)."""
    explicit = os.environ.get(JUDGE_CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return cache_dir() / "judge_cache.sqlite"


def cache_key(**parts: Any) -> str:
    """A stable sha256 over ``parts`` (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    text: str
    input_tokens: int
    output_tokens: int
    logprobs: Any


class JudgeCache:
    """A persistent map from a call's key to the judge's answer text and usage.

    Best effort once open: a lookup that fails is a miss, a write that fails is skipped, each
    counted in ``errors`` and logged (rate-limited, site ``judge.cache``), so a full disk or a
    damaged file never costs a judge verdict.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.errors = 0
        self._connect()  # fail at construction, not on the first call

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> CachedResponse | None:
        """The stored answer for ``key``; None when there is none or the file cannot be read
        (counted in ``errors``)."""
        try:
            row = (
                self._connect()
                .execute(
                    "SELECT text, input_tokens, output_tokens, logprobs FROM judge_responses "
                    "WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
        except sqlite3.Error as exc:
            self._failed(exc)
            row = None
        with self._lock:
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        logprobs = json.loads(row[3]) if row[3] else None
        return CachedResponse(row[0], int(row[1]), int(row[2]), logprobs)

    def put(self, key: str, *, model: str, prompt_id: str, response: CachedResponse) -> bool:
        """Store an answer; False when the file cannot be written (a full disk, say): the
        answer is still good, only not kept, and the failure is counted (``errors``)."""
        logprobs = json.dumps(response.logprobs) if response.logprobs is not None else None
        row = (
            key,
            model,
            prompt_id,
            response.text,
            response.input_tokens,
            response.output_tokens,
            logprobs,
            time.time(),
        )
        try:
            self._connect().execute(
                "INSERT OR REPLACE INTO judge_responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row
            )
        except sqlite3.Error as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: sqlite3.Error) -> None:
        with self._lock:
            self.errors += 1
        _diagnostics.error(CACHE_ERROR_SITE, exc)

    def hit_rate(self) -> float:
        """Hits over lookups since this object was made (0.0 before any lookup)."""
        with self._lock:
            total = self.hits + self.misses
            return self.hits / total if total else 0.0

    def __len__(self) -> int:
        row = self._connect().execute("SELECT COUNT(*) FROM judge_responses").fetchone()
        return int(row[0])

    def clear(self) -> None:
        self._connect().execute("DELETE FROM judge_responses")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
