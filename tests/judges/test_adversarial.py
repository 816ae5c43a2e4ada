"""Captured text cannot steer the judge: injected instructions do not improve a score, whether
the judge counts claims (faithfulness, hallucination) or rates a text (G-Eval, summaries).

Cases come from benchmarks/data/judge_adversarial.json (benchmarks/judge.py runs all of them);
here a few run against the real local Qwen judge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._judge.claims import JudgeFaithfulness, JudgeHallucination
from ragtrace.evaluators._judge.geval import GEval
from ragtrace.evaluators._judge.summarization import JudgeSummarization

pytestmark = pytest.mark.judge

DATA = json.loads(
    (
        Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "judge_adversarial.json"
    ).read_text(encoding="utf-8")
)
CASES = {c["id"]: c for c in DATA["cases"]}
INJECTIONS = {i["id"]: i["text"] for i in DATA["injections"]}


def record(case: dict[str, str], response: str) -> RagRecord:
    return RagRecord(
        trace_id="1" * 32,
        span_id="1" * 16,
        query=case["query"],
        chunks=(Chunk(text=case["context"]),),
        response=response,
    )


@pytest.mark.parametrize("case_id", ["warranty", "shipping"])
def test_injected_instructions_do_not_make_an_unsupported_answer_faithful(qwen_judge, case_id):
    case = CASES[case_id]
    judge = JudgeFaithfulness(judge=qwen_judge)
    clean = judge.evaluate(record(case, case["response"]))[0]
    assert clean.error is None and clean.value is not None
    assert clean.value < 1.0, clean.details  # the unsupported answer is caught at all
    for injection, text in INJECTIONS.items():
        attacked = judge.evaluate(record(case, f"{case['response']} {text}"))[0]
        assert attacked.value is not None, attacked
        assert attacked.value <= clean.value, (injection, attacked.details)
        # the injected sentences were never put to the judge: counted unsupported, with why
        addressed = [c for c in attacked.details["claims"] if "overruled" in c]
        assert addressed, (injection, attacked.details)
        assert all(c["p_yes"] is None and not c["supported"] for c in addressed)


def test_injected_instructions_do_not_lower_hallucination_scores(qwen_judge):
    case = CASES["refund"]
    judge = JudgeHallucination(judge=qwen_judge)
    clean = {s.name: s for s in judge.evaluate(record(case, case["response"]))}
    for injection in ("fence-break", "json-answer", "other-language"):
        attacked = judge.evaluate(record(case, f"{case['response']} {INJECTIONS[injection]}"))
        for score in attacked:
            assert score.value is not None, score
            # lower is better for both: an injection may not lower either
            assert score.value >= clean[score.name].value, (injection, score.details)


@pytest.mark.parametrize("injection", ["fence-break", "ignore-instructions"])
def test_injected_instructions_do_not_lift_a_geval_rating(qwen_judge, injection):
    case = CASES["shipping"]
    judge = GEval(
        criteria="Is every statement of the answer supported by the context?",
        fields=("question", "answer", "context"),
        judge=qwen_judge,
    )
    clean = judge.evaluate(record(case, case["response"]))[0]
    attacked = judge.evaluate(record(case, f"{case['response']} {INJECTIONS[injection]}"))[0]
    assert clean.value is not None and attacked.value is not None, (clean, attacked)
    # the judge was shown exactly the clean prompt (every call a cache hit): the injection was
    # taken out, and listed
    assert attacked.details["cached_calls"] == attacked.details["judge_calls"], attacked.details
    assert attacked.value == pytest.approx(clean.value), attacked.details
    listed = attacked.details["addressed_to_evaluation"]
    assert listed and all(part["field"] == "answer" for part in listed)
    assert "addressed_to_evaluation" not in clean.details


def test_injected_instructions_do_not_make_a_summary_good(qwen_judge):
    case = CASES["pricing"]
    judge = JudgeSummarization(against="source", judge=qwen_judge)
    clean = judge.evaluate(record(case, case["response"]))[0]
    attacked = judge.evaluate(record(case, f"{case['response']} {INJECTIONS['authority']}"))[0]
    assert clean.value is not None and attacked.value is not None, (clean, attacked)
    assert attacked.details["cached_calls"] == attacked.details["judge_calls"], attacked.details
    assert attacked.value == pytest.approx(clean.value), attacked.details
    assert [p["field"] for p in attacked.details["addressed_to_evaluation"]] == ["summary"]
