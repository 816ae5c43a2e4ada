"""Evaluation pipeline: submit latency, throughput and overload behaviour of ``submit``.

Measures, in one process, ``EvaluationPipeline`` with realistic records (a query, four
~500-character chunks with ids and scores, a ~300-character answer; text shared, ids varied):

1. Submit latency (``perf_counter_ns`` around each ``submit``; p50, p99, p99.9, max) while two
   workers run a lexical evaluator that burns ~200 us of CPU per record, so they compete with
   the submitting thread for the GIL: every record sampled (``busy``), the sampler keeping 10 %
   (``sampled``), and a full queue where every timed submit drops (``queue_full``). Submits are
   paced (a short sleep before each, the application's own I/O); a backlog of untimed records
   the sampler keeps holds the workers busy and the queue below full (except in ``queue_full``).
2. Beside each submit, in alternating order, a bare ``queue.Queue(maxsize).put_nowait`` (with
   ``except Full``) under the same load: the ratio is ragtrace's cost over the bare hand-off.
3. Throughput: records per second from the first submit until ``flush()`` returns, through
   sampler, queue, workers and a counting sink, with 1 and 5 no-op evaluators, 1 and 2 workers.
4. Overload: 100,000 submits as fast as possible while each evaluation waits 1 ms. Reports the
   largest and total submit time (untraced run), and RSS (VmRSS) and tracemalloc's current size
   every 10,000 submits (traced runs of 10,000 and 100,000 submits: memory is bounded by the
   queue, not by the number submitted).

5. Conversations (``--sessions-only`` runs only this): submit latency of records that are turns
   of 5,000 open sessions with ``session_idle_s`` on (each turn tracked) and off, and how fast
   the background thread scores quiet 3-turn sessions (all ended at once).

Every pipeline's records are accounted for: accepted + dropped (``ragtrace_dropped_records_total``)
== submitted, and after ``flush()`` the sink saw every accepted record the sampler kept; the run
exits 1 otherwise. Nothing else is asserted: the table's "met?" column compares with targets.

Run::

    .venv/bin/python benchmarks/pipeline.py            # about 2 minutes on 2 cores
    .venv/bin/python benchmarks/pipeline.py --quick    # smoke test, < 30 s

It prints a table and writes ``benchmarks/results/pipeline.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._metrics.collection import Metrics
from ragtrace._model import Chunk, Conversation, Evaluation, RagRecord, Score
from ragtrace._pipeline import EvaluationPipeline, PipelineOptions
from ragtrace._pipeline.queues import MemoryQueue
from ragtrace._pipeline.sampling import Sampler
from ragtrace.evaluators._base import Evaluator, FunctionEvaluator

# The workload of ``pipeline.py``: records, evaluators, a counting sink and a pipeline rig.
#
# Records are realistic (a query, four ~500-character chunks with ids and scores, a ~300-character
# answer) and share their text: only the trace and span ids vary, so building one costs about a
# microsecond and holding many costs little. Every rig gets a fresh Prometheus registry, like the
# ``Harness`` of ``tests/test_pipeline.py``, so the drop and sampling counters start at zero.

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
    queue = MemoryQueue(options.config.queue_size)
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


HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


DEFAULT_JSON = HERE / "results" / "pipeline.json"
P99_TARGET_US = 20.0
MEMORY_RATIO_TARGET = 1.25
LABELS = {"busy": "busy", "sampled": "sampled 10%", "queue_full": "queue full"}
Row = tuple[str, str, str, str, str]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Submit latency, throughput and overload.")
    parser.add_argument("--timed", type=int, default=20_000, help="timed submits per scenario")
    parser.add_argument(
        "--records", type=int, default=20_000, help="records per throughput run (default 20000)"
    )
    parser.add_argument("--overload", type=int, default=100_000, help="overload submits")
    parser.add_argument("--overload-queue", type=int, default=10_000, help="overload queue bound")
    parser.add_argument("--eval-us", type=float, default=200.0, help="CPU per busy evaluation")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="wait per slow evaluation")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument(
        "--quick", action="store_true", help="fewer submits, smaller queue: a smoke test, < 30 s"
    )
    parser.add_argument(
        "--sessions-only",
        action="store_true",
        help="only the conversations section: submit with session scoring on vs off, and "
        "quiet sessions scored per second",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.timed, args.records = 2_000, 2_000
        args.overload, args.overload_queue = 50_000, 1_000
    if min(args.timed, args.records, args.overload // 10, args.overload_queue) < 1:
        parser.error("--timed, --records, --overload-queue must be >= 1, --overload >= 10")
    return args


def machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((ln.split(":", 1)[1].strip() for ln in info if "model name" in ln), "")
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "loadavg_start": list(os.getloadavg()),
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _us(value: float) -> str:
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


class Rows:
    """The table's rows: measurement, value, unit, target, met?"""

    def __init__(self) -> None:
        self.rows: list[Row] = []

    def add(self, name: str, value: str, unit: str, target: str = "-", met: str = "-") -> None:
        self.rows.append((name, value, unit, target, met))

    def p99(self, name: str, value_us: float) -> None:
        met = _met(value_us < P99_TARGET_US)
        if value_us >= P99_TARGET_US:  # the distance left, as well as the verdict
            met += f", {value_us - P99_TARGET_US:.1f} us over ({value_us / P99_TARGET_US:.1f}x)"
        self.add(name, _us(value_us), "us", f"< {P99_TARGET_US:g}", met)


