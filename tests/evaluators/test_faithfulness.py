"""Faithfulness, hallucination and the local support detector on cases with known answers.

The claim verdicts and the seeds' claim ratio (``details["claim_ratio"]``) are checked here;
the response-level value and verdict in test_faithfulness_verdict.py."""

from __future__ import annotations

import json

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._faithfulness import Faithfulness, Hallucination
from ragtrace.evaluators._faithfulness.detector import (
    WEIGHTS,
    SupportDetector,
    SupportModel,
    claim_support,
)
from ragtrace.evaluators._faithfulness.features import (
    FEATURES,
    claim_features,
    index_passages,
    numbers_in,
)
from ragtrace.evaluators._registry import create

AI_CONTEXT = [
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles. It's evolving rapidly with advancements in machine learning and "
    "deep learning.",
    "NLP is a branch of AI that enables computers to understand, interpret, and generate human "
    "language. Techniques include tokenization, stemming, and sentiment analysis.",
]
SUPER_BOWL = (
    "The First AFL-NFL World Championship Game, later known as Super Bowl I, was played on "
    "January 15, 1967, at the Los Angeles Memorial Coliseum."
)


def record(response: str, chunks: list[str]) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="q",
        chunks=tuple(Chunk(text=c, id=str(i)) for i, c in enumerate(chunks)),
        response=response,
    )


@pytest.fixture(scope="module")
def faithfulness() -> Faithfulness:
    return Faithfulness()


def test_seed_003_worked_example_both_claims_truthful(faithfulness: Faithfulness) -> None:
    answer = (
        "AI refers to machines mimicking human intelligence, including problem-solving and "
        "learning. AI has applications like virtual assistants, robotics, and autonomous vehicles."
    )
    (score,) = faithfulness.evaluate(record(answer, AI_CONTEXT))
    assert score.details["claim_ratio"] == 1.0  # 2 truthful claims / 2 claims, as the seed has it
    assert score.details["supported"] == 2 and score.details["unsupported"] == 0
    assert score.passed is True
    (ratio,) = Faithfulness(scoring="claims").evaluate(record(answer, AI_CONTEXT))
    assert ratio.value == 1.0 and ratio.passed is True


def test_seed_002_faithfulness_example_with_the_seed_claims() -> None:
    # The seed's LLM split the answer into these two claims; the detector gives the verdicts.
    claims = [
        "The first Super Bowl was held on January 15, 1967.",
        "The first Super Bowl was held in Florida.",
    ]
    support = claim_support(claims, [SUPER_BOWL])
    verdicts = [s >= 0.5 for s in support]
    assert verdicts == [True, False]
    assert sum(verdicts) / len(verdicts) == 0.5  # the seed's faithfulness score


def test_seed_002_hallucination_example() -> None:
    context = "Brazil is a country in South America. Its capital is Brasília."
    answer = record("The capital of Brazil is Florida.", [context])
    (score,) = Hallucination(scoring="claims").evaluate(answer)
    assert score.value == 1.0  # 1 unsupported claim / 1 claim
    assert score.passed is False
    (score,) = Hallucination().evaluate(answer)
    assert score.value >= 0.9 and score.details["claim_ratio"] == 0.0
    assert score.passed is False
    assert score.direction == "lower_is_better"


def test_names_the_unsupported_sentence(faithfulness: Faithfulness) -> None:
    context = [
        "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
        "The reset button is on the back panel."
    ]
    answer = (
        "The Aurora X2 router supports WPA3. Firmware updates install automatically at night. "
        "The router costs $349 and ships with a five-year warranty from Contoso."
    )
    (score,) = faithfulness.evaluate(record(answer, context))
    claims = score.details["claims"]
    assert [c["supported"] for c in claims] == [True, True, False]
    assert score.details["claim_ratio"] == pytest.approx(2 / 3, abs=1e-4)
    assert "$349" in score.explanation
    assert claims[0]["closest_passage_sentence"] == 0


