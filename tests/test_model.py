"""Core records are frozen values with the fields DESIGN.md names."""

from __future__ import annotations

import dataclasses

import pytest

from ragtrace import Chunk, RagRecord, Score


def test_records_are_frozen() -> None:
    record = RagRecord(trace_id="0" * 32, span_id="0" * 16, query="q", chunks=(Chunk("t"),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.query = "other"  # type: ignore[misc]
    assert record.status == "ok" and record.reference is None
    assert dict(record.chunks[0].metadata) == {}


def test_duration() -> None:
    record = RagRecord(trace_id="t", span_id="s", query=None, start_ns=1_000, end_ns=2_500_001_000)
    assert record.duration_s == pytest.approx(2.5)


def test_score_rejects_nan_and_non_numbers() -> None:
    assert Score("groundedness", 0.8, passed=True).value == 0.8
    assert Score("groundedness", None, error="timeout").error == "timeout"
    with pytest.raises(ValueError, match="groundedness"):
        Score("groundedness", float("nan"))
    with pytest.raises(ValueError, match="relevance"):
        Score("relevance", "high")  # type: ignore[arg-type]
