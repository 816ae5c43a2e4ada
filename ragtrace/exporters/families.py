"""What every group of Prometheus families shares: an injected registry, removal, bounded labels.

``Families`` registers each family it creates on the registry it was given (never the global
one at import) and remembers it, so ``unregister()`` can take them all off again. ``LabelCaps``
holds the bounded label sets that several groups share, so an evaluator name counts once
against its cap whichever family it appears in.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ragtrace.exporters.labels import LabelCap

MAX_CACHED_CHILDREN = 256  # labelled children kept per family for the request path
_M = TypeVar("_M", Counter, Gauge, Histogram)


@dataclass(frozen=True)
class LabelCaps:
    """The label caps of ragtrace's families (values past a cap become ``other``)."""

    evaluators: LabelCap = field(default_factory=lambda: LabelCap(50))
    apps: LabelCap = field(default_factory=lambda: LabelCap(20))
    reasons: LabelCap = field(default_factory=lambda: LabelCap(100))
    sites: LabelCap = field(default_factory=lambda: LabelCap(100))
    decisions: LabelCap = field(default_factory=lambda: LabelCap(10))
    models: LabelCap = field(default_factory=lambda: LabelCap(20))


class Families:
    """A group of families on one registry.

    Args:
        registry: Where the families register.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._collectors: list[Counter | Gauge | Histogram] = []

    def counter(self, name: str, doc: str, labels: list[str]) -> Counter:
        return self._keep(Counter(name, doc, labels, registry=self.registry))

    def histogram(
        self, name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
    ) -> Histogram:
        return self._keep(Histogram(name, doc, labels, buckets=buckets, registry=self.registry))

    def gauge(self, name: str, doc: str) -> Gauge:
        return self._keep(Gauge(name, doc, registry=self.registry))

    def unregister(self) -> None:
        """Remove the families from the registry (idempotent)."""
        for collector in self._collectors:
            with contextlib.suppress(KeyError):
                self.registry.unregister(collector)

    def _keep(self, metric: _M) -> _M:
        self._collectors.append(metric)
        return metric