def rows(results: dict[str, Any]) -> list[Row]:
    t = Rows()
    t.add("perf_counter_ns pair (timer floor)", f"{results['timer_overhead']['p50_ns']:.0f}", "ns")
    cost = results["calibration"]["us_per_record"]
    t.add("busy evaluator CPU, one thread", f"{cost:.0f}", "us/record")
    for kind in LATENCY_KINDS:
        r, label = results["latency"][kind], LABELS[kind]
        s, b = r["submit"], r["bare_put_nowait"]
        t.add(f"submit p50 [{label}]", _us(s["p50_us"]), "us")
        t.p99(f"submit p99 [{label}]", s["p99_us"])
        t.add(f"submit p99.9 [{label}]", _us(s["p999_us"]), "us")
        t.add(f"submit max [{label}]", _us(s["max_us"]), "us")
        t.add(
            f"bare put_nowait p50 / p99 [{label}]", f"{b['p50_us']:.1f} / {b['p99_us']:.1f}", "us"
        )
        t.add(f"ratio submit/bare p50 [{label}]", f"{r['ratio_p50']:.1f}", "x")
        t.add(f"ratio submit/bare p99 [{label}]", f"{r['ratio_p99']:.1f}", "x")
        expect = r["timed_submits"] if kind == "queue_full" else 0
        dropped = r["timed_dropped"]
        t.add(f"timed submits dropped [{label}]", f"{dropped:,}", "records", f"== {expect:,}",
              _met(dropped == expect))  # fmt: skip
        depths = f"{r['queue_depth_min']:,}..{r['queue_depth_max']:,}"
        t.add(f"queue depth min..max [{label}]", depths, "records")
        wake = r["wake_up_delay"]
        late = f"{_us(wake['p50_us'])} / {_us(wake['p99_us'])}"
        t.add(f"app wake-up delay p50 / p99 [{label}]", late, "us")
    for r in results["throughput"]:
        e, w = r["evaluators"], r["workers"]
        t.add(f"throughput {e} no-op eval, {w} worker(s)", f"{r['records_per_s']:,.0f}", "rec/s")
        t.add(f"  process CPU per record [{e}e/{w}w]", f"{r['cpu_us_per_record']:.0f}", "us")
    o = results["overload"]
    lat = o["latency"]
    n = f"{lat['submitted']:,}"
    t.p99(f"overload {n}: submit p99", lat["submit"]["p99_us"])
    t.add(f"overload {n}: submit max", _us(lat["submit"]["max_us"]), "us")
    t.add(f"overload {n}: total submit time", f"{lat['submit_total_s']:.3f}", "s")
    split = f"{lat['accounting']['accepted']:,} / {lat['accounting']['dropped']:,}"
    t.add(f"overload {n}: accepted / dropped", split, "records")
    mib = 1024.0 * 1024.0
    for key in ("small", "large"):
        m = o[key]
        tag = f"memory, {m['submitted']:,} submitted"
        rss = [m[f"rss_{k}_kib"] * 1024 / mib for k in ("start", "peak", "end")]
        t.add(f"{tag}: RSS start / peak / end", " / ".join(f"{x:.1f}" for x in rss), "MiB")
        traced = [m[f"traced_{k}_bytes"] / mib for k in ("start", "peak", "end")]
        t.add(f"{tag}: traced start / peak / end", " / ".join(f"{x:.2f}" for x in traced), "MiB")
    ratio = o["traced_growth_ratio"]
    name = f"traced peak growth, {o['large']['submitted']:,} vs {o['small']['submitted']:,}"
    t.add(
        name, f"{ratio:.2f}", "x", f"<= {MEMORY_RATIO_TARGET}", _met(ratio <= MEMORY_RATIO_TARGET)
    )
    for name, checked in accounting(results):
        ok = checked["ok"]
        t.add(f"accounting [{name}]", "ok" if ok else "FAIL", "-", "exact", _met(ok))
    return t.rows


