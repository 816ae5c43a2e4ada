"""A real redis-server per test (loopback, AOF on), a fleet of workers on it, an OTLP receiver
behind a gate, and helpers to make work items."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._model import RagRecord
from ragtrace._pipeline.queues import WorkItem
from tests.otlp_receiver import OtlpReceiver
from tests.queues.delivery import Gate
from tests.queues.fleet import Workers, register_app_side_names, write_settings
from tests.redis_server import RedisServer, run_redis


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with run_redis(tmp_path / "redis") as server:
        yield server


@pytest.fixture
def app_side_names() -> Iterator[None]:
    yield from register_app_side_names()


@pytest.fixture
def fleet(tmp_path: Path, redis_server: RedisServer, app_side_names: None) -> Iterator[Workers]:
    """Worker subprocesses on a fresh redis-server (test evaluators; reclaim after 1 s)."""
    settings = write_settings(tmp_path)
    workers = Workers(tmp_path, redis_server.url + "?reclaim_idle_s=1&batch=16", settings)
    try:
        yield workers
    finally:
        workers.stop_all()


@pytest.fixture
def gate() -> Iterator[tuple[Gate, OtlpReceiver]]:
    """A real OTLP/HTTP receiver behind a ``Gate``, closed (refusing) until the test opens it."""
    with OtlpReceiver() as receiver, Gate(receiver.endpoint) as closed_gate:
        yield closed_gate, receiver


def item(i: int, query: str | None = None, evaluators: tuple[str, ...] = ("looping",)) -> WorkItem:
    record = RagRecord(f"{i:032x}", f"{i:016x}", query or f"question {i}", response=f"answer {i}")
    return WorkItem(record, evaluators)


def options(url: str, **overrides: Any) -> RedisQueueOptions:
    overrides.setdefault("timeout_s", 1.0)
    return RedisQueueOptions.from_url(url, **overrides)


def trace_ids(items: list[WorkItem]) -> list[str]:
    return [i.record.trace_id for i in items]
