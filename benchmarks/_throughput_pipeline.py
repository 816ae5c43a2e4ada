"""The online path for ``throughput.py --via pipeline``: records through ``EvaluationPipeline``.

``submit`` every record, then ``flush``: records/s is records / (last publish - first submit).
The pipeline is the one ``ragtrace.init`` builds (sampler at rate 1.0, Prometheus metrics in a
private registry), with a score sink counting what it is given; ``PipelineOptions.processes``
and ``workers`` come from the spec. The warm-up record and, for ``warm``, the corpus pass go
through ``EvaluationPipeline.prime``, which runs them on every worker process (each has its own
caches), as the offline engine's ``prime`` does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from _pipeline_workload import CountingSink
from _throughput_records import corpus_pass, records

from ragtrace.model import RagRecord
from ragtrace.offline.records import Line, RecordParser

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

    from ragtrace.diagnostics import Diagnostics
    from ragtrace.exporters.metrics import Metrics
    from ragtrace.pipeline import EvaluationPipeline, PipelineOptions

    metrics = Metrics(CollectorRegistry(), "throughput")
    sink = CountingSink()
    processes = spec.get("processes", 1)
    options = PipelineOptions(
        queue_size=spec["records"] + 1000,
        workers=spec["workers"],
        processes=0 if processes == 1 else processes,
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
