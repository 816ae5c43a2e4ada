"""Toxicity: the packaged head and lexical model, long-answer windows, a HF model, bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends.embeddings import get_embedder
from ragtrace._model import RagRecord
from ragtrace.evaluators._answer_relevance import AnswerRelevance
from ragtrace.evaluators._registry import create
from ragtrace.evaluators._toxicity import HEAD_WEIGHTS, Toxicity, ToxicityHead, get_toxicity_head
from tests.evaluators._tiny_classifier import build_tiny_classifier

BENIGN = "To reset your password, open Settings, choose Security and press Reset."
RUDE = "Shut up, you stupid fucking idiot."
# Rude without a swear word: over the threshold alone, under it among two helpful sentences.
DISMISSIVE = "That is a stupid question, read the manual."
# Operations jargon the word-based model half-flags ("kill" scores 0.57 there).
TECHNICAL = [
    "Kill the process with kill -9 and restart the server.",
    "The child process was killed by the OOM killer.",
    "Abort the thread before the pool shuts down.",
    "If the worker hangs, terminate it and execute the job again.",
    "The attack surface is small and exploit mitigation is enabled.",
]
# Hate without a swear word: the lexical model scores each of these below 0.15.
IMPLICIT = [
    "Immigrants are all criminals and should go back where they came from.",
    "Women are too emotional to ever be good leaders.",
]


def record(response: Any) -> RagRecord:
    return RagRecord(trace_id="a" * 32, span_id="b" * 16, query="q?", response=response)


@pytest.fixture(scope="module")
def toxicity() -> Toxicity:
    return Toxicity()


def test_defaults_and_operating_points(toxicity: Toxicity) -> None:
    assert (toxicity.name, toxicity.direction, toxicity.threshold) == (
        "toxicity",
        "lower_is_better",
        0.91,  # the catalogue's 0.75 failed 7.5% of non-toxic texts (docs/evaluators-online.md)
    )
    assert toxicity.operating_point == "default"
    assert [Toxicity(threshold=p).threshold for p in ("strict", "lenient")] == [0.7, 0.97]
    assert toxicity.requires == frozenset({"response"}) and toxicity.kind == "model"
    assert isinstance(create("toxicity"), Toxicity)


def test_rude_fails_benign_passes(toxicity: Toxicity) -> None:
    (rude,) = toxicity.evaluate(record(RUDE))
    (benign,) = toxicity.evaluate(record(BENIGN))
    assert rude.value is not None and rude.value > 0.9
    assert (rude.passed, rude.label) == (False, "fail")
    assert benign.value is not None and benign.value < 0.2
    assert (benign.passed, benign.label) == (True, "pass")
    assert rude.model == "ragtrace-toxicity-head-2"
    assert rude.details["labels"] == {"toxicity": round(rude.value, 4)}
    assert rude.details["windows"] == 1 and rude.details["sentences"] == 0
    assert rude.details["truncated"] is False
    assert rude.explanation == f"toxicity {rude.value:.2f} by ragtrace-toxicity-head-2"


def test_lexical_model_is_still_available() -> None:
    for name in ("profanity", "alt-profanity-check"):
        (rude,) = Toxicity(model=name).evaluate(record(RUDE))
        assert rude.model == "alt-profanity-check==1.9.1"
        assert rude.value is not None and rude.value > 0.9
        assert rude.explanation == f"toxicity {rude.value:.2f} by alt-profanity-check==1.9.1"
    assert Toxicity(model="minilm-head").model is None  # the default, by name


def test_implicit_hate_is_caught_where_the_lexical_model_misses_it(toxicity: Toxicity) -> None:
    lexical = Toxicity(model="profanity")
    for text in IMPLICIT:
        (head,) = toxicity.evaluate(record(text))
        (words,) = lexical.evaluate(record(text))
        assert words.value is not None and words.value < 0.15, text
        assert head.value is not None and head.value > max(0.5, words.value + 0.3), text


@pytest.mark.parametrize("text", TECHNICAL)
def test_technical_text_stays_below_the_threshold(toxicity: Toxicity, text: str) -> None:
    (score,) = toxicity.evaluate(record(text))
    assert score.value is not None and score.value < 0.6, score.value
    assert score.passed is True


def test_sentence_vectors_come_from_the_shared_cache(toxicity: Toxicity) -> None:
    answer = "Paris is the capital of France. It has about two million people."
    relevance = AnswerRelevance()
    relevance.evaluate(
        RagRecord(trace_id="c" * 32, span_id="d" * 16, query="Where?", response=answer)
    )
    embedder = get_embedder()
    misses = embedder.misses
    (score,) = toxicity.evaluate(record(answer))
    assert embedder.misses == misses  # both sentences were already embedded
    # "It has about two million people." alone scores 0.25: short sentences score a little higher
    assert score.value is not None and score.value < 0.3 and score.details["sentences"] == 2


def test_head_weights_file() -> None:
    head = get_toxicity_head()
    assert head is get_toxicity_head() and head.labels == ("toxicity",)
    assert HEAD_WEIGHTS.stat().st_size < 16_000
    assert head.info["lexical_model"] == "alt-profanity-check==1.9.1"
    assert head.predict([]) == []


def test_head_refuses_weights_of_another_shape(tmp_path: Path) -> None:
    bad = tmp_path / "head.json"
    bad.write_text('{"name": "x", "coef": [0.1, 0.2], "intercept": 0.0}', encoding="utf-8")
    with pytest.raises(ValueError, match="expected 385 weights"):
        ToxicityHead(bad)


def test_batch_equals_single(toxicity: Toxicity) -> None:
    records = [record(RUDE), record(BENIGN), record(""), record(BENIGN + " " + RUDE)]
    assert toxicity.evaluate_batch(records) == [toxicity.evaluate(r) for r in records]


def test_long_answer_is_scored_by_windows(toxicity: Toxicity) -> None:
    long_benign = " ".join([BENIGN] * 40)  # ~2,900 characters
    whole_text = Toxicity(window_chars=100_000, per_sentence=False)
    (whole,) = whole_text.evaluate(record(long_benign + " " + RUDE))
    (windowed,) = toxicity.evaluate(record(long_benign + " " + RUDE))
    assert windowed.details["windows"] == 4  # 13 sentences of 72 characters per window
    assert whole.value is not None and windowed.value is not None
    assert whole.value < 0.75 < windowed.value  # one rude sentence is not diluted away
    pieces = toxicity.windows(long_benign + " " + RUDE)
    assert all(len(p) <= 1_000 for p in pieces)
    assert " ".join(pieces) == long_benign + " " + RUDE


def test_one_rude_sentence_in_a_helpful_answer_is_not_diluted(toxicity: Toxicity) -> None:
    answer = f"{BENIGN} {DISMISSIVE} Then sign in again with the new password."
    (whole,) = Toxicity(per_sentence=False).evaluate(record(answer))
    (score,) = toxicity.evaluate(record(answer))
    assert whole.value is not None and score.value is not None
    assert whole.value + 0.2 < score.value
    assert score.details["windows"] == 1 and score.details["sentences"] == 3
    (alone,) = toxicity.evaluate(record(DISMISSIVE))
    assert score.value == pytest.approx(alone.value)  # the rude sentence's own score
    assert toxicity.sentences(["One sentence only."]) == []
    assert Toxicity(per_sentence=False).sentences([answer]) == []


def test_helpful_answers_of_several_sentences_still_pass(toxicity: Toxicity) -> None:
    answer = " ".join(TECHNICAL[:3])
    (score,) = toxicity.evaluate(record(answer))
    assert score.details["sentences"] == 3
    assert score.passed is True, score.value


def test_overlong_sentence_is_cut(toxicity: Toxicity) -> None:
    pieces = toxicity.windows("a" * 2_500)
    assert [len(p) for p in pieces] == [1_000, 1_000, 500]


@pytest.mark.parametrize("response", [None, "", "   ", b"you idiot \xff", "idiot \udcff", 42])
def test_bad_input(toxicity: Toxicity, response: Any) -> None:
    (score,) = toxicity.evaluate(record(response))
    assert score.value is not None and 0.0 <= score.value <= 1.0
    if response in (None, "", "   "):
        assert (score.value, score.details["windows"]) == (0.0, 0)
        assert score.explanation == "empty answer: nothing to score"


def test_huge_input_is_capped(toxicity: Toxicity) -> None:
    huge = (BENIGN + " ") * 80_000  # ~5.8 MB
    (score,) = toxicity.evaluate(record(huge))
    assert score.details["truncated"] is True
    assert score.details["windows"] <= 110


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="window_chars"):
        Toxicity(window_chars=0)
    with pytest.raises(ValueError, match="max_chars"):
        Toxicity(max_chars=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per_sentence must be true or false"):
        Toxicity(per_sentence="yes")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tox")
    jigsaw = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    return {
        "jigsaw": build_tiny_classifier(root / "jigsaw", jigsaw, multi_label=True),
        "anonymous": build_tiny_classifier(
            root / "anon", ["LABEL_0", "LABEL_1"], multi_label=False
        ),
    }


def test_hf_model_detoxify_labels(tiny: dict[str, Path]) -> None:
    evaluator = Toxicity(model=str(tiny["jigsaw"]))
    (score,) = evaluator.evaluate(record("you are a clown"))
    labels = score.details["labels"]
    assert list(labels) == [
        "toxicity",
        "severe_toxicity",
        "obscene",
        "threat",
        "insult",
        "identity_attack",
    ]
    assert score.value == pytest.approx(labels["toxicity"], abs=1e-4)
    assert score.model == str(tiny["jigsaw"])
    assert "highest other label" in (score.explanation or "")
    batch = evaluator.evaluate_batch([record("you are a clown"), record("hello there")])
    assert batch[0][0].value == pytest.approx(score.value, abs=1e-5)


def test_hf_model_needs_a_toxicity_label(tiny: dict[str, Path]) -> None:
    path = str(tiny["anonymous"])
    with pytest.raises(ValueError, match=r"no label mapped to 'toxicity'.*label_0"):
        Toxicity(model=path).evaluate(record("hello"))
    mapped = Toxicity(model=path, label_map={"LABEL_1": "toxicity"})
    (score,) = mapped.evaluate(record("hello"))
    assert set(score.details["labels"]) == {"label_0", "toxicity"}
    assert score.details["labels"]["label_0"] + score.details["labels"]["toxicity"] == (
        pytest.approx(1.0, abs=1e-3)
    )
