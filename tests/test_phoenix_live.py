"""Real Arize Phoenix on loopback, read back through its API and its UI in headless Chromium.

Runs ``benchmarks/phoenix_check.py`` (see its docs and docs/phoenix.md): the demo's chain
through ragtrace into a fresh Phoenix, then every check (trace latency = the root span's
duration, streamed queries shown, each evaluator's score and label as annotations, a filter on
a failed annotation keeping exactly the failed requests, the Playground replay holding the
chunk text, the docs' filters). Phoenix lives in an environment of its own (it wants
``openai>=3``, litellm ``openai<3``): ``RAGTRACE_PHOENIX_PYTHON``, ``.venv-phoenix`` (``make
phoenix-env``) or ``../phoenix-venv``. Missing, the test is skipped, and fails under ``CI=true``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.components import missing_component

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.integration


def test_phoenix_shows_requests_scores_and_prompts_as_it_should(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import phoenix_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    python = phoenix_check.phoenix_python()
    if python is None:
        missing_component(
            "no Phoenix environment: make phoenix-env (or set RAGTRACE_PHOENIX_PYTHON)"
        )
    summary = phoenix_check.run(python, requests=18, out=tmp_path)
    assert summary["checks"], summary
    failures = summary["failures"]
    assert not failures, "\n".join(f"{k}: {v}" for k, v in failures.items())
    for name in phoenix_check.SCREENSHOTS:
        assert (tmp_path / name).stat().st_size > 10_000, name
