"""The workload of ``pipeline.py``: records, evaluators, a counting sink and a pipeline rig.

Records are realistic (a query, four ~500-character chunks with ids and scores, a ~300-character
answer) and share their text: only the trace and span ids vary, so building one costs about a
microsecond and holding many costs little. Every rig gets a fresh Prometheus registry, like the
``Harness`` of ``tests/test_pipeline.py``, so the drop and sampling counters start at zero.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from ragtrace.diagnostics import Diagnostics
from ragtrace.evaluators.base import Evaluator, FunctionEvaluator
from ragtrace.exporters.base import Evaluation
from ragtrace.exporters.metrics import Metrics
from ragtrace.model import Chunk, RagRecord, Score
from ragtrace.pipeline import EvaluationPipeline, PipelineOptions
from ragtrace.pipeline.queues import MemoryQueue
from ragtrace.pipeline.sampling import Sampler

APP = "bench-app"
_WORDS = (
    "the invoice total refund policy customer account billing period within thirty days of "
    "purchase support team contract renewal annual plan monthly subscription credit card "
    "payment method update address region data retention export request compliance audit "
    "security incident response escalation priority ticket agent queue latency service level"
).split()
_TOKEN = re.compile(r"\w+")


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars].rstrip() + "."


class Records:
    """Builds records that share their text and differ in trace and span ids."""

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.query = "What is the refund policy for an annual plan paid by credit card?"
        self.chunks = tuple(
            Chunk(_text(rng, 500), id=f"kb-{k:04d}", score=round(0.9 - 0.07 * k, 3))
            for k in range(4)
        )
        self.response = _text(rng, 300)
        self._rng = rng

    def record(self, trace_id: str) -> RagRecord:
        """One finished request with the given 32-hex-digit trace id."""
        return RagRecord(
            trace_id=trace_id,
            span_id=trace_id[16:],
            query=self.query,
            chunks=self.chunks,
            response=self.response,
            app=APP,
            model="fake-model",
            start_ns=1_700_000_000_000_000_000,
            end_ns=1_700_000_000_850_000_000,
        )

    def random_ids(self, n: int) -> list[str]:
        """``n`` random trace ids (a sampler at rate r keeps about r of them)."""
        return [f"{self._rng.getrandbits(128):032x}" for _ in range(n)]


def kept_id(i: int) -> str:
    """A trace id whose low 64 bits are ``i``: every ratio sampler with rate > 0 keeps it."""
    return f"{0:016x}{i:016x}"


def lexical_work(record: RagRecord, rounds: int) -> float:
    """Share of the answer's tokens found in the chunks, computed ``rounds`` times over."""
    share = 0.0
    for _ in range(rounds):
        context: set[str] = set()
        for chunk in record.chunks:
            context.update(t.lower() for t in _TOKEN.findall(chunk.text))
        answer = [t.lower() for t in _TOKEN.findall(record.response or "")]
        share = sum(t in context for t in answer) / max(1, len(answer))
    return share


class LexicalOverlap(Evaluator):
    """A lexical evaluator doing real work: token overlap of the answer with the context."""

    name = "lexical_overlap"
    requires = frozenset({"response", "chunks"})
    threshold = 0.5

    def __init__(self, rounds: int = 1) -> None:
        super().__init__()
        self.rounds = rounds

    def evaluate(self, record: RagRecord) -> list[Score]:
        return [self.score(lexical_work(record, self.rounds))]


def calibrate_rounds(records: Records, target_us: float) -> tuple[int, float]:
    """Rounds of ``lexical_work`` costing about ``target_us`` (single thread), and their cost."""
    rec = records.record(kept_id(1))
    lexical_work(rec, 50)

    def cost_us(rounds: int, calls: int = 40) -> float:
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                lexical_work(rec, rounds)
            best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        return best

    rounds = max(1, round(target_us / cost_us(1)))
    return rounds, cost_us(rounds, 10)


class SlowCall(Evaluator):
    """Waits ``seconds`` without holding the GIL, like a call to a remote judge."""

    name = "slow_call"
    timeout_s = 60.0

    def __init__(self, seconds: float = 0.001) -> None:
        super().__init__()
        self.seconds = seconds

    def evaluate(self, record: RagRecord) -> list[Score]:
        time.sleep(self.seconds)
        return [self.score(1.0)]


