"""The model caches' family: how the tiers behind the backends' own caches answered.

``ragtrace_cache_lookups_total{tier, result}`` counts the lookups ``ragtrace._backends.cache_tiers``
made after an embedder's, the sentence splitter's or the NER analyzer's own cache missed:
``tier`` is ``shared_cache`` (the memory a process pool's workers share), ``passage_store`` (the
file ``ragtrace index`` fills) or ``fleet_cache`` (the Redis cache a fleet of ``ragtrace
worker`` processes shares), ``result`` is ``hit``, ``miss`` or ``error`` (the store's SQLite or
the fleet's Redis failed the lookup).
The share of ``passage_store`` hits says how much of the traffic's passages the index covers.

The counts live in ``ragtrace._backends.tier_counts`` (worker processes report theirs to the
pool's process); ``update()`` adds what is new to the counter. ``Metrics`` calls it with every
batch of deferred updates (at each scrape of this process and every second), under the batch's
lock, which ``DeferredUpdates`` replaces in a forked child: no lock of this class's own can be
inherited held.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from ragtrace._backends.tier_counts import COUNTS, Key, since
from ragtrace._metrics.families import Families


class CacheMetrics(Families):
    """``ragtrace_cache_lookups_total``, fed from this process's tier counts."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self.lookups = self.counter(
            "ragtrace_cache_lookups",
            "Lookups in the cache tiers behind the model backends' own caches, by tier "
            "(shared_cache, passage_store, fleet_cache) and result (hit, miss, error).",
            ["tier", "result"],
        )
        self._seen: dict[Key, int] = {}  # the counter holds the process's counts from zero

    def update(self) -> None:
        """Add the lookups counted since the last update (one caller at a time: the deferred
        batch)."""
        now = COUNTS.snapshot()
        added = since(now, self._seen)
        self._seen = now
        for (tier, result), n in added.items():
            self.lookups.labels(tier, result).inc(n)
