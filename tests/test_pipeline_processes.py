"""``Config(processes=N)``: evaluator calls in real worker processes (spawn).

The evaluators live at module level here (a worker process imports this module to unpickle
them); ``length`` and ``Misbehaving`` come from ``test_pipeline`` so both modes are held to the
same expected values and messages.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator

import pytest

from ragtrace._backends import shared_cache
from ragtrace._backends.shared_cache import SharedCache
from ragtrace._config import Config
from ragtrace._engine.processes import PROCESS_NAME, dumps
from ragtrace._model import RagRecord, Score
from ragtrace._pipeline import PipelineOptions
from ragtrace.evaluators import Evaluator, FunctionEvaluator, evaluator
from ragtrace.evaluators import _registry as registry

from .test_pipeline import (
    Harness,
    Misbehaving,
    PoisonInBatch,
    check_one_bad_record_fails_alone,
    length,
    record,
)


@evaluator(name="pid", requires={"response"})
def pid(r: RagRecord) -> Score:
    """1.0, with the id of the process that scored the record."""
    return Score("pid", 1.0, details={"pid": os.getpid()})


@evaluator(name="pid_too", requires={"response"})
def pid_too(r: RagRecord) -> Score:
    """Like ``pid``: two evaluators to see where a record's calls ran."""
    return Score("pid_too", 1.0, details={"pid": os.getpid()})


_SEEN: set[str] = set()  # per process: the responses ``seen`` has scored there


@evaluator(name="seen", requires={"response"})
def seen(r: RagRecord) -> Score:
    """1.0 when this process has scored the response before (a cache hit), else 0.0."""
    hit = r.response in _SEEN
    _SEEN.add(r.response or "")
    return Score("seen", 1.0 if hit else 0.0, details={"pid": os.getpid()})


@evaluator(name="cache_info", requires={"response"})
def cache_info(r: RagRecord) -> Score:
    """1.0, with the shared cache this process has (its segment's name and slots, or None)."""
    cache = shared_cache.current()
    info = None if cache is None else {"name": cache.name, "slots": cache.slots}
    return Score("cache_info", 1.0, details={"cache": info, "pid": os.getpid()})


class Trouble(Evaluator):
    """1.0; on the response "hang" it sleeps past its timeout, on "crash" its process exits 3."""

    name = "trouble"
    timeout_s = 0.5
    requires = frozenset({"response"})

    def evaluate(self, record: RagRecord) -> list[Score]:
        if record.response == "hang":
            time.sleep(60)
        if record.response == "crash":
            os._exit(3)
        return [self.score(1.0, details={"pid": os.getpid()})]


def options(processes: int, workers: int = 2) -> PipelineOptions:
    return PipelineOptions(Config(batch_wait_s=0.01, processes=processes, workers=workers))


@pytest.fixture
def made() -> Iterator[list[Harness]]:
    harnesses: list[Harness] = []
    yield harnesses
    for h in harnesses:
        h.pipeline.shutdown(timeout_s=2)


def harness(made: list[Harness], evaluators: list[Evaluator], opts: PipelineOptions) -> Harness:
    h = Harness(evaluators, options=opts)
    made.append(h)
    return h


def _results(h: Harness) -> list[tuple[str, str, float | None, bool | None]]:
    return sorted(
        (r.trace_id, s.name, s.value, s.passed)
        for r, evaluations in h.sink.got
        for ev in evaluations
        for s in ev.scores
        if s.name != "pid"
    )


def test_processes_give_the_same_scores_as_threads_from_other_processes(
    made: list[Harness],
) -> None:
    answers = ["short", "a much longer answer than that", "mid-sized one"] * 10
    runs = []
    for processes in (0, 2):
        h = harness(made, [length, pid, registry.create("looping")], options(processes))
        for i, text in enumerate(answers):
            assert h.pipeline.submit(record(i + 1, text))
        assert h.pipeline.flush(60)
        runs.append(h)
    threads, procs = (_results(h) for h in runs)
    assert procs == threads and len(procs) == 30 * 4  # length + looping's 3 scores
    assert ("0" * 31 + "1", "length", 0.25, False) in procs
    pids = {s.details["pid"] for s in runs[1].sink.scores()["pid"]}
    assert pids and os.getpid() not in pids
    assert {s.details["pid"] for s in runs[0].sink.scores()["pid"]} == {os.getpid()}


