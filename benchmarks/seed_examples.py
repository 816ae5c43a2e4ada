"""Every worked example of the seed documents, run through ragtrace's evaluators.

    .venv/bin/python benchmarks/seed_examples.py            # print the table
    .venv/bin/python benchmarks/seed_examples.py --write    # and write docs/seed_examples.md

The seeds define the metrics ragtrace implements; 002 and 003 work examples through by hand,
004 gives constraint lists for Tokens Presence (000/001 give formulas only). For each example,
each reading
of ours: the evaluator and its options, the value it gives, and whether it is the seed's (within
0.005 of the seed's rounding). Where it is not, ``why`` says why, and the difference is on
purpose (a local model in place of the seeds' LLM, a definition that differs) or a known limit.
Examples whose verdicts the seeds have an LLM judge give (relevance of a statement, contradiction
of a context) are computed from the seed's own verdicts by our formula; the judges' verdicts are
measured in docs/judges.md. ``tests/evaluators/test_seed_examples.py`` runs every row and checks
it against docs/seed_examples.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "seed_examples.md"
START, END = "<!-- seed-examples:start -->", "<!-- seed-examples:end -->"
TOLERANCE = 0.005

SUPER_BOWL_CONTEXT = (
    "The First AFL\u2013NFL World Championship Game, later known as Super Bowl I, was played on "
    "January 15, 1967, at the Los Angeles Memorial Coliseum."
)
MONA_LISA_CHUNK = (
    "The Mona Lisa is a famous portrait painted by Leonardo da Vinci. It is believed to have "
    "been started in the early 1500s. Some art historians date its completion to around 1519, "
    "placing it firmly in the 15th century according to certain periodizations."
)
AI_CONTEXT = [
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles. It's evolving rapidly with advancements in machine learning and "
    "deep learning.",
    "NLP is a branch of AI that enables computers to understand, interpret, and generate human "
    "language. Techniques include tokenization, stemming, and sentiment analysis. Applications "
    "range from chatbots to language translation services.",
    "Machine learning is a field of artificial intelligence focused on enabling systems to "
    "learn patterns from data. Algorithms analyze past data to make predictions or classify "
    "information. Popular applications include recommendation systems and image recognition.",
]


@dataclass(frozen=True)
class Reading:
    """One way ragtrace computes the example: an evaluator, or a formula on seed verdicts.

    Attributes:
        label: How the table names it (evaluator and options).
        compute: Returns our value for the example.
        why: Empty when our value is the seed's; else why it is not.
    """

    label: str
    compute: Callable[[], float]
    why: str = ""
    judge: bool = False
    """Computed by the packaged local LLM judge (tests mark it ``judge``)."""


@dataclass(frozen=True)
class SeedExample:
    """A worked example of a seed and the seed's value."""

    key: str
    seed: str
    metric: str
    example: str
    seed_value: float
    readings: tuple[Reading, ...] = field(default=())


def record(
    query: str | None = None,
    contexts: list[str] | None = None,
    response: str | None = None,
    reference: str | None = None,
) -> Any:
    from ragtrace._model import Chunk, RagRecord

    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,
        chunks=tuple(Chunk(text) for text in contexts or ()),
        response=response,
        reference=reference,
    )


def value_of(name: str, rec: Any, score: str | None = None, **options: Any) -> Callable[[], float]:
    """A reading: evaluator ``name`` with ``options`` on ``rec``, the Score named ``score``."""

    def compute() -> float:
        from ragtrace.evaluators import create

        wanted = score or name
        (found,) = [s for s in create(name, **options).evaluate(rec) if s.name == wanted]
        if found.value is None:
            raise RuntimeError(f"{wanted}: {found.error}")
        return float(found.value)

    return compute


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
# 004's Tokens Presence constraint lists, as the catalogue writes them.
EXAMPLE_1: list[Any] = [
    "15,969",
    "REGEXP:[Mm]illion",
    "REGEXP:^15,969 [Mm]illion$",
    ["either", "or"],
]
EXAMPLE_2: list[Any] = [["either", "or", "REGEXP:[Mm]illion"]]


