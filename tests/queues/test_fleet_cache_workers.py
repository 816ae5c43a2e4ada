"""Two ``ragtrace worker`` processes on a real redis-server: a chunk one embedded, the other reads.

The first worker evaluates a record and stops; the second, a fresh process with empty caches of
its own, evaluates another question over the same chunk. Its ``/metrics`` show the chunk's
sentence vectors (and the chunk's split) found in the fleet cache, and only the new question
missed it.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import ragtrace
from ragtrace._model import Chunk, RagRecord
from tests.components import free_port, wait_until
from tests.queues.fleet import Workers, settled
from tests.redis_server import RedisServer

CHUNK = (
    "Hold the reset button on the back of the router for ten seconds. "
    "The status light blinks green while the router restarts. "
    "Your settings return to the factory defaults."
)


def _ship(url: str, i: int, query: str) -> None:
    rt = ragtrace.init(
        app="shipper",
        registry=None,
        queue_url=url,
        evaluators=["context_relevance"],
        export_evaluation_spans=False,
    )
    try:
        record = RagRecord(
            f"{i:032x}", f"{i:016x}", query, chunks=(Chunk(CHUNK, id="kb-7"),), response="ok"
        )
        rt.pipeline.submit(record)
        assert rt.flush(15)
    finally:
        rt.shutdown()


def _fleet_lookups(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("ragtrace_cache_lookups_total{") and 'tier="fleet_cache"' in line:
            result = line.split('result="', 1)[1].split('"', 1)[0]
            found[result] = float(line.split()[-1])
    return found


def test_a_chunk_one_worker_embedded_is_read_from_redis_by_the_next(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "evaluators: [context_relevance]\n"
        "pipeline: {workers: 1, batch_wait_s: 0.05}\n"
        "sinks: {otel: false}\n"
    )
    url = redis_server.url
    workers = Workers(tmp_path, url, settings)
    try:
        first_port, second_port = free_port(), free_port()
        first = workers.start("first", "--metrics-port", str(first_port))
        _ship(url, 1, "How do I reset my router?")
        wait_until("first published", lambda: settled(url, 1), timeout_s=120)
        assert _fleet_lookups(first_port).get("hit", 0) == 0
        first.terminate()
        first.wait(timeout=30)

        workers.start("second", "--metrics-port", str(second_port))
        _ship(url, 2, "What happens to my settings after a reset?")
        wait_until("second published", lambda: settled(url, 2), timeout_s=120)
        lookups = _fleet_lookups(second_port)
        # Three sentence vectors and the chunk's split came from Redis; the new question missed.
        assert lookups.get("hit") == 4, (lookups, workers.log("second"))
        assert lookups.get("miss") == 1
        assert not lookups.get("error")
    finally:
        workers.stop_all()
