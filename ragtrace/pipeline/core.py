"""From a finished request to published scores: submit -> sample -> queue -> workers -> sinks.

``submit(record)`` runs on the application's thread: it hands the record to the record sinks,
asks the sampler which evaluators to run, and puts a work item on a bounded queue. It takes
microseconds, never blocks and never raises; a full queue drops the item and counts it.

Worker threads take batches off the queue, run the chosen evaluators cheapest first (a cascaded
evaluator only when its cheaper one scored in the configured band), each call bounded by the
evaluator's timeout, and hand each record's evaluations to the score sinks (OpenTelemetry,
Prometheus, ...). An evaluator that raises, hangs, returns NaN or a value outside [0, 1] yields
a Score with ``error``; nothing is lost silently.

Evaluators marked ``inline`` run on the request thread through ``run_inline`` (the capture layer
calls it before the RAG span ends), and their results travel with the work item to the sinks.

``flush(timeout_s)`` waits until every queued record is published; ``shutdown()`` flushes and
stops (also registered with ``atexit``). After ``os.fork`` the child starts with an empty queue
and fresh workers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Protocol

from ragtrace.backends.shared_cache import configured_mb
from ragtrace.diagnostics import Diagnostics
from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.outputs import checked_scores, clip_error, describe_value
from ragtrace.exporters.base import Evaluation, ScoreSink
from ragtrace.model import RagRecord, Score
from ragtrace.pipeline.callpool import CallPool
from ragtrace.pipeline.processes import (
    LOAD_ALLOWANCE_S,
    ProcessPool,
    RemoteError,
    WorkerDied,
    check_picklable,
)
from ragtrace.pipeline.queues import MemoryQueue, WorkItem, WorkQueue
from ragtrace.pipeline.sampling import Decision, Sampler

RecordSink = Callable[[RagRecord], None]


class PipelineMetrics(Protocol):
    """What the pipeline reports; ``ragtrace.exporters.metrics.Metrics`` satisfies it."""

    def count_drop(self, reason: str) -> None: ...
    def count_evaluation(self, evaluator: str, outcome: str, app: str) -> None: ...
    def count_sampling(self, decision: str, reason: str) -> None: ...
    def watch_queue_depth(self, fn: Callable[[], float]) -> None: ...


@dataclass(frozen=True)
class PipelineOptions:
    """Sizes and timings of the evaluation pipeline.

    Attributes:
        queue_size: Most records waiting; beyond it new ones are dropped (counted).
        workers: Worker threads taking batches off the queue.
        max_batch: Most records a worker takes at once.
        batch_wait_s: How long a worker waits for the first record of a batch.
        max_call_threads: Cap on threads running evaluator calls (hung calls hold one each).
        processes: 0 (default): evaluator calls run on threads of this process. N > 0: they run
            in N worker processes (``ragtrace.pipeline.processes``), so evaluation uses N cores and
            leaves this process's interpreter lock to the application; each process loads its
            own models. Worker thread i sends its batches to process i mod N (a record's
            evaluators all run in one process, whose caches hold what it has seen), and at
            least N worker threads are started. A hung call's process is killed and replaced.
            Evaluators that cannot pickle stay on threads here (reported once as
            ``pipeline.not_picklable``). ``EvaluationPipeline.prime`` warms every process.
        shared_cache_mb: Size of the cache the worker processes share
            (``ragtrace.backends.shared_cache``); None: ``$RAGTRACE_SHARED_CACHE_MB``, else 32;
            0 turns it off.
        feedback_window: Recent records kept so feedback attached later
            (``attach_feedback``) can still have them evaluated; 0 turns this off.
    """

    queue_size: int = 10000
    workers: int = 2
    max_batch: int = 32
    batch_wait_s: float = 0.05
    max_call_threads: int = 32
    feedback_window: int = 1000
    processes: int = 0
    shared_cache_mb: float | None = None

    def __post_init__(self) -> None:
        for name in ("feedback_window", "processes"):
            if getattr(self, name) < 0:
                raise ValueError(f"pipeline option {name} must be >= 0, got {getattr(self, name)}")
        if self.shared_cache_mb is not None:
            configured_mb(self.shared_cache_mb)  # raises on a negative or non-finite size
        for name in ("queue_size", "workers", "max_batch", "max_call_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"pipeline option {name} must be >= 1, got {getattr(self, name)}")
        if self.batch_wait_s <= 0:
            raise ValueError(f"pipeline option batch_wait_s must be > 0, got {self.batch_wait_s}")


class EvaluationPipeline:
    """Samples, queues and evaluates records off the request path, then publishes the scores."""

    def __init__(
        self,
        diagnostics: Diagnostics,
        metrics: PipelineMetrics,
        *,
        evaluators: Sequence[Evaluator] = (),
        sampler: Sampler | None = None,
        sinks: Sequence[ScoreSink] = (),
        options: PipelineOptions | None = None,
        queue: WorkQueue | None = None,
    ) -> None:
        names = [e.name for e in evaluators]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"evaluators must have distinct names; repeated: {duplicates}")
        self.options = options or PipelineOptions()
        self.sampler = sampler or Sampler()
        self._diag = diagnostics
        self._metrics = metrics
        self._evaluators = {e.name: e for e in self.sampler.cascade_order(list(evaluators))}
        self._background = tuple(e for e in self._evaluators.values() if not e.inline)
        self._inline = tuple(e for e in self._evaluators.values() if e.inline)
        self._score_sinks: tuple[ScoreSink, ...] = tuple(sinks)
        self._record_sinks: tuple[RecordSink, ...] = ()
        self._custom_queue = queue is not None
        self._queue: WorkQueue = queue or MemoryQueue(self.options.queue_size)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._workers: list[threading.Thread] = []
        self._calls: CallPool | None = None
        self._procs: ProcessPool | None = None
        self._in_procs: dict[str, int] = {}
        self._loaded: set[str] = set()  # evaluators that have had a call on threads here
        self._pid = os.getpid()
        self._closed = False
        self._inline_results = threading.local()
        self._recent: OrderedDict[str, tuple[RagRecord, frozenset[str]]] = OrderedDict()
        self.submitted = 0
        metrics.watch_queue_depth(self._queue.depth)
        _register_process_hooks(self)

    # -- the application's side ----------------------------------------------------------------

    @property
    def evaluators(self) -> tuple[Evaluator, ...]:
        return tuple(self._evaluators.values())

    def add_record_sink(self, sink: RecordSink) -> None:
        if not callable(sink):
            raise TypeError(f"record sink must be callable, got {type(sink).__name__}")
        with self._lock:
            self._record_sinks = (*self._record_sinks, sink)

    def remove_record_sink(self, sink: RecordSink) -> None:
        with self._lock:
            self._record_sinks = tuple(s for s in self._record_sinks if s is not sink)

    def add_score_sink(self, sink: ScoreSink) -> None:
        with self._lock:
            self._score_sinks = (*self._score_sinks, sink)

    def run_inline(self, record: RagRecord) -> list[Evaluation]:
        """Run the sampled inline evaluators on the calling thread (before the RAG span ends).

        The results are kept for the ``submit`` of the same record on this thread.
        """
        done: list[Evaluation] = []
        if not self._inline or self._closed:
            return done
        try:
            for decision in self._select(record, self._inline):
                if decision.sampled:
                    evaluation = self._evaluate_now(self._evaluators[decision.evaluator], record)
                    if evaluation is not None:
                        done.append(evaluation)
        except Exception as exc:
            self._diag.error("pipeline.run_inline", exc)
        self._inline_results.value = (record.span_id, tuple(done))
        return done

    def submit(self, record: RagRecord) -> bool:
        """Hand on one finished record. Never blocks, never raises; False if it was dropped."""
        try:
            for sink in self._record_sinks:
                try:
                    sink(record)
                except Exception as exc:
                    self._diag.error("pipeline.record_sink", exc)
            done = self._take_inline_results(record)
            if self._closed:
                self._metrics.count_drop("shutdown")
                return False
            self.submitted += 1
            chosen = tuple(d.evaluator for d in self._select(record, self._background) if d.sampled)
            self._remember(record, chosen)
            return self._enqueue(WorkItem(record, chosen, done))
        except Exception as exc:
            self._diag.error("pipeline.submit", exc)
            return False

    def attach_feedback(self, trace_id: str, feedback: object) -> bool:
        """Attach user feedback to a recent record and evaluate it again under the sampler's
        rules (a ``feedback`` rule can send it to evaluators it skipped the first time).

        Evaluators that already ran on the record do not run twice. Returns False when the
        record is no longer among the last ``feedback_window`` ones (or nothing new was chosen).
        Never raises.
        """
        try:
            with self._lock:
                remembered = self._recent.pop(trace_id, None)
            if remembered is None or self._closed:
                return False
            record, ran = remembered
            record = replace(record, attributes={**record.attributes, "feedback": feedback})
            todo = [e for e in self._background if e.name not in ran]
            chosen = tuple(d.evaluator for d in self._select(record, todo) if d.sampled)
            self._remember(record, ran | set(chosen))
            return bool(chosen) and self._enqueue(WorkItem(record, chosen))
        except Exception as exc:
            self._diag.error("pipeline.attach_feedback", exc)
            return False

    def _remember(self, record: RagRecord, chosen: Iterable[str]) -> None:
        window = self.options.feedback_window
        if not window or not self._background:
            return  # nothing feedback could send the record to: keep the hot path lock-free
        with self._lock:
            self._recent[record.trace_id] = (record, frozenset(chosen))
            while len(self._recent) > window:
                self._recent.popitem(last=False)

    def _enqueue(self, item: WorkItem) -> bool:
        """Put a work item on the queue; count a drop when it is full."""
        if not item.evaluators and not item.done:
            return True
        try:
            self._ensure_workers()
            with self._lock:
                self._pending += 1
            if self._queue.put(item):
                return True
            self._finish_items(1)
            self._metrics.count_drop("queue_full")
            return False
        except Exception as exc:
            self._diag.error("pipeline.enqueue", exc)
            return False

    def _select(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> list[Decision]:
        decisions = self.sampler.select(record, evaluators) if evaluators else []
        for d in decisions:
            self._metrics.count_sampling("sampled" if d.sampled else "dropped", d.reason)
        return decisions

    def _take_inline_results(self, record: RagRecord) -> tuple[Evaluation, ...]:
        stash = getattr(self._inline_results, "value", None)
        if stash is None:
            return ()
        self._inline_results.value = None
        span_id, done = stash
        return done if span_id == record.span_id else ()

    # -- lifecycle --------------------------------------------------------------------------------

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued record has been evaluated and published."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._pending > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def prime(self, records: Sequence[RagRecord]) -> int:
        """Score ``records`` with the background evaluators wherever they run (every worker
        process, and this process for those on threads) and publish nothing.

        For a service's start: passing, say, a sample of the knowledge base's passages fills
        the evaluators' caches before traffic arrives. Each call keeps its evaluator's timeout;
        failed calls are reported to diagnostics (``pipeline.prime``). Returns how many
        (record, evaluator) pairs got an error Score.

        Raises:
            RuntimeError: The pipeline is shut down.
        """
        if self._closed:
            raise RuntimeError("the pipeline is shut down")
        self._ensure_workers()
        records = list(records)

        def on(slot: int) -> int:
            failed = 0
            for evaluator in self._background:
                if slot and evaluator.name not in self._in_procs:
                    continue  # runs on this process's threads: primed once, by slot 0
                for start in range(0, len(records), evaluator.batch_size):
                    batch = records[start : start + evaluator.batch_size]
                    for evaluation in self._evaluate(evaluator, batch, slot):
                        errors = [s.error for s in evaluation.scores if s.error]
                        if errors:
                            failed += 1
                            self._diag.error("pipeline.prime", f"{evaluator.name}: {errors[0]}")
            return failed

        slots = range(self.options.processes if self._procs is not None else 1)
        with ThreadPoolExecutor(len(slots), thread_name_prefix="ragtrace-prime") as pool:
            return sum(pool.map(on, slots))

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Flush, then stop the workers and close the sinks. Idempotent."""
        if self._closed:
            return
        self.flush(timeout_s)
        self._closed = True
        self._queue.close()
        for worker in self._workers:
            worker.join(timeout=max(0.1, self.options.batch_wait_s * 4))
        if self._calls is not None:
            self._calls.shutdown()
        if self._procs is not None:
            self._procs.close()
        left = self._queue.depth()
        if left:
            for _ in range(left):
                self._metrics.count_drop("shutdown")
        for sink in self._score_sinks:
            try:
                sink.shutdown()
            except Exception as exc:
                self._diag.error("pipeline.sink_shutdown", exc)

    def _ensure_workers(self) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        if self._workers:
            return
        with self._lock:
            if self._workers or self._closed:
                return
            self._calls = CallPool(
                base_threads=self.options.workers,
                max_threads=max(self.options.workers, self.options.max_call_threads),
                on_grow=lambda: self._diag.error("pipeline.call_pool_grew", "hung evaluator"),
            )
            if self.options.processes:
                self._start_processes()
            for i in range(max(self.options.workers, self.options.processes)):
                worker = threading.Thread(
                    target=self._work, args=(i,), name=f"ragtrace-worker-{i}", daemon=True
                )
                self._workers.append(worker)
                worker.start()

    def _after_fork(self) -> None:
        """In a forked child: the parent's threads are gone (and its locks may have been held
        mid-fork); start afresh with an empty queue. The child is single-threaded here."""
        self._pid = os.getpid()
        self._workers = []
        self._calls = None
        self._procs = None  # the parent's processes: never ours to use or stop
        self._in_procs = {}
        self._pending = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        if not self._custom_queue:
            self._queue = MemoryQueue(self.options.queue_size)

    def _start_processes(self) -> None:
        """Worker processes for the background evaluators that pickle (under the lock)."""
        movable = []
        for evaluator in self._background:
            try:
                check_picklable([evaluator])
            except ValueError as exc:
                self._diag.error("pipeline.not_picklable", exc)
            else:
                movable.append(evaluator)
        if movable:
            self._procs = ProcessPool(
                movable, self.options.processes, shared_cache_mb=self.options.shared_cache_mb
            )
            self._in_procs = {e.name: i for i, e in enumerate(movable)}

    # -- the workers' side ----------------------------------------------------------------------

    def _work(self, slot: int) -> None:
        while True:
            batch = self._queue.get_batch(self.options.max_batch, self.options.batch_wait_s)
            if not batch:
                if self._closed:
                    return
                continue
            try:
                self._process(batch, slot)
            except Exception as exc:
                self._diag.error("pipeline.worker", exc)
                for _ in batch:
                    self._metrics.count_drop("worker_error")
            finally:
                self._finish_items(len(batch))

    def _finish_items(self, n: int) -> None:
        with self._idle:
            self._pending -= n
            if self._pending <= 0:
                self._pending = 0
                self._idle.notify_all()

    def _process(self, batch: Sequence[WorkItem], slot: int) -> None:
        results: list[list[Evaluation]] = [list(item.done) for item in batch]
        scores: list[dict[str, Score]] = [
            {s.name: s for ev in item.done for s in ev.scores} for item in batch
        ]
        for evaluator in self._background:
            todo = [i for i, item in enumerate(batch) if evaluator.name in item.evaluators]
            todo = [i for i in todo if self._ready(evaluator, batch[i].record, scores[i])]
            for start in range(0, len(todo), evaluator.batch_size):
                chunk = todo[start : start + evaluator.batch_size]
                records = [batch[i].record for i in chunk]
                evaluations = self._evaluate(evaluator, records, slot)
                for i, evaluation in zip(chunk, evaluations, strict=True):
                    results[i].append(evaluation)
                    scores[i].update((s.name, s) for s in evaluation.scores)
        for item, evaluations in zip(batch, results, strict=True):
            if evaluations:
                self._publish(item.record, evaluations)

    def _ready(self, evaluator: Evaluator, record: RagRecord, scores: Mapping[str, Score]) -> bool:
        """Whether to run ``evaluator`` now: required fields, cascade band, rate and budget."""
        if evaluator.missing_fields(record):
            self._metrics.count_evaluation(evaluator.name, "skipped", record.app)
            return False
        ok, reason = self.sampler.cascade_ready(evaluator.name, scores)
        if ok:
            ok, reason = self.sampler.admit(evaluator)
        if not ok:
            self._metrics.count_sampling("dropped", reason)
        return ok

    def _evaluate(
        self, evaluator: Evaluator, records: Sequence[RagRecord], slot: int
    ) -> list[Evaluation]:
        """Run one evaluator over records (call pool, or worker process ``slot``), bounded by
        its timeout (plus ``LOAD_ALLOWANCE_S`` for its first call, which may load models)."""
        start_ns = time.time_ns()
        calls = self._calls
        if calls is None:
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
                future = calls.submit(lambda: evaluator.evaluate_batch(list(records)))
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

    def _evaluate_now(self, evaluator: Evaluator, record: RagRecord) -> Evaluation | None:
        """Run an inline evaluator on the calling thread (no timeout: inline ones must be cheap)."""
        if evaluator.missing_fields(record):
            self._metrics.count_evaluation(evaluator.name, "skipped", record.app)
            return None
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

    def _publish(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        for sink in self._score_sinks:
            try:
                sink.export(record, evaluations)
            except Exception as exc:
                self._diag.error(f"pipeline.sink.{type(sink).__name__}", exc)


_live: weakref.WeakSet[EvaluationPipeline] = weakref.WeakSet()
_hooks_lock = threading.Lock()
_hooks_installed = False


def _register_process_hooks(pipeline: EvaluationPipeline) -> None:
    """Flush live pipelines at interpreter exit; reset them in a forked child."""
    global _hooks_installed
    _live.add(pipeline)
    with _hooks_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_flush_all_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_all_after_fork)


def _flush_all_at_exit() -> None:
    for pipeline in list(_live):
        with contextlib.suppress(Exception):  # the interpreter is going down
            pipeline.shutdown(timeout_s=5.0)


def _reset_all_after_fork() -> None:
    for pipeline in list(_live):
        pipeline._after_fork()
