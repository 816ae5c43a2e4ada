"""What the default online suite costs per record, where the CPU goes, and its three goals.

    .venv/bin/python benchmarks/cost_profile.py [--records 20] [--rounds 2] [--demo-records 300]
        [--variants before,float32,int8,select,int8-select] [--judge-records 3]
        [--no-demo] [--no-judge]
        [--threads 1] [--no-fleet] [--data-dir ../shared/data] [--compare-with OTHER_CHECKOUT]
        [--json benchmarks/results/cost_profile.json]
    .venv/bin/python benchmarks/cost_profile.py --selection-recall 60 [--per-probe 3]
        [--stage bm25|wordllama]
    .venv/bin/python benchmarks/cost_profile.py --same-scores --compare-with OTHER_CHECKOUT
        [--part tuning|locked] [--per-cell 6] [--tolerance 1e-6]

Measured as a new user would: one process, the default online suite
(``ragtrace.evaluators._suites.online_suite()``), models warmed first on a record of its own;
process CPU (``time.process_time``), never wall time, because the box is shared. Each
measurement runs in a fresh process (this script, ``--child``); the variants alternate, round after
round, so load drifts hit them alike (medians over rounds are reported):

- ``before``: the embedder as it was (float32 products; a call's texts in passes of 64 padded
  to the longest);
- ``float32``: float32 products, passes grouped by token count (``$RAGTRACE_EMBEDDING_BACKEND=
  onnx``);
- ``int8``: the int8 copy of the model (``onnx-int8``, ``ragtrace._backends.dynamic_int8``, one
  sentence a pass), the default;
- ``select`` and ``int8-select``: float32 or int8 with the suite's ``select`` profile (a
  lexical first stage picks the passage sentences embedded:
  ``ragtrace.evaluators._sentence_selection``); no fleet runs (workers build the default suite).

``--compare-with OTHER_CHECKOUT`` measures every variant a second time with ragtrace imported from
another checkout (a ``git worktree`` of the commit before a change; it must hold the internal
module names this script imports), in the same rounds, alternating with this one's, as
``<variant>@other`` (the workloads above only: no demo or fleet runs); the ratios this / other
are printed.

``--same-scores --compare-with OTHER_CHECKOUT`` checks that a change meant to cost less left every
score where it was: the default suite (every evaluator on every record) scores the alarm
benchmark's cases of ``--part`` (``_alarm_cases``: normal answers and answers made bad every way
the suite names; at most ``--per-cell`` per evaluator, bad kind and data set, drawn as
``alarms.py --traffic`` draws its rows) with ragtrace from this checkout and from the other, each
in a fresh process with no cache tier. Printed: per score, the values compared and the largest
difference, then every value that differs by more than ``--tolerance``, every verdict
(``passed``) or error that differs and every score found on one side only; exits 1 if any.

The default (what ``get_embedder()`` picks with no setting: ``DEFAULT_VARIANT``) is judged
against the goals:

1. at most 100 ms of CPU per cold RAGTruth record (contexts ~400 words, never seen);
2. at most 20 ms per record whose passages were seen before (another answer to the same
   question over the same passages);
3. at least 50 cold records/s on 2 cores for the demo's short records (``demo_records``), through
   the online pipeline with 2 worker processes: the CPU capacity (2 cores / CPU per record) is
   judged, the wall-clock rate of the shared box is printed beside it.

Printed: per evaluator ms per record; per model call (calls, forward passes, sentences, tokens,
padded positions, the model's CPU) and per sentence and token; the sentence splitter's CPU;
ms per record for cold records one at a time and in batches of ``--batch`` (each evaluator's
``evaluate_batch``, as the pipeline's workers call it), warm, and indexed (passages put in a
passage store by ``ragtrace index`` beforehand); the demo's records/s; the local llama.cpp
judge's CPU for the same records (``judge_faithfulness``, the packaged Qwen2.5-Coder-0.5B on one
thread); the goals, met or the distance. Writes the JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from _labelled_data import data_dir
from fleet import Redis, start_workers, stop

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._model import Chunk, RagRecord
from ragtrace._offline.summary import markdown_table
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.redis_shipper import RedisShipper
from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace.evaluators._registry import ONLINE_SUITE

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "results" / "cost_profile.json"


# -- CPU seconds of other processes, read from Linux ``/proc`` (user + system) ---
def processes_cpu_s(pids: Iterable[int | str]) -> float:
    """User and system CPU seconds of ``pids`` so far; a process that is gone counts 0."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def children_pids() -> list[str]:
    """The pids of this process's children alive now."""
    pids: list[str] = []
    for listing in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            pids += listing.read_text().split()
        except OSError:  # a thread that ended since the listing
            continue
    return pids


# -- Records for ``cost_profile.py``: real-size RAGTruth records, cold and warm, and the demo's ---
RAGTRUTH = "ragtruth_test_response_level.dev.jsonl"
_PRODUCT = re.compile(r"\bAurora H5\b|\bH5\b|\bAurora\b")


def _record(key: str, query: str, passages: list[str], response: str) -> RagRecord:
    """A record as capture hands it over: each chunk cut at ``Config().max_chunk_chars``."""
    from ragtrace._capture.content import TextPolicy
    from ragtrace._config import Config

    limit, policy = Config().max_chunk_chars, TextPolicy(None)
    digest = int(hashlib.blake2b(key.encode(), digest_size=8).hexdigest(), 16)
    chunks = tuple(
        Chunk(text=policy.clean(p, limit)[0], id=f"p{i}") for i, p in enumerate(passages)
    )
    return RagRecord(f"{digest:032x}", f"{digest:016x}", query, chunks=chunks, response=response)


