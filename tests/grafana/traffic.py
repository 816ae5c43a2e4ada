"""Synthetic ragtrace metrics for the series a demo run cannot produce, served on loopback.

The demo runs ragtrace's default evaluators (looping, tokens_presence) with no LLM judge, so a
real Prometheus scraping it never sees groundedness, faithfulness, PII, sensitive-data or
toxicity scores, judge tokens and spend, drops or internal errors. ``SyntheticTraffic`` makes
them through ragtrace's own ``Metrics`` and ``PrometheusSink`` (the real families, label names
and outcome values, trace-id exemplars) from made-up records and scores, and serves them with
ragtrace's ``/metrics`` server::

    with SyntheticTraffic() as traffic:            # healthy traffic, 10 ticks a second
        traffic.targets                            # {"synthetic": [...], "stalled": [...]}
        traffic.incident()                         # from now on: every alert's condition
                                                   # (a quality drop needs older history)

It serves two processes: ``synthetic`` (app ``synthetic-rag``, evaluated) and ``stalled`` (app
``stalled-rag``: requests sampled for evaluation, no evaluation result ever).

"""

from __future__ import annotations

import itertools
import threading
import time
from types import TracebackType

from prometheus_client import CollectorRegistry

from ragtrace._backends.tier_counts import COUNTS, ERROR, HIT, MISS, PASSAGE_STORE, SHARED_CACHE
from ragtrace._exporters.prometheus import PrometheusSink
from ragtrace._judges.usage import OK, PARSE_FAILURE, JudgeCall
from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.endpoint import MetricsServer, start_metrics_server
from ragtrace._metrics.ingest import IngestMetrics
from ragtrace._metrics.queues import QueueMetrics
from ragtrace._model import Chunk, Evaluation, RagRecord, Score

SYNTHETIC_APP = "synthetic-rag"
STALLED_APP = "stalled-rag"
JUDGE_EVALUATOR, JUDGE_MODEL = "judge_faithfulness", "llama-3.2-1b-instruct"
TICK_S = 0.1
INCIDENT_REQUESTS = 40  # a tick, in an incident: 400 a second


def _score(name: str, value: float | None, passed: bool | None, error: str | None = None) -> Score:
    return Score(name, value, threshold=0.5, passed=passed, error=error)


