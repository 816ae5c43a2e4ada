"""The rules queue exactly the records that deserve a look, with the right reasons and order."""

from __future__ import annotations

import pytest

from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._pipeline.sampling import ratio_bound
from ragtrace.review._items import Reason
from ragtrace.review._rules import ReviewRules
from tests.review.conftest import score

RECORD = RagRecord(trace_id="ab" * 16, span_id="cd" * 8, query="q", response="a")
NO_SAMPLE = ReviewRules(sample_rate=0.0)


def ev(evaluator: str, *scores: Score) -> Evaluation:
    return Evaluation(evaluator, scores, 0, 1)


def decide(
    rules: ReviewRules, *evaluations: Evaluation
) -> tuple[list[tuple[str, str | None]], int]:
    decision = rules.decide(RECORD, evaluations)
    assert decision is not None
    return [(r.name, r.evaluator) for r in decision.reasons], decision.priority


def test_passing_scores_errors_and_informational_scores_are_left_out() -> None:
    evaluations = (
        ev("looping", score("looping.unique_sentences", 1.0, True)),
        ev("groundedness", score("groundedness", None, None, kind="model", error="timeout")),
        ev("length", score("length", 0.1, None, threshold=None)),
    )
    assert NO_SAMPLE.decide(RECORD, evaluations) is None
    assert NO_SAMPLE.decide(RECORD, ()) is None


def test_each_rule_names_its_reason_and_priority() -> None:
    assert decide(NO_SAMPLE, ev("looping", score("looping.unique_sentences", 0.2, False))) == (
        [("score_failed", "looping.unique_sentences")],
        50,
    )
    assert decide(NO_SAMPLE, ev("pii_leakage", score("pii_leakage", 0.0, False))) == (
        [("pii", "pii_leakage")],
        80,
    )
    assert decide(NO_SAMPLE, ev("sensitive_data", score("sensitive_data.api_key", 0.0, False))) == (
        [("secret", "sensitive_data.api_key")],
        90,
    )
    # A family is recognised by the evaluator's name too, whatever its scores are called.
    assert decide(NO_SAMPLE, ev("toxicity", score("insult", 0.9, False, kind="model"))) == (
        [("toxicity", "insult")],
        80,
    )


def test_several_reasons_raise_the_priority_a_little() -> None:
    reasons, priority = decide(
        NO_SAMPLE,
        ev("sensitive_data", score("sensitive_data", 0.0, False)),
        ev("pii_leakage", score("pii_leakage", 0.0, False)),
        ev("looping", score("looping.compression_ratio", 0.1, False)),
        ev("tokens_presence", score("tokens_presence.answer", 0.0, False)),
    )
    assert [r for r, _ in reasons] == ["secret", "pii", "score_failed", "score_failed"]
    assert priority == 90 + 2  # three distinct reasons: the top one plus two


def test_thresholds_given_to_the_rules_override_the_evaluators() -> None:
    rules = ReviewRules(sample_rate=0.0, thresholds={"groundedness": 0.8, "toxicity": 0.3})
    passing = score("groundedness", 0.7, True, kind="model")  # passed its own 0.5
    assert decide(rules, ev("groundedness", passing))[0] == [("score_failed", "groundedness")]
    high = Score("toxicity", 0.4, direction="lower_is_better", threshold=0.5, passed=True)
    assert decide(rules, ev("toxicity", high))[0] == [("toxicity", "toxicity")]
    fine = score("groundedness", 0.85, False, kind="model")  # failed 0.9, passes 0.8
    assert rules.decide(RECORD, [ev("groundedness", fine)]) is None


def test_cheap_and_judge_disagreeing_is_a_reason() -> None:
    cheap_pass = ev("groundedness", score("groundedness", 0.9, True, kind="model"))
    judge_fail = ev("faithfulness", score("faithfulness", 0.2, False, kind="judge"))
    reasons, priority = decide(NO_SAMPLE, cheap_pass, judge_fail)
    assert reasons == [("score_failed", "faithfulness"), ("disagreement", "faithfulness")]
    assert priority == 71
    detail = NO_SAMPLE.decide(RECORD, [cheap_pass, judge_fail]).reasons[-1].detail  # type: ignore[union-attr]
    assert detail == "groundedness (model) pass vs faithfulness (judge) fail"
    # Agreeing evaluators, or two cheap ones, are no reason.
    judge_pass = ev("faithfulness", score("faithfulness", 0.8, True, kind="judge"))
    assert NO_SAMPLE.decide(RECORD, [cheap_pass, judge_pass]) is None
    lexical_fail = ev("hallucination", score("hallucination", 0.1, False, kind="lexical"))
    assert decide(NO_SAMPLE, cheap_pass, lexical_fail)[0] == [("score_failed", "hallucination")]
    # Unrelated metrics never disagree.
    relevance_fail = ev("context_relevance", score("context_relevance", 0.1, False, kind="judge"))
    assert decide(NO_SAMPLE, cheap_pass, relevance_fail)[0] == [
        ("score_failed", "context_relevance")
    ]