def test_numbers_changed_from_the_context_are_unsupported() -> None:
    context = ["The campaign hopes to raise $500,000 by April 17."]
    support = claim_support(
        [
            "The campaign hopes to raise $500,000 by April 17.",
            "The campaign has raised $1.3 million by April 17.",
        ],
        context,
    )
    assert support[0] > 0.5 > support[1]


def test_batch_equals_one_by_one(faithfulness: Faithfulness) -> None:
    records = [
        record("The capital of Brazil is Florida.", ["Its capital is Brasília."]),
        record("AI includes robotics.", AI_CONTEXT),
        record("", AI_CONTEXT),
    ]
    batch = faithfulness.evaluate_batch(records)
    single = [faithfulness.evaluate(r) for r in records]
    assert [s[0].value for s in batch] == [s[0].value for s in single]
    assert [s[0].details for s in batch] == [s[0].details for s in single]
    assert batch[2][0].value == 1.0 and batch[2][0].details["claims"] == []


def test_bad_input_does_not_crash(faithfulness: Faithfulness) -> None:
    odd = record("Lone \ud800 surrogate. " + "Binary \x00\x01 bytes.", ["\ud800 context \x00"])
    (score,) = faithfulness.evaluate(odd)
    assert 0.0 <= score.value <= 1.0
    huge = record("The router supports WPA3. " * 200, ["The router supports WPA3."])
    (score,) = faithfulness.evaluate(huge)
    assert score.details["truncated"] is True
    assert len(score.details["claims"]) == 40


def test_registry_builds_both_and_they_agree() -> None:
    r = record(
        "AI includes robotics. The moon is made of cheese according to NASA in 1969.", AI_CONTEXT
    )
    (f,) = create("faithfulness").evaluate(r)
    (h,) = create("hallucination").evaluate(r)
    assert f.value == pytest.approx(1 - h.value)
    assert f.details["claims"] == h.details["claims"]


def test_weights_file_matches_features_and_is_small() -> None:
    data = json.loads(WEIGHTS.read_text())
    assert tuple(data["features"]) == FEATURES
    assert WEIGHTS.stat().st_size < 25_000_000
    model = SupportModel.load()
    assert len(model.coef) == len(FEATURES)


def test_weights_for_other_features_are_refused(tmp_path) -> None:
    data = json.loads(WEIGHTS.read_text())
    data["features"] = ["something_else", *data["features"][1:]]
    bad = tmp_path / "weights.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="retrain"):
        SupportDetector(weights=bad)


def test_numbers_compare_by_value() -> None:
    assert numbers_in("$1,300 at 17:00 and twenty") == [1300.0, 17.0, 0.0, 20.0]
    index = index_passages(["Open 17:0-21:0 daily, 1300 seats."])
    row = claim_features("Open from 17:00 to 21:00 with 1,300 seats.", index, [0.9])
    assert row[FEATURES.index("missing_numbers")] == 0.0


def test_meta_statements_are_recognised() -> None:
    index = index_passages(["The store opens at nine."])
    row = claim_features("The passages do not mention the closing time.", index, [0.2])
    assert row[FEATURES.index("meta_statement")] == 1.0