def _passages(row: dict[str, Any]) -> list[str]:
    found = row.get("context_passages") or [row["context"]]
    if isinstance(found, str):  # stored as a list's repr in some rows
        try:
            found = json.loads(found)
        except ValueError:
            found = [row["context"]]
    return [str(p) for p in found if str(p).strip()]


def ragtruth_pairs(folder: Path, n: int, seed: int) -> list[tuple[RagRecord, RagRecord]]:
    """(cold, warm) records of ``n`` sources, drawn with ``seed``."""
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with (folder / RAGTRUTH).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                by_source[str(row["source_id"])].append(row)
    sources = sorted(s for s, rows in by_source.items() if len(rows) >= 2)
    chosen = random.Random(seed).sample(sources, min(n, len(sources)))
    pairs = []
    for source in chosen:
        first, second = random.Random(f"{seed}-{source}").sample(by_source[source], 2)
        query = str(first.get("question") or first.get("instruction") or "").strip()
        passages = _passages(first)
        pairs.append(
            (
                _record(first["id"], query, passages, str(first["response"])),
                _record(second["id"], query, passages, str(second["response"])),
            )
        )
    return pairs


def context_words(record: RagRecord) -> int:
    """Words in a record's chunks."""
    return sum(len((c.text or "").split()) for c in record.chunks)


def demo_records(n: int, seed: int) -> list[RagRecord]:
    """``n`` cold records of the demo's shape (see the module's docstring)."""
    from ragtrace.demo._corpus import ARTICLES, QUESTIONS
    from ragtrace.demo._generator import compose_answer
    from ragtrace.demo._retrieval import Bm25Index

    index = Bm25Index(ARTICLES)
    rng = random.Random(seed)
    out = []
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        hits = index.search(question, k=4)
        name = f"{rng.choice(('Borealis', 'Solvik', 'Helion', 'Nordlys'))} K{1000 + i}"

        def renamed(text: str, name: str = name) -> str:
            new = _PRODUCT.sub(name, text)
            return new if new != text else f"{name}: {text}"

        passages = [renamed(article.text) for article, _ in hits]
        asked = _PRODUCT.sub(name, question)
        if asked == question:
            asked = f"{question.rstrip('?')} with the {name}?"
        answer = compose_answer(asked, "\n\n".join(passages), "grounded", random.Random(i))
        out.append(_record(f"demo-{seed}-{i}", asked, passages, answer))
    return out


# -- ``cost_profile.py``'s figures: per-record summaries, the goals, and the printed tables ---
GOAL_COLD_MS, GOAL_WARM_MS, GOAL_DEMO_RPS = 100.0, 20.0, 50.0
DEMO_CORES = 2
WORKLOADS = ("cold", "cold_batched", "warm", "indexed")
MODEL_KEYS = ("calls", "passes", "texts", "tokens", "positions", "model_cpu_ms")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's records: ms per record, by evaluator, per model call and per sentence."""
    model = {k: statistics.fmean(r["model"][k] for r in rows) for k in rows[0]["model"]}
    model["model_cpu_ms"] = 1000 * model.pop("model_cpu_s")
    texts = sum(r["model"]["texts"] for r in rows)
    positions = sum(r["model"]["positions"] for r in rows)
    model_ms = 1000 * sum(r["model"]["model_cpu_s"] for r in rows)
    names = list(rows[0]["by_evaluator_ms"])
    return {
        "records": len(rows),
        "ms": statistics.fmean(r["ms"] for r in rows),
        "median_ms": statistics.median(r["ms"] for r in rows),
        "by_evaluator_ms": {
            n: statistics.fmean(r["by_evaluator_ms"][n] for r in rows) for n in names
        },
        "model_per_record": model,
        "model_ms_per_sentence": model_ms / texts if texts else 0.0,
        "model_ms_per_position": model_ms / positions if positions else 0.0,
        "split_ms": statistics.fmean(r["split_ms"] for r in rows),
        "context_words": statistics.fmean(r["context_words"] for r in rows),
    }


def median_of(runs: Sequence[dict[str, Any]], *path: str) -> float:
    """The median over rounds of the value at ``path`` in each run."""
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value))
    return statistics.median(values)


