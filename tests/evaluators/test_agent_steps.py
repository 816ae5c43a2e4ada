"""tool_errors, repeated_tool_calls and agent_steps: values, verdicts, skips and bad input.

Each case is a hand-built turn whose right answer is plain: no failure and a failure, distinct
calls and a loop, a short agent run and a long one.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._model import RagRecord, ToolCall
from ragtrace.evaluators import create
from ragtrace.evaluators._agent_steps import (
    AgentSteps,
    RepeatedToolCalls,
    ToolErrors,
    normalised_arguments,
    steps_value,
)
from ragtrace.evaluators._registry import ONLINE, ONLINE_SUITE, tier

NAMES = ("tool_errors", "repeated_tool_calls", "agent_steps")


def turn(*calls: ToolCall, llm_calls: int = 0) -> RagRecord:
    return RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query="How long is the refund window?",
        response="30 days.",
        tool_calls=calls,
        llm_calls=llm_calls,
    )


def call(
    name: str = "search", arguments: str | None = '{"query": "refund"}', **kw: Any
) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, **kw)


FAILED = {"status": "error", "error": "TimeoutError: search backend did not answer"}


# -- what they declare ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, cls, threshold",
    [
        ("tool_errors", ToolErrors, 0.0),
        ("repeated_tool_calls", RepeatedToolCalls, 0.0),
        ("agent_steps", AgentSteps, 0.9),
    ],
)
def test_registered_online_lexical_lower_is_better(name: str, cls: type, threshold: float) -> None:
    evaluator = create(name)
    assert type(evaluator) is cls
    assert (evaluator.name, evaluator.kind, evaluator.direction) == (
        name,
        "lexical",
        "lower_is_better",
    )
    assert evaluator.threshold == threshold
    needed = "llm_calls" if name == "agent_steps" else "tool_calls"
    assert evaluator.requires == frozenset({needed})
    assert tier(name) == ONLINE and name not in ONLINE_SUITE
    clone = pickle.loads(pickle.dumps(evaluator))  # worker processes get them pickled
    assert type(clone) is cls and clone.threshold == threshold


# -- skipped when the turn has nothing to judge ---------------------------------------------------


def test_a_turn_without_tool_or_llm_calls_is_skipped_not_scored() -> None:
    plain = turn()
    assert create("tool_errors").missing_fields(plain) == ("tool_calls",)
    assert create("repeated_tool_calls").missing_fields(plain) == ("tool_calls",)
    assert create("agent_steps").missing_fields(plain) == ("llm_calls",)
    for name in NAMES:
        assert create(name).evaluate(plain) == []
    # a chain's turn: one LLM call, no tool: agent_steps scores it, the tool evaluators skip it
    chain = turn(llm_calls=1)
    assert create("tool_errors").missing_fields(chain) == ("tool_calls",)
    assert create("agent_steps").missing_fields(chain) == ()


def test_the_pipeline_counts_them_as_skipped() -> None:
    engine = EvaluationEngine([create(n) for n in NAMES])
    try:
        plain, agent = engine.run([turn(), turn(call(), llm_calls=2)])
    finally:
        engine.close()
    assert plain.scores == ()
    assert [(s.evaluator, s.missing) for s in plain.skipped] == [
        ("tool_errors", ("tool_calls",)),
        ("repeated_tool_calls", ("tool_calls",)),
        ("agent_steps", ("llm_calls",)),
    ]
    assert agent.skipped == ()
    assert [(n, s.value, s.passed) for n, s in agent.scores] == [
        ("tool_errors", 0.0, True),
        ("repeated_tool_calls", 0.0, True),
        ("agent_steps", 0.5, True),
    ]


# -- tool_errors ----------------------------------------------------------------------------------


def test_no_failed_call_passes() -> None:
    (score,) = create("tool_errors").evaluate(turn(call(), call("lookup", '{"id": 7}')))
    assert (score.value, score.passed, score.label) == (0.0, True, "pass")
    assert score.explanation == "none of 2 tool calls failed"
    assert score.details == {"calls": 2, "failed": 0, "recovered": 0, "counted": 0, "errors": []}


def test_one_failed_call_fails_the_turn_and_is_listed() -> None:
    record = turn(
        call(**FAILED),
        call("search", '{"query": "refund policy"}'),
        call("lookup", '{"id": 7}', status="error", error="KeyError: 7"),
        call("lookup", '{"id": 8}'),
    )
    (score,) = create("tool_errors", count_recovered=True).evaluate(record)
    assert (score.value, score.passed, score.label) == (0.5, False, "fail")
    details = dict(score.details)
    errors = details.pop("errors")
    assert details == {"calls": 4, "failed": 2, "recovered": 2, "counted": 2}
    assert errors == [
        {"index": 0, "name": "search", "error": FAILED["error"], "recovered": True},
        {"index": 2, "name": "lookup", "error": "KeyError: 7", "recovered": True},
    ]
    assert "2 of 4 tool calls failed" in (score.explanation or "")
    # by default a failure a later call of the same tool made good does not count
    (forgiving,) = create("tool_errors").evaluate(record)
    assert (forgiving.value, forgiving.passed) == (0.0, True)
    assert forgiving.details["failed"] == 2 and forgiving.details["counted"] == 0
    assert forgiving.explanation == score.explanation  # the failures are still told
    assert ToolErrors().count_recovered is False
    (left,) = ToolErrors(count_recovered=False).evaluate(turn(call(), call(**FAILED)))
    assert (left.value, left.passed) == (0.5, False)  # the last search failed: nothing made good


def test_the_threshold_is_an_option() -> None:
    record = turn(call(**FAILED), call("a"), call("b"), call("c"))
    (score,) = create("tool_errors", threshold=0.5).evaluate(record)
    assert (score.value, score.threshold, score.passed) == (0.25, 0.5, True)
    (every,) = create("tool_errors", threshold=0.5).evaluate(turn(call(**FAILED), call(**FAILED)))
    assert (every.value, every.passed) == (1.0, False)


# -- repeated_tool_calls --------------------------------------------------------------------------


def test_distinct_calls_pass() -> None:
    record = turn(
        call("search", '{"query": "refund window"}'),
        call("search", '{"query": "refund fees"}'),
        call("lookup", '{"query": "refund window"}'),  # another tool, same arguments
    )
    (score,) = create("repeated_tool_calls").evaluate(record)
    assert (score.value, score.passed) == (0.0, True)
    assert score.details == {"calls": 3, "repeats": 0, "retries": 0, "repeated": []}


def test_a_loop_of_the_same_call_fails_whatever_its_spelling() -> None:
    record = turn(
        call("search", '{"query": "Refund  window", "k": 3}'),
        call("search", '{"k": 3.0,\n "query": "refund window "}'),
        call("lookup", '{"id": 7}'),
        call("search", '{"query":"REFUND WINDOW","k":3}'),
    )
    (score,) = create("repeated_tool_calls").evaluate(record)
    assert (score.value, score.passed, score.label) == (0.5, False, "fail")
    assert score.details == {
        "calls": 4,
        "repeats": 2,
        "retries": 0,
        "repeated": [
            {
                "name": "search",
                "arguments": '{"k":3,"query":"refund window"}',
                "count": 3,
                "indices": [0, 1, 3],
                "retries": 0,
            }
        ],
    }
    assert score.explanation == "2 of 4 tool calls repeat an earlier one: search x3"


def test_a_retry_after_a_failure_counts_only_when_told_to() -> None:
    record = turn(call(**FAILED), call(), call("lookup", "7"))
    (score,) = create("repeated_tool_calls", count_retries=True).evaluate(record)
    assert (score.value, score.passed) == (pytest.approx(1 / 3), False)
    assert score.details["retries"] == 1 and score.details["repeated"][0]["retries"] == 1
    (forgiving,) = create("repeated_tool_calls").evaluate(record)
    assert (forgiving.value, forgiving.passed) == (0.0, True)
    assert forgiving.details["retries"] == 1 and RepeatedToolCalls().count_retries is False
    # the same call made again after it succeeded is a loop either way
    looped = turn(call(**FAILED), call(), call())
    (again,) = RepeatedToolCalls(count_retries=False).evaluate(looped)
    assert (again.value, again.passed) == (pytest.approx(1 / 3), False)


@pytest.mark.parametrize(
    "a, b, same",
    [
        ('{"q": "Paris", "n": 2}', '{"n": 2.0, "q": "  paris"}', True),
        ('{"q": ["A", "B"]}', '{"q": ["a", "b"]}', True),
        ('{"q": ["A", "B"]}', '{"q": ["b", "a"]}', False),  # list order matters
        ('{"q": "Paris", "n": 2}', '{"q": "Paris", "n": 3}', False),
        ("Refund   Window", "refund window", True),  # not JSON: compared as folded text
        ('{"q": "refund', '{"q":  "REFUND', True),  # cut by capture: text too
        (None, "", True),
        (None, "{}", False),
    ],
)
def test_arguments_are_normalised(a: str | None, b: str | None, same: bool) -> None:
    assert (normalised_arguments(a) == normalised_arguments(b)) is same


# -- agent_steps ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "llm_calls, value, passed",
    [(1, 0.0, True), (2, 0.5, True), (4, 0.75, True), (10, 0.9, True), (11, 10 / 11, False)],
)
def test_steps_map_to_n_minus_one_over_n_and_fail_above_ten(
    llm_calls: int, value: float, passed: bool
) -> None:
    record = turn(call(), call("lookup", "7"), call(), llm_calls=llm_calls)
    (score,) = create("agent_steps").evaluate(record)
    assert score.value == pytest.approx(value) and score.passed is passed
    assert score.details == {
        "llm_calls": llm_calls,
        "tool_calls": 3,
        "failed_tool_calls": 0,
        "tools": {"search": 2, "lookup": 1},
        "max_llm_calls": 10,
    }
    assert score.explanation == (
        f"{llm_calls} LLM call(s) and 3 tool call(s) for one answer (fails above 10 LLM calls)"
    )


def test_the_step_limit_is_an_option() -> None:
    strict = create("agent_steps", max_llm_calls=3)
    assert strict.threshold == steps_value(3)
    assert [strict.evaluate(turn(llm_calls=n))[0].passed for n in (1, 3, 4)] == [True, True, False]
    by_value = create("agent_steps", threshold=0.5)  # the value's scale: at most 2 calls
    assert by_value.max_llm_calls is None
    assert [by_value.evaluate(turn(llm_calls=n))[0].passed for n in (2, 3)] == [True, False]
    with pytest.raises(ValueError, match="max_llm_calls or threshold, not both"):
        create("agent_steps", max_llm_calls=3, threshold=0.5)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_llm_calls must be a positive integer"):
            create("agent_steps", max_llm_calls=bad)


@pytest.mark.parametrize(
    "cls, option", [(ToolErrors, "count_recovered"), (RepeatedToolCalls, "count_retries")]
)
def test_bad_options_fail_at_construction(cls: type, option: str) -> None:
    with pytest.raises(ValueError, match=f"{option} must be true or false"):
        cls(**{option: "yes"})


# -- never raises ---------------------------------------------------------------------------------


def test_a_malformed_record_gives_an_error_score_not_an_exception() -> None:
    broken = RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query="q",
        tool_calls=("not a tool call",),  # type: ignore[arg-type]
        llm_calls="many",  # type: ignore[arg-type]
    )
    for name in NAMES:
        (score,) = create(name).evaluate(broken)
        assert score.value is None and score.label == "error" and score.error, name
    (deep,) = create("repeated_tool_calls").evaluate(
        turn(call(arguments="[" * 100_000), call(arguments="[" * 100_000))
    )
    assert deep.error is None and deep.value == 0.5  # too deep for json: compared as text
