"""The DeepEval guide's example test cases through ``ragtrace.evaluate``, as its users would write
them (``input``, ``actual_output``, ``expected_output``, ``retrieval_context``): once with the
local evaluators, once with the LLM-judge ones on the real local llama.cpp judge.

The guide's own values came from gpt-4o; ours come from small local models, so they are printed
beside the guide's, never asserted to equal them; the table docs/testing.md shows is this test's
output (``-s`` prints it), asserted equal. Also asserted: every metric scores every case (a
value in [0, 1], no error), and the printout has a pass/fail mark, score, threshold and reason
per metric and case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import ragtrace
from ragtrace._judges import JudgeClient, LocalJudgeServer
from ragtrace._model import Score
from tests.printed_figures import block_in

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
WHAT_IS_AI = "What is AI?"
AI = (
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles. It's evolving rapidly with advancements in machine learning and "
    "deep learning."
)
NLP = (
    "NLP is a branch of AI that enables computers to understand, interpret, and generate human "
    "language. Techniques include tokenization, stemming, and sentiment analysis. Applications "
    "range from chatbots to language translation services."
)
ML = (
    "Machine learning is a field of artificial intelligence focused on enabling systems to learn "
    "patterns from data. Algorithms analyze past data to make predictions or classify "
    "information. Popular applications include recommendation systems and image recognition."
)
EXPECTED = (
    "AI, also known as Artificial Intelligence, is used to build complex systems for "
    "applications like virtual assistants, robotics, and autonomous vehicles."
)
ANSWER = (
    "AI refers to machines mimicking human intelligence, such as problem-solving and learning, "
    "and includes applications like virtual assistants, robotics, and autonomous vehicles."
)
GEVAL_STEPS = [
    "Create a list of statements from 'actual output'",
    "Validate if they are relevant and answers the given question in 'input', penalize if any "
    "statements are irrelevant",
    "Also Validate if they exist in 'expected output', penalize if any statements are missing "
    "or factually wrong",
    "Also validate if these statements are grounded in the 'retrieval context' and penalize if "
    "they are missing or factually wrong",
    "Finally also penalize if any statements seem to be invented or made up and do not make "
    "sense factually given the 'input' and 'retrieval context'",
]


@dataclass(frozen=True)
class Example:
    """One worked example of the guide: its case, its metric and value, and ours."""

    metric: str
    seed_value: float
    case: dict[str, Any]
    local: tuple[str, ...]  # score names of the local evaluators (evaluator: before the dot)
    judge: tuple[str, ...]
    judge_options: dict[str, dict[str, Any]] = field(default_factory=dict)


EXAMPLES = [
    Example(
        "Contextual Precision", 0.5833,
        {"id": "contextual-precision", "input": WHAT_IS_AI, "expected_output": EXPECTED,
         "retrieval_context": [
             "Machine Learning is the study of algorithms which learn with more data.",
             "AI is known as Artificial Intelligence.", AI, NLP, ML]},
        ("context_precision",), ("judge_context_precision",),
    ),
    Example(
        "Contextual Recall", 0.5,
        {"id": "contextual-recall", "input": WHAT_IS_AI, "expected_output": EXPECTED,
         "retrieval_context": ["NVIDIA makes chips for AI.",
                               "AI is an acronym for Artificial Intelligence."]},
        ("context_recall",), ("judge_context_recall",),
    ),
    Example(
        "Contextual Relevancy", 0.8182,
        {"id": "contextual-relevancy", "input": WHAT_IS_AI,
         "retrieval_context": [
             "NVIDIA makes chips for AI.",
             "Google and Microsoft are battling out the market share for AI Chatbots.",
             AI, NLP, ML]},
        ("context_relevance.precision",), ("judge_context_relevancy",),
    ),
    Example(
        "Answer Relevancy (LLM)", 1.0,
        {"id": "answer-relevancy", "input": WHAT_IS_AI,
         "actual_output": "AI refers to machines mimicking human intelligence, such as "
         "problem-solving and learning. AI includes applications like virtual assistants, "
         "robotics, and autonomous vehicles."},
        ("answer_relevance",), ("judge_answer_relevancy",),
    ),
    Example(
        "Answer Relevancy (similarity)", 0.9207,
        {"id": "answer-relevancy-similarity", "input": WHAT_IS_AI, "actual_output": ANSWER},
        ("answer_relevance_similarity",), ("judge_response_relevancy",),
    ),
    Example(
        "Faithfulness", 1.0,
        {"id": "faithfulness", "input": WHAT_IS_AI,
         "actual_output": "AI refers to machines mimicking human intelligence, including "
         "problem-solving and learning. AI has applications like virtual assistants, robotics, "
         "and autonomous vehicles.",
         "retrieval_context": [AI, NLP, ML]},
        ("faithfulness",), ("judge_faithfulness",),
    ),
    Example(
        "Hallucination (lower is better)", 0.0,
        {"id": "hallucination", "input": WHAT_IS_AI, "actual_output": ANSWER,
         "retrieval_context": [AI.rsplit(" It's", 1)[0], ML]},
        ("hallucination",), ("judge_hallucination.contradicted_contexts",),
    ),
    Example(
        "RAG Fact Checker (GEval)", 0.5326,
        {"id": "geval", "input": WHAT_IS_AI,
         "actual_output": "AI refers to machines mimicking human intelligence, such as "
         "problem-solving and learning, and includes applications like electric sheep and "
         "cyborg kittens",
         "retrieval_context": [AI]},
        (), ("rag_fact_checker",),
        {"rag_fact_checker": {"name": "rag_fact_checker", "evaluation_steps": GEVAL_STEPS,
                              "fields": ["question", "answer", "context"], "threshold": 0.5}},
    ),
]  # fmt: skip


def evaluator_specs(names: Sequence[str], example: Example, judge: JudgeClient | None) -> list[Any]:
    """The evaluators behind score names (a judge client given to the judge ones)."""
    specs: list[Any] = []
    for name in names:
        options = dict(example.judge_options.get(name, {}))
        evaluator = name.split(".")[0]
        if name in example.judge_options:
            evaluator = "judge_geval"
        if judge is not None:
            options["judge"] = judge
        specs.append((evaluator, options))
    return specs


def run_example(
    example: Example, names: Sequence[str], judge: JudgeClient | None, out: Path
) -> dict[str, Score]:
    """Evaluate the example's case; its scores by name. The printout is checked here."""
    with out.open("w", encoding="utf-8") as printout:
        result = ragtrace.evaluate(
            [example.case], evaluator_specs(names, example, judge), progress=False, file=printout
        )
    text = out.read_text(encoding="utf-8")
    case = result.cases[0]
    assert case.skipped == ()
    scores = {s.name: s for s in case.scores}
    for name in names:
        score = scores[name]
        assert score.error is None, (name, score.error)
        assert score.value is not None and 0.0 <= score.value <= 1.0
        mark = "\u2705" if score.passed else "\u274c"
        assert f"  - {mark} {name} (score: {round(score.value, 4)!r}, threshold: " in text
    assert f"For test case {example.case['id']}:" in text
    return scores


