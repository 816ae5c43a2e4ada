"""``ragtrace eval`` with the whole default online suite, every model loaded for real.

The evaluators are the default online suite's (answer relevance, context relevance,
groundedness, faithfulness, PII, sensitive data, language mismatch and looping) and toxicity,
which left the suite for missing the alarm budget but is still offered. This test FAILS (never
skips) when one of them cannot be built, naming it, so an incomplete suite cannot pass unnoticed.
Each evaluator's own tests check its values; here the run must finish without a single error
Score, skip exactly the records that lack a required field, and give values in [0, 1].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrace.evaluators import _registry as registry
from tests.offline.test_cli import ragtrace_eval, write_jsonl

DEFAULT_SUITE = (
    "answer_relevance", "context_relevance", "groundedness", "faithfulness", "pii_leakage",
    "sensitive_data", "toxicity", "language_mismatch", "looping",
)  # fmt: skip
KB = [
    "Refunds are accepted within 30 days of purchase. The item must be unused and in its "
    "original packaging.",
    "Standard shipping takes three to five business days. Express shipping arrives the next day.",
    "Gift cards cannot be refunded or exchanged for cash.",
]
RECORDS: list[dict[str, Any]] = [
    {"id": "grounded", "query": "How long do I have to return an item?", "contexts": KB,
     "response": "You can return an unused item within 30 days of purchase. It must be in its "
                 "original packaging. Gift cards are not refundable."},
    {"id": "leaky", "query": "Who do I contact about my refund?", "contexts": KB[:1],
     "response": "Write to jane.doe@example.com or call 415-555-0132. Her card number is "
                 "4111 1111 1111 1111. She is an idiot, honestly."},
    {"id": "other_language", "query": "How long does shipping take?", "contexts": KB[1:2],
     "response": "El envío estándar tarda de tres a cinco días hábiles."},
    {"id": "no_context", "query": "Can I exchange a gift card?", "contexts": [],
     "response": "No, gift cards cannot be exchanged for cash."},
]  # fmt: skip


def build_suite() -> dict[str, Any]:
    built, missing = {}, []
    for name in DEFAULT_SUITE:
        try:
            built[name] = registry.create(name)
        except Exception as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    if missing:
        pytest.fail(
            "the default online suite is incomplete; cannot build: " + "; ".join(missing),
            pytrace=False,
        )
    return built


@pytest.mark.integration
def test_default_online_suite_end_to_end(tmp_path: Path) -> None:
    suite = build_suite()
    src = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out, summary_path = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", ",".join(DEFAULT_SUITE), "--strict",
        "--summary-json", summary_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [r["id"] for r in RECORDS]
    for line, row in zip(lines, RECORDS, strict=True):
        lacking = {"chunks"} if not row["contexts"] else set()
        expect_skipped = {n for n, e in suite.items() if e.requires & lacking}
        assert {s["evaluator"] for s in line["skipped"]} == expect_skipped, line["id"]
        ran = {s["evaluator"] for s in line["scores"]}
        assert ran == set(DEFAULT_SUITE) - expect_skipped, line["id"]
        for s in line["scores"]:
            assert s["error"] is None, (line["id"], s)
            assert s["value"] is None or 0.0 <= s["value"] <= 1.0, (line["id"], s)
    summary = json.loads(summary_path.read_text())
    assert summary["input"]["records"] == len(RECORDS)
    assert {r["evaluator"] for r in summary["scores"]} == set(DEFAULT_SUITE)
    assert sum(r["errors"] for r in summary["scores"]) == 0