def demo_figures(runs: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Medians over rounds of the demo throughput runs, and the capacity they imply."""
    cpu = statistics.median(r["cpu_ms_per_record"] for r in runs)
    return {
        "cpu_ms_per_record": cpu,
        "capacity_records_per_s": DEMO_CORES * 1000 / cpu,
        "wall_records_per_s": statistics.median(r["records_per_s"] for r in runs),
        "cores": statistics.median(r["cores"] for r in runs),
    }


def goals(result: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    """Each goal with the default's value, met or not, and the distance (value / goal, or goal /
    value for a rate)."""
    runs = result["profiles"][variant]
    cold, warm = median_of(runs, "cold", "ms"), median_of(runs, "warm", "ms")
    out = [
        _goal(f"cold RAGTruth record <= {GOAL_COLD_MS:g} ms CPU", cold, cold / GOAL_COLD_MS),
        _goal(f"seen passages <= {GOAL_WARM_MS:g} ms CPU", warm, warm / GOAL_WARM_MS),
    ]
    if result["demo"].get(variant):
        demo = demo_figures(result["demo"][variant])
        capacity = demo["capacity_records_per_s"]
        goal = _goal(
            f"demo records >= {GOAL_DEMO_RPS:g}/s on {DEMO_CORES} cores",
            capacity,
            GOAL_DEMO_RPS / capacity,
        )
        out.append({**goal, "wall_records_per_s": demo["wall_records_per_s"]})
    return out


def _goal(name: str, value: float, distance: float) -> dict[str, Any]:
    return {"goal": name, "value": value, "met": distance <= 1.0, "distance": distance}


def _cells(values: Sequence[float], digits: int = 1) -> list[str]:
    return [f"{v:,.{digits}f}" for v in values]


def tables(result: dict[str, Any]) -> str:
    """Everything ``cost_profile.py`` prints, as Markdown tables."""
    profiles = result["profiles"]
    variants = list(profiles)
    cold = profiles[variants[0]][0]["cold"]
    out = [
        f"load average {result['load_before']} -> {result['load_after']} on {result['cpus']} "
        f"CPUs; {cold['records']} cold RAGTruth records (context {cold['context_words']:.0f} "
        f"words on average); medians over {len(profiles[variants[0]])} round(s); "
        f"{result.get('threads', 1)} model thread(s) per process",
        "",
        "ms of CPU per cold record, by evaluator (suite order):",
    ]
    rows = [
        [name, *_cells([median_of(profiles[v], "cold", "by_evaluator_ms", name) for v in variants])]
        for name in cold["by_evaluator_ms"]
    ]
    rows.append(["whole suite", *_cells([median_of(profiles[v], "cold", "ms") for v in variants])])
    out += [markdown_table(["evaluator", *variants], rows), ""]
    out.append("per cold record: the embedding model, per call, sentence and token; the splitter:")
    rows = [
        [key, *_cells([median_of(profiles[v], "cold", "model_per_record", key) for v in variants])]
        for key in MODEL_KEYS
    ]
    for key, label in (
        ("model_ms_per_sentence", "model ms per sentence"),
        ("model_ms_per_position", "model ms per token position"),
        ("split_ms", "sentence splitting ms"),
    ):
        rows.append([label, *_cells([median_of(profiles[v], "cold", key) for v in variants], 3)])
    out += [markdown_table(["", *variants], rows), ""]
    out.append("ms of CPU per record, whole suite, by workload (and what each record brings):")
    first = profiles[variants[0]]
    rows = [
        [
            w,
            f"{median_of(first, w, 'context_words'):.0f}",
            f"{median_of(first, w, 'model_per_record', 'texts'):.1f}",
            f"{median_of(first, w, 'model_per_record', 'tokens'):.0f}",
            *_cells([median_of(profiles[v], w, "ms") for v in variants]),
        ]
        for w in WORKLOADS
    ]
    header = ["workload", "context words", "sentences embedded", "tokens embedded", *variants]
    out += [markdown_table(header, rows), ""]
    compared = [v for v in variants if v + OTHER in profiles]
    if compared:
        out.append("this checkout / --compare-with's, ms per record (median of per-round ratios):")
        rows = [
            [v, *(f"{_ratio(profiles[v], profiles[v + OTHER], w):.3f}" for w in WORKLOADS)]
            for v in compared
        ]
        out += [markdown_table(["variant", *WORKLOADS], rows), ""]
    load = [median_of(profiles[v], "load", "cpu_s") for v in variants]
    out += [f"model loading and the first record, s of CPU: {', '.join(_cells(load))}", ""]
    demos = {v: demo_figures(r) for v, r in result["demo"].items() if r}
    if demos:
        out.append(f"demo's short records, cold, online pipeline with {DEMO_CORES} processes:")
        rows = [
            [
                v,
                f"{d['cpu_ms_per_record']:.1f}",
                f"{d['capacity_records_per_s']:.1f}",
                f"{d['wall_records_per_s']:.1f}",
                f"{d['cores']:.2f}",
            ]
            for v, d in demos.items()
        ]
        header = ["variant", "ms CPU/record", "records/s on 2 cores", "measured/s", "cores used"]
        out += [markdown_table(header, rows), ""]
    if result.get("fleet"):
        out.append("ragtrace worker processes on Redis:")
        rows = [
            [
                workers,
                workload,
                f"{runs[workload]['records_per_s']:.1f}",
                f"{runs[workload]['cpu_ms_per_record']:.1f}",
            ]
            for workers, runs in result["fleet"].items()
            for workload in ("cold", "warm", "indexed")
        ]
        header = ["fleet", "workload", "records/s", "ms CPU/record"]
        out += [markdown_table(header, rows), ""]
    if result.get("judge"):
        out += [_judge_line(result), ""]
    out.append(f"goals (the default: {result['default_variant']}):")
    rows = [
        [
            g["goal"],
            f"{g['value']:.1f}",
            _state(g),
            f"{g['wall_records_per_s']:.1f}/s" if "wall_records_per_s" in g else "",
        ]
        for g in result["goals"]
    ]
    out.append(markdown_table(["goal", "value", "state", "wall clock here"], rows))
    others = {
        v: found
        for v, found in result.get("goals_by_variant", {}).items()
        if v != result["default_variant"]
    }
    if others:
        out += ["", "the same goals for the other variants (opt-in):"]
        rows = [
            [v, g["goal"], f"{g['value']:.1f}", _state(g)]
            for v, found in others.items()
            for g in found
        ]
        out.append(markdown_table(["variant", "goal", "value", "state"], rows))
    return "\n".join(out)


def _ratio(ours: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]], workload: str) -> float:
    """The median over rounds of ``workload``'s ms per record here over the other checkout's."""
    return statistics.median(
        a[workload]["ms"] / b[workload]["ms"] for a, b in zip(ours, other, strict=True)
    )


def _state(goal: dict[str, Any]) -> str:
    return "met" if goal["met"] else f"NOT met ({goal['distance']:.2f}x)"


def _judge_line(result: dict[str, Any]) -> str:
    judge = result["judge"]
    rows = [r for r in judge["records"] if not r["error"]]
    if not rows:
        return f"LLM judge: every call failed ({judge['records'][0]['error']})"
    cpu = statistics.fmean(r["cpu_ms"] for r in rows)
    wall = statistics.fmean(r["wall_s"] for r in rows)
    suite = median_of(result["profiles"][result["default_variant"]], "cold", "ms")
    return (
        f"LLM judge ({judge['evaluator']}, local {judge['model']}, one thread, same cold "
        f"records): {cpu:,.0f} ms CPU and {wall:.1f} s wall per record ({len(rows)} records), "
        f"{cpu / suite:,.0f}x the default suite's CPU"
    )


# -- One measurement of ``cost_profile.py``, in a process of its own (models and caches fresh) ---
def _before_grouping() -> None:
    """The embedder as it was: one padded forward pass per 64 texts, in the order given."""
    from ragtrace._backends import encoders

    def one_pass_per_batch(lengths: Any, *, max_texts: int, **_: Any) -> list[list[int]]:
        batches = [
            range(i, min(i + max_texts, len(lengths))) for i in range(0, len(lengths), max_texts)
        ]
        return [sorted(b, key=lambda i: -lengths[i]) for b in batches]  # longest first: its width

    encoders.length_groups = one_pass_per_batch  # type: ignore[assignment]


def _split_timer() -> dict[str, float]:
    """Wrap the sentence splitter so its CPU is counted (the cached layer calls it on a miss)."""
    from ragtrace.evaluators import _text as text

    spent = {"cpu_s": 0.0, "texts": 0}
    inner = text._split

    def timed(value: str) -> tuple[str, ...]:
        started = time.process_time()
        try:
            return inner(value)
        finally:
            spent["cpu_s"] += time.process_time() - started
            spent["texts"] += 1

    text._split = timed  # type: ignore[assignment]
    return spent


def _stats(embedder: Any) -> dict[str, float]:
    s = embedder.encoder_stats
    return {
        "calls": s.calls,
        "passes": s.passes,
        "texts": s.texts,
        "tokens": s.tokens,
        "positions": s.positions,
        "model_cpu_s": s.cpu_s,
    }


def _score(
    suite: list[Any], records: list[RagRecord], embedder: Any, split: dict[str, float]
) -> list[dict[str, Any]]:
    rows = []
    for record in records:
        before, split_before = _stats(embedder), dict(split)
        per: dict[str, float] = {}
        for evaluator in suite:
            started = time.process_time()
            scores = evaluator.evaluate(record)
            per[evaluator.name] = 1000 * (time.process_time() - started)
            errors = [s.error for s in scores if s.error]
            if errors:
                raise RuntimeError(f"{evaluator.name}: {errors[0]}")
        after = _stats(embedder)
        rows.append(
            {
                "ms": sum(per.values()),
                "by_evaluator_ms": per,
                "model": {k: after[k] - before[k] for k in after},
                "split_ms": 1000 * (split["cpu_s"] - split_before["cpu_s"]),
                "split_texts": split["texts"] - split_before["texts"],
                "context_words": context_words(record),
            }
        )
    return rows


def _score_batches(
    suite: list[Any], records: list[RagRecord], size: int, embedder: Any, split: dict[str, float]
) -> list[dict[str, Any]]:
    """As ``_score``, with each evaluator's ``evaluate_batch`` over ``size`` records at a time
    (what the pipeline's workers do); each batch's costs are shared out evenly over its records."""
    rows = []
    for start in range(0, len(records), size):
        group = records[start : start + size]
        before, split_before = _stats(embedder), dict(split)
        per: dict[str, float] = {}
        for evaluator in suite:
            started = time.process_time()
            evaluator.evaluate_batch(group)
            per[evaluator.name] = 1000 * (time.process_time() - started) / len(group)
        after = _stats(embedder)
        split_ms = 1000 * (split["cpu_s"] - split_before["cpu_s"]) / len(group)
        texts = (split["texts"] - split_before["texts"]) / len(group)
        for record in group:
            rows.append(
                {
                    "ms": sum(per.values()),
                    "by_evaluator_ms": per,
                    "model": {k: (after[k] - before[k]) / len(group) for k in after},
                    "split_ms": split_ms,
                    "split_texts": texts,
                    "context_words": context_words(record),
                }
            )
    return rows


def index_store(records: list[RagRecord], folder: Path) -> Path:
    """``ragtrace index`` over the records' passages, in another process; the store's path."""
    import json

    chunks = folder / "chunks.jsonl"
    with chunks.open("w", encoding="utf-8") as handle:
        for record in records:
            for chunk in record.chunks:
                handle.write(json.dumps({"text": chunk.text}) + "\n")
    store = folder / "passages.sqlite"
    command = [
        sys.executable,
        "-m",
        "ragtrace",
        "index",
        "--quiet",
        "--store",
        str(store),
        str(chunks),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=1800)
    return store


def profile(spec: dict[str, Any]) -> dict[str, Any]:
    from ragtrace._backends import passage_store
    from ragtrace._backends.embeddings import get_embedder
    from ragtrace.evaluators._suites import online_suite

    if spec["variant"] == "before":
        _before_grouping()
    folder = Path(spec["data_dir"])
    n = spec["records"]
    pairs = ragtruth_pairs(folder, n * 3 + 1, spec["seed"])
    warm_up, others, batched = pairs[0][0], pairs[n + 1 : 2 * n + 1], pairs[2 * n + 1 :]
    pairs = pairs[1 : n + 1]
    split = _split_timer()
    started, cpu = time.perf_counter(), time.process_time()
    suite = online_suite(os.environ.get("COST_PROFILE_SUITE", "default"))
    for evaluator in suite:
        evaluator.evaluate(warm_up)
    load = {"wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu}
    embedder = get_embedder()
    result: dict[str, Any] = {"load": load, "model_id": embedder.model_id}
    result["cold"] = _score(suite, [cold for cold, _ in pairs], embedder, split)
    result["warm"] = _score(suite, [warm for _, warm in pairs], embedder, split)
    batch = [cold for cold, _ in batched]
    result["cold_batched"] = _score_batches(suite, batch, spec["batch"], embedder, split)
    with tempfile.TemporaryDirectory(prefix="ragtrace-cost-") as work:
        indexed = [cold for cold, _ in others]
        started = time.perf_counter()
        store = index_store(indexed, Path(work))
        result["index_wall_s"] = time.perf_counter() - started
        passage_store.install_path(str(store))
        try:
            result["indexed"] = _score(suite, indexed, embedder, split)
        finally:
            installed = passage_store.installed()
            passage_store.install(None)
            if installed is not None:
                installed.close()
    return result


def selection_recall(
    folder: Path, n: int, seed: int, per_probe: int, stage: str = "bm25"
) -> dict[str, float]:
    """How often the lexical first stage (``ragtrace.evaluators._sentence_selection``, as the
    ``select`` profile runs it) keeps the passage sentences the full model ranks first, over
    ``n`` cold RAGTruth records: each answer sentence's best and three best, the query's best
    in each chunk and its three best; and the share of passage sentences it keeps. ``stage=
    "wordllama"`` ranks with the packaged static embedder instead of BM25 (same probes, same
    ``per_probe``; not shipped, measured beside it)."""
    import numpy as np

    from ragtrace._backends.embeddings import get_embedder
    from ragtrace.evaluators._similarity import (
        context_sentences,
        selected_context,
        sentences,
        whole,
    )

    embedder = get_embedder()
    hits: dict[str, list[bool]] = defaultdict(list)
    kept_share = []
    for cold, _ in ragtruth_pairs(folder, n, seed):
        found = context_sentences(cold.chunks, 64, 256)
        answer, query = sentences(cold.response, 64).texts, whole(cold.query).texts
        if not found.texts or not answer or not query:
            continue
        if stage == "wordllama":
            kept = _static_selection(query, answer, found, per_probe)
        else:
            kept = set(selected_context(query, answer, found, per_probe) or ())
        kept_share.append(len(kept) / len(found.texts))
        context = embedder.encode(list(found.texts))
        for sims in embedder.encode(list(answer)) @ context.T:
            order = np.argsort(-sims).tolist()
            hits["answer sentence's best"].append(order[0] in kept)
            hits["answer sentence's 3 best"].append(set(order[:3]) <= kept)
        (near,) = embedder.encode(list(query)) @ context.T
        hits["query's 3 best"].append(set(np.argsort(-near)[:3].tolist()) <= kept)
        for span in found.spans:
            if span is not None and span[0] < span[1]:
                best = span[0] + int(np.argmax(near[span[0] : span[1]]))
                hits["query's best in a chunk"].append(best in kept)
    out = {name: statistics.fmean(found) for name, found in hits.items()}
    out["passage sentences kept"] = statistics.fmean(kept_share)
    out["records"] = float(len(kept_share))
    return out


def _static_selection(query: Any, answer: Any, found: Any, per_probe: int) -> set[int]:
    """``selected_context``'s rule with the static embedder's cosines in place of BM25."""
    import numpy as np

    from ragtrace._backends.embeddings import STATIC_MODEL, get_embedder

    cheap = get_embedder(STATIC_MODEL)
    context = cheap.encode(list(found.texts))
    kept: set[int] = set()
    for sims in cheap.encode(list(answer)) @ context.T:
        kept.update(np.argsort(-sims)[:per_probe].tolist())
    (near,) = cheap.encode(list(query)) @ context.T
    for span in found.spans:
        if span is not None and span[0] < span[1]:
            kept.update((span[0] + np.argsort(-near[span[0] : span[1]])[:per_probe]).tolist())
    return kept


SCORES_SEED = 6606  # the rows ``alarms.py --traffic`` draws


def suite_scores(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``"<data set>|<case id>|<kind>|<score>"`` -> value, verdict and error of every score of
    the default suite on the chosen cases of ``spec["part"]``, with the ragtrace imported here."""
    from _alarm_cases import build
    from alarms import bounded_cases

    from ragtrace.evaluators._suites import online_suite

    cases = build(Path(spec["data_dir"]), (spec["part"],))
    chosen: dict[tuple[str, str, str], Any] = {}
    for name in sorted(cases.by_evaluator):
        for case in bounded_cases(cases.by_evaluator[name], spec["per_cell"], SCORES_SEED):
            chosen.setdefault((case.dataset, case.id, case.kind), case)
    out: dict[str, dict[str, Any]] = {}
    suite = online_suite()
    for (dataset, case_id, kind), case in sorted(chosen.items()):
        for evaluator in suite:
            if evaluator.missing_fields(case.record):
                continue
            for score in evaluator.evaluate(case.record):
                out[f"{dataset}|{case_id}|{kind}|{score.name}"] = {
                    "value": None if score.value is None else float(score.value),
                    "passed": score.passed,
                    "error": score.error,
                }
    return out


def compare_scores(
    ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]], tolerance: float
) -> dict[str, Any]:
    """Per score name, the values compared and the largest difference; and every key, value
    (beyond ``tolerance``), verdict or error that is not the same on both sides."""
    largest: dict[str, float] = defaultdict(float)
    counted: dict[str, int] = defaultdict(int)
    problems: list[str] = []
    for key in sorted(set(ours) | set(theirs)):
        if key not in ours or key not in theirs:
            problems.append(f"{key}: only in {'this' if key in ours else 'the other'} checkout")
            continue
        a, b = ours[key], theirs[key]
        if a["error"] != b["error"] or a["passed"] != b["passed"]:
            problems.append(f"{key}: {a} against {b}")
        if a["value"] is None or b["value"] is None:
            if a["value"] != b["value"]:
                problems.append(f"{key}: value {a['value']} against {b['value']}")
            continue
        both_nan = math.isnan(a["value"]) and math.isnan(b["value"])
        difference = 0.0 if both_nan else abs(a["value"] - b["value"])
        if math.isnan(difference):
            difference = math.inf  # NaN on one side only
        name = key.rsplit("|", 1)[1]
        counted[name] += 1
        largest[name] = max(largest[name], difference)
        if difference > tolerance:
            problems.append(f"{key}: {a['value']!r} against {b['value']!r}")
    return {
        "scores": {n: {"values": counted[n], "largest_difference": largest[n]} for n in counted},
        "largest_difference": max(largest.values(), default=0.0),
        "problems": problems,
    }


