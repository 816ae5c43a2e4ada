"""The response model: from an answer's claim checks to its hallucination probability."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragtrace.evaluators.faithfulness import Faithfulness
from ragtrace.evaluators.support import (
    CONFIDENT_UNSUPPORTED,
    CROSSENCODER_RESPONSE_WEIGHTS,
    RESPONSE_WEIGHTS,
    ClaimCheck,
    SupportDetector,
    with_confident_claim,
)
from ragtrace.evaluators.support_features import FEATURES, RESPONSE_FEATURES, response_features
from tests.evaluators.test_faithfulness import record

ROUTER = (
    "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
    "The reset button is on the back panel. The X2 has four gigabit Ethernet ports."
)


def row(**values: float) -> list[float]:
    return [values.get(name, 0.0) for name in FEATURES]


@pytest.fixture(scope="module")
def faithfulness() -> Faithfulness:
    return Faithfulness()


def probability(faithfulness: Faithfulness, answer: str, chunks: list[str]) -> float:
    (score,) = faithfulness.evaluate(record(answer, chunks))
    value = score.details["hallucination_probability"]
    assert isinstance(value, float)
    return value


def test_features_of_a_known_answer() -> None:
    rows = [
        row(bigram_support=1.0, max_similarity=0.9),
        row(bigram_support=0.2, max_similarity=0.3),
        row(bigram_support=0.6, max_similarity=0.6),
    ]
    assert response_features([0.1, 0.8, 0.3], rows) == pytest.approx(
        [0.8, 0.3, math.log1p(3), 0.6, 0.6]
    )
    # one claim: the second largest is the largest
    assert response_features([0.4], rows[:1]) == pytest.approx([0.4, 0.4, math.log1p(1), 1.0, 0.9])


@pytest.mark.parametrize("probs, rows", [([], []), ([0.2, 0.3], [row()])])
def test_features_need_one_probability_per_claim(
    probs: list[float], rows: list[list[float]]
) -> None:
    with pytest.raises(ValueError, match="one probability per claim"):
        response_features(probs, rows)


def test_a_copied_answer_passes_and_invented_facts_are_flagged(faithfulness: Faithfulness) -> None:
    copied = "The Aurora X2 router supports WPA3. The reset button is on the back panel."
    invented = (
        "The Aurora X2 router costs $349 and ships with a five-year warranty from Contoso. "
        "It was designed in Norway by a team of 40 engineers."
    )
    assert probability(faithfulness, copied, [ROUTER]) < 0.5
    assert probability(faithfulness, invented, [ROUTER]) >= 0.5
    brazil = "Brazil is a country in South America. Its capital is Brasília."
    assert probability(faithfulness, "The capital of Brazil is Florida.", [brazil]) >= 0.5


def test_invented_sentences_among_grounded_ones(faithfulness: Faithfulness) -> None:
    grounded = (
        "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
        "The X2 has four gigabit Ethernet ports."
    )
    camera = " It also doubles as a 12-megapixel security camera made by Contoso."
    recall = " The router was recalled in 2019 after 300 units caught fire."
    (one,) = faithfulness.evaluate(record(grounded + camera, [ROUTER]))
    # the claim verdicts name a lone invented sentence ...
    assert [c["supported"] for c in one.details["claims"]] == [True, True, True, False]
    assert one.value == pytest.approx(0.75)
    # ... which flags the answer by itself when the claim model is confident it is unsupported
    doubt = 1.0 - one.details["claims"][3]["support"]
    assert doubt >= CONFIDENT_UNSUPPORTED
    assert one.details["hallucination_probability"] == pytest.approx(doubt, abs=1e-3)
    # a less certain one alone does not (the response model learned from RAGTruth that the claim
    # model's single strongest doubt is often a false alarm) ...
    (other,) = faithfulness.evaluate(record(grounded + recall, [ROUTER]))
    assert 0.5 <= 1.0 - other.details["claims"][3]["support"] < CONFIDENT_UNSUPPORTED
    assert other.details["hallucination_probability"] < 0.5
    # ... until a second doubtful sentence joins it
    assert probability(faithfulness, grounded + camera + recall, [ROUTER]) >= 0.5
    assert probability(faithfulness, grounded, [ROUTER]) < 0.5


def test_a_confident_claim_raises_the_response_probability() -> None:
    assert with_confident_claim(0.2, CONFIDENT_UNSUPPORTED) == CONFIDENT_UNSUPPORTED
    assert with_confident_claim(0.2, 0.97) == 0.97
    assert with_confident_claim(0.99, 0.95) == 0.99
    assert with_confident_claim(0.2, CONFIDENT_UNSUPPORTED - 0.01) == 0.2


def test_an_answer_with_no_claim_has_nothing_to_flag(faithfulness: Faithfulness) -> None:
    assert probability(faithfulness, "", [ROUTER]) == 0.0


def by_hand(weights: dict, features: list[float]) -> float:
    """The logistic model of a weights file, computed here from the JSON."""
    z = weights["intercept"] + sum(
        w * (x - m) / sc
        for w, x, m, sc in zip(
            weights["coef"], features, weights["mean"], weights["scale"], strict=True
        )
    )
    return 1.0 / (1.0 + math.exp(-z))


@pytest.mark.parametrize(
    "detector, weights",
    [("features", RESPONSE_WEIGHTS), ("crossencoder", CROSSENCODER_RESPONSE_WEIGHTS)],
)
def test_each_path_reads_its_own_response_model(detector: str, weights: Path) -> None:
    checks = [
        ClaimCheck("a", 0.9, 0, tuple(row(bigram_support=0.8, max_similarity=0.7))),
        ClaimCheck("b", 0.35, 1, tuple(row(bigram_support=0.2, max_similarity=0.4))),
    ]
    data = json.loads(weights.read_text(encoding="utf-8"))
    expected = by_hand(data, [0.65, 0.1, math.log1p(2), 0.5, 0.55])
    assert 0.0 < expected < CONFIDENT_UNSUPPORTED
    checker = SupportDetector(detector=detector)
    assert checker.hallucination_probability(checks) == pytest.approx(expected)
    assert checker.hallucination_probability([]) == 0.0
    # a claim at 0.95 unsupported flags the answer whatever the response model says
    sure = [checks[0], ClaimCheck("c", 0.05, 1, checks[1].features)]
    assert checker.hallucination_probability(sure) >= 0.95


def test_the_crossencoder_response_model_is_its_own_fit() -> None:
    features = json.loads(RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    cross = json.loads(CROSSENCODER_RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    assert cross["coef"] != features["coef"]
    assert "out-of-fold stacked" in cross["info"]["fitted_on"]
    assert set(cross["info"]["cv_response_level"]) >= {"ragtruth/QA", "halueval/QA"}


def test_response_weights_match_the_features(tmp_path: Path) -> None:
    data = json.loads(RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == RESPONSE_FEATURES
    for path in (RESPONSE_WEIGHTS, CROSSENCODER_RESPONSE_WEIGHTS):
        assert path.stat().st_size < 10_000
    # any path takes a response model given to it
    cascade = SupportDetector(detector="cascade", response_weights=RESPONSE_WEIGHTS)
    assert cascade.response_model.coef == tuple(data["coef"])
    data["features"] = ["largest_unsupported"]
    bad = tmp_path / "response.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="retrain"):
        SupportDetector(response_weights=bad)
