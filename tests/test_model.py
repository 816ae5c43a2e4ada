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


def test_turn_chunks_keep_each_document_once_with_its_best_score_and_retrievals() -> None:
    from ragtrace._model import RETRIEVALS_KEY, TurnChunks, once_each

    turn = TurnChunks()
    assert turn.add(Chunk("A", id="a", score=0.5), 0, "first") == (0, True)
    assert turn.add(Chunk("no id", score=None), 0, "first") == (1, True)
    assert turn.add(Chunk("A", id="a", score=0.7), 0, "first") == (0, False)  # the same search
    assert turn.add(Chunk("A, another part", id="a"), 1, "second") == (2, True)
    assert turn.add(Chunk("no id", score=0.2, source="other"), 1, "second") == (1, False)
    assert turn.add(Chunk("A", id="a", score=0.6), 1, "second") == (0, False)
    a, no_id, part = turn.chunks
    assert (a.score, a.metadata[RETRIEVALS_KEY]) == (
        0.7,
        [
            {"retrieval": 0, "query": "first", "score": 0.7},
            {"retrieval": 1, "query": "second", "score": 0.6},
        ],
    )
    assert (no_id.score, no_id.source, len(no_id.metadata[RETRIEVALS_KEY])) == (0.2, None, 2)
    assert part == Chunk("A, another part", id="a", retrieval=1)  # one retrieval: no list
    # Merging a merged list again changes nothing; a list of contexts merges without names.
    assert once_each(turn.chunks) == tuple(turn.chunks)
    assert once_each([Chunk("x", score=0.1), Chunk("x", score=0.3)]) == (Chunk("x", score=0.3),)
