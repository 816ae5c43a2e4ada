"""The operational faithfulness signal: one response-level value, its verdict, and the task.

``faithfulness`` is ``1 - hallucination_probability`` and passes at 0.5; ``hallucination`` is the
probability itself; the claim ratio of the seeds stays in ``details`` (or is the value with
``scoring="claims"``). The task of a record comes from its ``ragtrace.task`` attribute, the
evaluator's ``task=``, or its shape.
"""

from __future__ import annotations

import json

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._faithfulness import Faithfulness, Hallucination
from ragtrace.evaluators._faithfulness.detector import SupportDetector
from ragtrace.evaluators._faithfulness.response import (
    SHORT_ANSWER_WORDS,
    calibration,
    infer_task,
    record_task,
    task_name,
)
from ragtrace.evaluators._registry import create

ROUTER = (
    "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
    "The reset button is on the back panel."
)
ANSWERS = (
    "The Aurora X2 router supports WPA3. The reset button is on the back panel.",
    "The Aurora X2 router supports WPA3. It costs $349 and ships with a Contoso warranty.",
    "The router was designed in Norway by 40 engineers and recalled in 2019.",
)
BUSINESS = json.dumps({"name": "Finch & Fork", "city": "Santa Barbara", "stars": 4.5})


def rec(response: str, chunks: list[str], query: str | None = "q", **attributes: str) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,
        chunks=tuple(Chunk(text=c, id=str(i)) for i, c in enumerate(chunks)),
        response=response,
        attributes=attributes,
    )


@pytest.fixture(scope="module")
def scored() -> list[tuple[object, object]]:
    records = [rec(a, [ROUTER]) for a in ANSWERS]
    faithful = create("faithfulness").evaluate_batch(records)
    hallucinated = create("hallucination").evaluate_batch(records)
    return [(f[0], h[0]) for f, h in zip(faithful, hallucinated, strict=True)]


def test_value_and_verdict_come_from_one_probability(scored) -> None:
    for f, h in scored:
        risk = f.details["hallucination_probability"]
        assert f.value == pytest.approx(1 - risk, abs=1e-4)
        assert h.value == pytest.approx(risk, abs=1e-4)
        cut = SupportDetector().verdict_threshold(f.details["calibration"])
        assert f.passed is (risk <= cut) and h.passed is (risk <= cut)
        assert h.threshold == pytest.approx(cut) and f.threshold == pytest.approx(1 - cut)
        assert f"hallucination probability {risk:.2f}" in f.explanation
        assert f"flagged above {cut:.2f}" in f.explanation
    assert [f.passed for f, _ in scored] == [True, False, False]
    # the claim ratio stays visible beside the value, and ranks the answers the same way here
    ratios = [f.details["claim_ratio"] for f, _ in scored]
    assert ratios[0] == 1.0 and ratios[2] == 0.0 and 0.0 < ratios[1] < 1.0


def test_scoring_claims_is_the_seed_ratio(scored) -> None:
    by_claims = Faithfulness(scoring="claims")
    for (f, _), answer in zip(scored, ANSWERS, strict=True):
        (ratio,) = by_claims.evaluate(rec(answer, [ROUTER]))
        assert ratio.value == pytest.approx(f.details["claim_ratio"], abs=1e-4)
        assert ratio.details["hallucination_probability"] == f.details["hallucination_probability"]
        assert ratio.details["scoring"] == "claims" and f.details["scoring"] == "response"


def test_the_verdict_threshold_is_the_tasks_unless_one_is_given() -> None:
    """The value is calibrated on one scale for every task; the verdict is each task's cut on
    it, so the same probability can pass as data-to-text and fail as a summary. A threshold
    the caller gives, or a value that is not the response model's, uses the plain cut."""
    answer = ANSWERS[1]
    by_task = {
        task: Faithfulness(task=task).evaluate(rec(answer, [ROUTER]))[0]
        for task in ("summary", "data2txt")
    }
    detector = SupportDetector()
    for task, score in by_task.items():
        assert score.threshold == pytest.approx(1 - detector.verdict_threshold(task), abs=1e-4)
        assert score.passed is (score.value >= score.threshold)
    assert by_task["summary"].threshold > by_task["data2txt"].threshold
    (given,) = Faithfulness(task="summary", threshold=0.5).evaluate(rec(answer, [ROUTER]))
    (claims,) = Faithfulness(scoring="claims").evaluate(rec(answer, [ROUTER]))
    assert given.threshold == claims.threshold == 0.5
    assert "flagged above" not in given.explanation
    assert given.passed is (given.value >= 0.5)


