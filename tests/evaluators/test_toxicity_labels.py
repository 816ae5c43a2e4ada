"""Toxicity with ``per_label=True``: one Score per label of a multi-label model, as H2O's six
metrics (toxicity, severe toxicity, obscene, threat, insult, identity attack); the packaged
single-label models still give one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._model import RagRecord
from ragtrace.evaluators._toxicity import Toxicity
from tests.evaluators._tiny_classifier import build_tiny_classifier

H2O_NAMES = [
    "toxicity",
    "toxicity.severe_toxicity",
    "toxicity.obscene",
    "toxicity.threat",
    "toxicity.insult",
    "toxicity.identity_attack",
]


def record(text: str) -> RagRecord:
    return RagRecord(trace_id="0" * 32, span_id="0" * 16, query="q", response=text)


@pytest.fixture(scope="module")
def jigsaw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    labels = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    return build_tiny_classifier(tmp_path_factory.mktemp("tox") / "m", labels, multi_label=True)


def test_one_score_per_label_of_a_multi_label_model(jigsaw: Path) -> None:
    evaluator = Toxicity(model=str(jigsaw), per_label=True, threshold=0.6)
    scores = evaluator.evaluate(record("you are a clown"))
    assert [s.name for s in scores] == H2O_NAMES
    head, *others = scores
    labels = head.details["labels"]
    for score in others:
        label = score.name.split(".", 1)[1]
        assert score.value == pytest.approx(labels[label], abs=1e-4)
        assert (score.direction, score.threshold) == ("lower_is_better", 0.6)
        assert score.passed is (score.value <= 0.6)  # type: ignore[operator]
        assert score.details == {"label": label, "primary": False}
    # Without the option: the one toxicity Score, as before.
    (only,) = Toxicity(model=str(jigsaw)).evaluate(record("you are a clown"))
    assert only.value == pytest.approx(head.value)


def test_the_packaged_model_has_one_label() -> None:
    scores = Toxicity(per_label=True).evaluate(record("Thanks, that fixed it."))
    assert [s.name for s in scores] == ["toxicity"]
    with pytest.raises(ValueError, match="per_label must be true or false"):
        Toxicity(per_label="yes")  # type: ignore[arg-type]
