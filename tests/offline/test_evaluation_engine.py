"""The evaluation engine's runs: batching, skips, error isolation, timeouts, output checks,
workers (threads; worker processes: ``test_processes``; the online calls: ``test_pipeline``)."""

from __future__ import annotations

import pytest

from ragtrace._engine import EvaluationEngine
from ragtrace._engine.outcomes import Outcome, Skip
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators import _registry as registry
from tests.offline.conftest import Length, rec

pytestmark = pytest.mark.usefixtures("registered")


def length(**options: object) -> Length:
    built = registry.create("length", **options)
    assert isinstance(built, Length)
    return built


def values(outcome: Outcome) -> list[tuple[str, str, float | None, str | None]]:
    return [(ev, s.name, s.value, s.error) for ev, s in outcome.scores]


def test_batches_by_batch_size_and_keeps_order() -> None:
    ev = length(batch_size=2)
    records = [rec("a" * n) for n in (10, 20, 30, 40, 50)]
    with EvaluationEngine([ev]) as runner:
        outcomes = runner.run(records)
    assert ev.batches == [["a" * 10, "a" * 20], ["a" * 30, "a" * 40], ["a" * 50]]
    assert [values(o) for o in outcomes] == [
        [("length", "length", n / 100, None)] for n in (10, 20, 30, 40, 50)
    ]
    s = outcomes[0].scores[0][1]
    assert (s.passed, s.label, s.threshold, s.explanation) == (True, "pass", 0.1, "10 chars")
    stats = runner.stats["length"]
    assert (stats.calls, stats.records, stats.fallbacks, stats.timeouts) == (3, 5, 0, 0)
    assert stats.first_call_s is not None and stats.seconds >= stats.first_call_s


def test_skips_records_missing_required_fields_without_calling() -> None:
    ev = length(batch_size=8)
    words = registry.create("words")
    records = [rec("one two"), rec(None), rec("   "), rec("x", query=None)]
    with EvaluationEngine([ev, words]) as runner:
        outcomes = runner.run(records)
    assert ev.batches == [["one two", "x"]]
    assert values(outcomes[0]) == [
        ("length", "length", 0.07, None),
        ("words", "words.query", 0.1, None),
        ("words", "words.response", 0.2, None),
    ]
    assert outcomes[0].skipped == ()
    assert outcomes[1] == Outcome((), (Skip("length", ("response",)), Skip("words", ("response",))))
    assert outcomes[2].skipped == (Skip("length", ("response",)), Skip("words", ("response",)))
    assert values(outcomes[3]) == [("length", "length", 0.01, None)]
    assert outcomes[3].skipped == (Skip("words", ("query",)),)


def test_a_raising_record_is_isolated_by_running_its_batch_one_by_one() -> None:
    ev = length(batch_size=4)
    errors: list[tuple[str, RagRecord, str]] = []
    records = [rec("a" * 10), rec("a" * 20), rec("poison"), rec("a" * 40), rec("a" * 50), rec("a")]
    with EvaluationEngine([ev], on_error=lambda *args: errors.append(args)) as runner:
        outcomes = runner.run(records)
    assert ev.batches == [
        ["a" * 10, "a" * 20, "poison", "a" * 40],  # raised: run again one by one
        ["a" * 10], ["a" * 20], ["poison"], ["a" * 40],
        ["a" * 50, "a"],
    ]  # fmt: skip
    assert [values(o) for o in outcomes] == [
        [("length", "length", 0.1, None)],
        [("length", "length", 0.2, None)],
        [("length", "length", None, "ValueError: poisoned record")],
        [("length", "length", 0.4, None)],
        [("length", "length", 0.5, None)],
        [("length", "length", 0.01, None)],
    ]
    failed = outcomes[2].scores[0][1]
    assert (failed.label, failed.passed, failed.threshold) == ("error", None, 0.1)
    assert errors == [("length", records[2], "ValueError: poisoned record")]
    stats = runner.stats["length"]
    assert (stats.calls, stats.records, stats.fallbacks) == (6, 10, 1)


