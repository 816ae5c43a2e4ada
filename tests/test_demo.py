"""The embedded demo drives real LangChain traffic through ragtrace."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from ragtrace.demo.app import QUESTIONS
from ragtrace.demo.run import DemoOptions, run_demo


def test_demo_traces_every_request() -> None:
    out = io.StringIO()
    records = run_demo(DemoOptions(requests=18, stream_every=5, abandon_every=9), out)
    assert [r.query for r in records] == QUESTIONS[:18]
    assert [r.status for r in records].count("abandoned") == 2
    assert all(len(r.chunks) == 4 and r.chunks[0].id for r in records)
    assert all(r.response for r in records if r.status == "ok")
    text = out.getvalue()
    assert "ragtrace demo: 18 requests traced" in text
    assert "abandoned=2, ok=16" in text


def test_cli_demo_json() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ragtrace", "demo", "--requests", "3", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["query"] for line in lines] == QUESTIONS[:3]
    assert all(len(line["trace_id"]) == 32 for line in lines)


def test_cli_rejects_bad_arguments() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ragtrace", "demo", "--requests", "0"],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "--requests must be >= 1" in proc.stderr