def test_h2o_convention_is_a_consistency_score_higher_is_better() -> None:
    """H2O's "Hallucination" has our name and the opposite direction: with convention="h2o"
    the value is 1 - our hallucination value, higher is better, H2O's threshold 0.75; a
    threshold t ported from H2O gives the same verdicts as ours at 1 - t."""
    answers = [
        record("The capital of Brazil is Florida.", ["Its capital is Brasília."]),
        record(
            "Artificial intelligence refers to machines mimicking human intelligence, like "
            "problem-solving and learning. AI includes applications like virtual assistants, "
            "robotics, and autonomous vehicles.",
            AI_CONTEXT,
        ),
        record("The first Super Bowl was held on January 15, 1967.", [SUPER_BOWL]),
    ]
    ours = [s for (s,) in Hallucination().evaluate_batch(answers)]
    h2o = [s for (s,) in Hallucination(convention="h2o").evaluate_batch(answers)]
    for mine, theirs in zip(ours, h2o, strict=True):
        assert (theirs.name, theirs.direction, theirs.threshold) == (
            "hallucination", "higher_is_better", 0.75
        )  # fmt: skip
        assert mine.direction == "lower_is_better"
        assert theirs.value == pytest.approx(1 - mine.value)  # type: ignore[operator]
        assert theirs.passed is (theirs.value >= 0.75)  # type: ignore[operator]
        assert theirs.details["convention"] == "h2o" and "higher is better" in theirs.explanation
    assert h2o[0].passed is False and h2o[1].passed is True
    for t in (0.5, 0.8):
        ported = Hallucination(convention="h2o", threshold=t).evaluate_batch(answers)
        mapped = Hallucination(threshold=round(1 - t, 4)).evaluate_batch(answers)
        assert [s.passed for (s,) in ported] == [s.passed for (s,) in mapped]
    claims = Hallucination(convention="h2o", scoring="claims").evaluate(answers[0])[0]
    assert claims.value == 0.0 and claims.passed is False  # no claim supported
    with pytest.raises(ValueError, match="convention must be one of ragtrace, h2o"):
        Hallucination(convention="vectara")
    with pytest.raises(ValueError, match="with convention='h2o' give one threshold="):
        Hallucination(convention="h2o", thresholds={"qa": 0.4})
    built = create("hallucination", convention="h2o")
    assert isinstance(built, Hallucination) and built.direction == "higher_is_better"
    assert Hallucination.direction == "lower_is_better"  # the class default is untouched


def test_the_readme_says_what_faithfulness_is() -> None:
    """README.md describes faithfulness as the calibrated probability (not the claim ratio,
    which is what scoring="claims" gives) and hallucination as the same the other way round."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert (
        "`faithfulness` (the calibrated probability that the answer holds no unsupported claim"
        in readme
    )
    assert 'the seeds\' share of supported claims with `scoring="claims"`' in readme
    assert "`hallucination` (the same probability the other way round, lower is better" in readme
    answer = record(
        "The Aurora X2 router supports WPA3. The router costs $349 with a warranty from Contoso.",
        ["The Aurora X2 router supports WPA3. Firmware updates install automatically."],
    )
    (value,) = Faithfulness().evaluate(answer)
    (ratio,) = Faithfulness(scoring="claims").evaluate(answer)
    (halluc,) = Hallucination().evaluate(answer)
    probability = value.details["hallucination_probability"]
    assert value.value == pytest.approx(1 - probability, abs=1e-4)
    assert ratio.value == value.details["claim_ratio"] == 0.5
    assert value.value != pytest.approx(ratio.value, abs=0.05)  # not the claim ratio
    assert halluc.value == pytest.approx(probability, abs=1e-4)


TESTING_CONTEXT = (
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, "
    "robotics, and autonomous vehicles."
)


def test_the_explanation_never_contradicts_the_verdict(faithfulness: Faithfulness) -> None:
    """docs/testing.md's kittens answer fails on the probability of the answer as a whole while
    its one claim clears the per-claim cut: the explanation says so, never "0 of 1 claims
    unsupported" beside a failing verdict."""
    answers = {
        "kittens": "AI includes applications like electric sheep and cyborg kittens.",
        "assistants": "AI includes applications like virtual assistants and robotics.",
    }
    for name, answer in answers.items():
        (score,) = faithfulness.evaluate(record(answer, [TESTING_CONTEXT]))
        unsupported = score.details["unsupported"]
        if score.passed is False:
            assert unsupported > 0 or "flagged as a whole" in score.explanation, name
            assert f"0 of {len(score.details['claims'])} claims unsupported" not in (
                score.explanation
            )
        else:
            assert unsupported == 0 or "not enough to flag the answer" in score.explanation
    (score,) = faithfulness.evaluate(record(answers["kittens"], [TESTING_CONTEXT]))
    assert score.passed is False and "flagged as a whole" in score.explanation