def test_wrong_number_of_results_is_retried_then_an_error() -> None:
    ev = length(batch_size=3)
    with EvaluationEngine([ev]) as runner:
        outcomes = runner.run([rec("ok"), rec("short batch"), rec("fine")])
    assert ev.batches == [["ok", "short batch", "fine"], ["ok"], ["short batch"], ["fine"]]
    assert [values(o) for o in outcomes] == [
        [("length", "length", 0.02, None)],
        [("length", "length", None, "evaluate_batch returned a list of 0 for 1 records")],
        [("length", "length", 0.04, None)],
    ]


def test_output_is_checked_like_the_pipeline_does() -> None:
    with EvaluationEngine([length()]) as runner:
        outcomes = runner.run([rec("out of range"), rec("not a score")])
    assert [values(o) for o in outcomes] == [
        [("length", "length", None, "value 1.5 outside [0, 1]")],
        [("length", "length", None, "evaluate returned str")],
    ]


def test_an_evaluators_own_timeout_error_is_an_ordinary_failure() -> None:
    ev = length(batch_size=2)
    with EvaluationEngine([ev]) as runner:
        outcomes = runner.run([rec("own timeout"), rec("abc")])
    assert len(ev.batches) == 3  # the batch, then one by one
    assert values(outcomes[0]) == [
        ("length", "length", None, "TimeoutError: upstream took too long")
    ]
    assert values(outcomes[1]) == [("length", "length", 0.03, None)]
    assert runner.stats["length"].timeouts == 0


def test_a_call_that_times_out_fails_its_batch_and_is_not_retried() -> None:
    ev = length(batch_size=2, timeout_s=0.1)
    records = [rec("hang"), rec("abc"), rec("abcd")]
    with EvaluationEngine([ev], load_allowance_s=0) as runner:
        outcomes = runner.run(records)
        Length.release.set()
    assert ev.batches == [["hang", "abc"], ["abcd"]]
    timed_out = ("length", "length", None, "timed out after 0.2 s")  # 0.1 s per record
    assert [values(o) for o in outcomes] == [
        [timed_out], [timed_out], [("length", "length", 0.04, None)]
    ]  # fmt: skip
    assert runner.stats["length"].timeouts == 1


def test_runner_timeout_overrides_and_first_call_gets_the_load_allowance() -> None:
    ev = length(timeout_s=60)
    with EvaluationEngine([ev], timeout_s=0.05, load_allowance_s=0.3) as runner:
        first = runner.run([rec("hang")])  # 0.05 + 0.3 s
        assert values(first[0]) == [("length", "length", None, "timed out after 0.35 s")]
        second = runner.run([rec("hang")])
        Length.release.set()
    assert values(second[0]) == [("length", "length", None, "timed out after 0.05 s")]


def test_workers_give_the_same_outcomes() -> None:
    records = [rec("w " * n, query="q " * (n % 7)) for n in range(40)] + [rec("poison")]
    results = []
    for workers in (1, 3):
        with EvaluationEngine(
            [length(batch_size=8), registry.create("words")], workers=workers
        ) as runner:
            results.append(runner.run(records))
    assert results[0] == results[1]
    assert values(results[0][-1])[0] == ("length", "length", None, "ValueError: poisoned record")


def test_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match=r"distinct names; repeated: \['length'\]"):
        EvaluationEngine([length(), length()])
    with pytest.raises(ValueError, match="workers must be >= 1"):
        EvaluationEngine([length()], workers=0)
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        EvaluationEngine([length()], timeout_s=0)


def test_scores_are_plain_scores() -> None:
    with EvaluationEngine([length()]) as runner:
        (outcome,) = runner.run([rec("x")])
    expected = Score(
        "length", 0.01, label="fail", explanation="1 chars", threshold=0.1, passed=False
    )
    assert outcome.scores == (("length", expected),)
