"""The chunks an answer rests on (``answer_context``), and the evaluators that judge only them:
groundedness and faithfulness read the chunks the answer's model call saw, and say so."""

from __future__ import annotations

import dataclasses

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._answer_context import answer_context
from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._groundedness import Groundedness

REFUNDS = "Refunds are available within 30 days of purchase. Contact the billing team by email."
PRICING = "The Pro plan costs 25 dollars per month. Teams get a discount from ten seats."
ANSWER = "You can get a refund within 30 days of purchase by emailing the billing team."
NOTE = "judged on the 1 of 2 chunks the answer's model call saw"


def record(*chunks: Chunk) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="How long do I have to ask for a refund?",
        chunks=chunks,
        response=ANSWER,
    )


@pytest.mark.parametrize(
    ("marks", "places"),
    [
        ((None, None, None), (0, 1, 2)),  # nothing known
        ((True, True, True), (0, 1, 2)),  # every chunk used: nothing to leave out
        ((False, False, False), (0, 1, 2)),  # the answering call held none: judge them all
        ((True, False, None), (0, 2)),  # an unknown chunk stays in
        ((False, True, False), (1,)),
    ],
)
def test_only_chunks_known_to_be_unused_are_left_out(
    marks: tuple[bool | None, ...], places: tuple[int, ...]
) -> None:
    chunks = tuple(Chunk(f"text {i}", used=mark) for i, mark in enumerate(marks))
    context = answer_context(record(*chunks))
    assert context.places == places
    assert context.chunks == tuple(chunks[i] for i in places)
    assert context.narrowed is (len(places) < 3)
    assert context.record(record(*chunks)).chunks == context.chunks
    if context.narrowed:
        assert (
            context.note()
            == f"; judged on the {len(places)} of 3 chunks the answer's model call saw"
        )
        assert context.details() == {"judged_chunks": list(places)}
    else:
        assert (context.note(), context.details()) == ("", {})


def test_bare_strings_for_chunks_are_read_as_unmarked() -> None:
    rec = dataclasses.replace(record(), chunks=("a", "b"))  # type: ignore[arg-type]
    assert answer_context(rec).places == (0, 1)


def test_groundedness_reads_only_the_chunks_the_answer_saw() -> None:
    ev = Groundedness(method="min")
    (seen_all,) = ev.evaluate(record(Chunk(REFUNDS), Chunk(PRICING)))
    # The refund policy was retrieved but a grader dropped it: the answer's model call had only
    # the pricing page, so nothing it was given grounds the answer.
    (narrowed,) = ev.evaluate(record(Chunk(REFUNDS, used=False), Chunk(PRICING, used=True)))
    assert seen_all.value is not None and narrowed.value is not None
    assert narrowed.value < seen_all.value
    assert narrowed.explanation is not None and narrowed.explanation.endswith(NOTE)
    assert NOTE not in (seen_all.explanation or "")
    assert narrowed.details["judged_chunks"] == [1]
    assert {row["chunk"] for row in narrowed.details["sentences"]} == {1}  # the record's index


def test_faithfulness_checks_claims_against_the_chunks_the_answer_saw() -> None:
    ev = Faithfulness()
    (seen_all,) = ev.evaluate(record(Chunk(REFUNDS), Chunk(PRICING)))
    (narrowed,) = ev.evaluate(record(Chunk(REFUNDS, used=False), Chunk(PRICING, used=True)))
    assert seen_all.value is not None and narrowed.value is not None
    assert narrowed.value < seen_all.value
    assert narrowed.explanation is not None and narrowed.explanation.endswith(NOTE)
    assert narrowed.details["judged_chunks"] == [1]
    assert "judged_chunks" not in seen_all.details
