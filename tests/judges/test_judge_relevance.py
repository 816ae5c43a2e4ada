"""judge_answer_relevancy and judge_response_relevancy: seed formulas, plumbing, direction.

The formulas are checked on the worked examples of 002 and 003 without any server; the
plumbing with the real SmolLM2 judge (fast, useless at judging); a few obvious cases with the
real Qwen2.5-Coder-0.5B judge.
"""

from __future__ import annotations

import math

import pytest

from ragtrace._judges import JudgeClient
from ragtrace._judges.prompts import load_prompt
from ragtrace._model import RagRecord
from ragtrace.evaluators._judge.relevance import (
    JudgeAnswerRelevancy,
    JudgeResponseRelevancy,
    cosines,
    mean_similarity,
)
from ragtrace.evaluators._judge.statements import grounded_statements, relevant_share
from tests.judges.judge_helpers import assert_judge_score, dead_judge

BRAZIL_Q = "What is the capital city of Brazil?"
BRAZIL_A = (
    "The capital city of Brazil is Brasília. It replaced Rio de Janeiro as the capital in 1960. "
    "Florida is a state in the USA."
)
BOWL_Q = "When was the first Super Bowl?"
BOWL_A = "The first Super Bowl was held on Jan 15, 1967."
FOOTBALL_A = "Football is a popular sport."


def record(query: object = BRAZIL_Q, response: object = BRAZIL_A) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
    )


# -- the seeds' numbers -------------------------------------------------------------------------


def test_statement_share_reproduces_002_and_003() -> None:
    # 002, Response Relevancy (LLM based): Brasília yes, 1960 yes, Florida no -> 2/3 ~ 0.67.
    assert relevant_share([True, True, False]) == pytest.approx(2 / 3)
    assert round(relevant_share([True, True, False]) or 0, 2) == 0.67
    # 003, Answer Relevancy - LLM Based: both statements relevant -> 1.0.
    assert relevant_share([True, True]) == 1.0
    assert relevant_share([False, False]) == 0.0
    assert relevant_share([]) is None


def test_mean_similarity_reproduces_002_and_003() -> None:
    assert mean_similarity([0.98, 0.99, 0.97]) == pytest.approx(0.98)  # 002 example
    assert mean_similarity([0.2, 0.1, 0.15]) == pytest.approx(0.15)  # 002 counter-example
    # 003 prints 0.9207 for (0.92 + 0.91 + 0.93) / 3; the arithmetic gives 0.92.
    assert mean_similarity([0.92, 0.91, 0.93]) == pytest.approx(0.92)
    assert mean_similarity([-0.4, 0.1]) == 0.0  # negative cosines: clipped into [0, 1]
    assert mean_similarity([]) == 0.0


def test_cosines_of_002_example_vectors() -> None:
    # 002's "simplified" embeddings; its cosines (0.98, 0.99, 0.97) are labelled hypothetical.
    e_o = [0.9, 0.4, 0.1]
    generated = [[0.85, 0.38, 0.09], [0.88, 0.39, 0.11], [0.87, 0.41, 0.10]]

    def by_hand(a: list[float], b: list[float]) -> float:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))

    found = cosines(e_o, generated).tolist()
    assert found == pytest.approx([by_hand(g, e_o) for g in generated], abs=1e-12)
    assert found[0] == pytest.approx(0.926 / math.sqrt(0.98 * 0.875))
    assert cosines([1.0, 0.0], [[0.0, 2.0], [-3.0, 0.0], [0.0, 0.0]]).tolist() == [0.0, -1.0, 0.0]


def test_similarities_embed_the_questions_with_the_packaged_minilm() -> None:
    evaluator = JudgeResponseRelevancy(judge=dead_judge())
    found = evaluator.similarities(
        BOWL_Q, [BOWL_Q, "...", "What was the date of the first Super Bowl?", "Why is grass green?"]
    )
    assert found[0] == pytest.approx(1.0, abs=1e-3)
    assert found[1] == 0.0  # no word: nothing was asked
    assert found[2] > 0.7 > 0.3 > found[3]
    assert evaluator.similarities(BOWL_Q, ["", " "]) == [0.0, 0.0]


