"""The disk fills under the SQLite review store and under the SQLite judge cache, then frees.

Each case runs the application in its own process (``disk_full_child``), where a file-size limit
makes every write to a regular file fail with EFBIG while the disk is "full". Requests stay
fast; a review item that could not be written is counted in
``ragtrace_internal_errors_total{site="pipeline.sink.ReviewSink"}``; a judge answer that could
not be cached is still used (the cache is skipped and counts it); once space is back, the next
items are stored and the next answers cached.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.components import free_port
from tests.faults.disk_full_child import BATCH
from tests.faults.harness import REQUEST_BUDGET_S, stop_process
from tests.faults.servers import ROOT, start_judge


def run_child(*args: str, timeout_s: float = 240.0) -> dict[str, Any]:
    """Run ``disk_full_child`` with ``args``; its JSON report (its output if it failed)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.faults.disk_full_child", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, f"the app failed ({done.returncode}):\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.fixture(scope="module")
def judge_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port = free_port()
    process = start_judge(port, tmp_path_factory.mktemp("judge-log"))
    yield port
    stop_process(process)


def test_full_disk_under_the_sqlite_review_store(tmp_path: Path) -> None:
    report = run_child("review", str(tmp_path))
    assert report["flushed_before"] and report["flushed_full"] and report["flushed_after"]
    assert report["slowest_s"] < REQUEST_BUDGET_S
    before, full, after = report["before"], report["full"], report["after"]
    assert before == {"stored": BATCH, "sink_errors": 0, "evaluated": before["evaluated"]}
    # While full: nothing stored, every item counted, evaluation itself unaffected.
    assert full["stored"] == BATCH and full["sink_errors"] == BATCH
    assert full["evaluated"] == 2 * before["evaluated"]
    # Space back: the next items are stored, no new error.
    assert after["stored"] == 2 * BATCH and after["sink_errors"] == BATCH


def test_full_disk_under_the_judge_cache(tmp_path: Path, judge_port: int) -> None:
    report = run_child("judge-cache", str(tmp_path), str(judge_port))
    assert report["flushed_before"] and report["flushed_full"] and report["flushed_after"]
    assert report["slowest_s"] < REQUEST_BUDGET_S
    before, full, after = report["before"], report["full"], report["after"]
    assert before["cached"] == BATCH and before["calls"]["ok"] == BATCH
    # While full: the judge's answers are used (no error evaluation); not cached, counted.
    assert full["calls"] == {"ok": 2 * BATCH, "cached": 0, "error": 0}
    assert full["eval_errors"] == 0
    assert full["cached"] == BATCH and full["cache_errors"] == BATCH
    # Space back: the next answers are cached again.
    assert after["cached"] == 2 * BATCH and after["cache_errors"] == BATCH
    assert after["calls"]["ok"] == 3 * BATCH and after["eval_errors"] == 0
