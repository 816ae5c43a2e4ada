"""What the demo shows: records with their scores (a score sink) and counts (the registry).

``ScoreBoard`` is both a record sink (``rt.add_record_sink(board.add_record)``) and a
``ScoreSink`` (``ragtrace.init(score_sinks=[board])``): it pairs each record with the scores
the workers publish for it and hands finished entries to the printer in request order.
``read_counts(registry)`` reads the ``ragtrace_*`` families the live view and summary show.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from ragtrace._model import Evaluation, RagRecord, Score


@dataclass
class Entry:
    """One request: its number, record, scores once evaluated (None until then), and the
    demo scenario it was answered in (``ragtrace.demo._scenario``; "" outside the demo)."""

    n: int
    record: RagRecord
    received: float
    scores: tuple[Score, ...] | None = None
    scenario: str = ""


class ScoreBoard:
    """Pairs records with their evaluation results; thread-safe.

    Args:
        recent: How many recent entries ``recent()`` keeps for the live view.
    """

    def __init__(self, recent: int = 10) -> None:
        self._lock = threading.Lock()
        self._n = 0
        self._pending: deque[Entry] = deque()
        self._by_span: dict[str, Entry] = {}
        self._early: dict[str, tuple[Score, ...]] = {}
        self._recent: deque[Entry] = deque(maxlen=recent)
        self._scenario = ""

    def set_scenario(self, name: str) -> None:
        """Label the records added from now on with scenario ``name``."""
        with self._lock:
            self._scenario = name

    def add_record(self, record: RagRecord) -> None:
        """Record sink: a request finished (called on the request's thread)."""
        with self._lock:
            self._n += 1
            scores = self._early.pop(record.span_id, None)
            entry = Entry(self._n, record, time.monotonic(), scores, self._scenario)
            self._pending.append(entry)
            self._by_span[record.span_id] = entry
            self._recent.append(entry)

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Score sink: the evaluations of one record (called on a worker thread)."""
        scores = tuple(s for evaluation in evaluations for s in evaluation.scores)
        with self._lock:
            entry = self._by_span.get(record.span_id)
            if entry is None:
                self._early[record.span_id] = scores
            else:
                entry.scores = (*(entry.scores or ()), *scores)

    def shutdown(self) -> None:
        """Nothing to release."""

    def take_finished(self, wait_s: float = 2.0, *, final: bool = False) -> list[Entry]:
        """Entries ready to print, in request order: scored, or waited ``wait_s`` for scores.

        Args:
            wait_s: How long an entry waits for its scores (some records get none).
            final: Hand over everything left.
        """
        now = time.monotonic()
        done = []
        with self._lock:
            while self._pending:
                head = self._pending[0]
                if not (final or head.scores is not None or now - head.received >= wait_s):
                    break
                done.append(self._pending.popleft())
                self._by_span.pop(head.record.span_id, None)
        return done

    def recent(self) -> list[Entry]:
        """The latest entries, oldest first."""
        with self._lock:
            return list(self._recent)

    @property
    def count(self) -> int:
        """Records seen so far."""
        return self._n


@dataclass
class Counts:
    """A reading of the ``ragtrace_*`` families of one registry."""

    requests: dict[str, float] = field(default_factory=dict)
    evaluations: dict[str, dict[str, float]] = field(default_factory=dict)
    score_sum: dict[str, float] = field(default_factory=dict)
    score_count: dict[str, float] = field(default_factory=dict)
    drops: dict[str, float] = field(default_factory=dict)
    internal_errors: dict[str, float] = field(default_factory=dict)
    queue_depth: float = 0.0

    @property
    def total_requests(self) -> int:
        return int(sum(self.requests.values()))

    @property
    def total_drops(self) -> int:
        return int(sum(self.drops.values()))

    @property
    def total_internal_errors(self) -> int:
        return int(sum(self.internal_errors.values()))

    def pass_rate(self, evaluator: str) -> float | None:
        """Passes over pass + fail (None before any)."""
        outcomes = self.evaluations.get(evaluator, {})
        judged = outcomes.get("pass", 0.0) + outcomes.get("fail", 0.0)
        return outcomes.get("pass", 0.0) / judged if judged else None

    def mean_score(self, evaluator: str) -> float | None:
        """Mean observed score (None before any)."""
        n = self.score_count.get(evaluator, 0.0)
        return self.score_sum.get(evaluator, 0.0) / n if n else None


def read_counts(registry: CollectorRegistry) -> Counts:
    """Read requests, evaluations, scores, drops, internal errors and queue depth."""
    counts = Counts()
    for family in registry.collect():
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, sample.value
            if name == "ragtrace_requests_total" and value:
                counts.requests[labels["status"]] = value
            elif name == "ragtrace_evaluations_total":
                by = counts.evaluations.setdefault(labels["evaluator"], {})
                by[labels["outcome"]] = by.get(labels["outcome"], 0.0) + value
            elif name == "ragtrace_evaluation_score_sum":
                key = labels["evaluator"]
                counts.score_sum[key] = counts.score_sum.get(key, 0.0) + value
            elif name == "ragtrace_evaluation_score_count":
                key = labels["evaluator"]
                counts.score_count[key] = counts.score_count.get(key, 0.0) + value
            elif name == "ragtrace_dropped_records_total":
                counts.drops[labels["reason"]] = value
            elif name == "ragtrace_internal_errors_total":
                counts.internal_errors[labels["site"]] = value
            elif name == "ragtrace_queue_depth":
                counts.queue_depth = value
    return counts
