"""``init`` and the metrics port, in one process: a taken port never fails ``init``, and a
failed ``init`` leaves nothing behind (no families in the registry, no threads, no port), so
the next one works where it used to raise prometheus_client's "Duplicated timeseries"."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._metrics import multiprocess as metrics_endpoint
from tests.components import http_get, wait_until
from tests.faulty_otlp import closed_port


@pytest.fixture(autouse=True)
def own_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ragtrace settings or multiprocess directory from outside; ragtrace makes its own
    tracer provider (with the OTLP span exporter thread when asked)."""
    for name in list(os.environ):
        if name.startswith(("RAGTRACE_", "PROMETHEUS_MULTIPROC")):
            monkeypatch.delenv(name)
    if hasattr(trace, "_TRACER_PROVIDER"):
        monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def families(registry: CollectorRegistry) -> set[str]:
    return {family.name for family in registry.collect()}


def exporter_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "ragtrace-span-export"]


def test_a_taken_metrics_port_is_logged_and_counted_and_init_goes_on(
    taken_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CollectorRegistry()
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        rt = ragtrace.init(registry=registry, metrics_port=taken_port, evaluators=())
    try:
        assert rt.metrics_server is None
        errors = {"site": "metrics.server"}
        assert registry.get_sample_value("ragtrace_internal_errors_total", errors) == 1
        [line] = [r.getMessage() for r in caplog.records if r.name == "ragtrace"]
        assert line == (
            f"ragtrace: cannot serve metrics on 127.0.0.1:{taken_port}: Address already in use; "
            f"process {os.getpid()} runs on without /metrics; with several worker processes "
            "(gunicorn, uvicorn --workers) set PROMETHEUS_MULTIPROC_DIR so one endpoint serves "
            "them all (docs/multiprocess.md)"
        )
        with pytest.raises(OSError, match="cannot serve metrics"):
            rt.start_metrics_server(taken_port)  # asked for in so many words: it raises
    finally:
        rt.shutdown()


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ({"evaluators": ["no-such-evaluator"]}, ValueError),  # refused by the config
        ({"queue_url": "ftp://nowhere"}, ValueError),
        ({"passage_store": "/no/such/store.sqlite"}, ValueError),  # refused while building
    ],
)
def test_a_failed_init_leaves_nothing_behind_and_the_next_init_works(
    bad: dict[str, Any], error: type[Exception]
) -> None:
    registry = CollectorRegistry()
    before = exporter_threads()
    otlp = f"http://127.0.0.1:{closed_port()}"  # so a span-export thread is started, then stopped
    with pytest.raises(error):
        ragtrace.init(registry=registry, otlp_endpoint=otlp, metrics_port=0, **bad)

    assert families(registry) == set()
    wait_until("the exporter thread to end", lambda: exporter_threads() == before, 5.0)
    rt = ragtrace.init(registry=registry, otlp_endpoint=otlp, metrics_port=0, evaluators=())
    try:
        assert rt.metrics_server is not None
        with http_get(rt.metrics_server.url) as response:
            assert b"ragtrace_requests_total" in response.read()
    finally:
        rt.shutdown(timeout_s=0.5)
    assert families(registry) == set()


def test_a_multiprocess_directory_set_too_late_is_named_in_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # prometheus_client was imported (in single-process mode) long before this line
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(metrics_endpoint, "_warned_late", False)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        for _ in range(2):
            ragtrace.init(registry=CollectorRegistry(), evaluators=()).shutdown()
    lines = [r.getMessage() for r in caplog.records if r.name == "ragtrace"]
    assert lines == [
        "ragtrace: PROMETHEUS_MULTIPROC_DIR is set, but prometheus_client was imported before "
        "it was, so metrics stay per process; set it in the environment the server starts with"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing written there
