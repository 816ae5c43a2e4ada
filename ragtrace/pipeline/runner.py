"""Running evaluators over records offline: batches, per-call timeouts, error isolation.

``Runner`` is what ``ragtrace eval`` and ``benchmarks/throughput.py`` share::

    with Runner([create("looping"), create("groundedness")], workers=2) as runner:
        outcomes = runner.run(records)      # one Outcome per record, in the records' order

For each evaluator, the records that have its required fields are cut into groups of its
``batch_size`` and handed to ``evaluate_batch``; records lacking a field are skipped (an
``Outcome.skipped`` entry says which fields). Each call runs on a daemon thread of a
``CallPool`` and is given ``timeout_s`` (the evaluator's own, or the runner's) per record of the
batch; the first call of each evaluator gets ``load_allowance_s`` more, since it may load a
model. Output is checked exactly as the online pipeline checks it (``ragtrace.pipeline``).

Error isolation: when a batch raises (or returns the wrong number of results), its records are
run again one by one, so one bad record yields one error Score and the others are scored. A
call that times out is not retried (its thread may still be busy with it, and a retry would
likely hang again): every record of that batch gets a timeout error Score.

With ``workers > 1`` different evaluators run at the same time on one group of records (an
evaluator's own calls stay sequential); results are the same as with one worker. Threads share
the interpreter lock: to use more cores, ``ragtrace.offline.processes.ProcessRunner`` runs a
``Runner`` in each of several processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType

from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.outputs import checked_scores, clip_error, describe_value
from ragtrace.model import RagRecord, Score
from ragtrace.pipeline.callpool import CallPool

DEFAULT_LOAD_ALLOWANCE_S = 300.0
_SPARE_CALL_THREADS = 32

ErrorHook = Callable[[str, RagRecord, str], None]


@dataclass(frozen=True, slots=True)
class Skip:
    """An evaluator that did not run on a record, and the required fields the record lacks."""

    evaluator: str
    missing: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the evaluators said about one record.

    Attributes:
        scores: ``(evaluator name, Score)`` pairs, evaluators in the runner's order.
        skipped: The evaluators that did not run, in the runner's order.
    """

    scores: tuple[tuple[str, Score], ...]
    skipped: tuple[Skip, ...]


@dataclass(slots=True)
class EvaluatorStats:
    """Time and calls spent in one evaluator (wall time of its ``evaluate_batch`` calls).

    Attributes:
        calls: Calls made, fallbacks to one-by-one included.
        records: Records handed to it (a record retried one by one counts twice).
        seconds: Wall time of all calls, the first included.
        first_call_s: Wall time of the first call (model loading shows up here).
        fallbacks: Batches that failed and were run again one record at a time.
        timeouts: Calls that timed out.
    """

    calls: int = 0
    records: int = 0
    seconds: float = 0.0
    first_call_s: float | None = None
    fallbacks: int = 0
    timeouts: int = 0


def check_runner_options(
    evaluators: Sequence[Evaluator], timeout_s: float | None, workers: int, load_allowance_s: float
) -> None:
    """Raise ValueError for repeated evaluator names or out-of-range options."""
    names = [e.name for e in evaluators]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"evaluators must have distinct names; repeated: {repeated}")
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if load_allowance_s < 0:
        raise ValueError(f"load_allowance_s must be >= 0, got {load_allowance_s!r}")


class _CallTimeout(Exception):
    """A call to an evaluator overstayed its timeout."""


class _BadOutput(Exception):
    """``evaluate_batch`` returned something other than one list entry per record."""