def session_rows(r: dict[str, Any], before: list[Row]) -> list[Row]:
    """``before`` and the rows of the conversations section."""
    t = Rows()
    t.rows = list(before)
    n = f"{r['sessions']:,} open sessions"
    for key in ("off", "on"):
        label = f"submit p50 / p99, conversations scored {key} [{n}]"
        t.add(label, f"{_us(r[key]['p50_us'])} / {_us(r[key]['p99_us'])}", "us")
    scored = f"== {r['sessions']:,} scored"
    rate = f"{r['scored_per_s']:,.0f}"
    label = "quiet 3-turn sessions scored (2 lexical evaluators)"
    t.add(label, rate, "sessions/s", scored, _met(r["scored"] == r["sessions"]))
    return t.rows


def accounting(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = [(LABELS[k], r["accounting"]) for k, r in results["latency"].items()]
    found += [
        (f"throughput {t['evaluators']}e/{t['workers']}w", t["accounting"])
        for t in results["throughput"]
    ]
    found += [
        (f"overload {o['submitted']:,}{' traced' if o['traced'] else ''}", o["accounting"])
        for o in (results["overload"][k] for k in ("latency", "small", "large"))
    ]
    return found


def table(data: list[Row]) -> str:
    header = ("measurement", "value", "unit", "target", "met?")
    widths = [max(len(r[i]) for r in [header, *data]) for i in range(len(header))]

    def line(cells: Row) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in data)])


def log(start: float, text: str) -> None:
    print(f"[{time.monotonic() - start:5.1f}s] {text}", file=sys.stderr, flush=True)


def collect(args: argparse.Namespace, start: float) -> dict[str, Any]:
    records = Records()
    sessions = session_cost(records, args.timed)
    log(start, f"sessions: submit p50 {sessions['on']['p50_us']:.1f} us with conversations "
        f"scored, {sessions['off']['p50_us']:.1f} us without")  # fmt: skip
    if args.sessions_only:
        return {"sessions": sessions}
    rounds, cost = calibrate_rounds(records, args.eval_us)
    results: dict[str, Any] = {
        "timer_overhead": timer_overhead_ns(),
        "calibration": {"rounds": rounds, "us_per_record": cost, "target_us": args.eval_us},
    }
    log(start, f"busy evaluator: {rounds} rounds, {cost:.0f} us/record on one thread")
    plan = LatencyPlan(timed=args.timed, warmup=min(500, args.timed // 10))
    results["latency_plan"] = vars(plan)
    results["latency"] = {}
    for kind in LATENCY_KINDS:
        r = results["latency"][kind] = submit_latency(kind, records, rounds, plan)
        log(start, f"latency {kind}: p50 {r['submit']['p50_us']:.1f} us, "
            f"p99 {r['submit']['p99_us']:.1f} us, max {r['submit']['max_us']:.0f} us")  # fmt: skip
    results["throughput"] = []
    for evaluators in (1, 5):
        for workers in (1, 2):
            t = throughput(records, args.records, evaluators, workers)
            results["throughput"].append(t)
            log(start, f"throughput {evaluators}e/{workers}w: {t['records_per_s']:,.0f}/s")
    delay = args.delay_ms / 1000
    over: dict[str, Any] = {}
    over["latency"] = overload(records, args.overload, args.overload_queue, delay, traced=False)
    over["small"] = overload(records, args.overload // 10, args.overload_queue, delay, True)
    over["large"] = overload(records, args.overload, args.overload_queue, delay, True)
    growth = {k: over[k]["traced_peak_bytes"] - over[k]["traced_start_bytes"] for k in over}
    over["traced_growth_ratio"] = growth["large"] / max(1, growth["small"])
    results["overload"] = over
    results["sessions"] = sessions
    log(start, f"overload: max submit {over['latency']['submit']['max_us']:.0f} us, "
        f"memory growth ratio {over['traced_growth_ratio']:.2f}")  # fmt: skip
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started, start = datetime.now(UTC), time.monotonic()
    info = machine()
    results = collect(args, start)
    info["loadavg_end"] = list(os.getloadavg())
    text = table(session_rows(results["sessions"], [] if args.sessions_only else rows(results)))
    print(text)
    checked = [] if args.sessions_only else accounting(results)
    failures = [(name, c["failures"]) for name, c in checked if not c["ok"]]
    report = {
        "benchmark": "pipeline",
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - start, 1),
        "command": [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])],
        "machine": info,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "switch_interval_s": sys.getswitchinterval(),
        },
        "versions": {n: _version(n) for n in ("ragtrace", "prometheus-client")},
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "targets": {"submit_p99_us": P99_TARGET_US, "memory_growth_ratio": MEMORY_RATIO_TARGET},
        "results": results,
        "accounting_failures": failures,
        "table": text,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.json} ({report['duration_s']:.0f} s)", file=sys.stderr)
    for name, problems in failures:
        print(f"ACCOUNTING FAILED [{name}]: {'; '.join(problems)}", file=sys.stderr)
    return 1 if failures else 0


