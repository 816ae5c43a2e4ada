"""``fleet.py --suite``: the local online suite in process against the same suite on workers.

Both sides score the same ``corpus`` records (``_throughput_records``) with the same evaluators
on the same 2 cores: in process, an ``EvaluationPipeline`` with 2 worker processes (primed
first, so model loading is not timed); through the fleet, 2 ``ragtrace worker`` processes
(warmed with 48 records, in batches of 16 so that both load their models, before the timed
ones). The in-process pool shares a cache of sentence vectors and NER results between its
processes; workers on separate machines cannot, and here do not. records/s from the first
submit to the last score published.
"""

from __future__ import annotations

import os
import time
from typing import Any

from _pipeline_workload import CountingSink
from _throughput_records import records as corpus_records
from prometheus_client import CollectorRegistry

from ragtrace.diagnostics import Diagnostics
from ragtrace.evaluators import create
from ragtrace.exporters.metrics import Metrics
from ragtrace.model import Chunk, RagRecord
from ragtrace.pipeline import EvaluationPipeline, PipelineOptions
from ragtrace.pipeline.queues import WorkItem
from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.pipeline.queues.redis_shipper import RedisShipper

WARM_UP = 48
SUITE = (
    "answer_relevance", "context_relevance", "groundedness", "faithfulness", "pii_leakage",
    "sensitive_data", "toxicity", "language_mismatch", "looping",
)  # fmt: skip


def suite_records(n: int, offset: int = 0) -> list[RagRecord]:
    rows = corpus_records("corpus", n + offset)[offset:]
    return [
        RagRecord(
            f"{offset + i + 1:032x}",
            f"{offset + i + 1:016x}",
            row["query"],
            tuple(Chunk(c if isinstance(c, str) else c["text"]) for c in row["contexts"]),
            row["response"],
        )
        for i, row in enumerate(rows)
    ]


def in_process(n: int) -> float:
    os.environ.setdefault("RAGTRACE_MODEL_THREADS", "1")
    sink = CountingSink()
    pipeline = EvaluationPipeline(
        Diagnostics(),
        Metrics(CollectorRegistry(), app="bench"),
        evaluators=[create(name) for name in SUITE],
        sinks=[sink],
        options=PipelineOptions(workers=2, processes=2, queue_size=n + 10),
    )
    try:
        pipeline.prime(suite_records(8, offset=10_000))
        batch = suite_records(n)
        start = time.monotonic()
        for record in batch:
            pipeline.submit(record)
        assert pipeline.flush(1800), "the in-process pipeline did not finish"
        return n / (time.monotonic() - start)
    finally:
        pipeline.shutdown(10)


def through_fleet(url: str, published: Any, start_workers: Any, stop: Any, n: int) -> float:
    url += "&batch=16"  # the warm-up's 48 records reach both workers
    procs = start_workers(url, 2, "suite-", evaluators=",".join(SUITE))
    try:
        shipper = RedisShipper(RedisQueueOptions.from_url(url, buffer=n + 100))
        for record in suite_records(WARM_UP, offset=10_000):  # both workers load their models
            shipper.put(WorkItem(record, SUITE))
        shipper.flush(60)
        deadline = time.monotonic() + 900
        while published() < WARM_UP and time.monotonic() < deadline:
            time.sleep(0.2)
        start = time.monotonic()
        for record in suite_records(n):
            shipper.put(WorkItem(record, SUITE))
        shipper.flush(60)
        while published() < WARM_UP + n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert published() >= WARM_UP + n, "the fleet did not finish"
        return n / (time.monotonic() - start)
    finally:
        stop(procs)
