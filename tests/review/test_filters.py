"""Queue filters from URL parameters and command-line values, and back into links."""

from __future__ import annotations

import pytest

from ragtrace.review._filters import filter_from_params, filter_to_params, format_time, parse_time
from ragtrace.review._items import QueueFilter

NOW = 1_800_000_000 * 10**9


def test_times_are_iso_utc_or_durations_before_now() -> None:
    assert parse_time("2027-01-15T08:00:00Z") == NOW
    assert parse_time("2027-01-15T08:00:00") == NOW  # no offset: UTC
    assert parse_time("2027-01-15T09:00:00+01:00") == NOW
    assert parse_time("2027-01-15T08:00:00.250") == NOW + 250_000_000
    assert parse_time("2027-01-15") == NOW - 8 * 3600 * 10**9
    assert parse_time("90s", now_ns=NOW) == NOW - 90 * 10**9
    assert parse_time("24h", now_ns=NOW) == NOW - 86400 * 10**9
    assert parse_time("1.5d", now_ns=NOW) == NOW - 129600 * 10**9
    assert parse_time("2w", now_ns=NOW) == NOW - 14 * 86400 * 10**9
    assert format_time(NOW) == "2027-01-15T08:00:00"
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")


def test_parameters_make_a_filter_and_the_filter_makes_them_back() -> None:
    params = {
        "reason": "pii",
        "evaluator": "groundedness",
        "min": "0",
        "max": "0.5",
        "app": "shop",
        "since": "2027-01-15T08:00:00",
        "until": "2027-01-16T08:00:00",
        "labelled": "all",
        "verdict": "bad",
        "q": "refund",
    }
    f = filter_from_params(params)
    assert f == QueueFilter(
        reason="pii",
        evaluator="groundedness",
        min_score=0.0,
        max_score=0.5,
        app="shop",
        since_ns=NOW,
        until_ns=NOW + 86400 * 10**9,
        labelled="all",
        verdict="bad",
        search="refund",
    )
    back = filter_to_params(f)
    assert back == {**params, "min": "0.0"}
    assert filter_from_params(back) == f
    assert filter_to_params(QueueFilter()) == {}
    assert filter_from_params({"reason": "  ", "labelled": ""}) == QueueFilter()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min": "low"}, "min must be a number"),
        ({"max": "nan"}, "max must be a finite number"),
        ({"labelled": "maybe"}, "labelled must be no, yes or all"),
        ({"verdict": "meh"}, "verdict must be one of"),
        ({"since": "soon"}, "since: not a time"),
    ],
)
def test_bad_parameters_name_themselves(params: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        filter_from_params(params)
