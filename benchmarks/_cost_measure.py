"""One measurement of ``cost_profile.py``, in a process of its own (models and caches fresh).

``profile(spec)``: the default online suite (``suites.online_suite()``) built, its models warmed
on a record of its own (the *load*, timed apart), then, record by record, the process CPU
(``time.process_time``) of each evaluator's ``evaluate(record)`` in the suite's order, over:

- ``cold``: RAGTruth records never seen (``_cost_records.ragtruth_pairs``' first of each pair);
- ``warm``: the same sources' second answers (passages and question seen, the answer new);
- ``cold_batched``: cold records of other sources, each evaluator's ``evaluate_batch`` over
  ``batch`` of them at a time, as the pipeline's workers call it (costs shared out evenly);
- ``indexed``: records of other sources whose passages ``ragtrace index`` put in a passage store
  beforehand (in another process), which this one then opens.

Per record it also takes, from the embedder's ``encoder_stats``, the model calls, forward
passes, sentences, tokens and padded positions and the CPU inside the model, and the CPU spent
splitting sentences (``ragtrace.evaluators.text``'s splitter, timed by wrapping it here).

``throughput(spec)``: the demo's short records, cold, through the online ``EvaluationPipeline``
with ``processes`` worker processes (primed first): records/s of wall time and CPU per record
(this process and its workers, from ``/proc``). The worker processes are spawned, so the
``before`` variant (a patch in this process) does not apply there.

``judge(spec)``: the local llama.cpp judge (``judge_faithfulness``, the packaged Qwen model,
in this process) on a few of the cold RAGTruth records: CPU and wall seconds per record.

Variants (``spec["variant"]``): ``before`` (float32 products, each call's texts in passes of
64 padded to their longest: the embedder as it was), ``float32`` (float32 products, passes
grouped by token count) and ``int8`` (the int8 copy, grouped), chosen through
``$RAGTRACE_EMBEDDING_BACKEND`` by the parent.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cost_records import context_words, demo_records, ragtruth_pairs
from _proc_cpu import children_pids, processes_cpu_s

from ragtrace.model import RagRecord


def _before_grouping() -> None:
    """The embedder as it was: one padded forward pass per 64 texts, in the order given."""
    from ragtrace.backends import encoders

    def one_pass_per_batch(lengths: Any, *, max_texts: int, **_: Any) -> list[list[int]]:
        batches = [
            range(i, min(i + max_texts, len(lengths))) for i in range(0, len(lengths), max_texts)
        ]
        return [sorted(b, key=lambda i: -lengths[i]) for b in batches]  # longest first: its width

    encoders.length_groups = one_pass_per_batch  # type: ignore[assignment]


def _split_timer() -> dict[str, float]:
    """Wrap the sentence splitter so its CPU is counted (the cached layer calls it on a miss)."""
    from ragtrace.evaluators import text

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
    from ragtrace.backends import passage_store
    from ragtrace.backends.embeddings import get_embedder
    from ragtrace.evaluators.suites import online_suite

    if spec["variant"] == "before":
        _before_grouping()
    folder = Path(spec["data_dir"])
    n = spec["records"]
    pairs = ragtruth_pairs(folder, n * 3 + 1, spec["seed"])
    warm_up, others, batched = pairs[0][0], pairs[n + 1 : 2 * n + 1], pairs[2 * n + 1 :]
    pairs = pairs[1 : n + 1]
    split = _split_timer()
    started, cpu = time.perf_counter(), time.process_time()
    suite = online_suite()
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


def _cpu_seconds() -> float:
    """CPU seconds of this process and its children alive now (Linux ``/proc``)."""
    return time.process_time() + processes_cpu_s(children_pids())


def throughput(spec: dict[str, Any]) -> dict[str, Any]:
    from prometheus_client import CollectorRegistry

    from ragtrace.diagnostics import Diagnostics
    from ragtrace.evaluators.suites import online_suite
    from ragtrace.exporters.metrics import Metrics
    from ragtrace.pipeline import EvaluationPipeline, PipelineOptions

    n, processes = spec["demo_records"], spec["processes"]
    records = demo_records(n + 1, spec["seed"])
    pipeline = EvaluationPipeline(
        Diagnostics(),
        Metrics(CollectorRegistry(), "cost"),
        evaluators=online_suite(),
        options=PipelineOptions(workers=processes, processes=processes, queue_size=n + 10),
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
    from ragtrace.evaluators.registry import create
    from ragtrace.judges import JudgeClient, LocalJudgeServer

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