class Runner:
    """Runs a fixed list of evaluators over groups of records.

    Args:
        evaluators: Evaluators with distinct names, in the order their scores are reported.
        timeout_s: Seconds allowed per record of a call; None: each evaluator's ``timeout_s``.
        workers: Evaluators run at the same time (threads).
        load_allowance_s: Extra seconds for each evaluator's first call.
        on_error: Called with ``(evaluator name, record, message)`` for each record that gets an
            error Score because a call raised or timed out (not for error Scores an evaluator
            returns itself). It runs on the thread that drives the evaluator.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        *,
        timeout_s: float | None = None,
        workers: int = 1,
        load_allowance_s: float = DEFAULT_LOAD_ALLOWANCE_S,
        on_error: ErrorHook | None = None,
    ) -> None:
        check_runner_options(evaluators, timeout_s, workers, load_allowance_s)
        names = [e.name for e in evaluators]
        self.evaluators = tuple(evaluators)
        self.timeout_s = timeout_s
        self.load_allowance_s = load_allowance_s
        self.stats = {name: EvaluatorStats() for name in names}
        self._on_error = on_error
        self._calls = CallPool(
            base_threads=workers, max_threads=workers + _SPARE_CALL_THREADS, name="ragtrace-eval"
        )
        self._executor = (
            ThreadPoolExecutor(workers, thread_name_prefix="ragtrace-eval-driver")
            if workers > 1 and len(self.evaluators) > 1
            else None
        )
        self._lock = threading.Lock()

    def run(self, records: Sequence[RagRecord]) -> list[Outcome]:
        """Score ``records`` with every evaluator; one Outcome per record, in order."""
        records = list(records)
        if self._executor is not None:
            futures = [self._executor.submit(self._run_one, e, records) for e in self.evaluators]
            per_evaluator = [f.result() for f in futures]
        else:
            per_evaluator = [self._run_one(e, records) for e in self.evaluators]
        outcomes = []
        for i in range(len(records)):
            scores: list[tuple[str, Score]] = []
            skipped: list[Skip] = []
            for evaluator, results in zip(self.evaluators, per_evaluator, strict=True):
                result = results[i]
                if isinstance(result, Skip):
                    skipped.append(result)
                else:
                    scores.extend((evaluator.name, s) for s in result)
            outcomes.append(Outcome(tuple(scores), tuple(skipped)))
        return outcomes

    def submit(self, records: Sequence[RagRecord]) -> Future[list[Outcome]]:
        """``run`` now, its result (or exception) in a finished future: ``ProcessRunner``'s face."""
        future: Future[list[Outcome]] = Future()
        try:
            future.set_result(self.run(records))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def prime(self, records: Sequence[RagRecord]) -> None:
        """Score ``records`` and drop the outcomes (fills the model caches)."""
        self.run(records)

    def close(self) -> None:
        """Stop the threads (a call still hung in an evaluator ends with the process)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        self._calls.shutdown()

    def __enter__(self) -> Runner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run_one(
        self, evaluator: Evaluator, records: list[RagRecord]
    ) -> list[tuple[Score, ...] | Skip]:
        """One evaluator over all ``records``: skips for missing fields, scores for the rest."""
        results: list[tuple[Score, ...] | Skip] = []
        todo: list[int] = []
        for i, record in enumerate(records):
            missing = evaluator.missing_fields(record)
            results.append(Skip(evaluator.name, missing) if missing else ())
            if not missing:
                todo.append(i)
        size = max(1, evaluator.batch_size)
        for start in range(0, len(todo), size):
            group = todo[start : start + size]
            scored = self._scores(evaluator, [records[i] for i in group])
            for i, scores in zip(group, scored, strict=True):
                results[i] = scores
        return results

    def _scores(self, evaluator: Evaluator, batch: list[RagRecord]) -> list[tuple[Score, ...]]:
        """Checked scores for each record of ``batch``; a failed batch is retried one by one."""
        try:
            outputs = self._call(evaluator, batch)
        except _CallTimeout as exc:
            return [self._failed(evaluator, record, str(exc)) for record in batch]
        except Exception as exc:
            if len(batch) > 1:
                with self._lock:
                    self.stats[evaluator.name].fallbacks += 1
                return [s for record in batch for s in self._scores(evaluator, [record])]
            message = str(exc) if isinstance(exc, _BadOutput) else f"{type(exc).__name__}: {exc}"
            return [self._failed(evaluator, batch[0], message)]
        return [checked_scores(evaluator, output) for output in outputs]

    def _call(self, evaluator: Evaluator, batch: list[RagRecord]) -> list[object]:
        """``evaluate_batch(batch)`` on a pool thread, within the timeout; checks the shape."""
        stats = self.stats[evaluator.name]
        per_record = self.timeout_s if self.timeout_s is not None else evaluator.timeout_s
        timeout = per_record * len(batch)
        if stats.first_call_s is None:
            timeout += self.load_allowance_s
        start = time.perf_counter()
        future: Future[object] = self._calls.submit(lambda: evaluator.evaluate_batch(batch))
        timed_out = False
        try:
            outputs = future.result(timeout=timeout)
        except TimeoutError:
            timed_out = not future.done()  # done: the evaluator itself raised TimeoutError
            if timed_out:
                raise _CallTimeout(f"timed out after {timeout:g} s") from None
            raise
        finally:
            self._account(stats, start, len(batch), timed_out=timed_out)
        if not isinstance(outputs, list) or len(outputs) != len(batch):
            raise _BadOutput(
                f"evaluate_batch returned {describe_value(outputs)} for {len(batch)} records"
            )
        return outputs

    def _account(self, stats: EvaluatorStats, start: float, n: int, *, timed_out: bool) -> None:
        elapsed = time.perf_counter() - start
        with self._lock:
            stats.calls += 1
            stats.records += n
            stats.seconds += elapsed
            stats.timeouts += timed_out
            if stats.first_call_s is None:
                stats.first_call_s = elapsed

    def _failed(self, evaluator: Evaluator, record: RagRecord, message: str) -> tuple[Score, ...]:
        message = clip_error(message)
        if self._on_error is not None:
            self._on_error(evaluator.name, record, message)
        return (evaluator.error_score(message),)