def same_scores(args: argparse.Namespace) -> int:
    """``--same-scores``: print the comparison, write the JSON; 1 if anything differs."""
    spec = {"data_dir": str(args.data_dir), "part": args.part, "per_cell": args.per_cell}
    ours = _child("scores", {**spec, "variant": DEFAULT_VARIANT, "threads": args.threads})
    theirs = _child(
        "scores",
        {
            **spec,
            "variant": DEFAULT_VARIANT,
            "threads": args.threads,
            "checkout": str(args.compare_with.resolve()),
        },
    )
    found = compare_scores(ours, theirs, args.tolerance)
    records = {key.rsplit("|", 1)[0] for key in ours}
    print(
        f"{len(ours)} scores of {len(records)} records ({args.part} part, {args.per_cell} a cell)"
    )
    rows = [
        [name, str(row["values"]), f"{row['largest_difference']:.2e}"]
        for name, row in sorted(found["scores"].items())
    ]
    print(markdown_table(["score", "values", "largest difference"], rows))
    for problem in found["problems"][:40]:
        print(f"DIFFERS {problem}")
    same = not found["problems"]
    print(f"largest difference {found['largest_difference']:.2e}: {'same' if same else 'NOT same'}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"compare_with": str(args.compare_with), **found}, indent=1))
    print(f"wrote {args.json}")
    return 0 if same else 1


def _cpu_seconds() -> float:
    """CPU seconds of this process and its children alive now (Linux ``/proc``)."""
    return time.process_time() + processes_cpu_s(children_pids())


def throughput(spec: dict[str, Any]) -> dict[str, Any]:
    from prometheus_client import CollectorRegistry

    from ragtrace._config import Config
    from ragtrace._diagnostics import Diagnostics
    from ragtrace._metrics.collection import Metrics
    from ragtrace._pipeline import EvaluationPipeline, PipelineOptions
    from ragtrace.evaluators._suites import online_suite

    n, processes = spec["demo_records"], spec["processes"]
    records = demo_records(n + 1, spec["seed"])
    pipeline = EvaluationPipeline(
        Diagnostics(),
        Metrics(CollectorRegistry(), "cost"),
        evaluators=online_suite(os.environ.get("COST_PROFILE_SUITE", "default")),
        options=PipelineOptions(Config(workers=processes, processes=processes, queue_size=n + 10)),
    )
    try:
        pipeline.prime(records[:1])
        cpu0, started = _cpu_seconds(), time.perf_counter()
        for record in records[1:]:
            if not pipeline.submit(record):
                raise RuntimeError("the pipeline dropped a record")
        if not pipeline.flush(1800):
            raise RuntimeError("the pipeline did not finish")
        wall, cpu = time.perf_counter() - started, _cpu_seconds() - cpu0
    finally:
        pipeline.shutdown(timeout_s=10)
    return {
        "records": n,
        "processes": processes,
        "records_per_s": n / wall,
        "cpu_ms_per_record": 1000 * cpu / n,
        "cores": cpu / wall,
    }


def judge(spec: dict[str, Any]) -> dict[str, Any]:
    from ragtrace._judges import JudgeClient, LocalJudgeServer
    from ragtrace.evaluators._registry import create

    pairs = ragtruth_pairs(Path(spec["data_dir"]), spec["judge_records"] + 1, spec["seed"])
    server = LocalJudgeServer(threads=1).start()  # the default packaged model, in this process
    try:
        client = JudgeClient(
            server.model_name, api_base=server.api_base, cache=False, timeout_s=600
        )
        evaluator = create("judge_faithfulness", judge=client)
        evaluator.evaluate(pairs[0][0])  # loads the model's weights into memory
        rows = []
        for cold, _ in pairs[1:]:
            cpu, started = time.process_time(), time.perf_counter()
            scores = evaluator.evaluate(cold)
            rows.append(
                {
                    "cpu_ms": 1000 * (time.process_time() - cpu),
                    "wall_s": time.perf_counter() - started,
                    "error": next((s.error for s in scores if s.error), None),
                }
            )
    finally:
        server.stop()
    return {"records": rows, "evaluator": "judge_faithfulness", "model": server.model}


# -- ``cost_profile.py --fleet``: the default suite in ``ragtrace worker`` processes on Redis ---
BATCH = 4
WARM_UP_PER_WORKER = 8
PHASE_TIMEOUT_S = 1800.0


class _Stream:
    """One stream, its shipper and its published count."""

    def __init__(self, redis: Redis, name: str) -> None:
        self.url = f"{redis.url}?stream={name}&batch={BATCH}"
        options = RedisQueueOptions.from_url(self.url, buffer=10_000)
        self.commands = StreamCommands(redis.client, options)
        self.shipper = RedisShipper(options, client=redis.client)
        self.shipped = 0

    def published(self) -> int:
        return int(self.commands.stats().get("published", 0))

    def run(self, records: list[RagRecord], pids: list[int]) -> dict[str, Any]:
        """Ship ``records``, wait until all are published; wall and CPU figures."""
        target = self.shipped + len(records)
        cpu0, started = processes_cpu_s(pids), time.perf_counter()
        for record in records:
            self.shipper.put(WorkItem(record, ONLINE_SUITE))
        self.shipped = target
        if not self.shipper.flush(60):
            raise RuntimeError("could not ship the records")
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        while self.published() < target:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the fleet published {self.published()} of {target}")
            time.sleep(0.02)
        wall, cpu = time.perf_counter() - started, processes_cpu_s(pids) - cpu0
        n = len(records)
        return {"records": n, "records_per_s": n / wall, "cpu_ms_per_record": 1000 * cpu / n}


def _start(stream: _Stream, workers: int, tag: str, seed: int) -> list[Any]:
    procs = start_workers(stream.url, workers, tag, evaluators=",".join(ONLINE_SUITE))
    stream.run(demo_records(WARM_UP_PER_WORKER * workers, seed), [p.pid for p in procs])
    return procs


def fleet(spec: dict[str, Any]) -> dict[str, Any]:
    n, workers = spec["records"], spec["workers"]
    pairs = ragtruth_pairs(Path(spec["data_dir"]), n * 2 + 1, spec["seed"])
    timed, others = pairs[1 : n + 1], [cold for cold, _ in pairs[n + 1 :]]
    redis = Redis()
    procs: list[Any] = []
    try:
        stream = _Stream(redis, f"cost:fleet:{workers}")
        procs = _start(stream, workers, "cost-", spec["seed"] + 1)
        pids = [p.pid for p in procs]
        result = {
            "workers": workers,
            "cold": stream.run([cold for cold, _ in timed], pids),
            "warm": stream.run([warm for _, warm in timed], pids),
        }
        stop(procs)
        with tempfile.TemporaryDirectory(prefix="ragtrace-cost-fleet-") as work:
            os.environ["RAGTRACE_PASSAGE_STORE"] = str(index_store(others, Path(work)))
            try:
                procs = _start(stream, workers, "cost-indexed-", spec["seed"] + 2)
                result["indexed"] = stream.run(others, [p.pid for p in procs])
            finally:
                del os.environ["RAGTRACE_PASSAGE_STORE"]
                stop(procs)
    finally:
        stop(procs)
        redis.close()
    return result


BACKENDS = {
    "before": "onnx",
    "float32": "onnx",
    "int8": "onnx-int8",
    "select": "onnx",
    "int8-select": "onnx-int8",
}
# The suite profile of each variant (``ragtrace.evaluators._suites.PROFILES``); the fleet runs
# (``ragtrace worker``, which builds the default suite) are for the "default" profile only.
PROFILE_OF = {"select": "select", "int8-select": "select"}
DEFAULT_VARIANT = "int8"  # what get_embedder() runs with no setting
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
CHILD_TIMEOUT_S = 3600


OTHER = "@other"  # the label's suffix for a variant measured in ``--compare-with``'s checkout


def _child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    env = {
        **os.environ,
        **OFFLINE_ENV,
        "RAGTRACE_EMBEDDING_BACKEND": BACKENDS[spec["variant"]],
        "COST_PROFILE_SUITE": PROFILE_OF.get(spec["variant"], "default"),
        "RAGTRACE_MODEL_THREADS": str(spec["threads"]),
    }
    env.pop("RAGTRACE_PASSAGE_STORE", None)
    if spec.get("checkout"):
        env["PYTHONPATH"] = spec["checkout"]
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, json.dumps(spec)]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} {spec['variant']} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = {
        "data_dir": str(args.data_dir),
        "seed": args.seed,
        "records": args.records,
        "batch": args.batch,
        "threads": args.threads,
    }
    checkouts = {"": ""}
    if args.compare_with is not None:
        checkouts[OTHER] = str(args.compare_with.resolve())
    profiles: dict[str, list[dict[str, Any]]] = {
        v + label: [] for v in args.variants for label in checkouts
    }
    demos: dict[str, list[dict[str, Any]]] = {v: [] for v in args.variants if v != "before"}
    for round_ in range(args.rounds):
        for variant in args.variants:
            for label, checkout in checkouts.items():
                print(f"round {round_ + 1}: {variant}{label} ...", file=sys.stderr, flush=True)
                raw = _child("profile", {**base, "variant": variant, "checkout": checkout})
                profiles[variant + label].append(
                    {
                        "load": raw["load"],
                        "model_id": raw["model_id"],
                        **{w: summarise(raw[w]) for w in WORKLOADS},
                    }
                )
            if args.demo and variant in demos:
                spec = {**base, "variant": variant, "demo_records": args.demo_records}
                demos[variant].append(_child("throughput", {**spec, "processes": DEMO_CORES}))
    result: dict[str, Any] = {"profiles": profiles, "demo": demos, "fleet": {}}
    if args.fleet:  # 1 worker, then 2, for each variant but "before" and the select profile's
        for variant in (v for v in demos if v not in PROFILE_OF):
            for workers in (1, 2):
                spec = {**base, "variant": variant, "workers": workers}
                print(f"fleet: {variant}, {workers} worker(s) ...", file=sys.stderr, flush=True)
                result["fleet"][f"{variant}, {workers} worker(s)"] = _child("fleet", spec)
    if args.judge:
        spec = {**base, "variant": DEFAULT_VARIANT, "judge_records": args.judge_records}
        result["judge"] = _child("judge", spec)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--batch", type=int, default=16, help="records per evaluate_batch call (cold_batched)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="model threads per process (RAGTRACE_MODEL_THREADS)"
    )
    parser.add_argument("--demo-records", type=int, default=300)
    parser.add_argument("--judge-records", type=int, default=3)
    parser.add_argument("--variants", default="before,float32,int8")
    parser.add_argument("--no-demo", dest="demo", action="store_false")
    parser.add_argument("--no-judge", dest="judge", action="store_false")
    parser.add_argument(
        "--no-fleet", dest="fleet", action="store_false", help="skip the ragtrace worker runs"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument(
        "--selection-recall",
        type=int,
        metavar="N",
        help="only measure, on N cold RAGTruth records, how often the select profile's first "
        "stage keeps the sentences the full model ranks first (--per-probe of them), and exit",
    )
    parser.add_argument("--per-probe", type=int, default=3, help="for --selection-recall")
    parser.add_argument(
        "--stage",
        choices=("bm25", "wordllama"),
        default="bm25",
        help="for --selection-recall: the first stage's ranking",
    )
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="OTHER_CHECKOUT",
        help="also measure every variant with ragtrace imported from this checkout's root",
    )
    parser.add_argument(
        "--same-scores",
        action="store_true",
        help="only check that every score of the default suite is the same with this checkout "
        "and --compare-with's, on the alarm benchmark's cases, and exit (1 if not)",
    )
    parser.add_argument("--part", choices=("tuning", "locked"), default="tuning")
    parser.add_argument("--per-cell", type=int, default=6, help="for --same-scores")
    parser.add_argument("--tolerance", type=float, default=1e-6, help="for --same-scores")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, spec = args.child
        kinds = {
            "profile": profile,
            "throughput": throughput,
            "judge": judge,
            "fleet": fleet,
            "scores": suite_scores,
        }
        print(json.dumps(kinds[kind](json.loads(spec))))
        return 0
    args.data_dir = data_dir(args.data_dir)
    if args.compare_with is not None and not (args.compare_with / "ragtrace").is_dir():
        parser.error("--compare-with: the root of another checkout (holding ragtrace/)")
    if args.same_scores:
        if args.compare_with is None:
            parser.error("--same-scores needs --compare-with")
        if args.json == DEFAULT_JSON:
            args.json = HERE / "results" / "same_scores.json"
        return same_scores(args)
    if args.selection_recall:
        found = selection_recall(
            args.data_dir, args.selection_recall, args.seed, args.per_probe, args.stage
        )
        rows = [[name, f"{value:.3f}"] for name, value in found.items()]
        title = f"kept by the first stage ({args.stage}, {args.per_probe} a probe)"
        print(markdown_table([title, ""], rows))
        return 0
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(args.variants) - set(BACKENDS)
    if unknown or args.records < 1 or args.rounds < 1 or args.threads < 1:
        parser.error(
            f"variants among {', '.join(BACKENDS)}; --records, --rounds and --threads >= 1"
        )
    load_before = os.getloadavg()
    started = time.perf_counter()
    result = run(args)
    result.update(
        load_before=[round(x, 2) for x in load_before],
        load_after=[round(x, 2) for x in os.getloadavg()],
        cpus=os.cpu_count(),
        threads=args.threads,
        python=platform.python_version(),
        seconds=round(time.perf_counter() - started, 1),
        default_variant=DEFAULT_VARIANT if DEFAULT_VARIANT in args.variants else args.variants[-1],
    )
    result["goals"] = goals(result, result["default_variant"])
    result["goals_by_variant"] = {
        v: goals(result, v)
        for v in result["profiles"]
        if not v.startswith("before") or len(args.variants) == 1
    }
    print("\n" + tables(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