def test_a_judge_variant_named_with_a_judge_suffix_is_compared_with_its_cheap_twin() -> None:
    cheap = ev("context_relevance", score("context_relevance", 0.2, False, kind="model"))
    judge = ev("context_relevance_judge", score("context_relevance_judge", 0.9, True, kind="judge"))
    reasons, _ = decide(NO_SAMPLE, cheap, judge)
    assert ("disagreement", "context_relevance_judge") in reasons


def test_ignored_families_are_invisible_to_every_rule() -> None:
    rules = ReviewRules(sample_rate=0.0, ignore=("looping",))
    assert rules.decide(RECORD, [ev("looping", score("looping.x", 0.0, False))]) is None


def test_random_sample_is_deterministic_uniform_and_independent_of_trace_sampling() -> None:
    rules = ReviewRules(sample_rate=0.1)
    passing = [ev("looping", score("looping.unique_sentences", 1.0, True))]
    ids = [f"{(i * 0x9E3779B97F4A7C15) % (1 << 128):032x}" for i in range(20000)]

    def sampled(trace_id: str) -> bool:
        record = RagRecord(trace_id=trace_id, span_id="1" * 16, query="q")
        decision = rules.decide(record, passing)
        if decision is None:
            return False
        assert decision.reasons == (Reason("random_sample", 10, None, "calibration"),)
        return True

    chosen = [t for t in ids if sampled(t)]
    assert 1800 <= len(chosen) <= 2200  # 10% of 20000, within about 4.5 sigma
    assert [t for t in ids[:500] if sampled(t)] == [t for t in chosen if t in set(ids[:500])]
    # Among traces an evaluation sampler keeps at 10% (low 64 bits < bound), still ~10%.
    kept = [t for t in ids if int(t, 16) & ((1 << 64) - 1) < ratio_bound(0.1)]
    share = sum(sampled(t) for t in kept) / len(kept)
    assert 0.05 < share < 0.15
    assert ReviewRules(sample_rate=1.0).decide(RECORD, passing) is not None
    assert ReviewRules(sample_rate=0.0).decide(RECORD, passing) is None


def test_bad_rules_fail_at_construction_naming_the_problem() -> None:
    with pytest.raises(ValueError, match="sample_rate"):
        ReviewRules(sample_rate=1.5)
    with pytest.raises(ValueError, match="unknown rule"):
        ReviewRules(priorities={"nonsense": 3})
    with pytest.raises(ValueError, match="threshold of 'x'"):
        ReviewRules(thresholds={"x": float("nan")})
    assert ReviewRules(priorities={"pii": 99}).priority("pii") == 99


def faithfulness(probability: float, calibration: str = "qa") -> Evaluation:
    """The local detector's Score: failed at its shipped qa cut (0.426) above that."""
    details = {"hallucination_probability": probability, "calibration": calibration}
    failed = probability > 0.426
    return ev(
        "faithfulness",
        score("faithfulness", 1 - probability, not failed, kind="model", details=details),
    )


def test_faithfulness_routes_at_its_lenient_point_by_default() -> None:
    # Flagged by the default verdict (which fails a share of faithful answers by design), but
    # not sure enough for a person's queue: left out.
    assert NO_SAMPLE.decide(RECORD, [faithfulness(0.6)]) is None
    decision = NO_SAMPLE.decide(RECORD, [faithfulness(0.97)])
    assert decision is not None
    (reason,) = decision.reasons
    assert (reason.name, reason.evaluator) == ("score_failed", "faithfulness")
    assert reason.detail == "faithfulness 0.03 fails at its lenient operating point"
    # The summary calibration's lenient cut is 0.97.
    assert NO_SAMPLE.decide(RECORD, [faithfulness(0.96, "summary")]) is None


def test_points_can_be_cleared_or_chosen_and_thresholds_still_win() -> None:
    every_verdict = ReviewRules(sample_rate=0.0, points={})
    assert decide(every_verdict, faithfulness(0.6))[0] == [("score_failed", "faithfulness")]
    strict_groundedness = ReviewRules(sample_rate=0.0, points={"groundedness": "strict"})
    fine = score("groundedness", 0.5, True, kind="model", details={"task": "qa"})
    assert decide(strict_groundedness, ev("groundedness", fine))[0] == [
        ("score_failed", "groundedness")  # 0.5 < the strict qa cut, 0.92
    ]
    pinned = ReviewRules(sample_rate=0.0, thresholds={"faithfulness": 0.5})
    assert decide(pinned, faithfulness(0.6))[0] == [("score_failed", "faithfulness")]
    with pytest.raises(ValueError, match="faithfulness has no operating point 'strict'"):
        ReviewRules(points={"faithfulness": "strict"})
    with pytest.raises(ValueError, match="unknown evaluator 'nope'"):
        ReviewRules(points={"nope": "lenient"})
