"""Soak: a LangChain and a LlamaIndex app under continuous traffic with the local online suite
sampled at a few percent. Resources must stay flat and nothing may fail inside ragtrace.

Both deterministic apps of ``benchmarks/_overhead_apps.py`` run in one process, each on its own
thread, paced to ``--rate`` requests/s in total. ragtrace captures every request (spans go to a
``BatchSpanProcessor`` with a no-op exporter) and samples ``--sample`` of them for the default
online suite (``ONLINE_SUITE``: lexical checks, toxicity, PII, relevance, groundedness,
faithfulness on the packaged CPU models), evaluated by the pipeline's background workers.
Questions vary (a counter in each) so the evaluators' caches do not make every record free.

Every ``--every`` seconds it samples RSS, threads, open file descriptors, the evaluation
queue's depth, requests done, records evaluated, internal errors and dropped records. After a
warm-up (the first 20 % of the run) it reports each resource's growth, as a least-squares slope
per 10 minutes and as last-minus-first, and the counts of errors and drops.

Run::

    .venv/bin/python benchmarks/soak.py                   # 10 minutes
    .venv/bin/python benchmarks/soak.py --duration 60     # a smoke run

Prints a table and writes ``benchmarks/results/soak.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _overhead_apps import apply_offline_env, noop_exporter


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _counter(registry: Any, name: str) -> float:
    return sum(s.value for m in registry.collect() for s in m.samples if s.name == name)


class Traffic(threading.Thread):
    """One app asking questions at a fixed pace until stopped; counts requests and errors."""

    def __init__(self, name: str, ask: Any, rate: float, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.ask, self.period, self.stop = ask, 1.0 / rate, stop
        self.done = 0
        self.errors = 0

    def run(self) -> None:
        import _overhead_apps as apps

        next_at = time.monotonic()
        while not self.stop.is_set():
            question = f"{apps.query(self.done)} [{self.name} {self.done}]"
            try:
                self.ask(question)
            except Exception:
                self.errors += 1
            self.done += 1
            next_at += self.period
            delay = next_at - time.monotonic()
            if delay > 0:
                self.stop.wait(delay)


def slope_per_10min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value), scaled to 10 minutes."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    cov = sum((t - mx) * (v - my) for t, v in points)
    return cov / var * 600 if var else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--rate", type=float, default=40.0, help="requests/s, both apps")
    parser.add_argument("--sample", type=float, default=0.03, help="share evaluated (0.03)")
    parser.add_argument("--every", type=float, default=10.0, help="sampling period, s")
    args = parser.parse_args(argv)
    apply_offline_env(os.environ)

    import _overhead_apps as apps
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace._pipeline.sampling import Sampler
    from ragtrace.evaluators.registry import ONLINE_SUITE
    from ragtrace.integrations.langchain import instrument as instrument_langchain
    from ragtrace.integrations.llama_index import instrument as instrument_llama_index

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(noop_exporter()))
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="soak",
        tracer_provider=provider,
        registry=registry,
        evaluators=ONLINE_SUITE,
        sampler=Sampler(rate=args.sample),
    )
    instrument_langchain()
    instrument_llama_index()
    evaluated: list[int] = [0]

    class Count:
        def export(self, record: Any, evaluations: Any) -> None:
            evaluated[0] += 1

        def shutdown(self) -> None:
            """Nothing to release."""

    rt.pipeline.add_score_sink(Count())
    stop = threading.Event()
    chain, engine = apps.build_langchain_chain(), apps.build_llama_index_engine()
    apps_ = [
        Traffic("langchain", chain.invoke, args.rate / 2, stop),
        Traffic("llama_index", engine.query, args.rate / 2, stop),
    ]
    t0 = time.monotonic()
    for app in apps_:
        app.start()
    samples: list[dict[str, float]] = []
    while time.monotonic() - t0 < args.duration:
        time.sleep(args.every)
        samples.append(
            {
                "t_s": round(time.monotonic() - t0, 1),
                "rss_mb": round(_status("VmRSS") / 1024, 1),
                "threads": _status("Threads"),
                "open_fds": len(os.listdir("/proc/self/fd")),
                "queue_depth": _counter(registry, "ragtrace_queue_depth"),
                "requests": sum(a.done for a in apps_),
                "evaluated": evaluated[0],
                "internal_errors": _counter(registry, "ragtrace_internal_errors_total"),
                "dropped": _counter(registry, "ragtrace_dropped_records_total"),
            }
        )
        print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
    stop.set()
    for app in apps_:
        app.join(timeout=30)
    rt.shutdown(timeout_s=30)
    steady = [s for s in samples if s["t_s"] >= 0.2 * args.duration] or samples
    result: dict[str, Any] = {
        "benchmark": "soak",
        "command": ["soak.py", *(argv if argv is not None else sys.argv[1:])],
        "settings": vars(args) | {"evaluators": list(ONLINE_SUITE)},
        "requests": samples[-1]["requests"],
        "evaluated": samples[-1]["evaluated"],
        "app_errors": sum(a.errors for a in apps_),
        "internal_errors": samples[-1]["internal_errors"],
        "dropped": samples[-1]["dropped"],
        "growth": {
            key: {
                "first": steady[0][key],
                "last": steady[-1][key],
                "max": max(s[key] for s in steady),
                "slope_per_10min": round(slope_per_10min([(s["t_s"], s[key]) for s in steady]), 2),
            }
            for key in ("rss_mb", "threads", "open_fds", "queue_depth")
        },
        "samples": samples,
    }
    report(result)
    out = HERE / "results" / "soak.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


def report(r: dict[str, Any]) -> None:
    s = r["settings"]
    print(
        f"soak: {s['duration']:.0f} s, {r['requests']:,} requests (LangChain + LlamaIndex), "
        f"{r['evaluated']:,} evaluated by the online suite ({s['sample']:.0%} sampled)"
    )
    print("resource      | after warm-up | at the end | max    | slope per 10 min")
    print("--------------|---------------|------------|--------|-----------------")
    for key, g in r["growth"].items():
        print(
            f"{key:<13} | {g['first']:>13} | {g['last']:>10} | {g['max']:>6} | "
            f"{g['slope_per_10min']:+}"
        )
    print(
        f"app errors {r['app_errors']}, internal errors {r['internal_errors']:.0f}, "
        f"dropped records {r['dropped']:.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
