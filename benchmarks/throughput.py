"""Evaluator throughput: records per second of each evaluator alone and of the online suite.

The issue's target: the default online suite (answer relevance, context relevance,
groundedness, faithfulness, PII, sensitive data, toxicity, language mismatch, looping) scores
at least 50 records per second on 2 cores, for records of 4 chunks x 500 characters and a
3-sentence answer, with model load time reported separately.

Records come from ``_throughput_records.py`` (seeded, varied English prose) in three workloads:
``cold`` (every chunk distinct), ``corpus`` (chunks drawn from 300 passages, as retrieval over a
knowledge base returns them, so caches fill as the run goes) and ``warm`` (the corpus records
after one pass over every passage: a service's steady state, where only the question and the
answer of a request are new text) and ``indexed`` (the cold records, their passages indexed
beforehand into a passage store by ``ragtrace index``, which evaluation then opens:
``ragtrace._backends.passage_store``; the indexing time is reported as ``prepass_s``, apart).

Each measurement runs in a fresh process (no model, cache or warm-up carried over):

1. build the evaluators and score one warm-up record (its own text) on every worker process:
   this is the *load* time (imports, model files, first inference), reported apart;
2. for ``warm`` only, ``EvalLoop.prime`` scores ``corpus_pass()`` (72 records, every corpus
   passage once) on every worker process: its time is reported as ``prepass_s``, apart;
3. score ``--records`` records through ``ragtrace._offline.loop.EvalLoop``, the loop behind
   ``ragtrace eval`` (JSON in and out, windows, each evaluator's batch size, timeouts):
   records/s and ms/record are from this part only; CPU cores = CPU time / wall time.

Measured: each evaluator alone, the engine with a no-op evaluator (its own cost), and the suite
(the evaluators asked for that could be built) for each ``--processes`` (worker processes, each
with its own models and caches: ``ragtrace._engine.evaluation``) and ``--workers`` (evaluators run
side by side on threads in each process). CPU cores counts the worker processes' CPU time too.
``--via pipeline`` times the suite through the online ``EvaluationPipeline`` instead (submit
every record, then flush; ``PipelineOptions(workers=, processes=)``; ``measure_pipeline`` below):
the path ``ragtrace.init`` runs in a service, with its queue, batches and metrics. An
evaluator that cannot be built (not written yet, a missing extra) gets
a row saying so, and the suite row says it is incomplete: its target is then not judged.
Backends get ``--threads`` threads each (``RAGTRACE_MODEL_THREADS``, ``OMP_NUM_THREADS``).
``--shared-cache-mb 0,32`` compares worker processes without and with the cache they share
(``ragtrace._backends.shared_cache``; ``RAGTRACE_SHARED_CACHE_MB``) in one run; each
``--variant a.key=value,b.key=value`` adds a set of evaluator options, run right after the
``--option`` set for every measurement, so that settings alternate on a noisy box
(``--variant profile:static``: the options of the online suite's static profile,
``ragtrace.evaluators._suites``).

Run::

    .venv/bin/python benchmarks/throughput.py                    # default suite, 500 records
    .venv/bin/python benchmarks/throughput.py --records 100 --evaluators looping,groundedness
    .venv/bin/python benchmarks/throughput.py --no-alone --processes 1,2 --workers 1 --threads 1
    .venv/bin/python benchmarks/throughput.py --no-alone --via pipeline --processes 2 --workers 1

It prints a table and writes ``benchmarks/results/throughput.json``.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _throughput_records import WORKLOADS, corpus_pass, records

from ragtrace._offline.selection import SelectionError, parse_options
from ragtrace._offline.summary import markdown_table
from ragtrace.evaluators._suites import suite_options

DEFAULT_JSON = HERE / "results" / "throughput.json"
VIAS = ("engine", "pipeline")
CHILD_TIMEOUT_S = 1800
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def _csv(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Evaluator throughput, alone and as a suite.")
    parser.add_argument("--records", type=int, default=500, help="records per measurement")
    parser.add_argument(
        "--threads", type=int, default=2, help="threads per model backend (default 2: 2 cores)"
    )
    parser.add_argument(
        "--workers", type=_csv, default=["1", "2"], help="suite runs: runner workers (default 1,2)"
    )
    parser.add_argument(
        "--processes",
        type=_csv,
        default=["1"],
        help="suite runs: worker processes (default 1; e.g. 1,2 with --threads 1)",
    )
    parser.add_argument(
        "--via",
        type=_csv,
        default=["engine"],
        help="suite runs through: engine (ragtrace eval's loop), pipeline (the online "
        "EvaluationPipeline ragtrace.init builds), or both: engine,pipeline",
    )
    parser.add_argument(
        "--evaluators", type=_csv, default=list(DEFAULT_SUITE), help="default: the online suite"
    )
    parser.add_argument(
        "--workloads",
        type=_csv,
        default=list(WORKLOADS),
        help="cold,corpus,warm,indexed (default all)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="EVALUATOR.KEY=VALUE",
        help="an evaluator option, as for ragtrace eval (e.g. faithfulness.detector=crossencoder)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="EVALUATOR.KEY=VALUE[,...]",
        help="another set of options to run beside the --option ones, alternating with them in "
        "one run (repeatable; e.g. pii_leakage.ner_candidates_only=true, or profile:static)",
    )
    parser.add_argument(
        "--shared-cache-mb",
        type=_csv,
        default=["32"],
        help="the worker processes' shared cache, MB (0: off; default 32, the library's)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-alone", action="store_true", help="only the suite runs")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is None:
        unknown = sorted(set(args.workloads) - set(WORKLOADS))
        if set(args.via) - set(VIAS):
            parser.error(f"--via takes {', '.join(VIAS)}")
        try:
            args.options = parse_options(args.option)
            args.variants = [("", args.options)] + [
                (v, _merged(args.options, _variant_options(v))) for v in args.variant
            ]
        except (SelectionError, ValueError) as exc:
            parser.error(str(exc))
        if unknown or args.records < 1 or args.threads < 1 or not args.evaluators:
            parser.error(f"need --records/--threads >= 1, evaluators, workloads in {WORKLOADS}")
        try:
            args.workers = [int(w) for w in args.workers]
            args.processes = [int(p) for p in args.processes]
            args.shared_cache_mb = [float(m) for m in args.shared_cache_mb]
        except ValueError:
            parser.error("--workers, --processes and --shared-cache-mb take numbers, e.g. 1,2")
        if min(args.shared_cache_mb) < 0:
            parser.error("--shared-cache-mb must be >= 0")
        if min(args.workers + args.processes) < 1:
            parser.error("--workers and --processes must be >= 1")
    return args


def _variant_options(variant: str) -> dict[str, dict[str, Any]]:
    """A ``--variant``'s options: ``EVALUATOR.KEY=VALUE[,...]``, or ``profile:NAME`` for the
    options a profile of ``ragtrace.evaluators._suites`` gives the online suite."""
    if variant.startswith("profile:"):
        chosen = suite_options(variant.removeprefix("profile:"))
        return {name: options for name, options in chosen.items() if options}
    return parse_options(_csv(variant))


def _merged(
    base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``base``'s evaluator options with ``extra``'s on top."""
    names = set(base) | set(extra)
    return {n: {**base.get(n, {}), **extra.get(n, {})} for n in names}