def test_task_from_the_record_shape() -> None:
    assert infer_task("How do I reset it?", [ROUTER]) == "qa"
    assert infer_task(None, [ROUTER]) == "summary"
    assert infer_task("  ", [ROUTER]) == "summary"
    assert infer_task("Summarize the following news article.", [ROUTER]) == "summary"
    assert infer_task("Write an overview", [BUSINESS]) == "data2txt"
    assert infer_task("q", ["[1, 2]", ROUTER]) == "data2txt"
    assert infer_task("q", ["{not json}"]) == "qa"


def test_task_given_by_attribute_or_option_wins() -> None:
    assert task_name("Data2txt") == task_name("data-to-text") == "data2txt"
    assert task_name("QA") == "qa" and task_name("poetry") is None and task_name(3) is None
    assert record_task("q", [ROUTER], {"ragtrace.task": "Summary"}, "data2txt") == "summary"
    assert record_task("q", [ROUTER], {"ragtrace.task": "??"}, "data2txt") == "data2txt"
    assert record_task("q", [ROUTER], {}, None) == "qa"
    answer = ANSWERS[1]
    (inferred,) = Faithfulness().evaluate(rec(answer, [ROUTER]))
    (attribute,) = Faithfulness().evaluate(rec(answer, [ROUTER], **{"ragtrace.task": "summary"}))
    (option,) = Faithfulness(task="summary").evaluate(rec(answer, [ROUTER]))
    assert inferred.details["task"] == "qa"
    assert attribute.details["task"] == option.details["task"] == "summary"
    # another task, another calibration of the same claims
    assert attribute.value == option.value != inferred.value


def test_short_answers_to_questions_get_their_own_calibration() -> None:
    short = " ".join(["word"] * SHORT_ANSWER_WORDS)
    assert calibration("qa", "In 1967.") == calibration("qa", short) == "short_qa"
    assert calibration("qa", short + " more") == "qa"
    assert calibration("qa", None) == calibration("qa", "") == "short_qa"
    assert calibration("qa", "word\u00a0" * 2_000_000) == "qa"  # MBs: counted up to 31 only
    assert calibration("summary", "Short.") == "summary"
    assert calibration("data2txt", "Short.") == "data2txt"
    answer = "The Aurora X2 router supports WPA3 and costs $349."
    long_answer = f"{answer} " * 6
    (brief,) = Faithfulness().evaluate(rec(answer, [ROUTER]))
    (paragraph,) = Faithfulness().evaluate(rec(long_answer, [ROUTER]))
    (summary,) = Faithfulness(task="summary").evaluate(rec(answer, [ROUTER]))
    assert (brief.details["task"], brief.details["calibration"]) == ("qa", "short_qa")
    assert (paragraph.details["task"], paragraph.details["calibration"]) == ("qa", "qa")
    assert summary.details["calibration"] == "summary"
    # the same claims read by the QA pair and by the short-answer pair
    qa_only = Faithfulness()
    qa_only._detector.task_models.pop("short_qa")
    (as_paragraph,) = qa_only.evaluate(rec(answer, [ROUTER]))
    assert as_paragraph.details["calibration"] == "short_qa"  # asked for, fell back to qa
    assert as_paragraph.value != brief.value


@pytest.mark.parametrize("embedding_model", [None, "wordllama"])
def test_an_answer_copied_from_its_passage_passes(embedding_model: str | None) -> None:
    """A one-sentence answer copied from its passage is as supported as an answer gets; the
    short-answer pair once flagged every one (``make demo`` passed 30% of its extractive
    answers). The same sentence with a word changed or a price added is still flagged."""
    evaluator = Faithfulness(embedding_model=embedding_model)
    copied = ["The reset button is on the back panel.", "The Aurora X2 router supports WPA3."]
    wrong = [
        "The reset button is on the front panel.",
        "The reset button is on the back panel and costs $349.",
        "It costs $349 and ships with a Contoso warranty.",
    ]
    records = [rec(a, [ROUTER], query="Where is the reset button?") for a in copied + wrong]
    scores = [s[0] for s in evaluator.evaluate_batch(records)]
    assert {s.details["calibration"] for s in scores} == {"short_qa"}
    assert [s.passed for s in scores] == [True] * len(copied) + [False] * len(wrong)
    assert min(s.value for s in scores[: len(copied)]) > 0.8 > max(s.value for s in scores[2:])


@pytest.mark.parametrize(
    "options, message",
    [({"task": "poetry"}, "task must be one of"), ({"scoring": "mean"}, "scoring must be one of")],
)
def test_bad_options_fail_at_construction(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Hallucination(**options)