def noop_evaluators(n: int) -> list[Evaluator]:
    """``n`` evaluators that return a prebuilt Score at once."""
    made: list[Evaluator] = []
    for i in range(n):
        score = Score(name=f"noop_{i}", value=1.0)
        made.append(FunctionEvaluator(lambda _r, s=score: s, name=f"noop_{i}"))
    return made


class CountingSink:
    """A score sink that counts records, evaluations and error Scores (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records = 0
        self.evaluations = 0
        self.errors = 0

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        errors = sum(1 for ev in evaluations for s in ev.scores if s.error)
        with self._lock:
            self.records += 1
            self.evaluations += len(evaluations)
            self.errors += errors

    def shutdown(self) -> None:
        pass


@dataclass
class Rig:
    """A pipeline with a fresh registry, its queue and its counting sink."""

    registry: CollectorRegistry
    diagnostics: Diagnostics
    pipeline: EvaluationPipeline
    queue: MemoryQueue
    sink: CountingSink
    evaluators: int

    def value(self, name: str, **labels: str) -> int:
        return int(self.registry.get_sample_value(name, labels) or 0)

    def dropped(self, reason: str = "queue_full") -> int:
        return self.value("ragtrace_dropped_records_total", reason=reason)

    def sampled_out_records(self) -> int:
        """Records the ratio sampler dropped (one decision per record and evaluator)."""
        decisions = self.value(
            "ragtrace_sampling_decisions_total", decision="dropped", reason="ratio_out"
        )
        return decisions // max(1, self.evaluators)


def build(evaluators: Sequence[Evaluator], options: PipelineOptions, rate: float = 1.0) -> Rig:
    """A pipeline over ``evaluators`` with a fresh registry and a counting sink."""
    registry = CollectorRegistry()
    metrics = Metrics(registry, APP)
    diagnostics = Diagnostics(on_error=metrics.count_internal_error)
    queue = MemoryQueue(options.queue_size)
    sink = CountingSink()
    pipeline = EvaluationPipeline(
        diagnostics,
        metrics,
        evaluators=evaluators,
        sampler=Sampler(rate),
        sinks=[sink],
        options=options,
        queue=queue,
    )
    return Rig(registry, diagnostics, pipeline, queue, sink, len(evaluators))


def account(rig: Rig, submitted: int, accepted: int, flushed: bool) -> dict[str, object]:
    """Every record accounted for: accepted + dropped == submitted, and the sink saw the rest.

    ``accepted`` counts submits that returned True; those the sampler dropped never reach the
    sink, so the sink must have seen ``accepted - sampled_out`` records.
    """
    dropped = rig.dropped("queue_full") + rig.dropped("shutdown")
    sampled_out = rig.sampled_out_records()
    queued = accepted - sampled_out
    failures: list[str] = []
    if accepted + dropped != submitted:
        failures.append(f"accepted {accepted} + dropped {dropped} != submitted {submitted}")
    if rig.pipeline.submitted != submitted:
        failures.append(f"pipeline.submitted {rig.pipeline.submitted} != {submitted}")
    if not flushed:
        failures.append("flush() timed out")
    if rig.sink.records != queued:
        failures.append(f"sink saw {rig.sink.records} records, expected {queued}")
    return {
        "submitted": submitted,
        "accepted": accepted,
        "dropped": dropped,
        "sampled_out": sampled_out,
        "sink_records": rig.sink.records,
        "internal_errors": rig.diagnostics.counts(),
        "ok": not failures,
        "failures": failures,
    }


def percentiles(samples_ns: Sequence[int]) -> dict[str, float]:
    """p50, p99, p99.9, max and mean of latencies in ns, returned in microseconds."""
    ordered = sorted(samples_ns)
    n = len(ordered)
    if not n:
        return {}

    def rank(q: float) -> float:
        return ordered[min(n - 1, max(0, math.ceil(q * n) - 1))] / 1000

    return {
        "n": n,
        "p50_us": rank(0.50),
        "p99_us": rank(0.99),
        "p999_us": rank(0.999),
        "max_us": ordered[-1] / 1000,
        "mean_us": sum(ordered) / n / 1000,
    }


def rss_kib() -> int:
    """This process's resident set size (VmRSS), KiB; 0 where /proc is missing."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