def test_one_bad_record_in_a_process_no_longer_fails_its_batch(made: list[Harness]) -> None:
    h = harness(made, [PoisonInBatch()], options(1, workers=1))
    check_one_bad_record_fails_alone(h)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("raise", "RuntimeError: model exploded"),
        ("nan", "ValueError: Score 'bad': value must be a real number or None"),
        ("range", "value 1.5 outside [0, 1]"),
        ("not-a-list", "evaluate returned Score, not a list"),
        ("junk", "evaluate returned str"),
    ],
)
def test_a_failing_evaluator_in_a_process_yields_the_same_error_score(
    made: list[Harness], mode: str, message: str
) -> None:
    h = harness(made, [Misbehaving(mode), length], options(1))
    h.pipeline.submit(record(1, "a long enough answer here"))
    assert h.pipeline.flush(60)
    scores = h.sink.scores()
    (bad,) = scores["bad"]
    assert bad.value is None and bad.label == "error"
    assert bad.error is not None and message in bad.error
    assert scores["length"][0].value == 1.0
    assert (
        h.value("ragtrace_evaluations_total", evaluator="bad", app="test-app", outcome="error") == 1
    )


def test_a_hung_call_kills_its_process_and_a_fresh_one_scores_the_next_record(
    made: list[Harness],
) -> None:
    h = harness(made, [Trouble()], options(1, workers=1))
    h.pipeline.submit(record(1, "fine"))
    assert h.pipeline.flush(60)  # the process is up and its pid known
    h.pipeline.submit(record(2, "hang"))
    h.pipeline.submit(record(3, "fine again"))
    assert h.pipeline.flush(60)
    first, hung, after = sorted(h.sink.got, key=lambda got: got[0].trace_id)
    (hung_score,) = hung[1][0].scores
    assert hung_score.error == "timed out after 0.5 s"
    (before_score,), (after_score,) = first[1][0].scores, after[1][0].scores
    assert before_score.value == after_score.value == 1.0
    assert before_score.details["pid"] != after_score.details["pid"]


def test_a_process_that_dies_gives_error_scores_and_is_replaced(made: list[Harness]) -> None:
    h = harness(made, [Trouble()], options(1, workers=1))
    h.pipeline.submit(record(1, "crash"))
    h.pipeline.submit(record(2, "fine"))
    assert h.pipeline.flush(60)
    by_trace = {r.trace_id: evs[0].scores[0] for r, evs in h.sink.got}
    crashed, fine = by_trace["0" * 31 + "1"], by_trace["0" * 31 + "2"]
    assert crashed.value is None and crashed.error == "worker process exited (code 3)"
    assert fine.value == 1.0


def test_an_evaluator_that_cannot_pickle_stays_on_threads_and_is_reported(
    made: list[Harness],
) -> None:
    inline = FunctionEvaluator(lambda r: 0.75, name="inline_lambda", requires={"response"})
    h = harness(made, [inline, pid], options(1))
    h.pipeline.submit(record(1, "an answer"))
    assert h.pipeline.flush(60)
    scores = h.sink.scores()
    assert scores["inline_lambda"][0].value == 0.75
    assert scores["pid"][0].details["pid"] != os.getpid()
    assert h.diag.counts().get("pipeline.not_picklable") == 1


def test_a_decorated_function_evaluator_pickles_as_a_reference() -> None:
    copy = pickle_round_trip(length)
    assert copy is length  # the same module attribute, found by name
    with pytest.raises(Exception, match="lambda"):
        dumps(FunctionEvaluator(lambda r: 1.0, name="anonymous"))