def test_sentence_statements_are_002s_statements() -> None:
    evaluator = JudgeAnswerRelevancy(judge=dead_judge())
    statements, truncated = evaluator.statements(BRAZIL_A, [])
    assert statements == [
        "The capital city of Brazil is Brasília.",
        "It replaced Rio de Janeiro as the capital in 1960.",
        "Florida is a state in the USA.",
    ]
    assert not truncated
    capped = JudgeAnswerRelevancy(judge=dead_judge(), max_statements=2)
    assert capped.statements(BRAZIL_A, []) == (statements[:2], True)
    assert evaluator.statements("no sentence end", []) == (["no sentence end"], False)
    assert evaluator.statements("It is Brasília. ?", []) == (["It is Brasília."], False)
    assert evaluator.statements(" ?! ", []) == (["?!"], False)  # nothing else is left


def test_huge_answers_are_capped() -> None:
    evaluator = JudgeAnswerRelevancy(judge=dead_judge())
    huge = record(response="Brasília is the capital. " * 200_000)  # 5 MB
    text, truncated = evaluator.field_text(huge, "response")
    assert len(text) == 20_000 and truncated
    statements, more = evaluator.statements(text, [])
    assert statements == ["Brasília is the capital."] and not more  # repeats collapse
    varied = " ".join(f"Fact number {i} is here." for i in range(100))
    statements, more = evaluator.statements(varied, [])
    assert len(statements) == 32 and more


def test_judge_statements_must_come_from_the_text() -> None:
    found = grounded_statements(
        [
            "The capital city of Brazil is Brasília.",
            " ",
            "The capital city of Brazil is Brasília.",
            "Water boils at 100 degrees Celsius at sea level.",  # the prompt's example
            42,
        ],
        BRAZIL_A,
    )
    assert found == ["The capital city of Brazil is Brasília."]


# -- construction and input ---------------------------------------------------------------------


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="statements"):
        JudgeAnswerRelevancy(statements="claims")
    with pytest.raises(ValueError, match="questions"):
        JudgeResponseRelevancy(questions=0)
    with pytest.raises(ValueError, match="question_temperature"):
        JudgeResponseRelevancy(question_temperature=5)
    with pytest.raises(ValueError, match="max_statements"):
        JudgeAnswerRelevancy(max_statements=0)
    assert JudgeAnswerRelevancy.requires == {"query", "response"}
    assert JudgeResponseRelevancy().threshold == 0.5
    assert JudgeAnswerRelevancy().threshold == 0.75


def test_prompts_have_the_variables_the_evaluators_pass() -> None:
    assert load_prompt("relevance_statement").placeholders == {"question", "statement"}
    assert load_prompt("relevance_question").placeholders == {"answer"}
    assert load_prompt("relevance_statements").placeholders == {"text"}
    rendered = load_prompt("relevance_statement").render(question="Q?", statement="S.")
    assert [m["role"] for m in rendered] == ["system", "user"]
    assert '<data name="statement">\nS.\n</data>' in rendered[-1]["content"]


@pytest.mark.parametrize("evaluator_class", [JudgeAnswerRelevancy, JudgeResponseRelevancy])
def test_blank_input_is_an_error_score_without_a_call(evaluator_class: type) -> None:
    evaluator = evaluator_class(judge=dead_judge())
    (score,) = evaluator.evaluate(record(response="   "))
    assert score.error is not None and "response" in score.error
    assert score.label == "error"


