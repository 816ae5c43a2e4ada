"""A fleet of ``ragtrace worker`` subprocesses on a real redis-server, for the queue tests.

``Workers`` starts workers (``tests/queues/worker_app.py``: the CLI with test evaluators) and
stops them by pid; ``ship`` submits records through an application in ship-only mode; ``state``
and ``settled`` read ``ragtrace queue stats``' view of the stream. The ``fleet`` fixture (in
``conftest.py``) gives a ``Workers`` on a fresh redis-server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._model import RagRecord
from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace._worker import inspect

ROOT = Path(__file__).resolve().parents[2]
APP_EVALUATORS = ("takes_time", "dies_on_poison", "flags_bad")


class Workers:
    """Worker subprocesses started by a test; all stopped (by pid) at the end."""

    def __init__(self, tmp_path: Path, url: str, settings: Path) -> None:
        self.tmp_path, self.url, self.settings = tmp_path, url, settings
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def published_log(self) -> Path:
        """Every record a worker published, one trace id a line (see ``worker_app``)."""
        return self.tmp_path / "published.log"

    def published(self) -> list[str]:
        """The trace ids published so far, in order, repeats included."""
        path = self.published_log
        return path.read_text().split() if path.exists() else []

    def start(
        self, name: str, *extra: str, eval_s: float = 0.01, url: str | None = None
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "RAGTRACE_TEST_EVAL_S": str(eval_s),
            "PYTHONPATH": str(ROOT),
            "RAGTRACE_TEST_PUBLISHED": str(self.published_log),
        }
        env.pop("RAGTRACE_EVALUATORS", None)  # the settings file names them: env would win
        args = [sys.executable, "-m", "tests.queues.worker_app", "--queue", url or self.url]
        args += ["--config", str(self.settings), "--consumer", name, *extra]
        with (self.tmp_path / f"{name}.log").open("ab") as log:  # the child keeps its own copy
            proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=log, stderr=log)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def shipping_app(url: str) -> tuple[ragtrace.Ragtrace, CollectorRegistry]:
    """An application that ships its records to the stream at ``url`` (evaluates nothing)."""
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="shipper",
        registry=registry,
        queue_url=url,
        evaluators=[f"{name}_app" for name in APP_EVALUATORS],
        export_evaluation_spans=False,
    )
    return rt, registry


def record(i: int, query: str | None = None) -> RagRecord:
    """The ``i``-th test record (trace id ``i + 1``)."""
    return RagRecord(f"{i + 1:032x}", f"{i + 1:016x}", query or f"question {i}", response="a")


def drops(registry: CollectorRegistry) -> dict[str, float]:
    """An application's ``ragtrace_dropped_records_total`` by reason."""
    return {
        s.labels["reason"]: s.value
        for m in registry.collect()
        if m.name == "ragtrace_dropped_records"
        for s in m.samples
        if s.name.endswith("_total")
    }


def ship(
    url: str,
    n: int,
    poison: frozenset[int] = frozenset(),
    bad: frozenset[int] = frozenset(),
    first: int = 0,
) -> dict[str, float]:
    """Submit ``n`` records (``first`` .. ``first + n - 1``) through an application in
    ship-only mode; its drop counters."""
    rt, registry = shipping_app(url)
    try:
        for i in range(first, first + n):
            query = f"POISON {i}" if i in poison else f"BAD {i}" if i in bad else None
            rt.pipeline.submit(record(i, query))
        assert rt.flush(15)
    finally:
        rt.shutdown()
    return drops(registry)


def write_settings(directory: Path) -> Path:
    """The workers' settings file: the test evaluators, two threads, no OTLP."""
    settings = directory / "settings.yaml"
    settings.write_text(
        "evaluators: [takes_time, dies_on_poison, flags_bad]\n"
        "pipeline: {workers: 2, batch_wait_s: 0.05}\n"
        "sinks: {otel: false}\n"
    )
    return settings


def queue_stats(url: str) -> dict[str, Any]:
    """``ragtrace queue stats --queue url``, as a user runs it."""
    run = subprocess.run(
        [sys.executable, "-m", "ragtrace", "queue", "stats", "--queue", url],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    stats: dict[str, Any] = json.loads(run.stdout)
    return stats


def scrape(port: int) -> dict[str, float]:
    """A worker's ``ragtrace_queue_*`` and ``ragtrace_evaluation*`` samples, by name and labels."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("ragtrace_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def register_app_side_names() -> Iterator[None]:
    """The app only needs the evaluators' names to sample: register stand-ins (a generator for
    a fixture)."""
    from ragtrace.evaluators import evaluator, register, unregister

    for app_name, real in ((f"{n}_app", n) for n in APP_EVALUATORS):
        stub = evaluator(name=real, requires={"query"})(lambda record: 1.0)
        register(app_name, lambda stub=stub, **_: stub, replace=True)
    yield
    for name in APP_EVALUATORS:
        unregister(f"{name}_app")


def state(url: str) -> dict[str, Any]:
    return inspect.queue_state(StreamCommands(*queue_commands(url)))


def settled(url: str, submitted: int) -> dict[str, Any] | None:
    s = state(url)
    done = s["published"] + s["dead_lettered"] == submitted and s["backlog"] == 0
    return s if done else None


def queue_commands(url: str) -> tuple[Any, RedisQueueOptions]:
    from ragtrace._pipeline.queues.redis_streams import connect

    options = RedisQueueOptions.from_url(url)
    return connect(options), options