def pickle_round_trip(value: object) -> object:
    import pickle

    return pickle.loads(dumps(value))


def test_shutdown_stops_the_worker_processes(made: list[Harness]) -> None:
    h = harness(made, [pid], options(2))
    h.pipeline.submit(record(1, "an answer"))
    assert h.pipeline.flush(60)
    children = [p for p in multiprocessing.active_children() if p.name == PROCESS_NAME]
    assert len(children) == 2
    h.pipeline.shutdown(timeout_s=5)
    assert not any(p.is_alive() for p in children)


def test_processes_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="processes: must be >= 0, got -1"):
        PipelineOptions(Config(processes=-1))
    with pytest.raises(ValueError, match="shared_cache_mb: must be >= 0, got -1"):
        PipelineOptions(Config(processes=2, shared_cache_mb=-1))


@pytest.mark.parametrize(("size_mb", "slots"), [(4, 2048), (0, None)])
def test_the_processes_share_one_cache_of_the_configured_size(
    made: list[Harness], size_mb: float, slots: int | None
) -> None:
    opts = PipelineOptions(
        Config(batch_wait_s=0.01, processes=2, workers=2, shared_cache_mb=size_mb)
    )
    h = harness(made, [cache_info], opts)
    assert h.pipeline.prime([record(i + 1, f"answer {i}") for i in range(8)]) == 0
    for i in range(8):
        h.pipeline.submit(record(100 + i, f"answer {i}"))
    assert h.pipeline.flush(60)
    infos = [s.details["cache"] for s in h.sink.scores()["cache_info"]]
    assert len(infos) == 8
    if slots is None:
        assert infos == [None] * 8
        return
    assert {(i["name"], i["slots"]) for i in infos} == {(infos[0]["name"], slots)}
    h.pipeline.shutdown(timeout_s=5)
    with pytest.raises(FileNotFoundError):
        SharedCache.attach(infos[0]["name"])


@pytest.mark.parametrize("processes", [0, 2])
def test_prime_reaches_every_process_and_publishes_nothing(
    made: list[Harness], processes: int
) -> None:
    h = harness(made, [seen], options(processes, workers=2))
    texts = [f"primed answer {processes}-{i}" for i in range(12)]
    assert h.pipeline.prime([record(i + 1, t) for i, t in enumerate(texts)]) == 0
    assert h.sink.got == []
    for i, text in enumerate(texts * 3):
        assert h.pipeline.submit(record(100 + i, text))
    assert h.pipeline.flush(60)
    scores = h.sink.scores()["seen"]
    assert len(scores) == 36 and {s.value for s in scores} == {1.0}
    pids = {s.details["pid"] for s in scores}
    assert os.getpid() not in pids if processes else pids == {os.getpid()}


def test_prime_counts_and_reports_failed_calls(made: list[Harness]) -> None:
    h = harness(made, [Misbehaving("raise"), length], options(1))
    assert h.pipeline.prime([record(1, "an answer"), record(2, "another")]) == 2
    assert h.diag.counts().get("pipeline.prime") == 2
    assert h.sink.got == []
    h.pipeline.shutdown(timeout_s=5)
    with pytest.raises(RuntimeError, match="the pipeline is shut down"):
        h.pipeline.prime([record(3, "late")])


def test_a_records_evaluators_run_in_one_process_per_worker_thread(made: list[Harness]) -> None:
    h = harness(made, [pid, pid_too], options(2, workers=1))
    for i in range(40):
        assert h.pipeline.submit(record(i + 1, f"answer {i}"))
    assert h.pipeline.flush(60)
    assert len(h.pipeline._workers) == 2  # at least one worker thread per process
    for _record, evaluations in h.sink.got:
        where = {s.details["pid"] for ev in evaluations for s in ev.scores}
        assert len(where) == 1 and os.getpid() not in where