# -- the child: one measurement in a fresh process ----------------------------------------------


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Build the evaluators, time the warm-up record, then time ``spec['records']`` records."""
    from ragtrace._offline.loop import EvalLoop
    from ragtrace.evaluators import FunctionEvaluator
    from ragtrace.evaluators import _registry as registry

    registry.register(NOOP, lambda **kw: FunctionEvaluator(lambda r: 1.0, name=NOOP, **kw))
    start = time.perf_counter()
    try:
        options = spec.get("options", {})
        evaluators = [registry.create(name, **options.get(name, {})) for name in spec["evaluators"]]
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    build_s = time.perf_counter() - start
    if spec.get("via", "engine") == "pipeline":
        result = measure_pipeline(spec, evaluators, _cpu_seconds)
        return {**result, "build_s": build_s, "load_s": build_s + result["load_s"]}
    warm = _jsonl(records(spec["workload"], 1, seed=spec["seed"] + 7919))
    rows = records(spec["workload"], spec["records"], seed=spec["seed"])
    timed = _jsonl(rows)
    prepass_s = index_passages(spec, rows) if spec["workload"] == "indexed" else 0.0
    engine = EvalLoop(
        evaluators,
        progress=False,
        messages=None,
        workers=spec["workers"],
        processes=spec.get("processes", 1),
    )
    try:
        engine.prime(io.BytesIO(warm))  # every process loads its models here
        load_s = time.perf_counter() - start - prepass_s  # indexing is reported apart
        first_call = {n: s.first_call_s for n, s in engine.runner.stats.items()}
        if spec["workload"] == "warm":
            prepass_start = time.perf_counter()
            engine.prime(io.BytesIO(_jsonl(corpus_pass())))  # every process sees the corpus
            prepass_s = time.perf_counter() - prepass_start
        before = {n: s.seconds for n, s in engine.runner.stats.items()}
        errors_before = engine.summary.errors
        wall0, cpu0 = time.perf_counter(), _cpu_seconds()
        engine.run(io.BytesIO(timed), io.StringIO())
        wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    finally:
        engine.close()
    n = spec["records"]
    return {
        "build_s": build_s,
        "load_s": load_s,
        "prepass_s": prepass_s,
        "first_call_s": first_call,
        **rates(n, wall, cpu),
        "errors": engine.summary.errors - errors_before,
        "skipped": sum(r["skipped"] for r in engine.summary.rows()),
        "evaluator_ms_per_record": {
            name: 1000 * (s.seconds - before[name]) / n for name, s in engine.runner.stats.items()
        },
    }


def index_passages(spec: dict[str, Any], rows: list[dict[str, Any]]) -> float:
    """``ragtrace index`` over the passages of ``rows`` (in its own process, with the suite's
    evaluators and options) into a new store that this process and its workers then open
    (``$RAGTRACE_PASSAGE_STORE``); returns the wall seconds it took."""
    import atexit
    import shutil
    import tempfile

    from ragtrace._backends.passage_store import ENV

    folder = Path(tempfile.mkdtemp(prefix="ragtrace-bench-index-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    chunks = folder / "chunks.jsonl"
    chunks.write_bytes(_jsonl([{"text": c["text"]} for r in rows for c in r["contexts"]]))
    store = folder / "passages.sqlite"
    options = [
        f"--option={name}.{key}={json.dumps(value)}"
        for name, chosen in spec.get("options", {}).items()
        if name in spec["evaluators"]
        for key, value in chosen.items()
    ]
    command = [sys.executable, "-m", "ragtrace", "index", "--quiet", "--store", str(store)]
    command += ["-e", ",".join(spec["evaluators"]), *options, str(chunks)]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=CHILD_TIMEOUT_S)
    os.environ[ENV] = str(store)
    return time.perf_counter() - start


def _cpu_seconds() -> float:
    """CPU time of this process and its live worker processes (Linux ``/proc``)."""
    import multiprocessing

    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for child in multiprocessing.active_children():
        try:
            stat = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(stat[11]) + int(stat[12])) / tick  # utime, stime
    return total


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


# -- the parent: plan, run children, report -------------------------------------------------------


def run_child(spec: dict[str, Any], threads: int) -> dict[str, Any]:
    env = {
        **os.environ,
        **OFFLINE_ENV,
        "RAGTRACE_MODEL_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
        "RAGTRACE_SHARED_CACHE_MB": str(spec.get("shared_cache_mb", 32.0)),
    }
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {"error": f"child failed: {tail[0]}"[:300]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def collect(args: argparse.Namespace, start: float) -> list[dict[str, Any]]:
    results = []
    base = {"records": args.records, "seed": args.seed, "workers": 1, "options": args.options}
    for workload in args.workloads:
        usable = []
        alone = [] if args.no_alone else [*args.evaluators, NOOP]
        for name in alone:
            spec = {**base, "workload": workload, "evaluators": [name]}
            r = {"kind": "alone", **spec, **run_child(spec, args.threads)}
            results.append(r)
            if name != NOOP and "error" not in r:
                usable.append(name)
            log(start, describe(r))
        if args.no_alone:
            usable = [n for n in args.evaluators if "error" not in _probe(n, args.options)]
        plan = itertools.product(
            args.via, args.processes, args.workers, args.shared_cache_mb, args.variants
        )
        for via, processes, workers, shared_mb, (variant, options) in plan:
            spec = {**base, "workload": workload, "evaluators": usable, "workers": workers,
                    "processes": processes, "via": via, "shared_cache_mb": shared_mb,
                    "variant": variant, "options": options}  # fmt: skip
            r = {"kind": "suite", **spec, "asked": args.evaluators}
            r.update(run_child(spec, args.threads) if usable else {"error": "nothing to run"})
            results.append(r)
            log(start, describe(r))
    return results


def _probe(name: str, options: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from ragtrace.evaluators import _registry as registry

    try:
        registry.create(name, **options.get(name, {}))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {}


def log(start: float, text: str) -> None:
    print(f"[{time.monotonic() - start:6.1f}s] {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(json.loads(args.child))))
        return 0
    from pipeline import machine

    started, start = datetime.now(UTC), time.monotonic()
    info = machine()
    results = collect(args, start)
    info["loadavg_end"] = list(os.getloadavg())
    text = markdown_table(HEADER, rows(results, args.evaluators))
    split = suite_split(results)
    if split:
        text += "\n\nInside the suite runs: ms/record spent in each evaluator's calls\n\n" + split
    print(text)
    report = {
        "benchmark": "throughput",
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - start, 1),
        "command": [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])],
        "machine": info,
        "python": platform.python_version(),
        "versions": {n: _version(n) for n in ("ragtrace", "onnxruntime", "torch")},
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "target_records_per_s": TARGET_RPS,
        "records_shape": {
            "chunks": 4,
            "chunk_chars": "470-570 (505 mean)",
            "answer": "3 sentences",
        },
        "results": results,
        "table": text,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.json} ({report['duration_s']:.0f} s)", file=sys.stderr)
    return 0


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# What ``throughput.py`` measures against, and the tables it prints.
#
# The default online suite and its target (``TARGET_RPS`` records per second on 2 cores), one
# row per measurement with the target met or how many times faster the suite must get, and the
# suite's split by evaluator (where the time goes).


DEFAULT_SUITE = (
    "answer_relevance", "context_relevance", "groundedness", "faithfulness", "pii_leakage",
    "sensitive_data", "toxicity", "language_mismatch", "looping",
)  # fmt: skip
NOOP = "_noop"
TARGET_RPS = 50.0
NOTE_CHARS = 72  # the table's note column; the JSON keeps whole messages


def describe(r: dict[str, Any]) -> str:
    what = f"{r['kind']}{_via(r)} {','.join(r['evaluators']) or '-'} [{r['workload']}, {_shape(r)}]"
    if "error" in r:
        return f"{what}: {r['error']}"
    return f"{what}: load {r['load_s']:.2f} s, {r['records_per_s']:,.1f} rec/s"


def _label(r: dict[str, Any]) -> str:
    if r["kind"] == "alone":
        name = r["evaluators"][0]
        return "engine alone (no-op evaluator)" if name == NOOP else name
    n, asked = len(r["evaluators"]), len(r["asked"])
    return f"suite {n} of {asked}{_via(r)}, {_shape(r)}"


def _via(r: dict[str, Any]) -> str:
    """`` via pipeline`` for a run through the online pipeline; the engine goes unnamed."""
    return " via pipeline" if r.get("via") == "pipeline" else ""


def _shape(r: dict[str, Any]) -> str:
    """``2p x 1w``: worker processes x runner workers (threads) in each; ``, unshared`` when
    the processes ran without their shared cache."""
    unshared = r.get("processes", 1) > 1 and r.get("shared_cache_mb", 32.0) == 0
    variant = f", {r['variant']}" if r.get("variant") else ""
    return f"{r.get('processes', 1)}p x {r['workers']}w{', unshared' if unshared else ''}{variant}"


def rows(results: list[dict[str, Any]], asked: Sequence[str]) -> list[tuple[str, ...]]:
    table: list[tuple[str, ...]] = []
    complete_suite = set(DEFAULT_SUITE) <= set(asked)
    for r in results:
        label, workload = _label(r), r["workload"]
        if "error" in r:
            status = "missing" if r["kind"] == "alone" else "not run"
            note = f"{status}: {r['error']}"
            note = note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 3] + "..."
            table.append((label, workload, "-", "-", "-", "-", "-", "-", note))
            continue
        target, met, note = "-", "-", ""
        if r["kind"] == "suite":
            target = f">= {TARGET_RPS:g}"
            whole = complete_suite and len(r["evaluators"]) == len(r["asked"])
            met = _met(r["records_per_s"]) if whole else "n/a"
            missing = sorted(set(r["asked"]) - set(r["evaluators"]))
            note = f"incomplete, without {', '.join(missing)}" if missing else ""
        if r["errors"]:
            note = f"{r['errors']:,} error scores; {note}".rstrip("; ")
        table.append(
            (label, workload, f"{r['load_s']:.2f}", f"{r['records_per_s']:,.1f}",
             f"{r['ms_per_record']:.2f}", f"{r['cores']:.2f}", target, met, note)
        )  # fmt: skip
    return table


def _met(records_per_s: float) -> str:
    """``yes``, or how many times faster the suite must get to reach the target."""
    if records_per_s >= TARGET_RPS:
        return "yes"
    return f"NO, {TARGET_RPS / records_per_s:.1f}x short" if records_per_s > 0 else "NO"


def suite_split(results: list[dict[str, Any]]) -> str:
    """A table of where each suite run's time went: ms/record per evaluator."""
    runs = [r for r in results if "evaluator_ms_per_record" in r and r["kind"] == "suite"]
    if not runs:
        return ""
    names = list(dict.fromkeys(n for r in runs for n in r["evaluators"]))
    header = ("evaluator", *(f"{r['workload']}, {_shape(r)}" for r in runs))
    body = [(name, *(_ms(r["evaluator_ms_per_record"].get(name)) for r in runs)) for name in names]
    body.append(("whole suite (wall)", *(_ms(r["ms_per_record"]) for r in runs)))
    return markdown_table(header, body)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