def geval(rec: Any) -> Callable[[], float]:
    """A reading: 003's RAG Fact Checker, the seed's steps on ``judge_geval`` with the default
    (packaged, local) judge."""

    def compute() -> float:
        from ragtrace.evaluators import create

        evaluator = create(
            "judge_geval", name="rag_fact_checker", evaluation_steps=GEVAL_STEPS,
            fields=["question", "answer", "context"], threshold=0.5,
        )  # fmt: skip
        (found,) = evaluator.evaluate(rec)
        if found.value is None:
            raise RuntimeError(f"rag_fact_checker: {found.error}")
        return float(found.value)

    return compute


def tokens(constraints: list[Any], answer: str) -> Callable[[], float]:
    """A reading: ``tokens_presence`` with the constraints on the answer alone."""
    return value_of(
        "tokens_presence", record(None, None, answer), score="tokens_presence.answer",
        constraints=constraints, targets=["answer"],
    )  # fmt: skip


def formula(compute: Callable[[], float]) -> Callable[[], float]:
    return compute


def examples() -> list[SeedExample]:
    """The worked examples of 002, 003 and 004, in the order the seeds give them."""
    from ragtrace.evaluators._judge.statements import relevant_share
    from ragtrace.evaluators._retrieval_quality import rank_weighted_precision, unranked_precision

    bowl = record(
        "When was the first Super Bowl held?",
        [SUPER_BOWL_CONTEXT],
        "The first Super Bowl was held on January 15, 1967, in Florida.",
    )
    brazil = record(
        "What is the capital of Brazil?",
        ["Brazil is a country in South America. Its capital is Brasília."],
        "The capital of Brazil is Florida.",
    )
    mona = record(
        "Who painted the Mona Lisa and in what century was it painted?",
        [MONA_LISA_CHUNK],
        "Leonardo da Vinci painted the Mona Lisa, and it was painted in the 15th century.",
        "Leonardo da Vinci painted the Mona Lisa in the 16th century.",
    )
    bronte = record(
        "Who wrote the novel 'Pride and Prejudice'?",
        [
            "Jane Austen published 'Pride and Prejudice' in 1813, a classic romance novel.",
            "Charlotte Brontë, a renowned author, is best known for her novel 'Jane Eyre,' "
            "published in 1847.",
        ],
        "Charlotte Brontë wrote 'Pride and Prejudice,' and she is famous for 'Jane Eyre.'",
        "Jane Austen wrote 'Pride and Prejudice.'",
    )
    recall = record(
        "What is AI?",
        ["NVIDIA makes chips for AI.", "AI is an acronym for Artificial Intelligence."],
        None,
        "AI, also known as Artificial Intelligence, is used to build complex systems for "
        "applications like virtual assistants, robotics, and autonomous vehicles.",
    )
    ai_claims = record(
        "What is AI?",
        AI_CONTEXT,
        "AI refers to machines mimicking human intelligence, including problem-solving and "
        "learning. AI has applications like virtual assistants, robotics, and autonomous "
        "vehicles.",
    )
    sentence = "the claims are sentences and the detector supports the whole one (0.51)"
    return [
        SeedExample(
            "002-faithfulness", "002", "Faithfulness",
            "Super Bowl: January 15, 1967 (supported), Florida (contradicted)", 0.5,
            (
                Reading("faithfulness scoring=claims",
                        value_of("faithfulness", bowl, scoring="claims")),
                Reading("faithfulness scoring=claims splitter=sentences", value_of(
                    "faithfulness", bowl, scoring="claims", splitter="sentences"),
                    f"one claim: {sentence}"),
                Reading("faithfulness (default: a probability)", value_of("faithfulness", bowl),
                        "the default value is the probability that no claim is unsupported, "
                        "not the seeds' ratio"),
            ),
        ),
        SeedExample(
            "002-faithfulness-date", "002", "Faithfulness",
            "The Super Bowl answer's date sentence alone", 1.0,
            (
                Reading("faithfulness scoring=claims", value_of("faithfulness", record(
                    bowl.query, [SUPER_BOWL_CONTEXT],
                    "The first Super Bowl was held on January 15, 1967."), scoring="claims")),
                Reading("faithfulness (default: a probability)", value_of("faithfulness", record(
                    bowl.query, [SUPER_BOWL_CONTEXT],
                    "The first Super Bowl was held on January 15, 1967.")),
                    "a one-sentence answer goes to the short-answer model, which reads the "
                    "paraphrase (held for played) as a doubt"),
            ),
        ),
        SeedExample(
            "002-hallucination", "002", "Hallucination",
            "The capital of Brazil is Florida.", 1.0,
            (
                Reading("hallucination scoring=claims",
                        value_of("hallucination", brazil, scoring="claims")),
                Reading("hallucination convention=h2o scoring=claims (H2O's direction)",
                        value_of("hallucination", brazil, scoring="claims", convention="h2o"),
                        "H2O's hallucination is a consistency score, higher is better: "
                        "1 - the seed's"),
            ),
        ),
        SeedExample(
            "002-response-relevancy-llm", "002", "Response Relevancy (LLM)",
            "Brasília answer: relevant, relevant, Florida irrelevant", 0.67,
            (Reading("judge_answer_relevancy's formula on the seed's verdicts",
                     formula(lambda: float(relevant_share([True, True, False]) or 0.0))),),
        ),
        SeedExample(
            "002-response-relevancy", "002", "Response Relevancy (string)",
            "The first Super Bowl was held on Jan 15, 1967.", 0.98,
            (Reading("answer_relevance", value_of("answer_relevance", record(
                "When was the first Super Bowl?", None,
                "The first Super Bowl was held on Jan 15, 1967.")),
                "a calibrated probability that the answer is this question's (from Ejento's "
                "reading: the answer's sentences against the question, MiniLM), not a "
                "similarity; the seed's questions generated back from the answer are "
                "judge_response_relevancy"),),
        ),
        SeedExample(
            "002-response-relevancy-counter", "002", "Response Relevancy (string)",
            "Counter-example: Football is a popular sport.", 0.15,
            (
                Reading("answer_relevance", value_of("answer_relevance", record(
                    "When was the first Super Bowl?", [SUPER_BOWL_CONTEXT],
                    "Football is a popular sport.")),
                    "caught, as the seed's low value says (it fails the 0.18 cut): with the "
                    "seed's passage the answer shares none of its words, and the value is a "
                    "probability, not the seed's mean similarity"),
                Reading("answer_relevance without the passage", value_of(
                    "answer_relevance", record(
                        "When was the first Super Bowl?", None, "Football is a popular sport.")),
                    "missed (it passes the 0.13 cut): without passages the question alone "
                    "decides, and an on-topic sentence that answers nothing (football for a "
                    "Super Bowl date) reads as relevant; judge_response_relevancy is the check "
                    "for it"),
            ),
        ),
        SeedExample(
            "002-relevant-noise", "002", "Relevant Noise Sensitivity",
            "Mona Lisa: 15th century (from a relevant chunk)", 0.5,
            (
                Reading("noise_sensitivity (relevant)", value_of(
                    "noise_sensitivity", mona, "noise_sensitivity.relevant"),
                    "the answer splits as the seed's, but the reference is one clause (no "
                    "comma) that the chunk (15th century) does not support whole, so the chunk "
                    "is judged irrelevant"),
                Reading("noise_sensitivity splitter=sentences (relevant)", value_of(
                    "noise_sensitivity", mona, "noise_sensitivity.relevant",
                    splitter="sentences"),
                    "one sentence is one claim, and the chunk is judged irrelevant as above"),
            ),
        ),
        SeedExample(
            "002-irrelevant-noise", "002", "Irrelevant Noise Sensitivity",
            "Brontë wrote Pride and Prejudice; famous for Jane Eyre", 0.5,
            (
                Reading("noise_sensitivity splitter=sentences (irrelevant)", value_of(
                    "noise_sensitivity", bronte, "noise_sensitivity.irrelevant",
                    splitter="sentences"),
                    "one sentence is one claim"),
                Reading("noise_sensitivity (irrelevant)", value_of(
                    "noise_sensitivity", bronte, "noise_sensitivity.irrelevant"),
                    "the answer splits as the seed's, but the detector reads the Brontë chunk as "
                    "supporting the reference (so it is relevant) and \"Charlotte Brontë wrote "
                    "'Pride and Prejudice'\" as correct: a swapped name reuses the source's "
                    "words"),
            ),
        ),
        SeedExample(
            "003-contextual-precision", "003", "Contextual Precision",
            "What is AI?: nodes relevant at ranks 2 and 3 of 5", 0.5833,
            (
                Reading("context_precision's formula on the seed's verdicts", formula(
                    lambda: rank_weighted_precision([False, True, True, False, False]))),
                Reading("context_precision ranked=False (Ejento's) on the same verdicts",
                        formula(lambda: unranked_precision([False, True, True, False, False])),
                        "Ejento's unranked form: 2 relevant of 5 retrieved"),
            ),
        ),
        SeedExample(
            "003-contextual-recall", "003", "Contextual Recall",
            "AI, also known as Artificial Intelligence, is used to build ...", 0.5,
            (
                Reading("context_recall", value_of("context_recall", recall)),
                Reading("context_recall splitter=sentences",
                        value_of("context_recall", recall, splitter="sentences"),
                        "one sentence is one statement, and it is not all in the context"),
            ),
        ),
        SeedExample(
            "003-contextual-relevancy", "003", "Contextual Relevancy",
            "What is AI?: 9 of 11 context statements relevant", 0.8182,
            (Reading("judge_context_relevancy's formula on the seed's verdicts",
                     formula(lambda: float(relevant_share([False, False] + [True] * 9) or 0.0))),),
        ),
        SeedExample(
            "003-answer-relevancy-llm", "003", "Answer Relevancy (LLM)",
            "What is AI?: both statements relevant", 1.0,
            (Reading("judge_answer_relevancy's formula on the seed's verdicts",
                     formula(lambda: float(relevant_share([True, True]) or 0.0))),),
        ),
        SeedExample(
            "003-answer-relevancy", "003", "Answer Relevancy (similarity)",
            "AI refers to machines mimicking human intelligence ...", 0.9207,
            (Reading("answer_relevance", value_of("answer_relevance", record(
                "What is AI?", None,
                "AI refers to machines mimicking human intelligence, such as problem-solving "
                "and learning, and includes applications like virtual assistants, robotics, "
                "and autonomous vehicles.")),
                "a calibrated probability, not a similarity; the seed's generated questions "
                "are judge_response_relevancy"),),
        ),
        SeedExample(
            "003-faithfulness", "003", "Faithfulness",
            "What is AI?: both claims truthful", 1.0,
            (
                Reading("faithfulness scoring=claims",
                        value_of("faithfulness", ai_claims, scoring="claims")),
                Reading("faithfulness scoring=claims splitter=sentences", value_of(
                    "faithfulness", ai_claims, scoring="claims", splitter="sentences")),
            ),
        ),
        SeedExample(
            "003-hallucination", "003", "Hallucination (contradicted contexts)",
            "What is AI?: no context contradicted", 0.0,
            (
                Reading("judge_hallucination's formula on the seed's verdicts",
                        formula(lambda: 0 / 2)),
                Reading("hallucination scoring=claims (unsupported claims)", value_of(
                    "hallucination", record(
                        "What is AI?", AI_CONTEXT[:1] + AI_CONTEXT[2:],
                        "AI refers to machines mimicking human intelligence, such as "
                        "problem-solving and learning, and includes applications like virtual "
                        "assistants, robotics, and autonomous vehicles."),
                    scoring="claims")),
            ),
        ),
        SeedExample(
            "003-geval", "003", "G-Eval (RAG Fact Checker)",
            "What is AI?: applications like electric sheep and cyborg kittens", 0.5326,
            (Reading("judge_geval evaluation_steps=<the seed's 5> on the local judge",
                     geval(record(
                        "What is AI?", AI_CONTEXT[:1],
                        "AI refers to machines mimicking human intelligence, such as "
                        "problem-solving and learning, and includes applications like electric "
                        "sheep and cyborg kittens")),
                     "the packaged 0.5B local judge in place of the seed's gpt-4o penalizes the "
                     "invented examples less (the same steps and form; docs/judges.md)",
                     judge=True),),
        ),
        SeedExample(
            "004-tokens-presence-1a", "004", "Tokens Presence",
            "Example #1 on \"15,969 million\": no \"either\" or \"or\"", 0.0,
            (Reading("tokens_presence constraints=<example #1>",
                     tokens(EXAMPLE_1, "15,969 million")),),
        ),
        SeedExample(
            "004-tokens-presence-1b", "004", "Tokens Presence",
            "Example #1 on \"15,969 million or so\": can never pass as written (the answer must "
            "be exactly \"15,969 million\" and contain \"either\" or \"or\")", 0.0,
            (Reading("tokens_presence constraints=<example #1>",
                     tokens(EXAMPLE_1, "15,969 million or so")),),
        ),
        SeedExample(
            "004-tokens-presence-2a", "004", "Tokens Presence",
            "Example 2 on \"15,969 million\": matches [Mm]illion", 1.0,
            (Reading("tokens_presence constraints=<example 2>",
                     tokens(EXAMPLE_2, "15,969 million")),),
        ),
        SeedExample(
            "004-tokens-presence-2b", "004", "Tokens Presence",
            "Example 2 on \"About sixteen thousand\": none of the three", 0.0,
            (Reading("tokens_presence constraints=<example 2>",
                     tokens(EXAMPLE_2, "About sixteen thousand")),),
        ),
    ]  # fmt: skip


