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

``--cpu-budget`` measures instead the CPU that ragtrace's three lines take from a busy app. A
LangChain RAG app (a fake chat model, a retriever over a knowledge base of ``POOL`` chunks of
about 500 characters in short sentences; each request gets 4 of them, drawn by a seeded
generator, so most passages are new to the evaluators during a short run, and a new answer built
from the first) asks ``--rate`` questions a second (default 20). After ``--warmup`` seconds (one
budget window: the models load then) the process's CPU is measured for ``--duration`` seconds
(default 30). Each configuration runs in a fresh process:

- ``app``: ``ragtrace.init(evaluators=[])``: capture only (the app and its tracing);
- ``default``: ``ragtrace.init(app=...)``, the three lines: the online suite, its model-backed
  evaluators within a quarter of one core (``model_cpu_share`` unset);
- ``unlimited``: the same with ``model_cpu_share=1000``: no limit in effect, the models' CPU
  still measured.

Per configuration: the process's CPU in cores, the CPU charged to the model-backed evaluators
(their calls' thread time) in cores, the model-backed and lexical evaluations published, the
model-backed ones dropped by the budget (``cpu_budget``), the app's request latency, and the
records still queued at the end (work the evaluators did not keep up with)::

    .venv/bin/python benchmarks/soak.py --cpu-budget                       # 3 x 40 s
    .venv/bin/python benchmarks/soak.py --cpu-budget --configs default --duration 10

It prints a table and writes ``benchmarks/results/soak_cpu_budget.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _overhead_apps import _WORDS, apply_offline_env, latency_summary, noop_exporter


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
        self.latencies_ns: list[int] = []

    def run(self) -> None:
        import _overhead_apps as apps

        next_at = time.monotonic()
        while not self.stop.is_set():
            question = f"{apps.query(self.done)} [{self.name} {self.done}]"
            started = time.perf_counter_ns()
            try:
                self.ask(question)
            except Exception:
                self.errors += 1
            self.latencies_ns.append(time.perf_counter_ns() - started)
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
    parser.add_argument("--duration", type=float, help="seconds (default 600; --cpu-budget: 30)")
    parser.add_argument("--rate", type=float, help="requests/s, both apps (40; --cpu-budget: 20)")
    parser.add_argument("--sample", type=float, default=0.03, help="share evaluated (0.03)")
    parser.add_argument("--every", type=float, default=10.0, help="sampling period, s")
    parser.add_argument(
        "--cpu-budget", action="store_true", help="the three lines' CPU under a busy app instead"
    )
    parser.add_argument("--warmup", type=float, default=10.0, help="--cpu-budget: seconds (10)")
    parser.add_argument("--seed", type=int, default=20261130, help="--cpu-budget: the draws")
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help=f"--cpu-budget: {', '.join(CONFIGS)}"
    )
    parser.add_argument("--as-config", choices=list(CONFIGS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    apply_offline_env(os.environ)
    if args.cpu_budget or args.as_config:
        args.duration = 30.0 if args.duration is None else args.duration
        args.rate = 20.0 if args.rate is None else args.rate
        return budget_main(args, argv)
    args.duration = 600.0 if args.duration is None else args.duration
    args.rate = 40.0 if args.rate is None else args.rate

    import _overhead_apps as apps
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace._pipeline.sampling import Sampler
    from ragtrace.evaluators._registry import ONLINE_SUITE
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


# -- --cpu-budget: the three lines' CPU under a busy app ----------------------------------

CONFIGS: dict[str, dict[str, Any]] = {
    "app": {"evaluators": []},
    "default": {},
    "unlimited": {"model_cpu_share": 1000.0},
}
POOL = 1000
PER_REQUEST = 4
PASSAGE_CHARS = 500
RESULT = "RESULT "


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def passage(n: int) -> str:
    """Chunk ``n`` of the knowledge base: sentences of 8 to 14 words, about 500 characters."""
    draw = random.Random(n)
    sentences: list[str] = []
    while sum(len(x) + 1 for x in sentences) < PASSAGE_CHARS:
        words = [draw.choice(_WORDS) for _ in range(draw.randint(8, 14))]
        sentences.append(" ".join(words).capitalize() + f" ({n}-{len(sentences)}).")
    return " ".join(sentences)


def build_chain(seed: int) -> Any:
    """The app: ``question -> 4 chunks of the pool -> prompt -> fake model -> text``."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    pool = [
        Document(id=f"kb-{n}", page_content=passage(n), metadata={"score": 0.9})
        for n in range(POOL)
    ]
    draws = random.Random(seed)
    picked: list[list[Document]] = []

    class PoolRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            docs = draws.sample(pool, PER_REQUEST)
            picked.append(docs)
            return docs

    def answers() -> Any:
        n = 0
        while True:
            docs = picked[-1] if picked else pool[:1]
            first = docs[0].page_content.split(".")[0]
            yield AIMessage(content=f"{first}. That holds for case {n}, as the handbook says.")
            n += 1

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer using only this context.\n\n{context}"), ("human", "{question}")]
    )
    llm = GenericFakeChatModel(messages=answers())
    context = PoolRetriever() | RunnableLambda(
        lambda docs: "\n\n".join(d.page_content for d in docs)
    )
    setup = {"context": context, "question": RunnablePassthrough()}
    return setup | prompt | llm | StrOutputParser()


class CountRuns:
    """A score sink counting the evaluations published, model-backed and lexical."""

    def __init__(self, model_backed: set[str]) -> None:
        self.model_backed = model_backed
        self.lock = threading.Lock()
        self.model = 0
        self.lexical = 0

    def export(self, record: Any, evaluations: Any) -> None:
        with self.lock:
            for ev in evaluations:
                if ev.evaluator in self.model_backed:
                    self.model += 1
                else:
                    self.lexical += 1

    def shutdown(self) -> None:
        """Nothing to release."""

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.model, self.lexical


def _value(registry: Any, name: str, labels: dict[str, str]) -> float:
    return float(registry.get_sample_value(name, labels) or 0.0)


def run_config(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration, in this process."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace.integrations.langchain import instrument, uninstrument

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(noop_exporter()))
    registry = CollectorRegistry()
    count = CountRuns(set())
    rt = ragtrace.init(
        app="busy-app",
        tracer_provider=provider,
        registry=registry,
        score_sinks=[count],
        **CONFIGS[name],
    )
    count.model_backed = {e.name for e in rt.pipeline.evaluators if e.kind == "model"}
    instrument()
    budget = rt.pipeline.cpu_budget
    drops = {"decision": "dropped", "reason": "cpu_budget"}
    stop = threading.Event()
    traffic = Traffic("app", build_chain(args.seed).invoke, args.rate, stop)
    traffic.start()
    time.sleep(args.warmup)
    wall0, cpu0 = time.monotonic(), time.process_time()
    done0, lat0 = traffic.done, len(traffic.latencies_ns)
    charged0 = budget.charged_s if budget is not None else 0.0
    runs0 = count.snapshot()
    drops0 = _value(registry, "ragtrace_sampling_decisions_total", drops)
    time.sleep(args.duration)
    wall = time.monotonic() - wall0
    cpu = time.process_time() - cpu0
    charged = (budget.charged_s if budget is not None else 0.0) - charged0
    runs = count.snapshot()
    dropped = _value(registry, "ragtrace_sampling_decisions_total", drops) - drops0
    requests = traffic.done - done0
    latencies = traffic.latencies_ns[lat0 : lat0 + requests]
    queued = _value(registry, "ragtrace_queue_depth", {})
    stop.set()
    traffic.join(timeout=30)
    uninstrument()
    rt.shutdown(timeout_s=5)  # what is still queued is not waited for
    return {
        "config": name,
        "evaluators": [e.name for e in rt.pipeline.evaluators],
        "model_cpu_share": None if budget is None else budget.share,
        "wall_s": round(wall, 2),
        "requests": requests,
        "request_rate": round(requests / wall, 2),
        "app_errors": traffic.errors,
        "process_cores": round(cpu / wall, 3),
        "model_cores": round(charged / wall, 3) if budget is not None else None,
        "model_evaluations": runs[0] - runs0[0],
        "lexical_evaluations": runs[1] - runs0[1],
        "cpu_budget_drops": int(dropped),
        "queued_at_end": int(queued),
        "latency": latency_summary(latencies),
    }


def budget_report(results: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    print(
        f"soak --cpu-budget: a LangChain app at {settings['rate']:g} req/s, "
        f"{settings['duration']:g} s measured after {settings['warmup']:g} s; {settings['cpu']}, "
        "load average "
        f"{' '.join(str(x) for x in settings['load_average'])} at the end"
    )
    base = next((r["process_cores"] for r in results if r["config"] == "app"), None)
    head = (
        "config    | process cores | over the app | model cores | model evals | cpu_budget "
        "drops | lexical evals | queued | latency p50 / p99 ms"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        over = "" if base is None else f"{r['process_cores'] - base:+.3f}"
        model = "-" if r["model_cores"] is None else f"{r['model_cores']:.3f}"
        lat = r["latency"] or {}
        print(
            f"{r['config']:<9} | {r['process_cores']:>13.3f} | {over:>12} | {model:>11} | "
            f"{r['model_evaluations']:>11} | {r['cpu_budget_drops']:>16} | "
            f"{r['lexical_evaluations']:>13} | {r['queued_at_end']:>6} | "
            f"{lat.get('p50_us', 0) / 1000:.2f} / {lat.get('p99_us', 0) / 1000:.2f}"
        )


def budget_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``--cpu-budget``: each configuration in a fresh process, then the table and the JSON."""
    for variable in ("RAGTRACE_EVALUATORS", "RAGTRACE_MODEL_CPU_SHARE", "RAGTRACE_CONFIG_FILE"):
        os.environ.pop(variable, None)  # the three lines, as an app runs them
    if args.as_config:
        print(RESULT + json.dumps(run_config(args.as_config, args)), flush=True)
        # A worker thread may still be inside onnxruntime: leave without the interpreter's
        # teardown, which would end it mid-call (the figures are out already).
        os._exit(0)
    results = []
    for name in args.configs.split(","):
        command = [sys.executable, str(Path(__file__).resolve()), "--as-config", name]
        command += ["--rate", str(args.rate), "--duration", str(args.duration)]
        command += ["--warmup", str(args.warmup), "--seed", str(args.seed)]
        print(f"{name}: {args.warmup + args.duration:.0f} s ...", file=sys.stderr, flush=True)
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = [x for x in done.stdout.splitlines() if x.startswith(RESULT)]
        if done.returncode != 0 or not lines:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        results.append(json.loads(lines[-1][len(RESULT) :]))
    settings = {
        "rate": args.rate,
        "duration": args.duration,
        "warmup": args.warmup,
        "seed": args.seed,
        "cpu": f"{cpu_name()}, {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
    }
    budget_report(results, settings)
    out = HERE / "results" / "soak_cpu_budget.json"
    out.parent.mkdir(exist_ok=True)
    payload = {
        "benchmark": "soak --cpu-budget",
        "date": date.today().isoformat(),
        "command": ["soak.py", *(argv if argv is not None else sys.argv[1:])],
        "settings": settings,
        "results": results,
    }
    out.write_text(json.dumps(payload, indent=2))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
