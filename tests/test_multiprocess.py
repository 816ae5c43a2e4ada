"""Web servers with several worker processes, each calling ``ragtrace.init(metrics_port=P)``.

Real gunicorn and uvicorn processes serve ``tests.multiprocess_app`` on loopback. With
``PROMETHEUS_MULTIPROC_DIR`` set, one worker serves ``/metrics`` for all of them, every
request is counted once whichever worker answered, and when that worker dies another takes
the port over without losing a count. Without it, the workers that lose the port race still
boot and serve requests (one WARNING line each), where they used to fail to boot.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.components import wait_until
from tests.multiprocess_servers import (
    APP,
    Samples,
    WebServer,
    metric,
    run_server,
    total,
    wait_for_exit,
    wait_for_metrics,
)

pytestmark = pytest.mark.integration

LOOPING_SCORES = 3  # the looping evaluator gives three scores per record
STOP_S = 20.0  # generous: a worker's shutdown keeps a 5 s budget


def scrape_when_evaluated(server: WebServer, requests: int) -> Samples:
    """Scrape until every request and its evaluations are counted: each worker process applies
    its request counts within a second (``ragtrace._metrics.deferred``)."""
    samples: Samples = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        samples = wait_for_metrics(server)
        if (
            total(samples, "ragtrace_evaluations_total") >= LOOPING_SCORES * requests
            and total(samples, "ragtrace_requests_total") >= requests
        ):
            break
        time.sleep(0.25)
    return samples


def assert_counted_once(samples: Samples, requests: int) -> None:
    assert metric(samples, "ragtrace_requests_total", app=APP, status="ok") == requests
    assert total(samples, "ragtrace_requests_total") == requests
    assert total(samples, "ragtrace_evaluations_total", app=APP) == LOOPING_SCORES * requests
    assert metric(samples, "ragtrace_retrieval_chunks_count", app=APP) == requests
    # one queue-depth series for the whole server (the live processes' sum), no pid label
    assert [k for k in samples if k[0] == "ragtrace_queue_depth"] == [
        ("ragtrace_queue_depth", frozenset())
    ]


def assert_clean_log(server: WebServer) -> None:
    log = server.log_text()
    assert "Traceback" not in log, log
    assert "Address already in use" not in log, log
    assert "failed to boot" not in log.lower(), log


def test_gunicorn_4_workers_expose_every_request_once_and_survive_the_serving_worker(
    tmp_path: Path,
) -> None:
    requests = 200
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus")}  # init creates it
    with run_server("gunicorn", workers=4, env=env) as server:
        assert len(server.wait_for_workers(4)) == 4
        assert len(server.ask(requests)) >= 2  # several processes answered
        assert_counted_once(scrape_when_evaluated(server, requests), requests)

        holder = server.metrics_listener()
        assert holder in server.workers()
        depth_file = tmp_path / "prometheus" / f"gauge_livesum_{holder}.db"
        assert depth_file.exists()
        os.kill(holder, signal.SIGKILL)
        wait_for_exit(holder)
        assert server.ask(20)
        samples = scrape_when_evaluated(server, requests + 20)
        assert server.metrics_listener() not in (None, holder)  # another worker took over
        assert_counted_once(samples, requests + 20)  # the dead worker's counts stay
        assert not depth_file.exists()  # its queue depth does not (dropped at the scrape)
        assert_clean_log(server)
        assert server.stop() < STOP_S


def test_uvicorn_workers_expose_every_request_once(tmp_path: Path) -> None:
    requests = 100
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus")}
    with run_server("uvicorn", workers=2, env=env) as server:
        server.wait_for_workers(2)
        server.ask(requests)
        assert_counted_once(scrape_when_evaluated(server, requests), requests)
        assert_clean_log(server)
        assert server.stop() < STOP_S


def test_without_multiprocess_mode_every_worker_boots_and_says_why_it_has_no_metrics() -> None:
    with run_server("gunicorn", workers=2) as server:
        server.wait_for_workers(2)  # both booted: the one without the port too
        server.ask(20)
        wait_until("a worker to log", lambda: "without /metrics" in server.log_text(), 60)
        assert len(server.workers()) == 2  # the worker that lost the port race still runs
        log = server.log_text()
        assert log.count("runs on without /metrics") == 1, log
        assert "set PROMETHEUS_MULTIPROC_DIR" in log
        assert "Traceback" not in log, log
        samples = wait_for_metrics(server)  # the winner serves its own registry
        assert 0 < metric(samples, "ragtrace_requests_total", app=APP, status="ok") <= 20