def measured() -> list[tuple[SeedExample, Reading, float]]:
    """Every example's every reading, computed."""
    return [(ex, r, r.compute()) for ex in examples() for r in ex.readings]


def matches(example: SeedExample, value: float) -> bool:
    """Our value is the seed's, to the seed's rounding."""
    digits = len(f"{example.seed_value}".split(".")[-1]) if "." in f"{example.seed_value}" else 0
    return abs(round(value, digits) - example.seed_value) <= TOLERANCE


def table(rows: list[tuple[SeedExample, Reading, float]]) -> str:
    lines = [
        "| seed | metric | example | seed's value | ours | our value | same? |",
        "|---|---|---|---|---|---|---|",
    ]
    for example, reading, value in rows:
        same = "yes" if matches(example, value) else f"no: {reading.why}"
        lines.append(
            f"| {example.seed} | {example.metric} | {example.example} | {example.seed_value:g} "
            f"| `{reading.label}` | {value:.3f} | {same} |"
        )
    return "\n".join(lines)


def documented(text: str) -> Mapping[tuple[str, str], float]:
    """``(example, reading) -> value`` as the doc's table has them."""
    body = text.split(START, 1)[1].split(END, 1)[0]
    found = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"-?\d+\.\d{3}", cells[5]):
            found[(cells[2], cells[4].strip("`"))] = float(cells[5])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the table in {DOC}")
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    text = table(measured())
    print(text)
    if args.write:
        doc = DOC.read_text(encoding="utf-8")
        head, rest = doc.split(START, 1)
        tail = rest.split(END, 1)[1]
        DOC.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
        print(f"wrote {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
