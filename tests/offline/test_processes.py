"""``EvaluationEngine(processes=N)`` and ``EvalLoop(processes=N)``: real worker processes (spawn),
real evaluators.

The evaluators come from ``conftest`` (``Length``: len(response) / 100, raises on "poison";
``Crash``: exits its process on "crash") and the registry's lexical ``looping``, so every value
is known by hand or equals the one-process result.
"""

from __future__ import annotations

import io
import json
import multiprocessing
from multiprocessing.reduction import ForkingPickler
from typing import Any

import pytest

from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._engine.processes import PROCESS_NAME
from ragtrace._judges import usage
from ragtrace._offline.loop import EvalLoop
from ragtrace.evaluators import FunctionEvaluator
from ragtrace.evaluators import _registry as registry

from .conftest import Crash, Length, rec


def _lines(responses: list[str]) -> bytes:
    rows = [
        {"id": f"r{i}", "query": "q", "contexts": ["c"], "response": text}
        for i, text in enumerate(responses)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _score(row: dict[str, Any], name: str) -> dict[str, Any]:
    """The score called ``name`` in an output line."""
    return next(s for s in row["scores"] if s["name"] == name)


def _engine_output(processes: int, data: bytes) -> tuple[str, EvalLoop, str]:
    messages = io.StringIO()
    engine = EvalLoop(
        [Length(), registry.create("looping")],
        processes=processes,
        progress=False,
        messages=messages,
    )
    sink = io.StringIO()
    try:
        engine.run(io.BytesIO(data), sink)
    finally:
        engine.close()
    return sink.getvalue(), engine, messages.getvalue()


RESPONSES = [f"Sentence {i} is here. " * (1 + i % 4) for i in range(150)]


def test_two_processes_write_the_same_lines_in_input_order_as_one() -> None:
    one, _, _ = _engine_output(1, _lines(RESPONSES))
    two, engine, _ = _engine_output(2, _lines(RESPONSES))
    assert two == one
    ids = [json.loads(line)["id"] for line in two.splitlines()]
    assert ids == [f"r{i}" for i in range(150)]
    # 150 records over windows of 32 went to both processes; their stats add up
    assert engine.runner.stats["length"].records == 150
    assert engine.summary.input.records == 150
    fourth = json.loads(two.splitlines()[3])  # "Sentence 3 is here. " x 4 = 80 chars
    assert _score(fourth, "length")["value"] == pytest.approx(0.8)
    assert _score(fourth, "looping.unique_sentences")["value"] == pytest.approx(0.25)


def test_an_error_in_a_process_reaches_the_parent_with_the_record_id() -> None:
    responses = ["fine answer"] * 40 + ["poison"] + ["fine answer"] * 40
    out, engine, messages = _engine_output(2, _lines(responses))
    rows = [json.loads(line) for line in out.splitlines()]
    poisoned = _score(rows[40], "length")
    assert poisoned["error"] == "ValueError: poisoned record" and poisoned["value"] is None
    assert all(_score(r, "length")["error"] is None for i, r in enumerate(rows) if i != 40)
    assert "length failed on id 'r40': ValueError: poisoned record" in messages
    assert engine.runner.stats["length"].calls == 81  # batch size 1: a call per record


def test_a_dead_process_fails_its_window_and_a_fresh_one_takes_over() -> None:
    failures: list[tuple[str, str | None, str]] = []
    runner = EvaluationEngine(
        [Crash(), Length()],
        processes=1,
        on_error=lambda name, record, message: failures.append((name, record.response, message)),
    )
    try:
        lost = runner.run([rec("before"), rec("crash"), rec(None)])
        after = runner.run([rec("after")])
    finally:
        runner.close()
    for outcome in lost[:2]:
        assert [name for name, _ in outcome.scores] == ["crash", "length"]
        for _, score in outcome.scores:
            assert score.value is None
            assert "worker process exited (code 3)" in (score.error or "")
    # the record without a response was never going to run: skipped, not an error
    assert lost[2].scores == () and {s.evaluator for s in lost[2].skipped} == {"crash", "length"}
    assert [(n, r) for n, r, _ in failures] == [
        ("crash", "before"), ("length", "before"), ("crash", "crash"), ("length", "crash"),
    ]  # fmt: skip
    assert [(n, s.value) for n, s in after[0].scores] == [("crash", 1.0), ("length", 0.05)]


def test_judge_usage_in_a_process_reaches_listeners_here() -> None:
    tally = usage.add_listener(usage.UsageTally())
    try:
        with EvaluationEngine([Crash()], processes=2) as runner:
            runner.run([rec("a"), rec("b"), rec("c")])
    finally:
        usage.remove_listener(tally)
    assert tally.calls == 3
    assert tally.input_tokens == 21


def test_prime_scores_the_records_on_every_process() -> None:
    with EvaluationEngine([Length()], processes=2) as runner:
        runner.prime([rec("x" * 10)] * 5)
        assert runner.stats["length"].records == 10  # 5 records x 2 processes
        assert runner.stats["length"].first_call_s is not None


def test_engine_prime_writes_and_counts_nothing_and_names_a_bad_line() -> None:
    engine = EvalLoop([Length()], processes=2, progress=False, messages=None)
    try:
        assert engine.prime(io.BytesIO(_lines(["one", "two", "three"]))) == 3
        assert engine.summary.input.records == 0
        assert engine.runner.stats["length"].records == 6
        with pytest.raises(ValueError, match="priming line 2"):
            engine.prime(io.BytesIO(_lines(["one"]) + b"{not json\n"))
    finally:
        engine.close()


def test_one_process_engine_keeps_the_in_process_runner() -> None:
    engine = EvalLoop([Length()], progress=False, messages=None)
    try:
        assert engine.runner.processes == 0
        before = {p.pid for p in multiprocessing.active_children()}
        engine.run(io.BytesIO(_lines(["one"])), io.StringIO())
        assert {p.pid for p in multiprocessing.active_children()} <= before
    finally:
        engine.close()


def test_an_evaluator_that_cannot_pickle_is_refused_by_name() -> None:
    unpicklable = FunctionEvaluator(lambda r: 1.0, name="inline")
    with pytest.raises(ValueError, match="'inline' cannot be sent to a worker process"):
        EvaluationEngine([Length(), unpicklable], processes=2)


@pytest.mark.parametrize("processes", [-1, 1.5, True])
def test_checks_processes(processes: object) -> None:
    with pytest.raises(ValueError, match="processes must be an integer >= 0"):
        EvaluationEngine([Length()], processes=processes)  # type: ignore[arg-type]


@pytest.mark.parametrize("processes", [0, -1, 1.5])
def test_the_eval_engine_checks_processes(processes: object) -> None:
    with pytest.raises(ValueError, match="processes must be an integer >= 1"):
        EvalLoop([Length()], processes=processes, progress=False)  # type: ignore[arg-type]


def test_close_stops_every_process_and_refuses_more_work() -> None:
    runner = EvaluationEngine([Length()], processes=2)
    runner.run([rec("a")])
    children = [p for p in multiprocessing.active_children() if p.name == PROCESS_NAME]
    assert len(children) == 2
    runner.close()
    assert not any(p.is_alive() for p in children)
    with pytest.raises(RuntimeError, match="closed"):
        runner.submit([rec("b")])


NEEDS_OPTIONS = {
    "tokens_presence": {"constraints": ["refund"]},
    "judge_geval": {"criteria": "Is the answer polite?"},
    "judge_byop": {"prompt": "Is this answer polite? {answer}"},
}


@pytest.mark.parametrize("name", registry.names())
def test_every_registry_evaluator_can_go_to_a_worker_process(name: str) -> None:
    evaluator = registry.create(name, **NEEDS_OPTIONS.get(name, {}))
    copy = ForkingPickler.loads(ForkingPickler.dumps(evaluator))
    assert type(copy) is type(evaluator)
    assert copy.name == evaluator.name and copy.threshold == evaluator.threshold
