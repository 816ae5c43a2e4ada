"""The README's "Scale out" run, end to end: redis-server, two ``ragtrace worker`` processes, the
demo shipping to them, a real Prometheus scraping both workers, one worker SIGKILLed mid-run.
The demo's summary must account for every record."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.components import free_port, run_prometheus, wait_until
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_demo_ships_to_two_workers_and_a_killed_worker_loses_nothing(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTRACE_EVALUATORS": "looping"}
    ports = [free_port(), free_port()]
    workers = []
    try:
        for name, port in zip(("w1", "w2"), ports, strict=True):
            args = [sys.executable, "-m", "ragtrace", "worker", "--queue", url]
            args += ["--evaluators", "looping,sensitive_data", "--metrics-port", str(port)]
            args += ["--consumer", name, "--reclaim-idle-s", "1"]
            with (tmp_path / f"{name}.log").open("wb") as log:
                workers.append(subprocess.Popen(args, env=env, cwd=ROOT, stdout=log, stderr=log))
        demo_log = tmp_path / "demo.log"
        demo_args = [sys.executable, "-m", "ragtrace", "demo", "--queue", url, "--requests", "600"]
        demo_args += ["--rate", "40", "--no-live", "--quiet", "--metrics-port", "0"]
        demo_args += ["--evaluators", "looping,sensitive_data"]
        with demo_log.open("wb") as out:
            demo = subprocess.Popen(demo_args, env=env, cwd=ROOT, stdout=out, stderr=out)
        targets = [f"127.0.0.1:{p}" for p in ports]
        with run_prometheus(targets) as prom:
            query = 'count(sum by (instance) (ragtrace_evaluations_total{outcome!="skipped"}) > 0)'

            def both_workers_scored() -> bool:
                series = prom.query(query)
                return bool(series) and float(series[0]["value"][1]) == 2

            wait_until("Prometheus to see scores from both workers", both_workers_scored, 90)
            assert demo.poll() is None, "the demo finished before a worker could be killed"
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait(timeout=10)
            assert demo.wait(timeout=180) == 0, demo_log.read_text()[-3000:]
        summary = demo_log.read_text()
        line = next(x for x in summary.splitlines() if x.strip().startswith("queue"))
        shipped, published, dead, queued = (
            int(n) for n in re.findall(r"(\d+) (?:shipped|published|dead-lettered|still)", line)
        )
        assert "(balanced)" in line and "0 dropped in the app" in line, line
        assert (shipped, published, dead, queued) == (600, 600, 0, 0), line
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_a_queue_nobody_listens_on_is_a_clear_error_not_a_traceback() -> None:
    closed = free_port()  # bound, then released: nothing listens there
    args = [
        sys.executable,
        "-m",
        "ragtrace",
        "demo",
        "--queue",
        f"redis://:pw@127.0.0.1:{closed}/0",
    ]
    args += ["--requests", "2", "--rate", "0", "--no-live", "--quiet", "--metrics-port", "0"]
    args += ["--evaluators", "looping"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        args, check=False, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"--queue: cannot read the queue at redis://:***@127.0.0.1:{closed}/0" in done.stderr
    assert ":pw@" not in done.stderr + done.stdout


def test_a_queue_that_goes_down_before_the_summary_leaves_the_summary_without_its_line(
    redis_server: RedisServer,
) -> None:
    from ragtrace.demo._fleet import FleetCounter, QueueUnreachable

    counter = FleetCounter(redis_server.url)
    redis_server.kill()
    with pytest.raises(QueueUnreachable, match="cannot read the queue at redis://"):
        counter.settle(timeout_s=0.1)
