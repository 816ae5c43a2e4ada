"""``cost_profile.py --fleet``: the default suite in ``ragtrace worker`` processes on Redis.

One local redis-server; ``workers`` ``ragtrace worker`` processes (``benchmarks/_fleet_worker.py``,
the default online suite, one reading thread and one model thread each, the fleet cache on, as
shipped) read one stream in batches of ``BATCH``. Each is warmed first with records of its own
(the demo's, so both load their models). Then, timed one after the other:

- ``cold``: the cold RAGTruth records (``_cost_records.ragtruth_pairs``), shipped at once;
- ``warm``: their second answers (passages and question seen, by whichever worker: the fleet
  cache in Redis carries what one worker embedded to the other);
- ``indexed``: after the workers are restarted with ``$RAGTRACE_PASSAGE_STORE`` naming a store
  that ``ragtrace index`` filled with other sources' passages, those sources' cold records.

Per phase: records/s from the first record shipped to the last published, and the workers' CPU
per record (``/proc``, user + system, over the phase).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from _cost_records import demo_records, ragtruth_pairs
from _proc_cpu import processes_cpu_s
from fleet import Redis, start_workers, stop

from ragtrace.evaluators.registry import ONLINE_SUITE
from ragtrace.model import RagRecord
from ragtrace.pipeline.queues import WorkItem
from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.pipeline.queues.redis_shipper import RedisShipper
from ragtrace.pipeline.queues.redis_streams import StreamCommands

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
    import tempfile

    from _cost_measure import index_store

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
