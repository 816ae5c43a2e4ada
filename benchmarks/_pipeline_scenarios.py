"""The measurements of ``pipeline.py``: submit latency, throughput, overload.

Each function builds its own pipeline (fresh registry), runs one scenario, shuts the pipeline
down and returns plain numbers plus an accounting check (see ``_pipeline_workload.account``).
"""

from __future__ import annotations

import gc
import queue
import time
import tracemalloc
from array import array
from dataclasses import dataclass
from typing import Any

from _pipeline_workload import (
    LexicalOverlap,
    Records,
    SlowCall,
    account,
    build,
    kept_id,
    noop_evaluators,
    percentiles,
    rss_kib,
)

from ragtrace.pipeline import PipelineOptions

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
    rig = build([LexicalOverlap(rounds)], PipelineOptions(queue_size=size), rate)
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
    options = PipelineOptions(queue_size=n + warm, workers=workers)
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
    rig = build([SlowCall(delay_s)], PipelineOptions(queue_size=queue_size))
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
