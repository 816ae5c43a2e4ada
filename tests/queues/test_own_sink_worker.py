"""A user's own score sink given to a real ``ragtrace worker`` subprocess by import path
(``--sink``): the worker, reading a real redis-server, hands it every record an application
shipped, and shuts it down when it stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._model import RagRecord
from tests.components import wait_until
from tests.exporters.own_sinks import SINK_FILE_ENV, read_lines
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
OWN = "tests.exporters.own_sinks:JsonLinesSink"
RECORDS = 20


def _ship(url: str) -> list[str]:
    """``RECORDS`` records shipped to the stream by an application; their trace ids."""
    rt = ragtrace.init(
        app="shop",
        registry=CollectorRegistry(),
        queue_url=url,
        evaluators=["looping"],
        export_evaluation_spans=False,
    )
    ids = [f"{i + 1:032x}" for i in range(RECORDS)]
    try:
        for i, trace_id in enumerate(ids):
            answer = "the same words " * 8 if i % 2 else f"a plain answer {i}"
            rt.submit_record(RagRecord(trace_id, f"{i + 1:016x}", f"question {i}", response=answer))
        assert rt.flush(15)
    finally:
        rt.shutdown()
    return ids


def test_a_worker_hands_every_shipped_record_to_a_sink_given_by_path(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    sink_file = tmp_path / "sink.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), SINK_FILE_ENV: str(sink_file)}
    for name in ("RAGTRACE_EVALUATORS", "RAGTRACE_SINKS", "RAGTRACE_CONFIG_FILE"):
        env.pop(name, None)
    args = [sys.executable, "-m", "ragtrace", "worker", "--queue", redis_server.url]
    args += ["--evaluators", "looping", "--sink", OWN]
    log = tmp_path / "worker.log"
    with log.open("ab") as out:
        worker = subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=out)
    try:
        ids = _ship(redis_server.url)
        wait_until(
            "the worker's sink to receive every record",
            lambda: len(read_lines(sink_file)) >= RECORDS or worker.poll() is not None,
            timeout_s=90,
        )
        assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)
    said = log.read_text(errors="replace")
    lines = read_lines(sink_file)
    assert lines[-1] == {"shutdown": True}, said[-3000:]  # shut down when the worker stopped
    received = lines[:-1]
    assert sorted(str(line["trace_id"]) for line in received) == ids  # each once
    assert all(set(line["evaluators"]) == {"looping"} for line in received)  # type: ignore[arg-type]
    assert "ragtrace worker: stopped" in said
