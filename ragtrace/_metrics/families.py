"""What every group of Prometheus families shares: an injected registry, removal, bounded labels.

``Families`` registers each family it creates on the registry it was given (never the global
one at import) and remembers it, so ``unregister()`` can take them all off again. ``LabelCaps``
holds the bounded label sets that several groups share, so an evaluator name counts once
against its cap whichever family it appears in.

``multiprocess_dir()`` says whether prometheus_client runs in multiprocess mode (values in
``PROMETHEUS_MULTIPROC_DIR``, one file per process; see docs/multiprocess.md), which gauges
need to know: each gauge names how the processes' values combine (``multiprocess_mode``).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values

from ragtrace._metrics.labels import LabelCap

MAX_CACHED_CHILDREN = 256  # labelled children kept per family for the request path
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_M = TypeVar("_M", Counter, Gauge, Histogram)
GaugeMode = Literal[
    "all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum", "mostrecent",
    "livemostrecent",
]  # fmt: skip


def multiprocess_dir() -> str | None:
    """``PROMETHEUS_MULTIPROC_DIR`` when prometheus_client keeps its values there, else None.

    prometheus_client picks its mode when it is first imported, so a variable set later (in
    code, after ``import ragtrace``) does not count: the process then runs in single-process
    mode whatever the environment says now.
    """
    path = os.environ.get(MULTIPROC_ENV)
    if not path or not getattr(values.ValueClass, "_multiprocess", False):
        return None
    return path


DEFAULT_MAX_APPS = 20
"""Distinct ``app`` label values kept by default (``Config.max_app_labels``)."""


@dataclass(frozen=True)
class LabelCaps:
    """The label caps of ragtrace's families (values past a cap become ``other``)."""

    evaluators: LabelCap = field(default_factory=lambda: LabelCap(50))
    apps: LabelCap = field(default_factory=lambda: LabelCap(DEFAULT_MAX_APPS))
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
        return self._keep(lambda: Counter(name, doc, labels, registry=self.registry))

    def histogram(
        self, name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
    ) -> Histogram:
        return self._keep(
            lambda: Histogram(name, doc, labels, buckets=buckets, registry=self.registry)
        )

    def gauge(self, name: str, doc: str, multiprocess_mode: GaugeMode = "all") -> Gauge:
        """A gauge; ``multiprocess_mode`` says how processes' values combine in multiprocess
        mode (``all``: one series per process, with a ``pid`` label; ``livesum``: the sum over
        the processes still alive)."""
        return self._keep(
            lambda: Gauge(name, doc, registry=self.registry, multiprocess_mode=multiprocess_mode)
        )

    def unregister(self) -> None:
        """Remove the families from the registry (idempotent)."""
        for collector in self._collectors:
            with contextlib.suppress(KeyError):
                self.registry.unregister(collector)

    def _keep(self, make: Callable[[], _M]) -> _M:
        """Create and register a family; if that fails (its name is taken), take this group's
        families off the registry again before raising."""
        try:
            metric = make()
        except BaseException:
            self.unregister()
            raise
        self._collectors.append(metric)
        return metric


class GaugeRefresher:
    """Sets a gauge to ``read()`` now and every ``interval_s`` on a daemon thread, until
    ``stop()``; a forked child starts its own thread.

    For multiprocess mode, where a function gauge (``set_function``) is read only by the
    process that serves the scrape: each process writes its own value to its file instead.
    A ``read()`` that raises or returns NaN leaves the gauge as it was.
    """

    def __init__(self, gauge: Gauge, read: Callable[[], float], interval_s: float) -> None:
        self._gauge = gauge
        self._read = read
        self._interval_s = interval_s
        self._stopped = threading.Event()
        self._start()
        ref = weakref.ref(self)

        def restart_in_child() -> None:
            refresher = ref()
            if refresher is not None:
                refresher._start()

        os.register_at_fork(after_in_child=restart_in_child)

    def _start(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped = threading.Event()
        threading.Thread(target=self._run, name="ragtrace-gauge-refresh", daemon=True).start()

    def _run(self) -> None:
        stopped = self._stopped
        while True:
            with contextlib.suppress(Exception):
                value = float(self._read())
                if not math.isnan(value):
                    self._gauge.set(value)
            if stopped.wait(self._interval_s):
                return

    def stop(self) -> None:
        self._stopped.set()
