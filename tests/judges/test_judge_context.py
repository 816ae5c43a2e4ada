"""Judge context precision, recall, relevancy and entities recall: formulas, plumbing, direction.

The formulas are checked on the worked examples of 003 without any server; the plumbing with
the real SmolLM2 judge (fast, useless at judging); a few obvious cases with the real
Qwen2.5-Coder-0.5B judge.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragtrace._judges import JudgeClient
from ragtrace._judges.prompts import load_prompt
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import _retrieval_quality as retrieval_quality
from ragtrace.evaluators._judge.context import (
    JudgeContextPrecision,
    JudgeContextRecall,
    JudgeContextRelevancy,
    numbered_context,
    rank_weighted_precision,
)
from ragtrace.evaluators._judge.context_entities import (
    JudgeContextEntitiesRecall,
    entities_recall,
    kept_entities,
    match_entity,
)
from ragtrace.evaluators._judge.statements import relevant_share
from ragtrace.evaluators._retrieval_quality import normalise_entity
from tests.judges.judge_helpers import assert_judge_score, dead_judge

AI_NODES = (  # 003, Contextual Precision example
    "Machine Learning is the study of algorithms which learn with more data.",
    "AI is known as Artificial Intelligence.",
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles. It's evolving rapidly with advancements in machine learning and "
    "deep learning.",
)
AI_REFERENCE = (  # 003, Contextual Recall example
    "AI, also known as Artificial Intelligence, is used to build complex systems for "
    "applications like virtual assistants, robotics, and autonomous vehicles."
)


def record(
    chunks: Sequence[object] = AI_NODES,
    *,
    query: object = "What is AI?",
    reference: object = AI_REFERENCE,
) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,  # type: ignore[arg-type]
        chunks=tuple(c if isinstance(c, Chunk) else Chunk(c) for c in chunks),  # type: ignore[arg-type]
        response="AI is artificial intelligence.",
        reference=reference,  # type: ignore[arg-type]
    )


# -- the seeds' numbers -------------------------------------------------------------------------


def test_precision_reproduces_003() -> None:
    # Node 1 no, node 2 yes, node 3 yes, node 4 no, node 5 no: (1/2 + 2/3) / 2 = 0.5833.
    assert rank_weighted_precision is retrieval_quality.rank_weighted_precision
    value = rank_weighted_precision([False, True, True, False, False])
    assert value == pytest.approx((0.5 + 2 / 3) / 2)
    assert round(value, 4) == 0.5833
    assert rank_weighted_precision([True, True, False]) == 1.0
    assert rank_weighted_precision([False, False]) == 0.0  # no relevant chunk


def test_recall_reproduces_003() -> None:
    # Statement 1 attributable to node 2, statement 2 to no node: 1/2.
    assert relevant_share([True, False]) == 0.5


def test_relevancy_reproduces_003() -> None:
    nodes = [[False], [False], [True] * 3, [True] * 3, [True] * 3]  # verdicts per node
    flat = [v for node in nodes for v in node]
    assert len(flat) == 11
    assert round(relevant_share(flat) or 0, 4) == 0.8182  # 9/11


def test_entities_recall_matching() -> None:
    reference = "Leonardo da Vinci painted the Mona Lisa in Florence in the 16th century."
    kept, dropped = kept_entities(
        ["Leonardo da Vinci", "the Mona Lisa", "Florence", "16th century", "Marie Curie", " "],
        reference,
    )
    assert kept == ["leonardo da vinci", "mona lisa", "florence", "16th century"]
    assert dropped == ["marie curie"]  # not in the text: an invented entity is dropped
    context = "the mona lisa is a portrait by leonardo da vinci at the louvre museum."
    assert match_entity("leonardo da vinci", context, ()) == "text"
    assert match_entity("vinci", context, ()) == "text"
    assert match_entity("florence", context, ["louvre museum"]) is None
    assert match_entity("louvre", "", ["louvre museum"]) == "entity"
    assert match_entity("louvre museum paris", "", ["louvre museum"]) == "entity"
    assert match_entity("lisa", "monalisa", ()) is None  # whole words only
    assert entities_recall([True, True, False, False]) == 0.5
    assert entities_recall([]) is None


def test_numbered_context_keeps_ranks() -> None:
    assert numbered_context(["a", "", "c"]) == "[1] a\n[3] c"


# -- construction and input ---------------------------------------------------------------------


def test_options_and_requires() -> None:
    assert JudgeContextPrecision.requires == {"query", "chunks"}
    assert JudgeContextPrecision(relevance_to="reference").requires == {
        "query",
        "chunks",
        "reference",
    }
    with pytest.raises(ValueError, match="relevance_to"):
        JudgeContextPrecision(relevance_to="response")
    assert JudgeContextRecall.requires == {"chunks", "reference"}
    assert JudgeContextRelevancy.requires == {"query", "chunks"}
    assert JudgeContextEntitiesRecall.requires == {"chunks", "reference"}
    with pytest.raises(ValueError, match="max_chunks"):
        JudgeContextRecall(max_chunks=0)


def test_prompts_have_the_variables_the_evaluators_pass() -> None:
    assert load_prompt("context_chunk_relevance").placeholders == {"question", "passage"}
    assert load_prompt("context_chunk_usefulness").placeholders == {
        "question",
        "reference",
        "passage",
    }
    assert load_prompt("context_attribution").placeholders == {"context", "statement"}
    assert load_prompt("context_entities").placeholders == {"text"}


@pytest.mark.parametrize(
    "evaluator_class",
    [JudgeContextPrecision, JudgeContextRecall, JudgeContextRelevancy, JudgeContextEntitiesRecall],
)
def test_chunks_without_text_are_an_error_score_without_a_call(evaluator_class: type) -> None:
    (score,) = evaluator_class(judge=dead_judge()).evaluate(record(["", "  \n"]))
    assert score.error is not None and "chunks" in score.error
    assert score.label == "error" and score.value is None


def test_unreachable_judge_is_an_error_score_labelled_with_the_outcome() -> None:
    (score,) = JudgeContextRecall(judge=dead_judge()).evaluate(record())
    assert score.value is None and score.error is not None
    assert score.label in ("unavailable", "server_error")  # see test_judge_relevance


def test_chunk_caps_are_reported() -> None:
    evaluator = JudgeContextPrecision(judge=dead_judge(), max_chunks=2, max_chars=50)
    texts, truncated = evaluator.chunk_texts(record([b"bytes \xff chunk", "", "third"]))
    assert texts == ["bytes \ufffd chunk", ""] and truncated
    texts, truncated = evaluator.chunk_texts(record(["x" * 60]))
    assert texts == ["x" * 50] and truncated


# -- plumbing with the real SmolLM2 judge -------------------------------------------------------


@pytest.mark.judge
def test_precision_plumbing(smol_judge: JudgeClient) -> None:
    evaluator = JudgeContextPrecision(judge=smol_judge)
    (score,) = evaluator.evaluate(record([AI_NODES[0], "", AI_NODES[1]]))
    assert_judge_score(score, "judge_context_precision", calls=True)
    if score.error is None:
        chunks = score.details["chunks"]
        assert [c["rank"] for c in chunks] == [1, 2, 3]
        assert chunks[1]["relevant"] is False  # the blank chunk: not relevant, not asked
        assert score.details["judge_calls"] == 2
        assert score.value == rank_weighted_precision([c["relevant"] for c in chunks])
        assert score.details["prompts"] == ["context_chunk_relevance@v1"]


@pytest.mark.judge
def test_precision_against_the_reference_plumbing(smol_judge: JudgeClient) -> None:
    evaluator = JudgeContextPrecision(judge=smol_judge, relevance_to="reference")
    (score,) = evaluator.evaluate(record(AI_NODES[:2]))
    assert_judge_score(score, "judge_context_precision", calls=True)
    if score.error is None:
        assert score.details["relevance_to"] == "reference"
        assert score.details["prompts"] == ["context_chunk_usefulness@v1"]


@pytest.mark.judge
def test_recall_plumbing(smol_judge: JudgeClient) -> None:
    (score,) = JudgeContextRecall(judge=smol_judge).evaluate(record(AI_NODES[:2]))
    assert_judge_score(score, "judge_context_recall", calls=True)
    if score.error is None:
        (entry,) = score.details["statements"]  # the reference is one sentence
        assert entry["statement"] == AI_REFERENCE
        assert entry["chunk"] in (None, 1, 2)
        assert entry["attributed"] or entry["chunk"] is None
        assert score.value == float(entry["attributed"])


@pytest.mark.judge
def test_relevancy_plumbing(smol_judge: JudgeClient) -> None:
    evaluator = JudgeContextRelevancy(judge=smol_judge, max_statements=3)
    (score,) = evaluator.evaluate(record(AI_NODES))
    assert_judge_score(score, "judge_context_relevancy", calls=True)
    if score.error is None:
        chunks = score.details["chunks"]
        assert [c["rank"] for c in chunks] == [1, 2, 3]
        assert [len(c["statements"]) for c in chunks] == [1, 1, 1]  # capped at 3 in all
        assert score.details["truncated"] is True
        assert score.details["statements"] == 3


@pytest.mark.judge
def test_entities_recall_plumbing(smol_judge: JudgeClient) -> None:
    scores = JudgeContextEntitiesRecall(judge=smol_judge).evaluate(record(AI_NODES[:2]))
    assert len(scores) <= 1  # no Score when the judge lists no entity of the reference
    for score in scores:
        assert_judge_score(score, "judge_context_entities_recall", calls=True)
        if score.error is None:
            for entry in score.details["entities"]:
                assert entry["found"] == (entry["via"] is not None)
                assert entry["entity"] in normalise_entity(AI_REFERENCE)


# -- direction with the real Qwen judge ---------------------------------------------------------

FRANCE_Q = "What is the capital of France?"
PARIS = "Paris is the capital and largest city of France."
BANANAS = "Bananas are a good source of potassium."


@pytest.mark.judge
def test_precision_ranks_by_relevant_chunks(qwen_judge: JudgeClient) -> None:
    (score,) = JudgeContextPrecision(judge=qwen_judge).evaluate(
        record([BANANAS, PARIS], query=FRANCE_Q)
    )
    assert score.error is None, score.error
    assert [c["relevant"] for c in score.details["chunks"]] == [False, True]
    assert score.value == 0.5


@pytest.mark.judge
def test_recall_finds_the_unsupported_reference_statement(qwen_judge: JudgeClient) -> None:
    reference = "Paris is the capital of France. Bananas are grown in Iceland."
    (score,) = JudgeContextRecall(judge=qwen_judge).evaluate(
        record([PARIS], query=FRANCE_Q, reference=reference)
    )
    assert score.error is None, score.error
    assert [s["attributed"] for s in score.details["statements"]] == [True, False]
    assert score.details["statements"][0]["chunk"] in (1, None)
    assert score.value == 0.5


@pytest.mark.judge
def test_relevancy_separates_relevant_statements(qwen_judge: JudgeClient) -> None:
    (score,) = JudgeContextRelevancy(judge=qwen_judge).evaluate(
        record([f"{PARIS} {BANANAS}"], query=FRANCE_Q)
    )
    assert score.error is None, score.error
    (chunk,) = score.details["chunks"]
    assert [s["relevant"] for s in chunk["statements"]] == [True, False]
    assert score.value == 0.5


@pytest.mark.judge
def test_entities_recall_misses_the_absent_entity(qwen_judge: JudgeClient) -> None:
    reference = "Leonardo da Vinci painted the Mona Lisa in Florence."
    context = "The Mona Lisa is a portrait by Leonardo da Vinci, kept at the Louvre in Paris."
    (score,) = JudgeContextEntitiesRecall(judge=qwen_judge).evaluate(
        record([context], reference=reference)
    )
    assert score.error is None, score.error
    found = {e["entity"]: e["found"] for e in score.details["entities"]}
    assert found.get("leonardo da vinci") is True
    assert found.get("florence") is False
    assert score.value is not None and score.value < 1.0
