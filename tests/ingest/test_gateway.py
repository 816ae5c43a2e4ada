"""A RAG app behind a gateway that propagates ``traceparent``: scored within the quiet period.

The peers' real instrumentations (OpenInference, OpenLLMetry) run in their own environment
(``.venv-bench``) in ``peer_gateway.py``: a WSGI gateway opens a server span and forwards each
request to the WSGI app with its ``traceparent``, so the app's outermost span has a parent that
never reaches ``ragtrace ingest``. The SDK marks that parent remote in the span flags; ingest
takes the span as the request's root and scores the request once its trace has been quiet for
``quiet_s``: within the quiet period plus a second of the answer, never at ``max_age_s``.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import Evaluation, RagRecord
from tests.components import wait_until
from tests.ingest.test_peers_end_to_end import peers_python

ROOT = Path(__file__).resolve().parents[2]
GATEWAY = Path(__file__).with_name("peer_gateway.py")
REQUESTS = 3
QUIET_S = 1.0


class Scored:
    """A score sink noting when each record's scores were published."""

    def __init__(self) -> None:
        self.at: dict[str, tuple[RagRecord, float]] = {}

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        self.at[record.trace_id] = (record, time.time())

    def shutdown(self) -> None:
        """Nothing to release."""


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_a_request_behind_a_propagating_gateway_is_scored_within_the_quiet_period(
    instrumentation: str, framework: str
) -> None:
    scored = Scored()
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            limits=AssemblyLimits(quiet_s=QUIET_S, max_age_s=60.0),
            evaluators=("looping",),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
        score_sinks=[scored],
    )
    service.start()
    try:
        run = subprocess.run(
            [
                peers_python(), str(GATEWAY), "--instrumentation", instrumentation,
                "--framework", framework, "--endpoint", service.endpoint,
                "--requests", str(REQUESTS), "--service", "gateway-shop",
            ],
            capture_output=True, check=False, text=True, timeout=180, cwd=ROOT,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        answers = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        assert len(answers) == REQUESTS
        wait_until(
            "every request scored",
            lambda: all(a["trace_id"] in scored.at for a in answers),
            timeout_s=QUIET_S + 30,
        )
        reasons = {
            s.labels["reason"]: s.value
            for m in service.registry.collect()
            for s in m.samples
            if s.name == "ragtrace_ingest_traces_total"
        }
    finally:
        service.drain()
    for answer in answers:
        record, at = scored.at[answer["trace_id"]]
        delay = at - answer["answered_at"]
        assert delay <= QUIET_S + 1.0, f"scored {delay:.2f}s after the answer"
        assert record.status == "ok"
        assert record.app == "gateway-shop"
        assert record.query is not None and answer["question"] in record.query
        assert record.response == answer["answer"]
        assert record.chunks  # the retriever's documents, under the app's own root
        assert record.span_id != answer["gateway_span_id"]  # the app's span, not the gateway's
    # the SDK flagged the gateway's span as a remote parent: a root, not a wait for max age
    assert reasons == {"complete": REQUESTS}
