"""The peers' real instrumentations export OTLP/HTTP to ``ragtrace ingest`` on loopback.

For each instrumentation (OpenInference, OpenLLMetry, ragtrace's own) and framework (a LangChain
retriever chain, a LlamaIndex query engine), ``peer_app.py`` runs in the peers' environment
(``.venv-bench``: ``make bench-env``) with ragtrace's own capture watching the same requests. The
record ``ragtrace ingest`` rebuilds from the exported spans must equal what ragtrace's handler
captured: query, chunk ids, scores and texts in rank order, answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import RagRecord
from tests.components import missing_component

ROOT = Path(__file__).resolve().parents[2]
PEER_APP = Path(__file__).with_name("peer_app.py")
REQUESTS = 3


def peers_python() -> str:
    """The peers' interpreter (``RAGTRACE_PEERS_PYTHON`` or ``.venv-bench``); skip locally
    when missing, fail under CI."""
    path = os.environ.get("RAGTRACE_PEERS_PYTHON") or str(ROOT / ".venv-bench/bin/python")
    if not Path(path).exists():
        missing_component(f"the peers' environment is missing ({path}): run `make bench-env`")
    return path


def ingest(instrumentation: str, framework: str) -> tuple[list[RagRecord], list[dict], dict]:
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=0.3, max_age_s=30.0),
            evaluators=(),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
    )
    rebuilt: list[RagRecord] = []
    assert service.runtime is not None
    service.runtime.add_record_sink(rebuilt.append)
    service.start()
    try:
        run = subprocess.run(
            [
                peers_python(),
                str(PEER_APP),
                "--instrumentation",
                instrumentation,
                "--framework",
                framework,
                "--endpoint",
                service.endpoint,
                "--requests",
                str(REQUESTS),
                "--service",
                "shop-assistant",
            ],
            capture_output=True,
            check=False,
            text=True,
            timeout=180,
            cwd=ROOT,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        deadline = time.monotonic() + 20
        while len(rebuilt) < REQUESTS and time.monotonic() < deadline:
            time.sleep(0.05)
        counts: dict[str, dict[tuple[str, ...], float]] = {}
        for family in service.registry.collect():
            for sample in family.samples:
                if sample.name.startswith("ragtrace_ingest") and sample.name.endswith("_total"):
                    counts.setdefault(sample.name, {})[tuple(sample.labels.values())] = sample.value
    finally:
        service.drain()
    expected = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    return rebuilt, expected, counts


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry", "ragtrace"])
def test_rebuilt_records_equal_ragtraces_own(instrumentation: str, framework: str) -> None:
    rebuilt, expected, counts = ingest(instrumentation, framework)
    assert len(expected) == REQUESTS
    assert len(rebuilt) == REQUESTS, counts
    by_query = {r.query: r for r in rebuilt}
    for want in expected:
        got = by_query[want["query"]]
        assert [c.id for c in got.chunks] == [c["id"] for c in want["chunks"]]
        assert [c.score for c in got.chunks] == [c["score"] for c in want["chunks"]]
        assert [c.text for c in got.chunks] == [c["text"] for c in want["chunks"]]
        assert got.response == want["response"]
        # ragtrace's own spans name their app (ragtrace.init's app); others: service.name
        assert got.app == ("peer-app" if instrumentation == "ragtrace" else "shop-assistant")
        assert got.status == "ok"
        if instrumentation == "ragtrace":
            assert (got.trace_id, got.model) == (want["trace_id"], want["model"])
    assert "ragtrace_ingest_dropped_spans_total" not in counts  # no span lost
    assert "ragtrace_ingest_traces_unmapped_total" not in counts
    assert counts["ragtrace_ingest_traces_total"] == {("complete",): REQUESTS}
