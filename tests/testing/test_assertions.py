"""``assert_scores``, ``ask`` and the data-set helpers, called as a test would call them.

The app under test is the demo's real LangChain chain (``ragtrace.demo.systems``); the
evaluators are real (lexical ones, and the packaged local models for faithfulness).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace._model import RagRecord
from ragtrace._offline.answers import AnswerError
from ragtrace._offline.callables import SystemSpecError
from ragtrace._offline.cases import CaseError
from ragtrace._offline.metrics_summary import one_line
from ragtrace.evaluators import evaluator
from ragtrace.testing import (
    ScoresAssertionError,
    ask,
    assert_scores,
    load_cases,
    parametrize_cases,
)
from ragtrace.testing._assertions import TEXT_CHARS
from tests.testing.conftest import write_cases

CONTEXT = (
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles."
)
LOOP = "Please ask again. Please ask again. Please ask again. Please ask again."
LONG_LOOP = " ".join(["Please ask again."] * 8)  # long enough for all three looping checks


def test_a_passing_case_returns_its_scores():
    scored = assert_scores(
        {"id": "ok", "input": "How long?", "actual_output": "30 days."}, "looping"
    )
    assert scored.id == "ok" and scored.passed
    assert scored.score("looping.unique_sentences").value == 1.0


def test_a_failing_case_raises_an_assertion_error_naming_score_value_threshold_and_reason():
    case = {"id": "loop", "input": "How long is the refund window?", "actual_output": LONG_LOOP}
    with pytest.raises(AssertionError) as caught:
        assert_scores(case, ["looping"])
    error = caught.value
    assert isinstance(error, ScoresAssertionError)
    repeated = error.case.score("looping.longest_repeated_substring")
    compression = error.case.score("looping.compression_ratio")
    assert str(error).splitlines() == [
        "ragtrace: 3 of 3 check(s) failed for case 'loop' "
        f"(How long is the refund window? -> {one_line(LONG_LOOP, TEXT_CHARS)})",
        "  - looping.unique_sentences = 0.125 < threshold 0.75 (higher is better): "
        "1 unique of 8 sentences",
        f"  - looping.longest_repeated_substring = {repeated.value:.4} > threshold 0.75 "
        f"(lower is better): {repeated.explanation}",
        f"  - looping.compression_ratio = {compression.value:.4} < threshold 0.6 "
        f"(higher is better): {compression.explanation}",
    ]
    assert [f.name for f in error.failures] == [
        "looping.unique_sentences",
        "looping.longest_repeated_substring",
        "looping.compression_ratio",
    ]


def test_faithfulness_failures_name_the_unsupported_claim():
    answer = "AI includes applications like electric sheep and cyborg kittens."
    case = {"id": "kittens", "input": "What is AI?", "retrieval_context": [CONTEXT],
            "actual_output": answer}  # fmt: skip
    with pytest.raises(ScoresAssertionError) as caught:
        assert_scores(case, ["faithfulness", "answer_relevance"])
    [line] = str(caught.value).splitlines()[1:]
    assert line.startswith("  - faithfulness = 0.")
    assert "< threshold 0.7532 (higher is better): hallucination probability" in line


def test_thresholds_given_to_the_assertion_replace_the_evaluators_own():
    case = {"id": "loop", "input": "q", "actual_output": LOOP}
    scored = assert_scores(
        case,
        "looping",
        thresholds={"looping.unique_sentences": 0.2, "looping.compression_ratio": 0.1},
    )
    assert scored.score("looping.unique_sentences").threshold == 0.2
    with pytest.raises(ScoresAssertionError, match=r"looping\.unique_sentences = 1\.0 < thres"):
        assert_scores({"input": "q", "actual_output": "Fine."}, "looping",
                      thresholds={"looping.unique_sentences": 1.5})  # fmt: skip


def test_an_evaluator_that_cannot_run_or_fails_fails_the_assertion():
    @evaluator(name="fragile", requires={"response"}, threshold=0.5)
    def fragile(record: RagRecord) -> float:
        raise RuntimeError("the model is gone")

    case = {"id": "bare", "input": "What is AI?", "actual_output": "AI is machines thinking."}
    with pytest.raises(ScoresAssertionError) as caught:
        assert_scores(case, ["faithfulness", fragile])
    assert str(caught.value).splitlines()[1:] == [
        "  - fragile: error: RuntimeError: the model is gone",
        "  - faithfulness: not scored: the case lacks chunks (retrieval_context) "
        "(evaluator faithfulness needs it)",
    ]


def test_an_evaluator_without_a_verdict_or_a_list_of_cases_is_a_usage_error():
    @evaluator(name="length", requires={"response"})
    def length(record: RagRecord) -> float:
        return min(1.0, len(record.response or "") / 100)

    with pytest.raises(ValueError, match=r"length gives no verdict .*thresholds=\{'length'"):
        assert_scores({"input": "q", "actual_output": "a"}, [length])
    assert assert_scores({"input": "q", "actual_output": "a"}, [length],
                         thresholds={"length": 0.0}).passed  # fmt: skip
    with pytest.raises(TypeError, match="assert_scores takes one case"):
        assert_scores([{"input": "q", "actual_output": "a"}], "looping")  # type: ignore[arg-type]


def test_ask_puts_the_question_to_the_demo_langchain_app_and_keeps_what_it_retrieved():
    from ragtrace.demo.systems import demo_chain

    case = {"id": "stack", "input": "How many units can I stack?",
            "expected_output": "Up to three units.", "metadata": {"topic": "hardware"}}  # fmt: skip
    record = ask(demo_chain, case)
    assert record.attributes["id"] == "stack" and record.attributes["topic"] == "hardware"
    assert record.attributes["system"] == "aurora-extractive-1"  # its model, as scores say
    assert (record.query, record.reference) == (case["input"], "Up to three units.")
    assert record.response and record.model == "aurora-extractive-1"
    assert 1 <= len(record.chunks) <= 4 and all(c.id for c in record.chunks)
    assert record.chunks[0].score is not None
    again = ask(demo_chain, case)
    assert (again.response, again.chunks) == (record.response, record.chunks)  # one system
    assert assert_scores(again, ["context_relevance"]).passed


def test_ask_takes_functions_questions_and_refuses_what_it_cannot_use():
    def app(question: str) -> dict[str, Any]:
        return {"answer": f"About {question}", "contexts": ["a passage", {"text": "another"}]}

    record = ask(app, "refunds?")
    assert (record.query, record.response) == ("refunds?", "About refunds?")
    assert [c.text for c in record.chunks] == ["a passage", "another"]
    assert record.attributes["id"] == "refunds?"
    with pytest.raises(ValueError, match="has no question"):
        ask(app, {"id": "empty", "expected_output": "x"})
    with pytest.raises(SystemSpecError, match="is not a LangChain runnable"):
        ask(42, "refunds?")
    with pytest.raises(AnswerError, match="returned int 7"):
        ask(lambda question: 7, "refunds?")


def test_cases_load_from_a_jsonl_data_set_with_their_ids(tmp_path: Path):
    path = write_cases(tmp_path / "cases.jsonl", [
        {"id": "q1", "query": "How long?", "reference": "30 days."},
        {"id": 2, "query": "Where?", "contexts": ["Here."]},
    ])  # fmt: skip
    records = load_cases(path)
    assert [(r.attributes["id"], r.query) for r in records] == [
        ("q1", "How long?"),
        ("2", "Where?"),
    ]
    mark = parametrize_cases(path, "record").mark
    assert mark.name == "parametrize" and mark.args[0] == "record"
    assert [(p.id, p.values[0]) for p in mark.args[1]] == [("q1", records[0]), ("2", records[1])]


def test_a_broken_data_set_is_an_error_naming_the_line_or_the_place_looked(tmp_path: Path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "q1", "query": "q"}\n{"id": "q1", "query": "again"}\n')
    with pytest.raises(CaseError, match=r"cases\.jsonl:2: duplicate id 'q1' \(first on line 1\)"):
        parametrize_cases(path)
    with pytest.raises(FileNotFoundError, match="relative paths are read from the current"):
        load_cases("no/such/cases.jsonl")
    (tmp_path / "blank.jsonl").write_text("\n")
    with pytest.raises(CaseError, match="no test cases in"):
        load_cases(tmp_path / "blank.jsonl")
