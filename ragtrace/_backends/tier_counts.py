"""How the cache tiers behind the model backends answered: lookups by tier and result.

``ragtrace._backends.cache_tiers`` counts each lookup it makes after a backend's own cache
missed: in the process pool's shared memory cache (tier ``shared_cache``), in the passage
store filled at indexing time (tier ``passage_store``) and in the fleet's cache in Redis (tier
``fleet_cache``), each a ``hit``, a ``miss`` or, for the store and the fleet cache, an
``error`` (SQLite or Redis failed the lookup; the backend then computed the value). A
``ProcessPool`` adds what its worker processes counted to its own process's counts, so the
application process's ``ragtrace_cache_lookups_total`` covers the whole pool.

The counts only grow. A reader keeps what it saw last and takes the difference::

    seen = COUNTS.snapshot()
    ...
    now = COUNTS.snapshot()
    added = since(now, seen)       # {("passage_store", "hit"): 120, ...}

This module imports nothing heavy: the metrics read it without loading the tiers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

SHARED_CACHE, PASSAGE_STORE, FLEET_CACHE = "shared_cache", "passage_store", "fleet_cache"
TIERS = (SHARED_CACHE, PASSAGE_STORE, FLEET_CACHE)
HIT, MISS, ERROR = "hit", "miss", "error"
RESULTS = (HIT, MISS, ERROR)

Key = tuple[str, str]  # (tier, result)


class TierCounts:
    """Lookups by (tier, result) in this process, plus those its worker processes reported;
    thread-safe, only growing. A forked child keeps the counts and gets a fresh lock (another
    thread may have held the parent's at the fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Key, int] = {}

    def after_fork(self) -> None:
        """In a forked child: a new lock (the counts are the parent's so far)."""
        self._lock = threading.Lock()

    def add(self, tier: str, result: str, n: int = 1) -> None:
        """Count ``n`` lookups of ``tier`` that ended in ``result`` (0: nothing)."""
        if n <= 0:
            return
        key = (tier, result)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + n

    def merge(self, counts: Mapping[Key, int]) -> None:
        """Add counts another process reported (negative or odd entries are ignored)."""
        with self._lock:
            for key, n in counts.items():
                if _valid(key, n):
                    self._counts[key] = self._counts.get(key, 0) + n

    def snapshot(self) -> dict[Key, int]:
        """The counts so far."""
        with self._lock:
            return dict(self._counts)


def since(now: Mapping[Key, int], before: Mapping[Key, int]) -> dict[Key, int]:
    """What was counted between two snapshots (keys with nothing new left out)."""
    return {key: n - before.get(key, 0) for key, n in now.items() if n > before.get(key, 0)}


def by_tier(counts: Mapping[Key, int]) -> dict[str, dict[str, int]]:
    """``counts`` as ``{tier: {result: n}}`` (JSON-ready; tiers with no lookups left out)."""
    out: dict[str, dict[str, int]] = {}
    for tier in TIERS:
        found = {r: counts.get((tier, r), 0) for r in RESULTS if counts.get((tier, r), 0)}
        if found:
            out[tier] = found
    return out


def line(counts: Mapping[Key, int]) -> str:
    """One line for a person: each tier's lookups and hit share, e.g.
    ``cache tiers: passage_store 1,180 of 1,200 lookups hit (98.3%), 2 errors``."""
    parts = []
    for tier, results in by_tier(counts).items():
        total = sum(results.values())
        hits = results.get(HIT, 0)
        part = f"{tier} {hits:,} of {total:,} lookups hit ({100 * hits / total:.1f}%)"
        if results.get(ERROR):
            part += f", {results[ERROR]:,} errors"
        parts.append(part)
    return "cache tiers: " + "; ".join(parts)


def _valid(key: object, n: object) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 2
        and key[0] in TIERS
        and key[1] in RESULTS
        and isinstance(n, int)
        and not isinstance(n, bool)
        and n > 0
    )


COUNTS = TierCounts()
"""This process's counts (``ragtrace._backends.cache_tiers`` adds to them)."""
os.register_at_fork(after_in_child=COUNTS.after_fork)
