"""Which failure type an evaluator measures, and which labels it is compared on."""

from __future__ import annotations

import pytest

from ragtrace.evaluators._registry import BUILTIN
from ragtrace.review._agreement import FAILURE_PROPERTIES, compares, measured_failure
from ragtrace.review._items import FAILURE_TYPES


@pytest.mark.parametrize(
    "evaluator, score_name, failure",
    [
        ("faithfulness", "faithfulness", "hallucination"),
        ("hallucination", "hallucination", "hallucination"),
        ("judge_faithfulness", "faithfulness", "hallucination"),
        ("my_checks", "groundedness", "hallucination"),
        ("pii_leakage", "pii_leakage.email", "pii"),
        ("sensitive_data", "sensitive_data", "pii"),
        ("judge_contact_leakage", "contact_leakage", "pii"),
        ("toxicity", "toxicity", "unsafe"),
        ("judge_self_harm", "self_harm", "unsafe"),
        ("context_relevance", "context_relevance", "irrelevant_retrieval"),
        ("judge_context_relevancy", "context_relevancy", "irrelevant_retrieval"),
        ("context_recall", "context_recall", "missing_context"),
        ("answer_relevance", "answer_relevance", None),
        ("looping", "looping.unique_sentences", None),
        ("faithfulness_lookalike", "faithfulnessish", None),
    ],
)
def test_the_failure_an_evaluator_measures(
    evaluator: str, score_name: str, failure: str | None
) -> None:
    assert measured_failure(evaluator, score_name) == failure


def test_every_named_failure_is_a_label_failure_type_and_has_a_builtin_evaluator() -> None:
    assert set(FAILURE_PROPERTIES) == set(FAILURE_TYPES) - {"other"}
    for failure in FAILURE_PROPERTIES:
        assert any(measured_failure(name, name) == failure for name in BUILTIN), failure


@pytest.mark.parametrize(
    "verdict, failure, evaluator, expected",
    [
        ("good", None, "faithfulness", True),
        ("good", "pii", "faithfulness", True),  # a failure type on a good label means nothing
        ("bad", None, "faithfulness", True),
        ("bad", "hallucination", "faithfulness", True),
        ("bad", "pii", "faithfulness", False),
        ("bad", "pii", "pii_leakage", True),
        ("bad", "other", "faithfulness", False),
        ("bad", "other", "answer_relevance", True),
        ("bad", "hallucination", "answer_relevance", False),
        ("unsure", None, "faithfulness", False),
    ],
)
def test_which_labels_an_evaluator_is_compared_on(
    verdict: str, failure: str | None, evaluator: str, expected: bool
) -> None:
    assert compares(verdict, failure, evaluator, evaluator) is expected