HEADER = ("measurement", "workload", "load s", "rec/s", "ms/rec", "CPU cores", "target", "met?",
          "note")  # fmt: skip


# The online path for ``throughput.py --via pipeline``: records through ``EvaluationPipeline``.
#
# ``submit`` every record, then ``flush``: records/s is records / (last publish - first submit).
# The pipeline is the one ``ragtrace.init`` builds (sampler at rate 1.0, Prometheus metrics in a
# private registry), with a score sink counting what it is given; ``PipelineOptions.processes``
# and ``workers`` come from the spec. The warm-up record and, for ``warm``, the corpus pass go
# through ``EvaluationPipeline.prime``, which runs them on every worker process (each has its own
# caches), as the offline engine's ``prime`` does.
from collections.abc import Callable

from pipeline import CountingSink

from ragtrace._model import RagRecord
from ragtrace._offline.records import Line, RecordParser

FLUSH_TIMEOUT_S = 1800.0


_PARSER = RecordParser(require_response=True)


def _record(i: int, row: dict[str, Any]) -> RagRecord:
    """The record ``ragtrace eval`` would read from ``row`` (chunk ids and scores kept)."""
    parsed = _PARSER.parse(Line(i, json.dumps(row).encode()))
    assert parsed is not None
    return parsed.record