def table(rows: list[tuple[str, ...]]) -> str:
    header = ("example (seed metric)", "seed value", "local evaluator", "value", "verdict")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def rows_of(
    example: Example, scores: dict[str, Score], names: Sequence[str]
) -> list[tuple[str, ...]]:
    return [
        (example.metric, f"{example.seed_value:g}", f"`{name}`",
         f"{scores[name].value:.4f}", "pass" if scores[name].passed else "fail")
        for name in names
    ]  # fmt: skip


def test_the_seed_cases_with_the_local_evaluators(tmp_path: Path):
    rows: list[tuple[str, ...]] = []
    for example in EXAMPLES:
        if example.local:
            scores = run_example(example, example.local, None, tmp_path / "printout.txt")
            rows += rows_of(example, scores, example.local)
    assert len(rows) == 7
    print("\n" + table(rows))
    assert block_in(table(rows), DOC.read_text(encoding="utf-8")), "docs/testing.md shows others"


@pytest.mark.judge
@pytest.mark.integration
def test_the_seed_cases_with_the_local_judge(qwen_server: LocalJudgeServer, tmp_path: Path):
    judge = JudgeClient(
        qwen_server.model_name,
        api_base=qwen_server.api_base,
        cache=tmp_path / "judge_cache.sqlite",
        timeout_s=120,
    )
    rows: list[tuple[str, ...]] = []
    for example in EXAMPLES:
        scores = run_example(example, example.judge, judge, tmp_path / "printout.txt")
        rows += rows_of(example, scores, example.judge)
    assert len(rows) == 8
    shown = table(rows).replace("local evaluator", "judge evaluator (Qwen2.5-0.5B)")
    print("\n" + shown)
    assert block_in(shown, DOC.read_text(encoding="utf-8")), "docs/testing.md shows others"
