"""Named operating points: every default evaluator offers them, by name or number, consistently."""

from __future__ import annotations

import pytest

from ragtrace.evaluators import create
from ragtrace.evaluators._operating_points import POINT_NAMES, choose, describe, rates
from ragtrace.evaluators._registry import ONLINE_SUITE


@pytest.mark.parametrize("name", [*ONLINE_SUITE, "toxicity"])
def test_every_point_builds_and_the_default_is_the_shipped_one(name: str) -> None:
    evaluator = create(name)
    points = type(evaluator).operating_points
    assert "default" in points and set(points) <= set(POINT_NAMES)
    assert evaluator.operating_point == "default"
    for point in points:
        built = create(name, threshold=point)
        assert built.operating_point == point
        for score, threshold in points[point].items():
            if score.startswith(name):  # a score's own threshold (others are keyed by task)
                assert built.threshold_of(score) == threshold


def test_a_number_is_a_custom_point_and_an_unknown_name_is_refused() -> None:
    custom = create("context_relevance", threshold=0.5)
    assert custom.operating_point is None
    assert custom.threshold_of("context_relevance.recall") == 0.5
    with pytest.raises(ValueError, match="unknown operating point 'medium'; use one of"):
        create("context_relevance", threshold="medium")
    with pytest.raises(ValueError, match="no named operating points"):
        choose("bleu", {}, "strict")


def test_measured_rates_are_described_for_every_default_score() -> None:
    for name in ONLINE_SUITE:
        measured = rates(name)
        assert "default" in measured.get("points", {}), name
        lines = describe(name)
        assert lines[0].startswith(("strict:", "default:")) and "measured by" in lines[-1]
        default = measured["points"]["default"]
        assert {"tuning", "locked"} <= set(default), name
    assert describe("bleu") == []
