"""Running an evaluator over records where it lives, within its timeout, into Evaluations.

``EvaluatorCalls`` runs the background evaluators' calls: on daemon threads of a ``CallPool``
in this process, or, with ``PipelineOptions.processes``, in worker processes
(``ragtrace.pipeline.processes``) for the evaluators that pickle. Each call is bounded by the
evaluator's timeout per record (plus ``LOAD_ALLOWANCE_S`` for a first call, which may load
models); an evaluator that raises, hangs or returns the wrong number of outputs yields an error
Score for each record, and outputs are checked as ``ragtrace.evaluators.outputs`` says::

    calls = EvaluatorCalls(evaluators, options, diagnostics)
    calls.start()
    evaluations = calls.evaluate(evaluator, records, slot=0)  # one Evaluation per record
    calls.close()

``evaluate_inline`` runs an inline evaluator on the calling thread, without a timeout.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from ragtrace.diagnostics import Diagnostics
from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.outputs import checked_scores, clip_error, describe_value
from ragtrace.exporters.base import Evaluation
from ragtrace.model import RagRecord, Score
from ragtrace.pipeline.call_errors import LOAD_ALLOWANCE_S, RemoteError, WorkerDied
from ragtrace.pipeline.callpool import CallPool
from ragtrace.pipeline.options import PipelineOptions

if TYPE_CHECKING:
    from ragtrace.pipeline.processes import ProcessPool


class EvaluatorCalls:
    """Where each background evaluator's calls run, and the runs themselves.

    Args:
        evaluators: The background evaluators (distinct names).
        options: ``workers`` and ``max_call_threads`` size the call threads; ``processes`` and
            ``shared_cache_mb`` the worker processes.
        diagnostics: Where a grown call pool, an evaluator that cannot pickle and failed
            priming calls are reported.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        options: PipelineOptions,
        diagnostics: Diagnostics,
    ) -> None:
        self._evaluators = tuple(evaluators)
        self._options = options
        self._diag = diagnostics
        self._threads: CallPool | None = None
        self._procs: ProcessPool | None = None
        self._in_procs: dict[str, int] = {}
        self._loaded: set[str] = set()  # evaluators that have had a call on threads here

    def start(self) -> None:
        """Start the call threads and, with ``options.processes``, the worker processes.

        Not thread-safe: the caller starts once, under its own lock.
        """
        options = self._options
        if options.passage_store is not None:
            from ragtrace.backends.passage_store import install_path

            install_path(options.passage_store)
        self._threads = CallPool(
            base_threads=options.workers,
            max_threads=max(options.workers, options.max_call_threads),
            on_grow=lambda: self._diag.error("pipeline.call_pool_grew", "hung evaluator"),
        )
        if options.processes:
            self._start_processes()

    def evaluate(
        self, evaluator: Evaluator, records: Sequence[RagRecord], slot: int
    ) -> list[Evaluation]:
        """Run one evaluator over records (call pool, or worker process ``slot``), bounded by
        its timeout (plus ``LOAD_ALLOWANCE_S`` for its first call, which may load models).

        Returns:
            One Evaluation per record, in order; error Scores when the call failed.

        Raises:
            RuntimeError: ``start`` has not been called.
        """
        start_ns = time.time_ns()
        threads = self._threads
        if threads is None:
            raise RuntimeError("pipeline workers not started")
        timeout_s = evaluator.timeout_s * len(records)
        procs, index = self._procs, self._in_procs.get(evaluator.name)
        outputs: object = None
        try:
            if procs is not None and index is not None:
                outputs = procs.call(index, records, timeout_s, slot)
            else:
                # Calls until one has finished may load models: the allowance a process gives.
                loading = evaluator.name not in self._loaded
                future = threads.submit(lambda: evaluator.evaluate_batch(list(records)))
                try:
                    outputs = future.result(timeout_s + (LOAD_ALLOWANCE_S if loading else 0.0))
                finally:
                    if loading:
                        self._loaded.add(evaluator.name)
            error = None
            if not isinstance(outputs, list) or len(outputs) != len(records):
                error = (
                    f"evaluate_batch returned {describe_value(outputs)} for {len(records)} records"
                )
        except FutureTimeout:
            error = f"timed out after {evaluator.timeout_s:g} s"
        except (RemoteError, WorkerDied) as exc:
            error = str(exc)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        end_ns = time.time_ns()
        if error is not None or not isinstance(outputs, list):
            failed = (evaluator.error_score(clip_error(error or "no outputs")),)
            return [Evaluation(evaluator.name, failed, start_ns, end_ns) for _ in records]
        return [
            Evaluation(evaluator.name, checked_scores(evaluator, out), start_ns, end_ns)
            for out in outputs
        ]

    def prime(self, records: Sequence[RagRecord]) -> int:
        """Score ``records`` with every evaluator wherever it runs (each worker process, and
        this process for those on threads), keeping each call's timeout.

        Failed calls are reported to diagnostics (``pipeline.prime``).

        Returns:
            How many (record, evaluator) pairs got an error Score.
        """

        def on(slot: int) -> int:
            failed = 0
            for evaluator in self._evaluators:
                if slot and evaluator.name not in self._in_procs:
                    continue  # runs on this process's threads: primed once, by slot 0
                for start in range(0, len(records), evaluator.batch_size):
                    batch = records[start : start + evaluator.batch_size]
                    for evaluation in self.evaluate(evaluator, batch, slot):
                        errors = [s.error for s in evaluation.scores if s.error]
                        if errors:
                            failed += 1
                            self._diag.error("pipeline.prime", f"{evaluator.name}: {errors[0]}")
            return failed

        slots = range(self._options.processes if self._procs is not None else 1)
        with ThreadPoolExecutor(len(slots), thread_name_prefix="ragtrace-prime") as pool:
            return sum(pool.map(on, slots))

    def close(self) -> None:
        """Stop the call threads (a hung call's thread ends with the process) and processes."""
        if self._threads is not None:
            self._threads.shutdown()
        if self._procs is not None:
            self._procs.close()
        if self._options.passage_store is not None:
            from ragtrace.backends import passage_store

            store = passage_store.installed()
            if store is not None and str(store.path) == self._options.passage_store:
                passage_store.install(None)  # the one ``start`` installed
                store.close()

    def after_fork(self) -> None:
        """In a forked child: forget the parent's threads and processes (never ours to use or
        stop); ``start`` makes new ones."""
        self._threads = None
        self._procs = None
        self._in_procs = {}

    def _start_processes(self) -> None:
        """Worker processes for the evaluators that pickle; the others stay on threads."""
        from ragtrace.pipeline.processes import ProcessPool, check_picklable

        movable = []
        for evaluator in self._evaluators:
            try:
                check_picklable([evaluator])
            except ValueError as exc:
                self._diag.error("pipeline.not_picklable", exc)
            else:
                movable.append(evaluator)
        if movable:
            self._procs = ProcessPool(
                movable, self._options.processes, shared_cache_mb=self._options.shared_cache_mb
            )
            self._in_procs = {e.name: i for i, e in enumerate(movable)}


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