def test_unreachable_judge_is_an_error_score_labelled_with_the_outcome() -> None:
    for evaluator in (
        JudgeAnswerRelevancy(judge=dead_judge()),
        JudgeResponseRelevancy(judge=dead_judge()),
    ):
        (score,) = evaluator.evaluate(record())
        assert score.value is None and score.error is not None
        # litellm reports a refused connection as an InternalServerError ("Connection error."),
        # which the client counts as server_error; unavailable is the outcome it should be.
        assert score.label in ("unavailable", "server_error")


# -- plumbing with the real SmolLM2 judge -------------------------------------------------------


@pytest.mark.judge
def test_answer_relevancy_plumbing(smol_judge: JudgeClient) -> None:
    (score,) = JudgeAnswerRelevancy(judge=smol_judge).evaluate(record())
    assert_judge_score(score, "judge_answer_relevancy", calls=True)
    if score.error is None:
        statements = score.details["statements"]
        assert statements[0]["statement"] == "The capital city of Brazil is Brasília."
        assert len(statements) == 3 and score.details["judge_calls"] == 3
        assert all(isinstance(s["relevant"], bool) for s in statements)
        assert score.value == sum(s["relevant"] for s in statements) / 3
        assert score.details["prompts"] == ["relevance_statement@v1"]
        assert score.model == smol_judge.model_name


@pytest.mark.judge
def test_answer_relevancy_with_judge_statements(smol_judge: JudgeClient) -> None:
    evaluator = JudgeAnswerRelevancy(judge=smol_judge, statements="judge", max_statements=2)
    (score,) = evaluator.evaluate(record(query=b"capital of Brazil?", response=BRAZIL_A + "\ud800"))
    assert_judge_score(score, "judge_answer_relevancy", calls=True)
    if score.error is None:
        assert score.details["statement_source"] == "judge"
        assert 1 <= len(score.details["statements"]) <= 2
        assert "relevance_statements@v1" in score.details["prompts"]


@pytest.mark.judge
def test_response_relevancy_plumbing(smol_judge: JudgeClient) -> None:
    evaluator = JudgeResponseRelevancy(judge=smol_judge, questions=1)
    (score,) = evaluator.evaluate(record(BOWL_Q, BOWL_A))
    assert_judge_score(score, "judge_response_relevancy", calls=True)
    if score.error is None:
        (question,) = score.details["questions"]
        assert isinstance(question["question"], str) and -1.0 <= question["similarity"] <= 1.0
        assert score.value == pytest.approx(mean_similarity([question["similarity"]]), abs=1e-3)
        assert score.details["judge_calls"] == 1
        assert score.details["prompts"] == ["relevance_question@v1"]
        again = evaluator.evaluate(record(BOWL_Q, BOWL_A))[0]
        assert again.details["cached_calls"] == 1 and again.value == score.value


# -- direction with the real Qwen judge ---------------------------------------------------------


@pytest.mark.judge
def test_answer_relevancy_flags_the_off_topic_statement(qwen_judge: JudgeClient) -> None:
    (score,) = JudgeAnswerRelevancy(judge=qwen_judge).evaluate(record())
    assert score.error is None, score.error
    verdicts = [s["relevant"] for s in score.details["statements"]]
    assert verdicts[0] is True  # "The capital city of Brazil is Brasília."
    assert verdicts[2] is False  # "Florida is a state in the USA."
    assert score.value is not None and score.value < 1.0


@pytest.mark.judge
def test_response_relevancy_ranks_the_relevant_answer_higher(qwen_judge: JudgeClient) -> None:
    evaluator = JudgeResponseRelevancy(judge=qwen_judge, questions=2)
    (relevant,) = evaluator.evaluate(record(BOWL_Q, BOWL_A))
    (off_topic,) = evaluator.evaluate(record(BOWL_Q, FOOTBALL_A))
    assert relevant.error is None and off_topic.error is None
    assert relevant.value is not None and off_topic.value is not None
    assert relevant.value > 0.6
    assert relevant.value > off_topic.value + 0.2
