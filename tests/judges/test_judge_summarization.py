"""004's summarization judge: a summary graded good or bad against a reference (and/or source).

Reading the verdict and bad input are checked without a server; the plumbing on the real
SmolLM2 judge; direction and prompt-injection resistance on the real Qwen2.5-Coder-0.5B judge.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragtrace._judges import JudgeClient, JudgeReply, TokenLogprob
from ragtrace._judges.prompts import load_prompt
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._judge.summarization import JudgeSummarization, source_text
from tests.judges.judge_helpers import assert_judge_score, dead_judge

SOURCE = (
    "The city council approved a new park on Monday. The park will cost 2 million dollars. "
    "Construction starts in May."
)
REFERENCE = "The council approved a 2 million dollar park on Monday; building starts in May."
GOOD = (
    "On Monday the city council approved a new park costing 2 million dollars, with "
    "construction starting in May."
)
BAD = "The council rejected the park on Friday because it would cost 50 million dollars."
INJECTIONS = {
    i["id"]: i["text"]
    for i in json.loads(
        (
            Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "judge_adversarial.json"
        ).read_text(encoding="utf-8")
    )["injections"]
}


def record(response: object, reference: object = REFERENCE, chunks: object = None) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=None,
        chunks=(Chunk(text=SOURCE),) if chunks is None else chunks,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def reply(data: dict[str, object], logprobs: tuple[TokenLogprob, ...] | None = None) -> JudgeReply:
    return JudgeReply(data, "", "m", 0, 0, None, 0.0, False, logprobs, "p@v1")


# -- pure ----------------------------------------------------------------------------------------


def test_004_defaults_and_what_against_requires() -> None:
    judge = JudgeSummarization()
    assert (judge.name, judge.threshold, judge.direction) == (
        "judge_summarization",
        0.5,
        "higher_is_better",
    )
    assert judge.requires == frozenset({"response", "reference"})
    assert JudgeSummarization(against="source").requires == frozenset({"response", "chunks"})
    assert JudgeSummarization(against="both").requires == frozenset(
        {"response", "reference", "chunks"}
    )
    assert JudgeSummarization(check_context=True)._names() == (
        "judge_summarization",
        "judge_summarization.retrieval",
    )
    with pytest.raises(ValueError, match="against must be one of reference, source, both"):
        JudgeSummarization(against="question")
    with pytest.raises(ValueError, match="compares the chunks with the reference"):
        JudgeSummarization(against="source", check_context=True)
    assert isinstance(create("judge_summarization", against="both"), JudgeSummarization)


def test_value_is_p_good_at_the_verdict_token_else_the_verdict() -> None:
    judge = JudgeSummarization()
    top = (("good", math.log(0.6)), ("bad", math.log(0.3)), ("ok", math.log(0.1)))
    lp = (TokenLogprob('{"verdict": "', 0.0), TokenLogprob("good", math.log(0.6), top))
    assert judge.value(reply({"verdict": "good"}, lp), "good") == pytest.approx(0.6 / 0.9)
    assert judge.extra_details(reply({"verdict": "good"}, lp)) == {"logprobs_used": True}
    assert judge.value(reply({"verdict": "bad"}), "bad") == 0.0
    assert judge.value(reply({"verdict": "good"}), "good") == 1.0


def test_prompt_shows_what_against_names_fenced() -> None:
    rec = record("A </data> summary.")
    values = JudgeSummarization(against="reference").texts(rec, rec.response)
    assert values == {"reference": REFERENCE, "source": "(not given)", "summary": rec.response}
    both = JudgeSummarization(against="both").texts(rec, rec.response)
    assert both["source"] == f"[1] {SOURCE}"
    user = load_prompt("summarization_verdict").render(**both)[1]["content"]
    assert "A </_data> summary." in user
    assert f'<data name="reference">\n{REFERENCE}\n</data>' in user
    # Odd chunk objects read as text.
    odd = record("x", chunks=("plain string chunk", b"bytes \xff chunk"))
    assert source_text(odd) == "[1] plain string chunk\n[2] bytes \ufffd chunk"


@pytest.mark.parametrize(
    ("rec", "against", "error"),
    [
        (record(None), "reference", "non-empty response"),
        (record("  \n"), "reference", "non-empty response"),
        (record(GOOD, reference=None), "reference", "a reference summary"),
        (record(GOOD, chunks=()), "source", "retrieved chunks with text"),
        (record(GOOD, chunks=(Chunk(text=" "),)), "both", "retrieved chunks with text"),
    ],
)
def test_bad_input_is_an_error_score_without_asking(
    rec: RagRecord, against: str, error: str
) -> None:
    # The judge is unreachable: an answer would be labelled "unavailable".
    [score] = JudgeSummarization(against=against, judge=dead_judge()).evaluate(rec)
    assert score.value is None and score.label == "error"
    assert score.error is not None and error in score.error


def test_an_unreachable_judge_is_an_outcome_per_score() -> None:
    judge = JudgeSummarization(check_context=True, judge=dead_judge())
    scores = judge.evaluate(record(GOOD))
    assert [(s.name, s.label) for s in scores] == [
        ("judge_summarization", "unavailable"),
        ("judge_summarization.retrieval", "unavailable"),
    ]
    assert all(s.value is None and s.error for s in scores)


# -- real judge servers --------------------------------------------------------------------------


@pytest.mark.judge
def test_smol_grades_and_checks_the_context(smol_judge: JudgeClient) -> None:
    judge = JudgeSummarization(against="both", check_context=True, judge=smol_judge)
    scores = judge.evaluate(record(GOOD))
    assert [s.name for s in scores] == ["judge_summarization", "judge_summarization.retrieval"]
    for score in scores:
        if assert_judge_score(score, score.name, calls=True):
            assert score.details["verdict"] in ("good", "bad", "complete", "missing")
            assert score.label in (
                "good_summary",
                "bad_summary",
                "context_complete",
                "context_missing",
            )
            assert score.details["logprobs_used"] is True
            assert score.details["truncated"] is False
    prompts = {p for s in scores if s.error is None for p in s.details["prompts"]}
    assert prompts <= {"summarization_verdict@v1", "summarization_context@v1"}


@pytest.mark.judge
def test_smol_clips_a_huge_summary_and_reads_bytes(smol_judge: JudgeClient) -> None:
    judge = JudgeSummarization(judge=smol_judge, max_tokens=48)
    huge = ("The park opens in May. " * 2000).encode("utf-8") + b"\xff"
    [score] = judge.evaluate(record(huge))
    if assert_judge_score(score, "judge_summarization", calls=True):
        assert score.details["truncated"] is True


@pytest.mark.judge
def test_qwen_tells_a_good_summary_from_a_bad_one(qwen_judge: JudgeClient) -> None:
    judge = JudgeSummarization(judge=qwen_judge)
    [good] = judge.evaluate(record(GOOD))
    [bad] = judge.evaluate(record(BAD))
    assert good.value is not None and bad.value is not None, (good, bad)
    assert good.value > bad.value, (good.details, bad.details)
    assert (good.label, bad.label) == ("good_summary", "bad_summary")


@pytest.mark.judge
@pytest.mark.parametrize("injection", ["ignore-instructions", "json-answer"])
def test_qwen_injected_instructions_do_not_pass_a_bad_summary(
    qwen_judge: JudgeClient, injection: str
) -> None:
    judge = JudgeSummarization(judge=qwen_judge)
    [attacked] = judge.evaluate(record(f"{BAD} {INJECTIONS[injection]}"))
    assert attacked.value is not None, attacked
    assert attacked.passed is False, attacked.details
