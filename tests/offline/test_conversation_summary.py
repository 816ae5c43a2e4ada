"""``ConversationSummary``: the worst sessions follow the score's direction, ties in first-seen
order, and a score without a threshold has a mean but no pass rate."""

from __future__ import annotations

import pytest

from ragtrace._model import Score
from ragtrace._offline.conversation_summary import ConversationSummary


def test_worst_sessions_follow_the_direction_and_keep_first_seen_ties() -> None:
    summary = ConversationSummary(worst=2)
    values = {"s1": 0.2, "s2": 0.9, "s3": 0.9, "s4": 0.5, "s5": 0.9}
    for session, value in values.items():
        summary.add("sys", session, [("drift", Score("drift", value, direction="lower_is_better"))])
        passing = Score("kept", value, threshold=0.5, passed=value >= 0.5)
        summary.add("sys", session, [("kept", passing)])
    drift, kept = summary.rows()
    assert [w["session_id"] for w in drift["worst"]] == ["s2", "s3"]
    assert (drift["sessions"], drift["pass_rate"], drift["thresholds"]) == (5, None, [])
    assert drift["mean"] == pytest.approx(sum(values.values()) / 5)
    assert [w["session_id"] for w in kept["worst"]] == ["s1", "s4"]
    assert (kept["passed"], kept["pass_rate"]) == (4, 0.8)


def test_nothing_scored_is_empty_and_a_negative_count_is_refused() -> None:
    assert not ConversationSummary()
    assert ConversationSummary().rows() == []
    with pytest.raises(ValueError, match="worst must be >= 0"):
        ConversationSummary(worst=-1)
