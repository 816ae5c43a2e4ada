"""The application side of the disk-full tests, run in its own process by ``test_disk_full``.

A file-size limit (``RLIMIT_FSIZE``, with SIGXFSZ ignored so a write fails with EFBIG instead of
killing the process) stands in for a full disk: it is set only in this process, after ragtrace
has started and stored a few things, and lifted again later, as when space is freed::

    python -m tests.faults.disk_full_child review DIR
    python -m tests.faults.disk_full_child judge-cache DIR JUDGE_PORT

It prints one JSON object: what ragtrace stored and counted before, during and after the fault,
and the slowest request; the test asserts on it. An exception escaping into this "application"
ends the process with a traceback, which the test reports.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from ragtrace._judges import JudgeCache
from ragtrace.evaluators import create
from ragtrace.evaluators._judge.byop import Byop
from ragtrace.review import ReviewRules, ReviewSink
from ragtrace.review._sqlite_store import SqliteReviewStore
from tests.faults.harness import FaultApp
from tests.faults.servers import judge_client

PROMPT = "Is the answer supported by the context? Answer: {answer} Context: {context}"
BATCH = 3  # requests in each phase: before, during and after the fault
SINK_ERRORS = {"site": "pipeline.sink.ReviewSink"}


@contextmanager
def disk_full() -> Iterator[None]:
    """No regular file of this process may grow while inside (writes fail with EFBIG)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


def phases(app: FaultApp, snapshot: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Requests before, during and after the fault; ``snapshot()`` after each phase (taken
    once the limit is lifted: reading a WAL database may need to write its index)."""
    report: dict[str, Any] = {}
    for phase, first in (("before", 0), ("full", BATCH), ("after", 2 * BATCH)):
        with disk_full() if phase == "full" else nullcontext():
            app.requests(range(first, first + BATCH))
            report[f"flushed_{phase}"] = app.rt.flush(60)
        report[phase] = snapshot()  # the test's own reads need the disk
    report["slowest_s"] = app.slowest_s
    return report


def review(folder: Path) -> dict[str, Any]:
    """The SQLite review store fills the disk."""
    store = SqliteReviewStore(folder / "review.db", busy_timeout_s=5.0)
    sink = ReviewSink(store, ReviewRules(sample_rate=1.0))  # every request goes to review
    with FaultApp([create("looping")], score_sinks=[sink]) as app:
        return phases(
            app,
            lambda: {
                "stored": store.count(),
                "sink_errors": app.value("ragtrace_internal_errors_total", **SINK_ERRORS),
                "evaluated": app.value("ragtrace_evaluations_total"),
            },
        )


def judge_cache(folder: Path, port: int) -> dict[str, Any]:
    """The judge's SQLite response cache fills the disk."""
    cache = JudgeCache(folder / "judge_cache.sqlite")
    client = judge_client(port, cache=cache, timeout_s=60.0)
    with FaultApp([Byop(PROMPT, judge=client)]) as app:

        def snapshot() -> dict[str, Any]:
            calls = {
                outcome: app.value("ragtrace_judge_calls_total", outcome=outcome)
                for outcome in ("ok", "cached", "error")
            }
            return {
                "cached": len(cache),
                "cache_errors": cache.errors,
                "calls": calls,
                "eval_errors": app.value("ragtrace_evaluations_total", outcome="error"),
                "internal_errors": app.value("ragtrace_internal_errors_total"),
            }

        return phases(app, snapshot)


if __name__ == "__main__":
    case, where = sys.argv[1], Path(sys.argv[2])
    result = review(where) if case == "review" else judge_cache(where, int(sys.argv[3]))
    print(json.dumps(result), flush=True)
