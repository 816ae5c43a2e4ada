"""Answer relevance (calibrated, Ejento mean, H2O max) with the packaged MiniLM embedder.

Formula checks recompute the expected value from the embedder's own vectors, so they test the
metric, not the model; behaviour checks use cases whose right answer is plain: short factual
answers (the false alarms of the mean cosine) and another question's answer (what it must catch).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._answer_relevance import (
    AnswerRelevance,
    AnswerRelevanceSentenceSimilarity,
)

QUERY = "How do I reset my password?"
ON_TOPIC = (
    "To reset your password, click 'Forgot password' on the sign-in page.",
    "We email you a link that lets you choose a new password.",
)
OFF_TOPIC = (
    "The Great Wall of China is thousands of kilometres long.",
    "It was built over many centuries by several dynasties.",
)
MIXED = (
    ON_TOPIC[0],
    "Bananas are a good source of potassium.",
    "The football final ended in a draw last night.",
)


def record(query: object = QUERY, response: object = " ".join(ON_TOPIC)) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,  # type: ignore[arg-type]
        chunks=(Chunk("unused"),),
        response=response,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return get_embedder()


def expected_similarities(
    embedder: CachedEmbedder, query: str, sentences: tuple[str, ...]
) -> np.ndarray:
    vectors = embedder.encode([query, *sentences]).astype(np.float64)
    return np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)


def test_declares_what_it_is() -> None:
    for cls, name, threshold in (
        (AnswerRelevance, "answer_relevance", 0.18),  # the calibrated model's default point
        (AnswerRelevanceSentenceSimilarity, "answer_relevance_similarity", 0.3),
    ):
        ev = cls()
        assert ev.name == name
        assert ev.requires == frozenset({"query", "response"})
        assert ev.kind == "model" and ev.bounded and ev.batch_size > 1
        assert ev.threshold == threshold
        assert isinstance(create(name), cls)
    assert AnswerRelevance(threshold=0.7, max_sentences=5).threshold == 0.7
    assert AnswerRelevance(method="mean").threshold == 0.3  # MiniLM-calibrated cosine


def test_mean_formula_exactly(embedder: CachedEmbedder) -> None:
    (score,) = AnswerRelevance(method="mean").evaluate(record(response=" ".join(MIXED)))
    sims = expected_similarities(embedder, QUERY, MIXED)
    assert score.value == pytest.approx(float(sims.mean()), abs=1e-9)
    assert score.details["sentences"] == 3
    assert score.details["similarities"] == [round(float(s), 4) for s in sims]
    assert score.details["best_sentence"] == 0
    assert score.details["worst_sentence"] == int(sims.argmin())
    assert score.details["truncated"] is False
    assert score.model == embedder.model_id
    assert score.evaluator_kind == "model"


def test_max_formula_exactly(embedder: CachedEmbedder) -> None:
    (score,) = AnswerRelevanceSentenceSimilarity().evaluate(record(response=" ".join(MIXED)))
    sims = expected_similarities(embedder, QUERY, MIXED)
    assert score.value == pytest.approx(float(sims.max()), abs=1e-9)
    assert score.details["best_sentence"] == 0


def test_on_topic_answer_beats_off_topic() -> None:
    for cls in (AnswerRelevance, AnswerRelevanceSentenceSimilarity):
        (good,) = cls().evaluate(record(response=" ".join(ON_TOPIC)))
        (bad,) = cls().evaluate(record(response=" ".join(OFF_TOPIC)))
        assert good.value is not None and bad.value is not None
        assert good.value > bad.value + 0.3
        assert good.passed is True and good.label == "pass"
        assert bad.passed is False and bad.label == "fail"


def test_mean_punishes_digressions_that_max_forgives() -> None:
    (mean,) = AnswerRelevance(method="mean").evaluate(record(response=" ".join(MIXED)))
    (best,) = AnswerRelevanceSentenceSimilarity().evaluate(record(response=" ".join(MIXED)))
    assert mean.value is not None and best.value is not None
    assert best.value > mean.value + 0.2
    assert best.passed is True and mean.passed is False


def test_batch_equals_one_by_one() -> None:
    records = [
        record(response=" ".join(ON_TOPIC)),
        record(query="Where is the Great Wall?", response=" ".join(OFF_TOPIC)),
        record(response=" ".join(MIXED)),
        record(response=" ".join(ON_TOPIC)),  # repeats a record of the same batch
    ]
    for ev in (
        AnswerRelevance(),
        AnswerRelevance(method="mean"),
        AnswerRelevanceSentenceSimilarity(),
    ):
        batched = ev.evaluate_batch(records)
        single = [ev.evaluate(r) for r in records]
        assert [ss[0].value for ss in batched] == pytest.approx(
            [ss[0].value for ss in single], abs=1e-9
        )
        assert [len(ss) for ss in batched] == [1, 1, 1, 1]
        assert [ss[0].details for ss in batched] == [ss[0].details for ss in single]


def test_missing_fields_give_error_scores() -> None:
    ev = AnswerRelevance()
    for bad in (record(response=None), record(query=None), record(response="   ")):
        (score,) = ev.evaluate(bad)
        assert score.value is None and score.error is not None and "record lacks" in score.error
    # A bad record does not spoil the rest of its batch.
    out = ev.evaluate_batch([record(response=None), record()])
    assert out[0][0].error is not None and out[1][0].value is not None


def test_odd_text_is_made_safe(embedder: CachedEmbedder) -> None:
    ev = AnswerRelevance(method="mean")
    (from_bytes,) = ev.evaluate(record(query=QUERY.encode(), response=ON_TOPIC[0].encode()))
    (from_str,) = ev.evaluate(record(response=ON_TOPIC[0]))
    assert from_bytes.value == pytest.approx(from_str.value, abs=1e-9)
    (surrogate,) = ev.evaluate(record(response="Reset it \ud800 from the sign-in page."))
    sims = expected_similarities(embedder, QUERY, ("Reset it \ufffd from the sign-in page.",))
    assert surrogate.value == pytest.approx(float(sims[0]), abs=1e-9)


def test_huge_answer_is_capped() -> None:
    sentence = "Click the reset link that we send to your email address. "
    huge = sentence * 40_000  # ~2.3 MB
    (score,) = AnswerRelevance().evaluate(record(response=huge))
    assert score.details["sentences"] == 64
    assert score.details["truncated"] is True
    (few,) = AnswerRelevance(max_sentences=2).evaluate(record(response=" ".join(MIXED)))
    assert few.details["sentences"] == 2 and few.details["truncated"] is True
    long_query = "password " * 2_000
    (capped,) = AnswerRelevance().evaluate(record(query=long_query))
    assert capped.details["truncated"] is True and capped.value is not None


@pytest.mark.parametrize(
    "options",
    [{"max_sentences": 0}, {"max_context_sentences": -1}, {"threads": 0}, {"model": ""}],
)
def test_bad_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        AnswerRelevance(**options)  # type: ignore[arg-type]


def test_model_option_reaches_the_embedder(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.onnx")
    ev = AnswerRelevance(model=missing)
    assert ev.model == missing
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx"):
        ev.evaluate(record())


# --- the calibrated method: short factual answers pass, another question's answer fails --------

SUPER_BOWL = (
    "The first AFL-NFL World Championship Game was played on January 15, 1967, at the Los "
    "Angeles Memorial Coliseum. The Green Bay Packers defeated the Kansas City Chiefs 35-10."
)
MAGAZINES = (
    "Arthur's Magazine (1844-1846) was an American literary periodical published in "
    "Philadelphia. First for Women is a woman's magazine published by Bauer Media Group, "
    "started in 1989."
)
CASES = [  # (question, passage, the right short answer)
    ("When was the first Super Bowl played?", SUPER_BOWL, "1967"),
    ("Who won the first Super Bowl?", SUPER_BOWL, "The Green Bay Packers"),
    (
        "Which magazine was started first, Arthur's Magazine or First for Women?",
        MAGAZINES,
        "Arthur's Magazine",
    ),
    ("Were both magazines published in the United States?", MAGAZINES, "yes"),
]


def qa(query: str, passage: str, answer: str) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32, span_id="0" * 16, query=query, chunks=(Chunk(passage),), response=answer
    )


def test_short_factual_answers_pass_where_the_mean_cosine_failed() -> None:
    calibrated, mean = AnswerRelevance(), AnswerRelevance(method="mean")
    records = [qa(*case) for case in CASES]
    scores = [s[0] for s in calibrated.evaluate_batch(records)]
    assert [s.passed for s in scores] == [True] * len(CASES), [s.explanation for s in scores]
    # The mean cosine cannot see that "yes" answers a yes/no question.
    assert mean.evaluate_batch(records)[3][0].passed is False
    first = scores[0]
    assert first.details["signal_model"] == "answer_relevance"
    assert set(first.details["signals"]) == {
        "query_similarity",
        "answers_form",
        "covered",
        "covered_near_query",
    }
    assert first.details["signals"]["answers_form"] == 1.0  # a year for "When ...?"
    assert first.threshold == 0.18


def test_another_questions_answer_fails() -> None:
    # Each question with the answer to another one (from another passage).
    swapped = [
        qa(CASES[0][0], CASES[0][1], "Arthur's Magazine"),
        qa(CASES[2][0], CASES[2][1], "The Green Bay Packers"),
        qa(CASES[1][0], CASES[1][1], "Bauer Media Group, in Philadelphia"),
    ]
    scores = [s[0] for s in AnswerRelevance().evaluate_batch(swapped)]
    assert [s.passed for s in scores] == [False, False, False], [s.explanation for s in scores]


def test_without_passages_the_question_alone_decides_and_points_are_named() -> None:
    bare = RagRecord(
        trace_id="0" * 32, span_id="0" * 16, query=QUERY, chunks=(), response=" ".join(ON_TOPIC)
    )
    (score,) = AnswerRelevance().evaluate(bare)
    assert score.details["signal_model"] == "answer_relevance_no_context"
    assert "covered" not in score.details["signals"]
    assert score.threshold == 0.13 and score.passed is True
    strict = AnswerRelevance(threshold="strict")
    assert strict.operating_point == "strict"
    assert strict.evaluate(qa(*CASES[0]))[0].threshold == 0.82
    with pytest.raises(ValueError, match="calibrated method's"):
        AnswerRelevance(method="mean", threshold="strict")
    with pytest.raises(ValueError, match="method must be one of"):
        AnswerRelevance(method="max")
