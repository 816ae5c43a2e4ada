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


def test_model_calls_mark_the_chunks_that_reached_the_answering_call() -> None:
    from ragtrace._model import ModelCalls, probe, with_used

    chunks = (Chunk("  Refunds take 5 days. "), Chunk("Gift cards never expire."), Chunk(""))
    probes = [probe(c.text) for c in chunks]
    assert probes == ["Refunds take 5 days.", "Gift cards never expire.", None]
    calls = ModelCalls()
    assert calls.used(probes, "anything") is None  # no call seen
    # A grader reads each chunk; its short verdicts never count as read by a later call.
    for text in probes[:2]:
        calls.answered(calls.saw(f"Relevant? {text}", probes), "yes")
    answering = calls.saw("Context: Refunds take 5 days.\nyes", probes)
    calls.answered(answering, "Five days.")
    calls.saw("Is this answer grounded? Five days.", probes)  # a check after the answer
    assert calls.used(probes, "Five days.") == (True, False, None)
    assert with_used(chunks, calls.used(probes, "Five days.")) == (
        Chunk("  Refunds take 5 days. ", used=True),
        Chunk("Gift cards never expire.", used=False),
        Chunk(""),
    )
    assert with_used(chunks, None) == chunks
    # An answer no call seen gave (made outside them): nothing is known; one that holds an
    # output (citations appended) was that call's.
    assert calls.used(probes, "Something else entirely") is None
    assert calls.used(probes, None) is None
    calls.answered(answering, "Refunds take five business days.")
    cited = "Refunds take five business days. [1] refunds.md"
    assert calls.used(probes, cited) == (True, False, None)


def test_model_calls_follow_an_answer_built_over_several_calls() -> None:
    """LlamaIndex's refine: the last call reads the draft an earlier call wrote from chunk 0."""
    from ragtrace._model import ModelCalls

    probes = ["Chunk zero about refunds.", "Chunk one about credits."]
    calls = ModelCalls()
    draft = "Refunds take five days, says the policy."
    calls.answered(calls.saw("Context: Chunk zero about refunds.", probes), draft)
    final = calls.saw(f"Existing answer: {draft}\nNew context: Chunk one about credits.", probes)
    calls.answered(final, "Refunds take five days; credits go to the card.")
    assert calls.used(probes, "Refunds take five days; credits go to the card.") == (True, True)


def test_model_calls_know_nothing_when_the_answering_call_was_not_seen() -> None:
    from ragtrace._model import ModelCalls

    calls = ModelCalls()
    calls.answered(calls.saw("Context: chunk text here", ["chunk text here"]), "draft")
    calls.answered(calls.saw(None, ["chunk text here"]), "final")
    assert calls.used(["chunk text here"], "final") is None
    calls.answered(None, "no call")  # ignored
    assert len(calls) == 2
