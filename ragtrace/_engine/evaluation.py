"""The evaluation engine: every path that scores records calls evaluators through it.

The online pipeline's workers (``ragtrace.init``, ``ragtrace worker``, ``ragtrace ingest``),
``ragtrace eval``, ``ragtrace.evaluate``, ``ragtrace.testing`` and the benchmarks all score
records with one ``EvaluationEngine``; inline evaluators go through ``evaluate_inline``::

    engine = EvaluationEngine([create("looping"), create("groundedness")], workers=2)
    scores = engine.call(evaluator, records)   # one tuple of checked Scores per record
    outcomes = engine.run(records)             # every evaluator: one Outcome per record
    engine.close()                             # (or ``with EvaluationEngine(...) as engine``)

**One call** (``call``) hands a batch to the evaluator's ``evaluate_batch`` and waits at most
``timeout_s`` per record of the batch (the engine's ``timeout_s``, else the evaluator's own).
The first call of each evaluator gets ``load_allowance_s`` more (300 s by default), since it may
load models. Outputs are checked as ``ragtrace.evaluators._outputs`` says. When a batch raises
or returns the wrong number of results, its records are run again one at a time, so one bad
record yields one error Score and its neighbours are scored (``EvaluatorStats.fallbacks``). A
call that times out is not retried (its thread or process may still be busy with it, and a
retry would likely hang again): every record of that batch gets a ``timed out after N s`` error
Score, N the seconds that call was given; nor is a batch whose worker process died (its records
get an error Score naming the exit code: a retry would likely kill the next one). Each record
given an error Score this way is reported to ``on_error``; the evaluator's own error Scores are
not. Nothing raises out of a call (but a closed engine's RuntimeError); ``EvaluatorStats``
counts calls, time, fallbacks and timeouts.

**Where calls run.** By default on daemon threads of a ``CallPool`` (``ragtrace._engine
.callpool``): a hung call holds its thread and the pool grows, up to ``max_call_threads``, so
the others go on (``diagnostics`` hears of each thread added), and the process can still exit.
With ``processes=N`` the calls run in N worker processes (``ragtrace._engine.processes``,
spawned, each with its own copy of the evaluators and models, sharing one cache), so scoring
uses N cores and leaves the host's interpreter lock alone: ``call(..., slot=i)`` runs on process
i mod N (the online workers give thread i process i), slot None on the least busy one. A call
that overstays its timeout kills its process, and a fresh one takes the slot. An evaluator that
cannot pickle is refused (``ValueError``), or, when ``diagnostics`` is given (the online
pipeline), reported and kept on threads.

**A run** (``run``) scores records with every evaluator: records lacking an evaluator's required
field get a ``Skip``, the others go in groups of its ``batch_size`` through ``call``. With
``workers > 1`` several evaluators run at the same time on the same records (one evaluator's
calls stay in order); results do not depend on it. ``submit`` is ``run`` as a future: with
worker processes (and every evaluator in them) the whole window of records goes to the least
busy process, where an ``EvaluationEngine`` on threads runs it (the window crosses the pipe once,
not once per evaluator, and its evaluators share that process's caches of its passages); its
error reports and stats come back here, and a process that dies gives each of the window's
records an error Score naming its exit code. ``prime`` scores records wherever each evaluator
runs (every worker process, and this process for those on threads) to fill caches before timed
or live traffic.

**Inline vs background.** Background evaluators are the ones this engine calls, off the
request's thread, within their timeouts. Inline evaluators (``Evaluator.inline``) run on the
request's thread as the record is built, through ``evaluate_inline``: no timeout, no thread, so
they must be cheap; their Scores are checked the same way, and a raise becomes an error Score.

The online pipeline starts its engine explicitly (``start``, under its own lock) and forgets
the parent's threads and processes in a forked child (``after_fork``); elsewhere the first call
starts it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

from ragtrace._diagnostics import Diagnostics
from ragtrace._engine.call_errors import LOAD_ALLOWANCE_S, RemoteError, WorkerDied
from ragtrace._engine.callpool import CallPool
from ragtrace._engine.outcomes import EvaluatorStats, Outcome, Skip
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._outputs import checked_scores, clip_error, describe_value

if TYPE_CHECKING:
    from ragtrace._engine.processes import ProcessPool, Reply

_SPARE_CALL_THREADS = 32

ErrorHook = Callable[[str, RagRecord, str], None]
"""Hears ``(evaluator name, record, message)`` for each record a failed call gave an error."""
CpuHook = Callable[[Evaluator, int, float], None]
"""Hears ``(evaluator, records, CPU seconds)`` after each ``call`` of an evaluator (``on_cpu``)."""


class _CallTimeout(Exception):
    """A call overstayed its timeout (or its worker process died): not worth a retry."""


class _BadOutput(Exception):
    """``evaluate_batch`` returned something other than one list entry per record."""


class EvaluationEngine:
    """Calls a fixed list of evaluators within their timeouts, on threads or worker processes.

    Args:
        evaluators: Evaluators with distinct names, in the order their scores are reported.
        timeout_s: Seconds allowed per record of a call; None: each evaluator's ``timeout_s``.
        workers: Evaluators ``run`` at the same time; also the call threads kept ready.
        load_allowance_s: Extra seconds for each evaluator's first call on threads.
        processes: Worker processes for the calls (0: threads of this process).
        shared_cache_mb: Size of the cache the worker processes share (None: the default,
            ``$RAGTRACE_SHARED_CACHE_MB`` or 32; 0: off).
        max_call_threads: Cap on call threads (hung calls hold one each); None: ``workers`` + 32.
        passage_store: A passage store to install in this process while the engine runs
            (``ragtrace._backends.passage_store``; its worker processes open it read-only).
        on_error: Called with ``(evaluator name, record, message)`` for each record given an
            error Score because a call raised, timed out or lost its process. It runs on the
            thread that drives the evaluator.
        on_cpu: Called with ``(evaluator, records in the call, CPU seconds)`` once each
            ``call`` has run: the thread time of the call thread that ran ``evaluate_batch``
            (called there, when the call ends, even if its caller stopped waiting), or of the
            worker process's thread (called when its answer arrives; a call whose process is
            killed is not heard of). Backends that compute on threads of their own are not
            counted. It must not raise.
        diagnostics: Where a grown call pool is reported; given, an evaluator that cannot
            pickle is reported (``pipeline.not_picklable``) and kept on threads, not refused.

    Raises:
        ValueError: Repeated evaluator names, an option out of range, or (without
            ``diagnostics``) an evaluator that cannot go to a worker process.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        *,
        timeout_s: float | None = None,
        workers: int = 1,
        load_allowance_s: float = LOAD_ALLOWANCE_S,
        processes: int = 0,
        shared_cache_mb: float | None = None,
        max_call_threads: int | None = None,
        passage_store: str | None = None,
        on_error: ErrorHook | None = None,
        on_cpu: CpuHook | None = None,
        diagnostics: Diagnostics | None = None,
    ) -> None:
        _check_options(evaluators, timeout_s, workers, load_allowance_s, processes)
        self.evaluators = tuple(evaluators)
        self.timeout_s = timeout_s
        self.workers = workers
        self.load_allowance_s = load_allowance_s
        self.processes = processes
        self._shared_cache_mb = shared_cache_mb
        self._max_threads = max(workers, max_call_threads or workers + _SPARE_CALL_THREADS)
        self._passage_store = passage_store
        self._on_error = on_error
        self._on_cpu = on_cpu
        self._diag = diagnostics
        if processes and diagnostics is None:
            from ragtrace._engine.processes import check_picklable

            check_picklable(self.evaluators)
        self._stats = {e.name: EvaluatorStats() for e in self.evaluators}
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self._threads: CallPool | None = None
        self._drivers: ThreadPoolExecutor | None = None
        self._procs: ProcessPool | None = None
        self._in_procs: dict[str, int] = {}

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the call threads and, with ``processes``, the worker processes (idempotent;
        the first call does it otherwise).

        Raises:
            RuntimeError: The engine is closed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the evaluation engine is closed")
            if self._started:
                return
            if self._passage_store is not None:
                from ragtrace._backends.passage_store import install_path

                install_path(self._passage_store)
            diag = self._diag
            self._threads = CallPool(
                base_threads=self.workers,
                max_threads=self._max_threads,
                on_grow=None
                if diag is None
                else lambda: diag.error("pipeline.call_pool_grew", "hung evaluator"),
            )
            if self.workers > 1 and len(self.evaluators) > 1:
                self._drivers = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="ragtrace-eval-driver"
                )
            if self.processes:
                self._start_processes()
            self._started = True

    def close(self) -> None:
        """Stop the threads (a call still hung in an evaluator ends with the process) and ask
        every worker process to finish and exit (killing one that does not). Idempotent."""
        with self._lock:
            self._closed = True
            started, self._started = self._started, False
        if not started:
            return
        if self._drivers is not None:
            self._drivers.shutdown(wait=True, cancel_futures=True)
        if self._threads is not None:
            self._threads.shutdown()
        if self._procs is not None:
            self._procs.close()
        if self._passage_store is not None:
            from ragtrace._backends import passage_store

            store = passage_store.installed()
            if store is not None and str(store.path) == self._passage_store:
                passage_store.install(None)  # the one ``start`` installed
                store.close()

    def after_fork(self) -> None:
        """In a forked child: forget the parent's threads and processes (never ours to use or
        stop); ``start`` makes new ones."""
        self._lock = threading.Lock()
        self._started = False
        self._threads = None
        self._drivers = None
        self._procs = None
        self._in_procs = {}

    def __enter__(self) -> EvaluationEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def stats(self) -> dict[str, EvaluatorStats]:
        """Per-evaluator stats: this process's calls, plus the windows every worker process
        (past ones included) ran."""
        with self._lock:
            own = {name: EvaluatorStats.summed([s]) for name, s in self._stats.items()}
        if self._procs is None:
            return own
        snapshots = self._procs.slot_stats()
        return {
            name: EvaluatorStats.summed([s, *(p[name] for p in snapshots if name in p)])
            for name, s in own.items()
        }

    # -- one call --------------------------------------------------------------------------

    def call(
        self, evaluator: Evaluator, records: Sequence[RagRecord], slot: int | None = None
    ) -> list[tuple[Score, ...]]:
        """One evaluator over ``records`` (a batch), within its timeout: one tuple of checked
        Scores per record, in order, error Scores for what failed (see the module's text).

        Args:
            evaluator: One of the engine's evaluators.
            records: Records that have its required fields.
            slot: The worker process to use (modulo how many); None: the least busy one.

        Raises:
            RuntimeError: The engine is closed.
        """
        self._ensure_started()
        return self._scores(evaluator, list(records), slot)

    def _scores(
        self, evaluator: Evaluator, batch: list[RagRecord], slot: int | None
    ) -> list[tuple[Score, ...]]:
        try:
            outputs = self._call(evaluator, batch, slot)
        except _CallTimeout as exc:
            return [self._failed(evaluator, record, str(exc)) for record in batch]
        except Exception as exc:
            if len(batch) > 1:
                with self._lock:
                    self._stats[evaluator.name].fallbacks += 1
                return [s for record in batch for s in self._scores(evaluator, [record], slot)]
            known = isinstance(exc, (_BadOutput, RemoteError))
            message = str(exc) if known else f"{type(exc).__name__}: {exc}"
            return [self._failed(evaluator, batch[0], message)]
        return [checked_scores(evaluator, output) for output in outputs]

    def _call(self, evaluator: Evaluator, batch: list[RagRecord], slot: int | None) -> list[object]:
        """``evaluate_batch(batch)`` where the evaluator runs, within the timeout; checks the
        shape of what it returned."""
        stats = self._stats[evaluator.name]
        per_record = self.timeout_s if self.timeout_s is not None else evaluator.timeout_s
        timeout = per_record * len(batch)
        index = self._in_procs.get(evaluator.name)
        procs, threads = self._procs, self._threads
        future: Future[object] | None = None
        start = time.perf_counter()
        timed_out = False
        try:
            if procs is not None and index is not None:
                heard = None
                if self._on_cpu is not None:
                    heard = partial(self._on_cpu, evaluator, len(batch))
                try:  # the pool gives a process's first call its own load allowance
                    outputs = procs.call(index, batch, timeout, slot, on_cpu=heard)
                except WorkerDied as exc:
                    raise _CallTimeout(str(exc)) from None
            else:
                if threads is None:
                    raise RuntimeError("the evaluation engine is not started")
                if stats.first_call_s is None:
                    timeout += self.load_allowance_s
                on_cpu = self._on_cpu
                if on_cpu is None:
                    future = threads.submit(lambda: evaluator.evaluate_batch(batch))
                else:
                    future = threads.submit(partial(_measured, evaluator, batch, on_cpu))
                outputs = future.result(timeout=timeout)
        except TimeoutError:
            if future is not None and future.done():  # the evaluator itself raised TimeoutError
                raise
            timed_out = True
            raise _CallTimeout(f"timed out after {timeout:g} s") from None
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

    # -- runs ------------------------------------------------------------------------------

    def run(self, records: Sequence[RagRecord]) -> list[Outcome]:
        """Score ``records`` with every evaluator; one Outcome per record, in order."""
        return self.submit(records).result()

    def submit(self, records: Sequence[RagRecord]) -> Future[list[Outcome]]:
        """``run`` as a future: sent to the least busy worker process when every evaluator
        runs in one (the future completes there), else run now on this process's threads.

        Raises:
            RuntimeError: The engine is closed.
        """
        records = list(records)
        self._ensure_started()
        procs = self._procs
        outcomes: Future[list[Outcome]] = Future()
        if procs is not None and len(self._in_procs) == len(self.evaluators):
            procs.run(records).add_done_callback(
                lambda reply: self._finish(records, reply, outcomes)
            )
            return outcomes
        try:
            outcomes.set_result(self._outcomes(self.evaluators, records, None))
        except Exception as exc:
            outcomes.set_exception(exc)
        return outcomes

    def prime(self, records: Sequence[RagRecord]) -> list[tuple[str, str]]:
        """Score ``records`` with every evaluator wherever it runs (each worker process, and
        this process for those on threads), keeping each call's timeout; the outcomes are
        dropped. It fills the model caches, e.g. with a knowledge base's passages.

        Returns:
            ``(evaluator name, error)`` for each (record, evaluator) pair given an error Score.
        """
        records = list(records)
        self._ensure_started()

        def on(slot: int) -> list[tuple[str, str]]:
            # Evaluators on this process's threads are primed once, by slot 0.
            chosen = [e for e in self.evaluators if not slot or e.name in self._in_procs]
            failed: list[tuple[str, str]] = []
            for outcome in self._outcomes(chosen, records, slot):
                errors: dict[str, str] = {}
                for name, score in outcome.scores:
                    if score.error:
                        errors.setdefault(name, score.error)
                failed.extend(errors.items())
            return failed

        slots = range(self.processes if self._procs is not None else 1)
        with ThreadPoolExecutor(len(slots), thread_name_prefix="ragtrace-prime") as pool:
            return [pair for part in pool.map(on, slots) for pair in part]

    def _outcomes(
        self, evaluators: Sequence[Evaluator], records: list[RagRecord], slot: int | None
    ) -> list[Outcome]:
        drivers = self._drivers
        if drivers is not None and len(evaluators) > 1:
            futures = [drivers.submit(self._run_one, e, records, slot) for e in evaluators]
            per_evaluator = [f.result() for f in futures]
        else:
            per_evaluator = [self._run_one(e, records, slot) for e in evaluators]
        return [
            _outcome(evaluators, [results[i] for results in per_evaluator])
            for i in range(len(records))
        ]

    def _run_one(
        self, evaluator: Evaluator, records: list[RagRecord], slot: int | None
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
            scored = self._scores(evaluator, [records[i] for i in group], slot)
            for i, scores in zip(group, scored, strict=True):
                results[i] = scores
        return results

    # -- worker processes ------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if not self._started:
            self.start()

    def _start_processes(self) -> None:
        """Worker processes for the evaluators that pickle; the others stay on threads."""
        from ragtrace._engine.processes import ProcessPool, check_picklable

        movable = []
        for evaluator in self.evaluators:
            try:
                check_picklable([evaluator])
            except ValueError as exc:
                if self._diag is None:
                    raise
                self._diag.error("pipeline.not_picklable", exc)
            else:
                movable.append(evaluator)
        if movable:
            options = {
                "timeout_s": self.timeout_s,
                "workers": self.workers,
                "load_allowance_s": self.load_allowance_s,
            }
            self._procs = ProcessPool(
                movable,
                self.processes,
                EvaluationEngine,
                options,
                shared_cache_mb=self._shared_cache_mb,
            )
            self._in_procs = {e.name: i for i, e in enumerate(movable)}

    def _finish(
        self, records: list[RagRecord], done: Future[Reply], outcomes: Future[list[Outcome]]
    ) -> None:
        """Turn a process's reply (or its death) into Outcomes; error reports to the hook."""
        try:
            reply = done.result()
            if self._on_error is not None:
                for name, index, message in reply.errors:
                    self._on_error(name, records[index], message)
            if reply.failure is not None:
                raise RuntimeError(f"worker process failed: {reply.failure}")
            outcomes.set_result(reply.result)
        except WorkerDied as exc:
            outcomes.set_result(self._lost(records, f"{exc} while scoring this record"))
        except Exception as exc:  # the child's engine failed, or the hook raised
            outcomes.set_exception(exc)

    def _lost(self, records: list[RagRecord], message: str) -> list[Outcome]:
        """Error Scores for records whose process died (skips where fields are missing)."""
        return [
            _outcome(
                self.evaluators,
                [
                    Skip(e.name, missing)
                    if (missing := e.missing_fields(record))
                    else self._failed(e, record, message)
                    for e in self.evaluators
                ],
            )
            for record in records
        ]


def _measured(evaluator: Evaluator, batch: list[RagRecord], on_cpu: CpuHook) -> object:
    """``evaluator.evaluate_batch(batch)`` on this thread, its thread time told to ``on_cpu``."""
    start = time.thread_time()
    try:
        return evaluator.evaluate_batch(batch)
    finally:
        on_cpu(evaluator, len(batch), time.thread_time() - start)


def _outcome(
    evaluators: Sequence[Evaluator], results: Sequence[tuple[Score, ...] | Skip]
) -> Outcome:
    """One record's Outcome from each evaluator's result (its Scores, or a Skip), in order."""
    scores: list[tuple[str, Score]] = []
    skipped: list[Skip] = []
    for evaluator, result in zip(evaluators, results, strict=True):
        if isinstance(result, Skip):
            skipped.append(result)
        else:
            scores.extend((evaluator.name, s) for s in result)
    return Outcome(tuple(scores), tuple(skipped))


def _check_options(
    evaluators: Sequence[Evaluator],
    timeout_s: float | None,
    workers: int,
    load_allowance_s: float,
    processes: int,
) -> None:
    """Raise ValueError for repeated evaluator names or out-of-range options."""
    check_distinct_names(evaluators)
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if load_allowance_s < 0:
        raise ValueError(f"load_allowance_s must be >= 0, got {load_allowance_s!r}")
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 0:
        raise ValueError(f"processes must be an integer >= 0, got {processes!r}")


def check_distinct_names(evaluators: Sequence[Evaluator]) -> None:
    """Raise ValueError naming the evaluator names given more than once."""
    names = [e.name for e in evaluators]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"evaluators must have distinct names; repeated: {repeated}")


def timed_call(
    engine: EvaluationEngine, evaluator: Evaluator, records: Sequence[RagRecord], slot: int
) -> list[Evaluation]:
    """``engine.call`` as the online pipeline publishes it: one Evaluation per record, timed."""
    start_ns = time.time_ns()
    scored = engine.call(evaluator, records, slot)
    end_ns = time.time_ns()
    return [Evaluation(evaluator.name, scores, start_ns, end_ns) for scores in scored]


def evaluate_inline(evaluator: Evaluator, record: RagRecord) -> Evaluation:
    """Run an inline evaluator on the calling thread (no timeout: inline ones must be cheap)."""
    start_ns = time.time_ns()
    try:
        output = evaluator.evaluate(record)
    except Exception as exc:
        scores: tuple[Score, ...] = (
            evaluator.error_score(clip_error(f"{type(exc).__name__}: {exc}")),
        )
    else:
        scores = checked_scores(evaluator, output)
    return Evaluation(evaluator.name, scores, start_ns, time.time_ns())
