"""judge_noise_sensitivity: 002's two worked examples, plumbing, one direction check.

The formula is checked on 002's numbers without any server; the plumbing with the real SmolLM2
judge; an obvious case (an off-topic answer copied from an irrelevant chunk) with the real
Qwen2.5-Coder-0.5B judge.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragtrace._judges import JudgeClient
from ragtrace._judges.usage import CALL_OUTCOMES
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._judge.noise import (
    JudgeNoiseSensitivity,
    chunk_relevance,
    noise_sensitivity,
)

RELEVANT = "judge_noise_sensitivity.relevant"
IRRELEVANT = "judge_noise_sensitivity.irrelevant"

BRAZIL_Q = "What is the capital of Brazil?"
BRAZIL_CONTEXT = "Brazil is a country in South America. Its capital is Brasília."
NOISE = "Florida is a state in the USA. Its capital is Tallahassee."
BRASILIA = "The capital of Brazil is Brasília."
TALLAHASSEE = "The capital of Florida is Tallahassee."


def record(response: object, reference: object, chunks: Sequence[object]) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=BRAZIL_Q,
        chunks=tuple(Chunk(c) for c in chunks),  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def test_002_relevant_noise_sensitivity_example() -> None:
    # Ground truth: "Leonardo da Vinci painted the Mona Lisa", "It was painted in the 16th
    # century"; the one chunk states the first, so it is relevant. Response claims: Leonardo
    # (correct), "15th century" (incorrect, entailed by the relevant chunk) -> RNS = 1/2.
    relevant = chunk_relevance([[True, False]])
    assert relevant == [True]
    values = noise_sensitivity([True, False], [[True], [True]], relevant)
    assert values == {"relevant": 0.5, "irrelevant": 0.0}


def test_002_irrelevant_noise_sensitivity_example() -> None:
    # Ground truth: "Jane Austen wrote 'Pride and Prejudice.'"; chunk 1 (Austen) is relevant,
    # chunk 2 (Brontë, 'Jane Eyre') is not. M1 "Brontë wrote P&P" and M2 "Brontë is famous for
    # 'Jane Eyre'" are both incorrect; only M2 is entailed, by the irrelevant chunk -> INS 1/2.
    relevant = chunk_relevance([[True], [False]])
    assert relevant == [True, False]
    values = noise_sensitivity([False, False], [[False, False], [False, True]], relevant)
    assert values == {"relevant": 0.0, "irrelevant": 0.5}


def test_formula_edges() -> None:
    # Correct claims never count, whatever entails them.
    assert noise_sensitivity([True, True], [[True, True], [True, True]], [True, False]) == {
        "relevant": 0.0,
        "irrelevant": 0.0,
    }
    # An incorrect claim entailed by a relevant and an irrelevant chunk counts in both.
    assert noise_sensitivity([False, True], [[True, True], [False, False]], [True, False]) == {
        "relevant": 0.5,
        "irrelevant": 0.5,
    }
    # An incorrect claim no chunk entails (the generator's own error) counts in neither.
    assert noise_sensitivity([False], [[False, False]], [True, False]) == {
        "relevant": 0.0,
        "irrelevant": 0.0,
    }
    # Every claim wrong and copied from irrelevant chunks: the worst score.
    assert noise_sensitivity([False, False], [[True], [True]], [False])["irrelevant"] == 1.0
    # No response claim: no incorrect claim (002's perfect score).
    assert noise_sensitivity([], [], [True]) == {"relevant": 0.0, "irrelevant": 0.0}
    assert chunk_relevance([[], [False, True]]) == [False, True]
    with pytest.raises(ValueError):
        noise_sensitivity([False], [], [True])
    with pytest.raises(ValueError):
        noise_sensitivity([False], [[True, True]], [True])


def test_declared_attributes() -> None:
    assert isinstance(create("judge_noise_sensitivity"), JudgeNoiseSensitivity)
    evaluator = JudgeNoiseSensitivity(judge="openai/x")
    assert evaluator.requires == frozenset({"query", "response", "reference", "chunks"})
    assert (evaluator.kind, evaluator.direction, evaluator.threshold) == (
        "judge",
        "lower_is_better",
        None,
    )
    assert evaluator.score_names == (RELEVANT, IRRELEVANT)
    scores = evaluator.evaluate(record(TALLAHASSEE, BRASILIA, ("", "   ")))
    assert [s.name for s in scores] == [RELEVANT, IRRELEVANT]
    assert all(s.error and "chunks" in s.error for s in scores)


@pytest.mark.judge
def test_plumbing(smol_judge: JudgeClient) -> None:
    evaluator = JudgeNoiseSensitivity(judge=smol_judge, claims="sentences")
    scores = evaluator.evaluate(record(TALLAHASSEE, BRASILIA, (BRAZIL_CONTEXT, NOISE)))
    assert [s.name for s in scores] == [RELEVANT, IRRELEVANT]
    for score in scores:
        assert score.evaluator_kind == "judge"
        if score.error is not None:
            assert score.value is None and score.label in CALL_OUTCOMES
            continue
        assert score.value is not None and 0.0 <= score.value <= 1.0
        d = score.details
        assert [c["claim"] for c in d["claims"]] == [TALLAHASSEE]
        assert d["incorrect"] == sum(not c["correct"] for c in d["claims"])
        [claim] = d["claims"]
        assert claim["correct"] is (claim["verdict"] == "yes")
        assert set(claim["relevant_chunks"]) | set(claim["irrelevant_chunks"]) <= {1, 2}
        assert d["prompts"] == ["claims_verdict@v2"]
        if claim["correct"]:  # nothing more to check: both ratios are 0
            assert claim["relevant_chunks"] == claim["irrelevant_chunks"] == []
            assert (d["chunks"], d["ground_truth_claims"], score.value) == ([], [], 0.0)
            assert d["judge_calls"] == 1
        else:
            assert d["ground_truth_claims"] == [BRASILIA]
            assert [c["rank"] for c in d["chunks"]] == [1, 2]
            for chunk in d["chunks"]:
                assert chunk["relevant"] is (chunk["ground_truth_claim"] == BRASILIA)
            # 1 vs the reference, 2 relevance (one truth per chunk), 2 entailment.
            assert d["judge_calls"] == 5


@pytest.mark.judge
def test_direction_off_topic_answer_from_irrelevant_chunk(qwen_judge: JudgeClient) -> None:
    evaluator = JudgeNoiseSensitivity(judge=qwen_judge, claims="sentences")
    copied = {
        s.name: s
        for s in evaluator.evaluate(record(TALLAHASSEE, BRASILIA, (BRAZIL_CONTEXT, NOISE)))
    }
    d = copied[IRRELEVANT].details
    assert [c["relevant"] for c in d["chunks"]] == [True, False], d
    assert d["claims"][0]["correct"] is False, d
    assert copied[IRRELEVANT].value == 1.0, d
    assert copied[RELEVANT].value == 0.0, d
    right = evaluator.evaluate(record(BRASILIA, BRASILIA, (BRAZIL_CONTEXT, NOISE)))
    assert [s.value for s in right] == [0.0, 0.0], right[0].details
    assert right[0].details["chunks"] == []  # a correct answer needs no chunk check
