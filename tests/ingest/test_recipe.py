"""The recipe of docs/ingest.md, as a user runs it: an app instrumented only with OpenInference
exports to the ``ragtrace ingest`` command, which serves faithfulness, relevance and PII scores on
``/metrics`` (``app`` = the service name) and sends each score as a ``gen_ai.evaluation.result``
log event on the app's own trace and span."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.components import free_port, wait_until
from tests.ingest.test_peers_end_to_end import peers_python
from tests.otlp_receiver import OtlpReceiver

ROOT = Path(__file__).resolve().parents[2]
EVALUATORS = "faithfulness,answer_relevance,pii_leakage"
SCORES = ("faithfulness", "answer_relevance", "pii_leakage.answer")


def test_an_openinference_app_gets_scores_on_metrics_and_log_events_on_its_traces(
    tmp_path: Path,
) -> None:
    python = peers_python()
    metrics_port = free_port()
    with OtlpReceiver() as backend:
        ingest = subprocess.Popen(
            [
                sys.executable, "-m", "ragtrace", "ingest",
                "--listen", "127.0.0.1:0",
                "--metrics-port", str(metrics_port),
                "--evaluators", EVALUATORS,
                "--otlp-endpoint", backend.traces_url,
                "--quiet-s", "0.5",
            ],
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            assert ingest.stderr is not None
            endpoint = None
            said: list[str] = []
            for line in ingest.stderr:
                said.append(line)
                found = re.search(r"OTLP/HTTP listening on \S+ \((\S+) here\)", line)
                if found:
                    endpoint = found.group(1)
                    break
            assert endpoint, f"ragtrace ingest did not start (exit {ingest.poll()}): {said[-30:]}"
            app = subprocess.run(
                [python, "examples/openinference_app.py", "--endpoint", endpoint,
                 "--service", "support-bot", "--requests", "4"],
                capture_output=True, check=False, text=True, timeout=120, cwd=ROOT,
            )  # fmt: skip
            assert app.returncode == 0, app.stderr[-2000:]
            traces = {json.loads(line)["trace_id"] for line in app.stdout.splitlines()}
            assert len(traces) == 4

            def scraped() -> str | None:
                url = f"http://127.0.0.1:{metrics_port}/metrics"
                text = urllib.request.urlopen(url, timeout=5).read().decode()
                done = all(
                    f'ragtrace_evaluations_total{{app="support-bot",evaluator="{name}"' in text
                    for name in SCORES
                )
                return text if done and _evaluated(text) >= 12 else None

            text = wait_until("scores for 4 requests x 3 evaluators", scraped, timeout_s=180)
            logs = backend.wait_for_logs(12, timeout_s=30)
            health = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/healthz", timeout=5)
            assert json.loads(health.read())["healthy"] is True
        finally:
            ingest.send_signal(signal.SIGTERM)
            try:
                ingest.wait(timeout=60)
            finally:
                if ingest.poll() is None:
                    ingest.kill()
    assert ingest.returncode == 0
    leaked = 'evaluator="pii_leakage.answer",outcome="fail"} 1.0'  # the phone number
    assert 'ragtrace_evaluations_total{app="support-bot",' + leaked in text
    # the request counter names the sending service, not ingest itself
    assert 'ragtrace_requests_total{app="support-bot",status="ok"} 4.0' in text
    assert 'ragtrace_requests_total{app="ragtrace-ingest",status="ok"} 0.0' in text
    assert {log.trace_id for log in logs} == traces
    assert all(log.span_id for log in logs)  # each on the app's RAG span
    evaluators = {log.attributes["ragtrace.evaluation.evaluator"] for log in logs}
    assert evaluators == set(EVALUATORS.split(","))
    assert backend.spans == []  # the app's traces keep their own spans only


def _evaluated(text: str) -> int:
    total = 0.0
    for line in text.splitlines():
        if line.startswith('ragtrace_evaluations_total{app="support-bot"'):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)
