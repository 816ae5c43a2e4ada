"""The CPU budget of the model-backed evaluators: measured per call, charged, enforced.

``Burner`` is a model-backed evaluator that spends a known amount of its thread's CPU time, so
what the budget admits follows from counts, never from timing: with the window's clock held
still, one run fills a tiny budget and every later run is refused, until the clock moves past
the window. It lives at module level so a worker process can unpickle it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ragtrace._config import Config
from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._model import RagRecord, Score
from ragtrace._pipeline import PipelineOptions
from ragtrace._pipeline.cpu_budget import CPU_BUDGET, WINDOW_S, CpuBudget
from ragtrace.evaluators import Evaluator

from .test_pipeline import Harness, length, record

BURN_S = 0.02


class Burner(Evaluator):
    """Model-backed (as far as the budget knows): spends ``BURN_S`` of thread time a record."""

    name = "burner"
    kind = "model"
    requires = frozenset({"response"})

    def evaluate(self, record: RagRecord) -> list[Score]:
        start = time.thread_time()
        while time.thread_time() - start < BURN_S:
            pass
        return [self.score(1.0)]


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- the budget alone -----------------------------------------------------------------------


def test_a_budget_admits_until_the_window_holds_its_share_then_forgets_old_charges() -> None:
    clock = Clock()
    budget = CpuBudget(0.25, window_s=10.0, clock=clock)
    assert budget.allowance_s == 2.5
    budget.charge("m", 1.0)
    assert budget.admit("x")  # "x" was never charged: its admissions hold nothing
    clock.now += 4.0
    budget.charge("m", 1.5)  # 2.5 s within the window: full
    assert not budget.admit("x") and budget.spent_s() == 2.5
    clock.now += 6.0  # the first charge is 10 s old: out of the window
    assert budget.admit("x") and budget.spent_s() == 1.5
    clock.now += 4.0
    assert budget.spent_s() == 0.0 and budget.admit("x")
    assert (budget.charged_s, budget.refused) == (2.5, 1)


def test_admissions_hold_an_estimate_until_their_call_is_charged() -> None:
    clock = Clock()
    budget = CpuBudget(0.1, window_s=10.0, clock=clock)  # 1.0 CPU-s a window
    budget.charge("m", 5.0, records=1)  # the first call: loading, no estimate from it
    clock.now += 10.0
    assert budget.admit("m") and budget.spent_s() == 0.0  # nothing known: nothing held
    budget.charge("m", 0.6, records=2)  # 0.3 a record from now on
    clock.now += 10.0
    admitted = sum(budget.admit("m") for _ in range(10))  # one batch, before its call
    assert admitted == 4 and budget.spent_s() == pytest.approx(1.2)
    budget.charge("m", 0.4, records=4)  # cheaper than held: the room comes back
    assert budget.spent_s() == pytest.approx(0.4) and budget.admit("m")
    assert budget.admit("other")  # another evaluator holds nothing until it is known


def test_an_admission_whose_call_never_comes_stops_holding_after_the_window() -> None:
    clock = Clock()
    budget = CpuBudget(0.1, window_s=10.0, clock=clock)
    budget.charge("m", 0.5)
    budget.charge("m", 0.5)  # 0.5 a record
    clock.now += 10.0
    assert budget.admit("m") and budget.admit("m") and not budget.admit("m")
    clock.now += 10.0  # the call was lost (its process killed): its hold leaves the window
    assert budget.spent_s() == 0.0
    budget.charge("m", 0.5, records=2)  # a late charge takes nothing away twice
    assert budget.spent_s() == 0.5


def test_a_budget_ignores_charges_that_are_no_cpu_time() -> None:
    budget = CpuBudget(1.0, clock=Clock())
    for odd in (-1.0, float("nan"), float("inf")):
        budget.charge("m", odd)
    assert budget.spent_s() == 0.0 and budget.charged_s == 0.0


@pytest.mark.parametrize("bad", [0, -0.5, float("nan"), float("inf"), True, "0.25"])
def test_a_budget_refuses_a_share_that_is_not_a_positive_number(bad: object) -> None:
    with pytest.raises(ValueError, match="share must be a finite number > 0"):
        CpuBudget(bad)  # type: ignore[arg-type]


# -- the engine measures each call ----------------------------------------------------------


@pytest.mark.parametrize("processes", [0, 1])
def test_the_engine_tells_the_cpu_time_of_each_call_on_threads_and_in_processes(
    processes: int,
) -> None:
    heard: list[tuple[str, int, float]] = []
    burner = Burner()
    with EvaluationEngine(
        [burner, length],
        processes=processes,
        on_cpu=lambda evaluator, records, cpu_s: heard.append((evaluator.name, records, cpu_s)),
    ) as engine:
        engine.call(burner, [record(1), record(2)], slot=0)  # told before the call returns
        engine.call(length, [record(3)], slot=0)
    assert [(name, records) for name, records, _ in heard] == [("burner", 2), ("length", 1)]
    burned = heard[0][2]
    assert 2 * BURN_S <= burned < 2 * BURN_S + 1.0  # two records, measured where they ran


# -- the pipeline enforces it ---------------------------------------------------------------


@pytest.fixture
def pipelines() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for h in made:
        h.pipeline.shutdown(timeout_s=2)


def test_past_the_budget_model_backed_runs_are_dropped_and_counted_and_lexical_ones_run(
    pipelines: list[Harness],
) -> None:
    clock = Clock()
    budget = CpuBudget(0.001, clock=clock)  # 0.01 CPU-s a window: one Burner run fills it
    h = Harness([Burner(), length], cpu_budget=budget)
    pipelines.append(h)
    for i in range(1, 5):  # one at a time: the first run is charged before the next is asked
        assert h.pipeline.submit(record(i))
        assert h.pipeline.flush(10)
    clock.now += WINDOW_S  # the run's charge leaves the window
    assert h.pipeline.submit(record(5))
    assert h.pipeline.flush(10)

    ran = {name: [r.trace_id for r, evs in h.sink.got for ev in evs if ev.evaluator == name]
           for name in ("burner", "length")}  # fmt: skip
    assert ran["length"] == [f"{i:032x}" for i in range(1, 6)]
    assert ran["burner"] == [f"{1:032x}", f"{5:032x}"]
    dropped = h.value("ragtrace_sampling_decisions_total", decision="dropped", reason=CPU_BUDGET)
    assert dropped == 3
    assert budget.refused == 3 and budget.charged_s >= 2 * BURN_S


def test_a_pipeline_takes_its_budget_from_the_config_and_none_without_one(
    pipelines: list[Harness],
) -> None:
    with_share = Harness([length], options=PipelineOptions(Config(model_cpu_share=0.5)))
    without = Harness([length])
    unlimited = Harness([length], options=PipelineOptions(Config(model_cpu_share=0)))
    pipelines.extend((with_share, without, unlimited))
    assert with_share.pipeline.cpu_budget is not None
    assert with_share.pipeline.cpu_budget.share == 0.5
    assert without.pipeline.cpu_budget is None and unlimited.pipeline.cpu_budget is None