# The measurements of ``pipeline.py``: submit latency, throughput, overload.
#
# Each function builds its own pipeline (fresh registry), runs one scenario, shuts the pipeline
# down and returns plain numbers plus an accounting check (see ``account``).
import dataclasses
import gc
import queue
import tracemalloc
from array import array
from dataclasses import dataclass

LATENCY_KINDS = ("busy", "sampled", "queue_full")


@dataclass(frozen=True)
class LatencyPlan:
    """How a submit-latency scenario paces and keeps the workers busy.

    Attributes:
        timed: Submits measured (after ``warmup`` measured-and-discarded ones).
        warmup: Submits measured first and left out of the figures.
        interval_s: Sleep before each submit (the application's own I/O between requests).
        low: Below this queue depth the backlog is topped up with untimed records the sampler
            keeps, so the workers never run dry.
        high: Above this depth the submitter sleeps longer, so the queue never fills.
        queue_size: Queue bound of the busy and sampled scenarios.
        full_queue_size: Queue bound of the queue-full scenario (filled before measuring).
    """

    timed: int = 20_000
    warmup: int = 500
    interval_s: float = 0.0005
    low: int = 200
    high: int = 1_000
    queue_size: int = 10_000
    full_queue_size: int = 1_000


def timer_overhead_ns(n: int = 20_000) -> dict[str, float]:
    """What two back-to-back ``perf_counter_ns`` calls read (floor of every latency figure)."""
    pc = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = pc()
        samples.append(pc() - t0)
    samples.sort()
    return {"min_ns": samples[0], "p50_ns": samples[n // 2], "p99_ns": samples[n * 99 // 100]}


def submit_latency(kind: str, records: Records, rounds: int, plan: LatencyPlan) -> dict[str, Any]:
    """Submit latency while a CPU-burning evaluator keeps both workers busy.

    ``busy``: every record sampled; ``sampled``: the sampler keeps 10 %; ``queue_full``: before
    each timed submit the queue is topped up (untimed) until a submit drops, so the timed one
    meets a full queue (the figures cover those that did). Each timed submit is paired with a
    bare ``queue.Queue.put_nowait`` in alternating order; the bare queue is emptied after each
    put, or kept full in ``queue_full``. Also records how late the application's thread wakes
    from its sleep: the GIL wait that busy workers impose on it, outside ``submit``.
    """
    full = kind == "queue_full"
    size = plan.full_queue_size if full else plan.queue_size
    rate = 0.1 if kind == "sampled" else 1.0
    rig = build([LexicalOverlap(rounds)], PipelineOptions(Config(queue_size=size)), rate)
    submit, depth = rig.pipeline.submit, rig.queue.depth
    low, high = (size + 1, size + 1) if full else (plan.low, plan.high)
    fillers = accepted = 0

    def top_up(until: int) -> None:
        nonlocal fillers, accepted
        while depth() < until:
            fillers += 1
            if not submit(records.record(kept_id(fillers))):
                return
            accepted += 1

    top_up(low if full else 2 * low)
    n = plan.warmup + plan.timed
    timed = [records.record(t) for t in records.random_ids(n)]
    bare: queue.Queue[object] = queue.Queue(maxsize=size)
    while full and not bare.full():
        bare.put_nowait(None)
    put, pc, sleep = bare.put_nowait, time.perf_counter_ns, time.sleep
    lat, bare_lat, late = (array("q", bytes(8 * n)) for _ in range(3))
    hit_full = bytearray(n)
    depths = [depth()]
    gc_before = [s["collections"] for s in gc.get_stats()]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for i, rec in enumerate(timed):
        now = depth()
        if now < low and not full:
            top_up(2 * low)
        pause = plan.interval_s if now <= high else 4 * plan.interval_s
        t0 = pc()
        sleep(pause)
        late[i] = pc() - t0 - int(pause * 1e9)
        if full:
            top_up(low)
        if i & 1:
            t0 = pc()
            ok = submit(rec)
            t1 = pc()
            t2 = pc()
            try:  # noqa: SIM105 (the reference is the bare try/except, not contextlib)
                put(rec)
            except queue.Full:
                pass
            t3 = pc()
        else:
            t2 = pc()
            try:  # noqa: SIM105 (the reference is the bare try/except, not contextlib)
                put(rec)
            except queue.Full:
                pass
            t3 = pc()
            t0 = pc()
            ok = submit(rec)
            t1 = pc()
        if not full:
            bare.get_nowait()
        lat[i], bare_lat[i] = t1 - t0, t3 - t2
        accepted += ok
        hit_full[i] = not ok
        if i % 100 == 0:
            depths.append(depth())
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    gc_runs = [s["collections"] - b for s, b in zip(gc.get_stats(), gc_before, strict=True)]
    flushed = rig.pipeline.flush(timeout_s=120.0)
    checked = account(rig, n + fillers, accepted, flushed)
    rig.pipeline.shutdown(timeout_s=5.0)
    keep = [i for i in range(plan.warmup, n) if hit_full[i] or not full]
    ours, ref = percentiles([lat[i] for i in keep]), percentiles([bare_lat[i] for i in keep])
    wake = percentiles(late[plan.warmup :])
    return {
        "kind": kind,
        "queue_size": size,
        "sampler_rate": rate,
        "evaluator": "LexicalOverlap",
        "submit": ours,
        "bare_put_nowait": ref,
        "ratio_p50": ours["p50_us"] / ref["p50_us"],
        "ratio_p99": ours["p99_us"] / ref["p99_us"],
        "wake_up_delay": wake,
        "timed_submits": plan.timed,
        "timed_dropped": sum(hit_full[plan.warmup :]),
        "untimed_fillers": fillers,
        "queue_depth_min": min(depths),
        "queue_depth_max": max(depths),
        "submits_per_s": n / wall,
        "process_cpu_cores": cpu / wall,
        "gc_collections": gc_runs,
        "accounting": checked,
    }


def throughput(records: Records, n: int, evaluators: int, workers: int) -> dict[str, Any]:
    """Records per second from the first submit until ``flush()`` returns (no-op evaluators).

    The queue holds all ``n`` records, so none is dropped; the submitter competes with the
    workers for the GIL while it submits, as an application would.
    """
    warm = 200
    options = PipelineOptions(Config(queue_size=n + warm, workers=workers))
    rig = build(noop_evaluators(evaluators), options)
    submit = rig.pipeline.submit
    accepted = 0
    for i in range(warm):
        accepted += submit(records.record(kept_id(n + i + 1)))
    rig.pipeline.flush(timeout_s=60.0)
    todo = [records.record(kept_id(i + 1)) for i in range(n)]
    gc.collect()
    cpu0, t0 = time.process_time(), time.perf_counter()
    for rec in todo:
        accepted += submit(rec)
    t_submitted = time.perf_counter()
    flushed = rig.pipeline.flush(timeout_s=300.0)
    t1, cpu = time.perf_counter(), time.process_time() - cpu0
    checked = account(rig, n + warm, accepted, flushed)
    rig.pipeline.shutdown(timeout_s=5.0)
    return {
        "evaluators": evaluators,
        "workers": workers,
        "records": n,
        "records_per_s": n / (t1 - t0),
        "evaluations_per_s": n * evaluators / (t1 - t0),
        "submit_phase_s": t_submitted - t0,
        "drain_after_submit_s": t1 - t_submitted,
        "cpu_us_per_record": cpu / n * 1e6,
        "accounting": checked,
    }


def overload(
    records: Records, n: int, queue_size: int, delay_s: float, traced: bool
) -> dict[str, Any]:
    """Submit ``n`` records as fast as possible while every evaluation waits ``delay_s``.

    Samples RSS (and, when ``traced``, tracemalloc's current size) every 10,000 submits (every
    tenth of ``n`` when that is fewer), then flushes and checks every record is accounted for.
    """
    every = min(10_000, max(1, n // 10))
    rig = build([SlowCall(delay_s)], PipelineOptions(Config(queue_size=queue_size)))
    lat = array("q", bytes(8 * n))
    submit, make, pc = rig.pipeline.submit, records.record, time.perf_counter_ns
    gc.collect()
    if traced:
        tracemalloc.start()

    def sample(submitted: int) -> dict[str, int]:
        traced_now = tracemalloc.get_traced_memory()[0] if traced else 0
        return {"submitted": submitted, "rss_kib": rss_kib(), "traced_bytes": traced_now}

    samples = [sample(0)]
    accepted = 0
    wall0 = pc()
    for i in range(n):
        rec = make(f"{i + 1:032x}")
        t0 = pc()
        ok = submit(rec)
        lat[i] = pc() - t0
        accepted += ok
        if (i + 1) % every == 0:
            samples.append(sample(i + 1))
    wall_s = (pc() - wall0) / 1e9
    depth_after = rig.queue.depth()
    t_flush = time.perf_counter()
    flushed = rig.pipeline.flush(timeout_s=60.0 + accepted * delay_s * 2)
    flush_s = time.perf_counter() - t_flush
    gc.collect()
    end = sample(n)
    traced_peak = tracemalloc.get_traced_memory()[1] if traced else 0
    if traced:
        tracemalloc.stop()
    checked = account(rig, n, accepted, flushed)
    rig.pipeline.shutdown(timeout_s=5.0)
    start = samples[0]
    return {
        "submitted": n,
        "queue_size": queue_size,
        "evaluator_delay_s": delay_s,
        "traced": traced,
        "submit": percentiles(lat),
        "submit_total_s": sum(lat) / 1e9,
        "submit_loop_wall_s": wall_s,
        "queue_depth_after_submits": depth_after,
        "flush_s": flush_s,
        "samples": samples,
        "end": end,
        "rss_start_kib": start["rss_kib"],
        "rss_peak_kib": max(s["rss_kib"] for s in [*samples, end]),
        "rss_end_kib": end["rss_kib"],
        "traced_start_bytes": start["traced_bytes"],
        "traced_peak_sampled_bytes": max(s["traced_bytes"] for s in [*samples, end]),
        "traced_peak_bytes": traced_peak,
        "traced_end_bytes": end["traced_bytes"],
        "accounting": checked,
    }


def session_cost(records: Records, timed: int, sessions: int = 5_000) -> dict[str, Any]:
    """Submit latency of records that are turns of ``sessions`` open conversations, with
    conversation scoring off (``session_idle_s=0``) and on (each submit also tracks its turn),
    one no-op evaluator on one worker; then, with scoring on, every session ended at once and
    the time until the background thread has scored them all (3 turns each)."""
    out: dict[str, Any] = {"sessions": sessions, "timed": timed}
    turns = [
        dataclasses.replace(
            records.record(kept_id(i + 1)),
            conversation=Conversation(session_id=f"s-{i % sessions}", turn=i // sessions),
        )
        for i in range(max(timed, 3 * sessions))
    ]
    for key, idle in (("off", 0.0), ("on", 300.0)):
        options = PipelineOptions(Config(session_idle_s=idle, workers=1, queue_size=len(turns)))
        rig = build(noop_evaluators(1), options)
        submit = rig.pipeline.submit
        samples = []
        for record in turns:
            t0 = time.perf_counter_ns()
            submit(record)
            samples.append(time.perf_counter_ns() - t0)
        rig.pipeline.flush(timeout_s=60.0)
        out[key] = {k: v for k, v in percentiles(samples).items() if k in ("p50_us", "p99_us")}
        scoring = rig.pipeline.conversations
        if scoring is not None:
            t0 = time.perf_counter()
            for i in range(sessions):
                rig.pipeline.end_session(f"s-{i}")
            deadline = time.monotonic() + 120
            while scoring.scored < sessions and time.monotonic() < deadline:
                time.sleep(0.005)
            out["scored"] = scoring.scored
            out["scored_per_s"] = scoring.scored / (time.perf_counter() - t0)
        rig.pipeline.shutdown(timeout_s=5.0)
    return out


if __name__ == "__main__":
    sys.exit(main())
