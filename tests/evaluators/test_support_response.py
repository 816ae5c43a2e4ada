"""The response model: from an answer's claim checks and coverage to its hallucination probability,
with one pair of models per calibration (a task; short answers to questions apart)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._faithfulness.detector import (
    CROSSENCODER_RESPONSE_WEIGHTS,
    CROSSENCODER_TASK_WEIGHTS,
    RESPONSE_WEIGHTS,
    TASK_WEIGHTS,
    ClaimCheck,
    SupportDetector,
)
from ragtrace.evaluators._faithfulness.features import FEATURES, index_passages
from ragtrace.evaluators._faithfulness.models import CONFIDENT_UNSUPPORTED, with_confident_claim
from ragtrace.evaluators._faithfulness.response import (
    CALIBRATIONS,
    RESPONSE_FEATURES,
    response_coverage,
    response_features,
)
from tests.evaluators.test_faithfulness import record

ROUTER = (
    "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
    "The reset button is on the back panel. The X2 has four gigabit Ethernet ports."
)
COVERAGE = [0.75, math.log1p(1), 0.5]


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
    assert response_features([0.1, 0.8, 0.3], rows, COVERAGE) == pytest.approx(
        [0.8, 0.3, math.log1p(3), 0.6, 0.6, *COVERAGE]
    )
    # one claim: the second largest is the largest
    assert response_features([0.4], rows[:1], COVERAGE) == pytest.approx(
        [0.4, 0.4, math.log1p(1), 1.0, 0.9, *COVERAGE]
    )


@pytest.mark.parametrize(
    "probs, rows, coverage",
    [([], [], COVERAGE), ([0.2, 0.3], [row()], COVERAGE), ([0.2], [row()], [0.5])],
)
def test_features_need_one_probability_per_claim_and_the_coverage(
    probs: list[float], rows: list[list[float]], coverage: list[float]
) -> None:
    with pytest.raises(ValueError, match="response_features needs"):
        response_features(probs, rows, coverage)


def test_coverage_of_a_whole_answer() -> None:
    index = index_passages(["The store in Paris opens at 9 every day.", "Parking is free."])
    copied = response_coverage("The store in Paris opens at 9. Parking is free.", index)
    assert copied == pytest.approx([1.0, 0.0, 0.0])
    # content words: store, lyon, opens, 10, sundays (2 of 5 known); one missing number; the
    # capitalised word inside the sentence (Lyon) is missing
    changed = response_coverage("The store in Lyon opens at 10 on sundays.", index)
    assert changed == pytest.approx([2 / 5, math.log1p(1), 1.0])


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


def test_one_invented_sentence_among_grounded_ones_flags_the_answer(
    faithfulness: Faithfulness,
) -> None:
    grounded = (
        "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
        "The X2 has four gigabit Ethernet ports."
    )
    camera = " It also doubles as a 12-megapixel security camera made by Contoso."
    assert probability(faithfulness, grounded, [ROUTER]) < 0.5
    (one,) = faithfulness.evaluate(record(grounded + camera, [ROUTER]))
    # the claim verdicts name the invented sentence, the claim ratio counts it ...
    assert [c["supported"] for c in one.details["claims"]] == [True, True, True, False]
    assert one.details["claim_ratio"] == pytest.approx(0.75)
    # ... and the answer is flagged: value and verdict say the same
    assert one.details["hallucination_probability"] >= 0.5
    assert one.value == pytest.approx(1 - one.details["hallucination_probability"], abs=1e-4)
    assert one.passed is False


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


CHECKS = [
    ClaimCheck("a", 0.9, 0, tuple(row(bigram_support=0.8, max_similarity=0.7))),
    ClaimCheck("b", 0.35, 1, tuple(row(bigram_support=0.2, max_similarity=0.4))),
]
FULL_ROW = dict(
    zip(RESPONSE_FEATURES, [0.65, 0.1, math.log1p(2), 0.5, 0.55, *COVERAGE], strict=True)
)


def expected(weights: dict) -> float:
    return by_hand(weights, [FULL_ROW[name] for name in weights["features"]])


@pytest.mark.parametrize(
    "detector, weights, task",
    [
        ("features", RESPONSE_WEIGHTS, None),
        ("crossencoder", CROSSENCODER_RESPONSE_WEIGHTS, None),
        ("crossencoder", CROSSENCODER_TASK_WEIGHTS, "qa"),
        ("crossencoder", CROSSENCODER_TASK_WEIGHTS, "summary"),
    ],
)
def test_each_path_reads_its_own_response_model(
    detector: str, weights: Path, task: str | None
) -> None:
    data = json.loads(weights.read_text(encoding="utf-8"))
    if task is not None:  # a task file: that task's pair
        data = data["tasks"][task]["response"]
    want = expected(data)
    assert 0.0 < want < CONFIDENT_UNSUPPORTED
    checker = SupportDetector(detector=detector)
    assert checker.hallucination_probability(CHECKS, COVERAGE, task) == pytest.approx(want)
    assert checker.hallucination_probability([], COVERAGE, task) == 0.0
    # a claim at 0.95 unsupported flags the answer whatever the response model says
    sure = [CHECKS[0], ClaimCheck("c", 0.05, 1, CHECKS[1].features)]
    assert checker.hallucination_probability(sure, COVERAGE, task) >= 0.95


def test_each_calibration_has_its_own_models() -> None:
    data = json.loads(TASK_WEIGHTS.read_text(encoding="utf-8"))
    assert set(data["tasks"]) == set(CALIBRATIONS)
    checker = SupportDetector()
    seen = set()
    for task in CALIBRATIONS:
        want = expected(data["tasks"][task]["response"])
        got = checker.hallucination_probability(CHECKS, COVERAGE, task)
        assert got == pytest.approx(want)
        seen.add(round(got, 6))
        claim = data["tasks"][task]["claim"]
        (checks,) = checker.check_batch([(["The X2 supports WPA3."], [ROUTER])], [task])
        assert checks[0].support == pytest.approx(1 - by_hand(claim, list(checks[0].features)))
    assert len(seen) == len(CALIBRATIONS)  # four calibrations, not one
    # the fitted data and the split are recorded with the weights
    assert data["info"]["split"]["seed"] and "tuning part" in data["info"]["trained_on"]


def test_each_response_model_counts_its_base_rate_at_the_recorded_weight() -> None:
    """The value counts the base rate in full (calibrated: tasks that hallucinate more often get
    higher probabilities from the same evidence); the verdict counts it at half weight (a
    summary's at a quarter), so its threshold sits where 0.5 moved by that share of the base
    rate's log-odds falls, and the weights file says so."""
    tasks = json.loads(TASK_WEIGHTS.read_text(encoding="utf-8"))["tasks"]
    pooled = json.loads(RESPONSE_WEIGHTS.read_text(encoding="utf-8"))["info"]
    info = {task: pair["response"]["info"] for task, pair in tasks.items()} | {"": pooled}
    for name, i in info.items():
        # Summary's verdict counts it at a quarter (chosen over shuffled folds of the tuning
        # part: docs/decisions/faithfulness-detector-experiments.md), every other at half.
        assert i["value_prior_weight"] == 1.0, name
        assert i["prior_weight"] == (0.25 if name == "summary" else 0.5), name
        assert 0.0 < i["base_rate"] < 1.0 and 0.2 <= i["balanced_cut"] <= 0.8, name
        log_odds = math.log(i["base_rate"] / (1 - i["base_rate"]))
        # the balanced model's cut (0.5 but for the short-answer pair) moves the verdict, not
        # the value, which stays calibrated
        cut = math.log(i["balanced_cut"] / (1 - i["balanced_cut"]))
        z = cut + (i["value_prior_weight"] - i["prior_weight"]) * log_odds
        want = 1 / (1 + math.exp(-z))
        assert i["verdict_threshold"] == pytest.approx(want, abs=1e-4), name
    # on the tuning data, data-to-text answers hallucinate most and summaries least, so a
    # summary is flagged at a lower probability than a data-to-text answer
    assert info["data2txt"]["base_rate"] > info["qa"]["base_rate"] > info["summary"]["base_rate"]
    detector = SupportDetector()
    cuts = {task: detector.verdict_threshold(task) for task in CALIBRATIONS}
    assert cuts["data2txt"] > cuts["qa"] > cuts["summary"]
    assert cuts == {task: i["verdict_threshold"] for task, i in info.items() if task}


def test_weights_without_a_verdict_threshold_flag_above_one_half(tmp_path: Path) -> None:
    """Weights files written before the threshold was recorded keep their 0.5 verdict; a value
    that is no probability is not trusted."""
    tasks = json.loads(TASK_WEIGHTS.read_text(encoding="utf-8"))
    del tasks["tasks"]["summary"]["response"]["info"]["verdict_threshold"]
    tasks["tasks"]["qa"]["response"]["info"]["verdict_threshold"] = "high"
    tasks["tasks"]["data2txt"]["response"]["info"]["verdict_threshold"] = 1.5
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    detector = SupportDetector(task_weights=path)
    assert [detector.verdict_threshold(t) for t in ("summary", "qa", "data2txt")] == [0.5] * 3
    assert detector.verdict_threshold("short_qa") == pytest.approx(
        tasks["tasks"]["short_qa"]["response"]["info"]["verdict_threshold"]
    )


def test_a_calibration_without_its_own_pair_falls_back_to_its_task(tmp_path: Path) -> None:
    tasks = json.loads(TASK_WEIGHTS.read_text(encoding="utf-8"))
    del tasks["tasks"]["short_qa"]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    without = SupportDetector(task_weights=path)
    shipped = SupportDetector()
    qa = shipped.hallucination_probability(CHECKS, COVERAGE, "qa")
    assert without.hallucination_probability(CHECKS, COVERAGE, "short_qa") == pytest.approx(qa)
    assert shipped.hallucination_probability(CHECKS, COVERAGE, "short_qa") != pytest.approx(qa)
    # a key nobody knows gets the shared pair
    assert shipped.hallucination_probability(CHECKS, COVERAGE, "poetry") == pytest.approx(
        SupportDetector(task_weights=tmp_path / "missing.json").hallucination_probability(
            CHECKS, COVERAGE, "qa"
        )
    )


def test_the_crossencoder_response_model_is_its_own_fit() -> None:
    features = json.loads(RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    cross = json.loads(CROSSENCODER_RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    assert cross["coef"] != features["coef"]
    assert "the logit out of fold" in cross["info"]["trained_on"]
    assert cross["info"]["split"] == features["info"]["split"]  # the same tuning part
    assert set(cross["info"]["cv_response_level"]) >= {"ragtruth/QA", "halueval/QA"}
    tasks = json.loads(CROSSENCODER_TASK_WEIGHTS.read_text(encoding="utf-8"))["tasks"]
    assert set(tasks) == set(CALIBRATIONS)
    assert all(t["claim"]["features"][-1] == "crossencoder_logit" for t in tasks.values())


def test_response_weights_match_the_features(tmp_path: Path) -> None:
    data = json.loads(RESPONSE_WEIGHTS.read_text(encoding="utf-8"))
    assert set(data["features"]) <= set(RESPONSE_FEATURES)
    for path in (RESPONSE_WEIGHTS, CROSSENCODER_RESPONSE_WEIGHTS):
        assert path.stat().st_size < 10_000
    for path in (TASK_WEIGHTS, CROSSENCODER_TASK_WEIGHTS):
        assert path.stat().st_size < 20_000
    # any path takes a response model given to it
    cross = SupportDetector(detector="crossencoder", response_weights=RESPONSE_WEIGHTS)
    assert cross.response_model.coef == tuple(data["coef"])
    data["features"] = ["largest_unsupported", "not_a_feature"]
    bad = tmp_path / "response.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="retrain"):
        SupportDetector(response_weights=bad)
    tasks = json.loads(TASK_WEIGHTS.read_text(encoding="utf-8"))
    tasks["tasks"]["qa"]["claim"]["features"] = ["something_else"]
    bad_tasks = tmp_path / "tasks.json"
    bad_tasks.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[qa\].*retrain"):
        SupportDetector(task_weights=bad_tasks)


# How each response feature may move the short-answer pair's hallucination probability: a more
# doubtful claim, a missing number or name never lowers it; closeness never raises it.
SHORT_QA_SIGNS = {
    "largest_unsupported": 1,
    "second_unsupported": 1,
    "mean_bigram_support": -1,
    "mean_similarity": -1,
    "word_coverage": -1,
    "missing_numbers": 1,
    "missing_names": 1,
}


@pytest.mark.parametrize("suffix", ["", "_wordllama"])
def test_the_short_answer_pair_never_reads_closeness_as_doubt(suffix: str) -> None:
    """Fitted on HaluEval, whose true answers are a few words and invented ones fluent
    sentences, an unbounded short-answer model weighed similarity to the passages toward
    hallucination; its weights are now fitted with their signs bounded
    (docs/decisions/faithfulness-detector-experiments.md) and read the answer's missing numbers
    and names."""
    path = TASK_WEIGHTS.with_name(f"{TASK_WEIGHTS.stem}{suffix}.json")
    response = json.loads(path.read_text(encoding="utf-8"))["tasks"]["short_qa"]["response"]
    weights = dict(zip(response["features"], response["coef"], strict=True))
    assert {"missing_numbers", "missing_names"} <= set(weights)
    for name, sign in SHORT_QA_SIGNS.items():
        assert weights[name] * sign >= 0, (name, weights[name])
