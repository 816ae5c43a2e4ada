"""The worker side of the pipeline: take batches off the queue, evaluate them, publish.

Each worker thread takes up to ``max_batch`` work items at a time, asks the sampler (through
``choose``) about items queued without a choice, and runs the evaluators chosen for each
record, cheapest first: a cascaded evaluator only when its cheaper one
scored in the configured band (``Sampler.cascade_ready``), and each run only when the rate
limits and budget allow it (``Sampler.admit``) and, for a model-backed evaluator, the CPU
budget does (``ragtrace._pipeline.cpu_budget``). Calls go through the ``EvaluationEngine``
(``ragtrace._engine.evaluation``: threads or worker processes, timeouts, error Scores); worker
thread i uses worker process i mod N.
Each record's evaluations, the inline ones made on the request thread included, then go to the
score sinks (those the queue still calls this process's: ``publishable``), and only then is the
item reported done (``on_done``). With a queue that redelivers (Redis), a batch is acknowledged
only once its sinks confirmed delivery (``ScoreSinks.deliver``, one flush per batch); a batch
that was not delivered is given back (``undelivered``), so it is delivered again later::

    workers = Workers(consumer, evaluators, sampler, engine, sinks, diagnostics, metrics,
                      options, choose=pipeline_choose, on_done=consumer.task_done,
                      redelivers=False)
    engine.start()
    workers.start()
    ...
    workers.stop()  # closes the consumer; what is left on it is the closer's to count

Nothing here knows how items got on the queue (``WorkConsumer``), so the same loop serves a
queue that other processes fill.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from ragtrace._diagnostics import Diagnostics
from ragtrace._engine.evaluation import EvaluationEngine, timed_call
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._pipeline.cpu_budget import CPU_BUDGET, CpuBudget
from ragtrace._pipeline.metrics import PipelineMetrics, skipped
from ragtrace._pipeline.options import PipelineOptions
from ragtrace._pipeline.queues import WorkConsumer, WorkItem
from ragtrace._pipeline.raw_text import RawTextReaders
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sinks import ScoreSinks
from ragtrace.evaluators._base import Evaluator

DELIVER_TIMEOUT_S = 10.0
"""How long a batch's sinks may take to confirm delivery when the consumer does not say
(``deliver_timeout_s``)."""


class Workers:
    """Worker threads that evaluate what the queue holds and publish it.

    Args:
        consumer: Where the work items come from.
        evaluators: The background evaluators in cascade order (``Sampler.cascade_order``).
        sampler: Decides at run time whether a cascaded evaluator may run, and admits each run.
        engine: Runs the evaluator calls; started by whoever starts the workers.
        sinks: Where each record's evaluations go.
        diagnostics: Where a batch that failed as a whole is reported (``pipeline.worker``).
        metrics: Counts skips, drops and run-time sampling drops.
        options: ``max_batch`` and ``batch_wait_s`` shape the batches; ``max(workers,
            processes)`` threads are started.
        choose: Gives an item queued with ``evaluators=None`` its evaluators (the sampler's
            choice, made on the worker thread rather than on the request path).
        on_done: Called with the number of work items finished (published, or dropped after
            an error), after the sinks have them.
        redelivers: Whether the consumer delivers a batch it is given back (``release``)
            again, as a remote queue does; False: a batch that failed as a whole is lost and
            counted (``worker_error``).
        raw_text: The evaluators that read an item's record before redaction
            (``ragtrace._pipeline.raw_text``); None: every evaluator reads ``item.record``.
        cpu_budget: Asked before each run of a model-backed evaluator; a run it refuses is
            skipped and counted as a sampling drop (``cpu_budget``). None: no limit.
        track_sessions: Given each batch's records before they are evaluated (the turns of
            conversations scored when they go quiet, ``ragtrace._pipeline.conversations``);
            if it raises, the batch fails as a whole.
    """

    def __init__(
        self,
        consumer: WorkConsumer,
        evaluators: Sequence[Evaluator],
        sampler: Sampler,
        engine: EvaluationEngine,
        sinks: ScoreSinks,
        diagnostics: Diagnostics,
        metrics: PipelineMetrics,
        options: PipelineOptions,
        *,
        choose: Callable[[WorkItem], WorkItem],
        on_done: Callable[[int], None],
        redelivers: bool,
        raw_text: RawTextReaders | None = None,
        cpu_budget: CpuBudget | None = None,
        track_sessions: Callable[[Sequence[RagRecord]], None] | None = None,
    ) -> None:
        self._track_sessions = track_sessions
        self.threads: list[threading.Thread] = []
        self._cpu_budget = cpu_budget
        self._raw_text = raw_text
        self._consumer = consumer
        self._redelivers = redelivers
        self._evaluators = tuple(evaluators)
        self._names = frozenset(e.name for e in self._evaluators)
        self._sampler = sampler
        self._engine = engine
        self._sinks = sinks
        self._diag = diagnostics
        self._metrics = metrics
        self._options = options
        self._choose = choose
        self._on_done = on_done
        self._stopping = False
        self._busy = 0
        self._idle = threading.Condition(threading.Lock())

    def __len__(self) -> int:
        """Threads started."""
        return len(self.threads)

    def start(self) -> None:
        """Start the threads. Not thread-safe: the caller starts once, under its own lock."""
        for i in range(max(self._options.config.workers, self._options.config.processes)):
            worker = threading.Thread(
                target=self._work, args=(i,), name=f"ragtrace-worker-{i}", daemon=True
            )
            self.threads.append(worker)
            worker.start()

    def stop(self) -> None:
        """Close the consumer, so idle threads wake and end, and give each a moment to finish."""
        self._stopping = True
        self._consumer.close()
        for worker in self.threads:
            worker.join(timeout=max(0.1, self._options.config.batch_wait_s * 4))

    def run_batch(self, batch: Sequence[WorkItem], slot: int) -> set[str]:
        """Run each item's evaluators (cascades in order) and publish each record's results.

        Args:
            batch: Work items; their ``done`` evaluations are published with the new ones.
                Items without a choice (``evaluators=None``) get one first.
            slot: The worker process to use for evaluators that run in processes.

        Returns:
            The names of the sinks that failed to take a record (``ScoreSinks.publish``).
        """
        if self._track_sessions is not None:
            self._track_sessions([item.record for item in batch])
        batch = [item if item.evaluators is not None else self._choose(item) for item in batch]
        chosen = [item.evaluators or () for item in batch]
        self._count_unknown(batch, chosen)
        results: list[list[Evaluation]] = [list(item.done) for item in batch]
        scores: list[dict[str, Score]] = [
            {s.name: s for ev in item.done for s in ev.scores} for item in batch
        ]
        for evaluator in self._evaluators:
            todo = [i for i, names in enumerate(chosen) if evaluator.name in names]
            inputs = self._inputs(evaluator, batch, todo)
            todo = [i for i in todo if i in inputs and self._ready(evaluator, inputs[i], scores[i])]
            for start in range(0, len(todo), evaluator.batch_size):
                chunk = todo[start : start + evaluator.batch_size]
                records = [inputs[i] for i in chunk]
                evaluations = timed_call(self._engine, evaluator, records, slot)
                for i, evaluation in zip(chunk, evaluations, strict=True):
                    results[i].append(evaluation)
                    scores[i].update((s.name, s) for s in evaluation.scores)
        publish = self._consumer.publishable(list(batch))
        failed: set[str] = set()
        for i, (item, evaluations) in enumerate(zip(batch, results, strict=True)):
            if evaluations:
                self._sampler.observe(item.record, evaluations)  # a failed session's next turns
                if publish[i]:
                    failed |= self._sinks.publish(item.record, evaluations)
        return failed

    def _inputs(
        self, evaluator: Evaluator, batch: Sequence[WorkItem], todo: Sequence[int]
    ) -> dict[int, RagRecord]:
        """The record ``evaluator`` reads from each item of ``todo`` (its raw one for a
        raw-text reader); items whose raw text is gone are skipped and counted."""
        readers = self._raw_text
        if not readers or evaluator.name not in readers.names:
            return {i: batch[i].record for i in todo}
        inputs: dict[int, RagRecord] = {}
        for i in todo:
            record = readers.input(evaluator, batch[i])
            if record is None:
                self._metrics.count_evaluation(evaluator.name, "skipped", batch[i].record.app)
            else:
                inputs[i] = record
        return inputs

    def _count_unknown(self, batch: Sequence[WorkItem], chosen: Sequence[Sequence[str]]) -> None:
        """Evaluators an item names that this pipeline does not have (a worker configured
        differently from the application that shipped the item): skipped, counted, reported."""
        for item, names in zip(batch, chosen, strict=True):
            unknown = [n for n in names if n not in self._names]
            for name in unknown:
                self._metrics.count_evaluation(name, "skipped", item.record.app)
            if unknown:
                self._diag.error(
                    "pipeline.unknown_evaluator",
                    f"evaluators {unknown} are not configured here; give the worker the same "
                    "settings file as the application",
                )

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no thread is evaluating or acknowledging a batch; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout_s)

    def _work(self, slot: int) -> None:
        while True:
            batch = self._consumer.get_batch(
                self._options.max_batch, self._options.config.batch_wait_s
            )
            if not batch:
                if self._stopping:
                    return
                continue
            with self._idle:
                self._busy += 1
            try:
                self._evaluate_and_acknowledge(batch, slot)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()
                self._on_done(len(batch))

    def _evaluate_and_acknowledge(self, batch: list[WorkItem], slot: int) -> None:
        """Publish, deliver, then acknowledge. A batch that fails, or whose results a sink did
        not confirm, stays with a remote queue (delivered again, dead-lettered after too many
        deliveries); in process a batch that fails is a counted drop."""
        mark = self._sinks.mark() if self._redelivers else ()
        try:
            failed = self.run_batch(batch, slot)
            if self._redelivers:
                timeout_s = getattr(self._consumer, "deliver_timeout_s", DELIVER_TIMEOUT_S)
                failed |= self._sinks.deliver(mark, float(timeout_s))
                if failed:
                    self._undelivered(batch, failed)
                    return
        except Exception as exc:
            self._diag.error("pipeline.worker", exc)
            if self._redelivers:
                self._consumer.release(batch)
            else:
                for _ in batch:
                    self._metrics.count_drop("worker_error")
            return
        try:
            self._consumer.ack(batch)
        except Exception as exc:  # the broker is unreachable: the batch is delivered again
            self._diag.error("pipeline.ack", exc)
            self._consumer.release(batch)

    def _undelivered(self, batch: list[WorkItem], sinks: set[str]) -> None:
        """Give back a batch whose results ``sinks`` did not confirm (counted by the
        consumer when it can; it is delivered again after its claim lapses)."""
        undelivered = getattr(self._consumer, "undelivered", None)
        if callable(undelivered):
            undelivered(batch, sorted(sinks))
        else:
            self._consumer.release(batch)

    def _ready(self, evaluator: Evaluator, record: RagRecord, scores: Mapping[str, Score]) -> bool:
        """Whether to run ``evaluator`` now: required fields, cascade band, CPU budget (asked
        first: a run it refuses takes no rate-limit token), rate and spend budget."""
        if skipped(self._metrics, evaluator, record):
            return False
        ok, reason = self._sampler.cascade_ready(evaluator.name, scores)
        budget = self._cpu_budget
        if (
            ok
            and budget is not None
            and evaluator.kind == "model"
            and not budget.admit(evaluator.name)
        ):
            ok, reason = False, CPU_BUDGET
        elif ok:
            ok, reason = self._sampler.admit(evaluator)
        if not ok:
            self._metrics.count_sampling("dropped", reason)
        return ok
