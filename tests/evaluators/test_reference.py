"""AnswerSimilarity and AnswerCorrectness: the formulas on hand-made cases, the real models.

The factual F1 arithmetic is checked with ``word_support``, a deterministic stand-in for the
support detector (a claim is supported when every content word of it occurs in the passages),
so TP/FP/FN are known by reading the sentences. The real detector and the packaged embedding
model are exercised end to end as well.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._reference import AnswerCorrectness, AnswerSimilarity
from ragtrace.evaluators._statement_support import as_text
from ragtrace.evaluators._text import content_words


def word_support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
    """1.0 when every content word of the claim occurs in the passages, else 0.0."""
    vocabulary = {w for p in passages for w in content_words(p)}
    return [1.0 if set(content_words(c)) <= vocabulary else 0.0 for c in claims]


def record(response: object, reference: object, chunks: Sequence[str] = ("c",)) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="q",
        chunks=tuple(Chunk(c) for c in chunks),
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def only(scores: list[Score]) -> Score:
    assert len(scores) == 1, scores
    return scores[0]


@pytest.fixture(scope="module")
def similarity() -> AnswerSimilarity:
    return AnswerSimilarity()


def test_declare_what_they_are() -> None:
    for name, cls in (("answer_similarity", AnswerSimilarity), ("answer_correctness", None)):
        ev = create(name) if cls else create(name, support=word_support)
        assert ev.name == name
        assert ev.requires == frozenset({"response", "reference"})
        assert (ev.kind, ev.direction, ev.threshold) == ("model", "higher_is_better", 0.75)
        assert ev.batch_size > 1
    assert isinstance(create("answer_correctness"), AnswerCorrectness)


def test_as_text_handles_odd_values() -> None:
    assert as_text(None) == ""
    assert as_text(b"caf\xc3\xa9 \xff") == "café \ufffd"
    assert as_text("lone \ud800 surrogate") == "lone ? surrogate"
    assert as_text(42) == "42"


# --- answer similarity (real embedding model) ---------------------------------------------


def test_similarity_identical_paraphrase_unrelated(similarity: AnswerSimilarity) -> None:
    reference = "The capital of France is Paris."
    same = only(similarity.evaluate(record(reference, reference)))
    paraphrase = only(similarity.evaluate(record("Paris is the French capital city.", reference)))
    unrelated = only(similarity.evaluate(record("Bananas are rich in potassium.", reference)))
    assert same.value == pytest.approx(1.0, abs=1e-5) and same.passed is True
    assert paraphrase.value is not None and unrelated.value is not None
    assert paraphrase.value > 0.75 > 0.3 > unrelated.value >= 0.0
    assert paraphrase.model and "MiniLM" in paraphrase.model
    assert paraphrase.details == {"truncated": False}


def test_similarity_batch_equals_single_calls(similarity: AnswerSimilarity) -> None:
    records = [
        record("Paris is the French capital city.", "The capital of France is Paris."),
        record(None, "The capital of France is Paris."),
        record("Water boils at 100 degrees.", "At sea level water boils at 100 °C."),
    ]
    batch = similarity.evaluate_batch(records)
    assert batch[1][0].error == "answer_similarity needs a non-empty response"
    for i in (0, 2):
        assert batch[i][0].value == pytest.approx(only(similarity.evaluate(records[i])).value)


def test_similarity_bad_input(similarity: AnswerSimilarity) -> None:
    assert only(similarity.evaluate(record("an answer", "  "))).error
    got = only(similarity.evaluate(record(b"Paris is the capital.", "Paris is the capital.")))
    assert got.value == pytest.approx(1.0, abs=1e-5)
    huge = only(similarity.evaluate(record("word " * 1_000_000, "\ud800 a reference")))
    assert huge.details["truncated"] is True and huge.value is not None


# --- answer correctness: the formula with the stand-in ------------------------------------


def test_correctness_factual_f1_hand_computed() -> None:
    # answer: 3 statements, "Berlin ..." not in the reference -> TP 2, FP 1;
    # reference: both statements in the answer -> FN 0. F1 = 2 / (2 + 0.5 * 1) = 0.8.
    ev = AnswerCorrectness(support=word_support, weights=(1, 0))
    got = only(
        ev.evaluate(
            record(
                "Paris is the capital of France. Berlin is the capital of Germany. "
                "The Eiffel Tower is in Paris.",
                "Paris is the capital of France. The Eiffel Tower is in Paris.",
            )
        )
    )
    assert got.value == pytest.approx(0.8)
    assert (got.details["tp"], got.details["fp"], got.details["fn"]) == (2, 1, 0)
    assert [s["in_reference"] for s in got.details["answer_statements"]] == [True, False, True]
    assert got.details["answer_statements"][1] == {
        "statement": "Berlin is the capital of Germany.",
        "support": 0.0,
        "in_reference": False,
    }
    assert [s["in_answer"] for s in got.details["reference_statements"]] == [True, True]
    assert got.details["similarity"] is None  # weight 0: not computed
    assert got.details["weights"] == {"factuality": 1.0, "similarity": 0.0}


def test_correctness_false_negatives_and_default_weights(similarity: AnswerSimilarity) -> None:
    # answer 1 statement (in the reference): TP 1, FP 0; the reference's second statement is
    # not in the answer: FN 1. F1 = 1 / (1 + 0.5) = 2/3; value = 0.75 * 2/3 + 0.25 * similarity.
    answer = "Paris is the capital of France."
    reference = "Paris is the capital of France. It has two million people."
    got = only(AnswerCorrectness(support=word_support).evaluate(record(answer, reference)))
    sim = only(similarity.evaluate(record(answer, reference))).value
    assert sim is not None
    assert got.details["factual_f1"] == pytest.approx(2 / 3)
    assert got.details["similarity"] == pytest.approx(sim)
    assert got.value == pytest.approx(0.75 * 2 / 3 + 0.25 * sim)
    assert got.model and "MiniLM" in got.model
    # weights are divided by their sum (as RAGAS' np.average): (3, 1) is (0.75, 0.25)
    scaled = only(
        AnswerCorrectness(support=word_support, weights=(3, 1)).evaluate(record(answer, reference))
    )
    assert scaled.value == pytest.approx(got.value)


def test_correctness_nothing_shared_is_zero_f1() -> None:
    ev = AnswerCorrectness(support=word_support, weights=(1, 0))
    got = only(ev.evaluate(record("Bananas are yellow.", "The sky is blue.")))
    assert got.value == 0.0 and got.passed is False
    assert (got.details["tp"], got.details["fp"], got.details["fn"]) == (0, 1, 1)


def test_correctness_support_threshold_decides_verdicts() -> None:
    def half(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        return [0.6 for _ in claims]

    low = only(
        AnswerCorrectness(support=half, support_threshold=0.5, weights=(1, 0)).evaluate(
            record("A b.", "C d.")
        )
    )
    high = only(
        AnswerCorrectness(support=half, support_threshold=0.7, weights=(1, 0)).evaluate(
            record("A b.", "C d.")
        )
    )
    assert (low.value, high.value) == (1.0, 0.0)


def test_correctness_options_are_checked() -> None:
    for weights in ((0, 0), (-1, 2), (1,), "ab", (1, float("nan"))):
        with pytest.raises(ValueError, match="weights"):
            AnswerCorrectness(support=word_support, weights=weights)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="support_threshold"):
        AnswerCorrectness(support=word_support, support_threshold=1.5)
    with pytest.raises(ValueError, match="support must be callable"):
        AnswerCorrectness(support="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_statements"):
        AnswerCorrectness(support=word_support, max_statements=0)


def test_a_broken_support_function_raises() -> None:
    def short(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        return [1.0]

    def nan(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        return [math.nan for _ in claims]

    two = record("One sentence here. Another one here.", "A reference.")
    with pytest.raises(RuntimeError, match="returned 1 values for 2 claims"):
        AnswerCorrectness(support=short, weights=(1, 0)).evaluate(two)
    with pytest.raises(RuntimeError, match="not a probability"):
        AnswerCorrectness(support=nan, weights=(1, 0)).evaluate(two)


def test_correctness_batch_isolates_bad_records() -> None:
    ev = AnswerCorrectness(support=word_support, weights=(1, 0))
    got = ev.evaluate_batch(
        [
            record("Paris is the capital of France.", "Paris is the capital of France."),
            record("An answer.", None),
            record(b"The sky is blue.", "The sky is blue."),
        ]
    )
    assert got[0][0].value == 1.0 and got[2][0].value == 1.0
    assert got[1][0].error == "answer_correctness needs a non-empty reference"


def test_correctness_caps_statements_and_text() -> None:
    answer = " ".join(f"Fact number {i} is true." for i in range(100))
    ev = AnswerCorrectness(support=word_support, weights=(1, 0), max_statements=10)
    got = only(ev.evaluate(record(answer, "Fact number 1 is true.")))
    assert len(got.details["answer_statements"]) == 10 and got.details["truncated"] is True
    huge = only(
        AnswerCorrectness(support=word_support, weights=(1, 0)).evaluate(
            record("x" * 5_000_000, "A reference.")
        )
    )
    assert huge.details["truncated"] is True and huge.value == 0.0


# --- end to end with the real support detector and embeddings -----------------------------


def test_correctness_real_detector_same_and_contradicting_answers() -> None:
    ev = AnswerCorrectness()
    reference = "The first Super Bowl was played on January 15, 1967, in Los Angeles."
    same = only(ev.evaluate(record(reference, reference)))
    assert same.details["factual_f1"] == 1.0
    assert same.value == pytest.approx(1.0, abs=1e-4)
    wrong = only(
        ev.evaluate(record("The first Super Bowl was played on March 3, 1971.", reference))
    )
    assert wrong.details["tp"] == 0 and wrong.details["factual_f1"] == 0.0
    assert wrong.value is not None and wrong.value < 0.25 and wrong.passed is False
    batch = ev.evaluate_batch([record(reference, reference), record("An answer.", "")])
    assert batch[0][0].value == pytest.approx(same.value) and batch[1][0].error