class SyntheticTraffic:
    """Healthy (then, after ``incident()``, alarming) ragtrace metrics of two processes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.metrics = Metrics(self.registry, app=SYNTHETIC_APP)
        self.sink = PrometheusSink(self.metrics)
        self.stalled_registry = CollectorRegistry()
        self.stalled = Metrics(self.stalled_registry, app=STALLED_APP)
        self._incident = threading.Event()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._stalled_ids = itertools.count(1)
        self._thread = threading.Thread(target=self._run, name="synthetic-traffic", daemon=True)
        self._servers: list[MetricsServer] = []
        self.metrics.watch_queue_depth(lambda: 400.0 if self._incident.is_set() else 3.0)
        self.stalled.watch_queue_depth(lambda: 1000.0)
        # A worker fleet on a Redis stream: healthy beside "synthetic"; beside "stalled", a
        # stream whose workers never acknowledge.
        self.fleet = QueueMetrics(self.registry)
        self.stalled_fleet = QueueMetrics(self.stalled_registry)
        self.stalled_fleet.set_stream_state(200, 200, 0, 0)
        self._backlog = 50
        # `ragtrace ingest` beside "synthetic": OTLP exports of other apps' spans.
        self.ingest = IngestMetrics(self.registry)

    @property
    def targets(self) -> dict[str, list[str]]:
        """Prometheus job -> ``host:port`` of its ``/metrics``."""
        return {
            job: [f"{server.host}:{server.port}"]
            for job, server in zip(("synthetic", "stalled"), self._servers, strict=True)
        }

    def incident(self) -> None:
        """Switch to traffic that meets every ragtrace alert's condition."""
        self._incident.set()

    def tick(self, n: int) -> None:
        """One step: records, their evaluations, sampling, drops, errors, judge usage, cache
        lookups."""
        incident = self._incident.is_set()
        # An incident is busy and bad from its first tick: every evaluator with verdicts fails,
        # so within seconds its window holds the 100 verdicts the quality statistics need and
        # its pass ratio lies far under the floor (no history needed).
        for _ in range(INCIDENT_REQUESTS if incident else 1):
            self._request(next(self._ids), incident)
        self._fleet_tick(incident)
        self._ingest_tick(n, incident)
        self.stalled.observe_record(self._record(next(self._stalled_ids), STALLED_APP, False))
        self.stalled.count_sampling("sampled", "ratio")
        if n == 0 or n % 500 == 0 or incident:
            for _ in range(5 if incident else 1):
                self.metrics.count_internal_error("exporter.otel")
        if incident:  # the Collector refuses the evaluation log records
            self.metrics.count_dropped_log_records("export_failed", 2)

    def _fleet_tick(self, incident: bool) -> None:
        """Healthy: a small steady backlog, steady acknowledgements. Incident: the backlog
        grows past 1,000, records are dead-lettered and Redis loses the stream's data."""
        self._backlog = self._backlog + 500 if incident else 50
        self.fleet.set_stream_state(self._backlog, 5, self._backlog - 5, 1 if incident else 0)
        self.metrics.count_shipped(5)
        self.fleet.count_event("acknowledged", 1 if incident else 5)
        self.fleet.count_event("reclaimed", 1)
        if incident:
            self.fleet.count_event("dead_lettered:max_deliveries", 1)
            self.fleet.count_event("group_recreated", 1)
        self.fleet.observe_batch(2.0 if incident else 0.05)
        self.fleet.observe_delay(time.time_ns() - (60_000_000_000 if incident else 1_500_000_000))

    def _ingest_tick(self, n: int, incident: bool) -> None:
        """Healthy: whole traces, a rare late span. Incident: the buffer is full (429s), spans
        arrive late, traces reach max age without their root, records are rebuilt in parts
        and a replica's shutdown loses records it had accepted."""
        rare = n % 500 == 0  # what healthy traffic sees now and then
        self.ingest.count_request("accepted", 18)
        if incident or rare:
            self.ingest.count_request("busy", 9)
        self.ingest.count_dropped("late_span", 5 if incident else int(rare))
        self.ingest.count_dropped("evaluation_span", 2)
        for reason in ("complete", "complete", "max_age" if incident or rare else "complete"):
            self.ingest.count_trace(reason, 1.2)
        self.ingest.count_record("openinference", (), incomplete=incident or rare)
        self.ingest.count_record("genai", ("query", "chunk_text", "response"))
        if incident:
            self.ingest.count_record_dropped("shutdown", 1)
        self.ingest.count_unmapped("no_convention")
        self.ingest.observe_buffer(2000 if incident else 40, 60_000_000 if incident else 1_200_000)

    def _record(self, i: int, app: str, empty: bool) -> RagRecord:
        chunks = () if empty else (Chunk("Reset it under Settings.", id="kb-1", score=0.7),)
        return RagRecord(
            f"{i:032x}", f"{i:016x}", "How do I reset it?", chunks, "Like so.", app=app
        )

    def _request(self, i: int, incident: bool) -> None:
        record = self._record(i, SYNTHETIC_APP, empty=incident and i % 4 == 0)
        self.metrics.observe_record(record)
        evaluations = self._evaluations(i, incident)
        self.sink.export(record, evaluations)
        for _ in evaluations:
            self.metrics.count_sampling("sampled", "ratio")
        if incident:
            self.metrics.count_sampling("dropped", "rate_limited")
        if i == 1 or i % 500 == 0 or incident:
            self.metrics.count_drop("queue_full")
        self._judge(i, incident)
        self._cache_lookups(i, incident)

    def _evaluations(self, i: int, incident: bool) -> list[Evaluation]:
        """Healthy: rare errors, leaks and toxic answers (the first record has each, so the
        series exist at once). Incident: low scores, frequent errors, leaks, toxicity."""

        def every(healthy: int, incident_every: int) -> bool:
            return i == 1 or i % (incident_every if incident else healthy) == 0

        grounded = 0.2 if incident else 0.9
        relevance = (
            _score("answer_relevance", None, None, error="TimeoutError")
            if every(50, 3)
            else _score("answer_relevance", 0.3 if incident else 0.8, not incident)
        )
        leak, in_context, toxic = every(25, 2), every(10, 2), every(500, 3)
        scores = {
            "groundedness": [_score("groundedness", grounded, not incident)],
            "faithfulness": [_score("faithfulness", grounded, not incident)],
            "answer_relevance": [relevance],
            "pii_leakage": [
                _score("pii_leakage.answer", 0.0 if leak else 1.0, not leak),
                _score("pii_leakage.context", 0.0 if in_context else 1.0, not in_context),
            ],
            "sensitive_data": [
                _score("sensitive_data.answer", 0.0 if leak else 1.0, not leak),
                _score("sensitive_data.context", 0.0 if in_context else 1.0, not in_context),
            ],
            "toxicity": [_score("toxicity", 0.0 if toxic else 1.0, not toxic)],
        }
        start = time.time_ns()
        return [
            Evaluation(name, tuple(found), start, start + 2_000_000)
            for name, found in scores.items()
        ]

    def _judge(self, i: int, incident: bool) -> None:
        """One judge call, as a JudgeClient reports it (every ragtrace_judge_* family)."""
        parse_failed = i == 1 or i % (2 if incident else 20) == 0
        self.metrics.record_judge_call(
            JudgeCall(
                evaluator=JUDGE_EVALUATOR,
                model=JUDGE_MODEL,
                outcome=PARSE_FAILURE if parse_failed else OK,
                seconds=0.8,
                input_tokens=800,
                output_tokens=60,
                cost_usd=1.0 if incident else 0.00001,
            )
        )

    def _cache_lookups(self, i: int, incident: bool) -> None:
        """The lookups a request's evaluation makes in the cache tiers (process-wide counts,
        as ``ragtrace._backends.cache_tiers`` keeps them): mostly passage-store hits, a miss
        and now and then a failed lookup; in an incident most lookups fail (the file is gone)."""
        COUNTS.add(SHARED_CACHE, HIT, 2)
        COUNTS.add(SHARED_CACHE, MISS, 8)
        COUNTS.add(PASSAGE_STORE, HIT, 1 if incident else 7)
        COUNTS.add(PASSAGE_STORE, MISS, 2 if incident else 1)
        if incident:  # the store's file is gone: most lookups fail
            COUNTS.add(PASSAGE_STORE, ERROR, 5)
        elif i == 1 or i % 500 == 0:
            COUNTS.add(PASSAGE_STORE, ERROR)

    def _run(self) -> None:
        for n in itertools.count(1):
            if self._stop.wait(TICK_S):
                return
            self.tick(n)

    def start(self) -> SyntheticTraffic:
        self.tick(0)
        self._servers = [
            start_metrics_server(0, registry=self.registry),
            start_metrics_server(0, registry=self.stalled_registry),
        ]
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for server in self._servers:
            server.close()

    def __enter__(self) -> SyntheticTraffic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