def measure_pipeline(
    spec: dict[str, Any], evaluators: list[Any], cpu_seconds: Callable[[], float]
) -> dict[str, Any]:
    """Warm up, then time ``spec['records']`` records through the pipeline.

    ``cpu_seconds`` reads the CPU time of this process and its worker processes.
    """
    from prometheus_client import CollectorRegistry

    from ragtrace._config import Config
    from ragtrace._diagnostics import Diagnostics
    from ragtrace._metrics.collection import Metrics
    from ragtrace._pipeline import EvaluationPipeline, PipelineOptions

    metrics = Metrics(CollectorRegistry(), "throughput")
    sink = CountingSink()
    processes = spec.get("processes", 1)
    options = PipelineOptions(
        Config(
            queue_size=spec["records"] + 1000,
            workers=spec["workers"],
            processes=0 if processes == 1 else processes,
            shared_cache_mb=spec.get("shared_cache_mb", 32.0),
        )
    )
    pipeline = EvaluationPipeline(
        Diagnostics(), metrics, evaluators=evaluators, sinks=[sink], options=options
    )
    counter = iter(range(1, 10**9))
    seed = spec["seed"] + 7919  # the warm-up record's own text

    def through(rows: list[dict[str, Any]]) -> float:
        start = time.perf_counter()
        for row in rows:
            if not pipeline.submit(_record(next(counter), row)):
                raise RuntimeError("the pipeline dropped a record")
        if not pipeline.flush(FLUSH_TIMEOUT_S):
            raise RuntimeError("the pipeline did not finish in time")
        return time.perf_counter() - start

    start = time.perf_counter()
    try:
        failed = pipeline.prime([_record(0, r) for r in records(spec["workload"], 1, seed=seed)])
        load_s = time.perf_counter() - start
        prepass_s = 0.0
        if spec["workload"] == "warm":
            prepass_start = time.perf_counter()
            failed += pipeline.prime([_record(0, r) for r in corpus_pass()])
            prepass_s = time.perf_counter() - prepass_start
        if failed:
            raise RuntimeError(f"{failed} evaluator calls failed while priming")
        timed = records(spec["workload"], spec["records"], seed=spec["seed"])
        cpu0 = cpu_seconds()
        wall = through(timed)
        cpu = cpu_seconds() - cpu0
    finally:
        pipeline.shutdown(timeout_s=10)
    return {
        "load_s": load_s,
        "prepass_s": prepass_s,
        **rates(spec["records"], wall, cpu),
        "published": sink.records,
        "errors": sink.errors,
    }


def rates(n: int, wall: float, cpu: float) -> dict[str, Any]:
    """The timed part's figures, as both paths report them: ``n`` records in ``wall`` seconds
    using ``cpu`` CPU seconds."""
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "records": n,
        "records_per_s": n / wall,
        "ms_per_record": 1000 * wall / n,
        "cores": cpu / wall,
    }


if __name__ == "__main__":
    sys.exit(main())
