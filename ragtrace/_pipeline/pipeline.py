"""From a finished request to published scores: submit -> sample -> queue -> workers -> sinks.

``submit(record)`` runs on the application's thread: it hands the record to the record sinks
and puts a work item on a bounded queue. It takes microseconds, never blocks and never raises;
a full queue drops the item and counts it. With the in-process queue it takes no lock that a
worker thread holds (``MemoryQueue``, ``RecentRecords``): work a worker finishes is counted
by the queue (``task_done``), which ``flush`` waits on. The sampler is asked which evaluators
run off the request path: on the worker thread that takes the item (in-process queue), or on
the sending thread of a ``Shipper`` (the Redis shipper), before the item leaves.

What the pipeline does follows from the ends of the queue it is given
(``ragtrace._pipeline.queues.base``): a ``WorkQueue`` (both ends here, the default
``MemoryQueue``) is filled by ``submit`` and emptied by worker threads; a ``Shipper`` only is
filled, and this process starts no workers (the application with a Redis queue); a
``WorkConsumer`` only is emptied by the workers, and nothing is submitted to it
(``ragtrace worker``).

Worker threads (``ragtrace._pipeline.workers``) take batches off the queue, run the chosen
evaluators cheapest first (a cascaded evaluator only when its cheaper one scored in the
configured band), each call bounded by the evaluator's timeout
(``ragtrace._engine.evaluation``), and hand each record's evaluations to the score sinks
(OpenTelemetry, Prometheus, ...). An evaluator that raises, hangs, returns NaN or a value
outside [0, 1] yields a Score with ``error``; nothing is lost silently.

Evaluators marked ``inline`` run on the request thread through ``run_inline`` (the capture layer
calls it before the RAG span ends), and their results travel with the work item to the sinks.

With a redaction policy on (``redaction``) the records submitted are redacted already (what
leaves the process); the raw-text evaluators (``ragtrace._pipeline.raw_text``) are given the
record before redaction, which ``submit`` may carry beside it, and the sinks get every
evaluation redacted.

``flush(timeout_s)`` waits until every queued record is published; ``shutdown(timeout_s)``
flushes and stops, never waiting past ``timeout_s`` (also registered with ``atexit``). After
``os.fork`` the child starts with an empty queue and fresh workers
(``ragtrace._pipeline.lifecycle``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Collection, Sequence

from ragtrace._diagnostics import Diagnostics
from ragtrace._engine.evaluation import EvaluationEngine, check_distinct_names, evaluate_inline
from ragtrace._exporters.base import ScoreSink
from ragtrace._model import Evaluation, RagRecord
from ragtrace._pipeline.conversations import ConversationScoring, session_sampled
from ragtrace._pipeline.cpu_budget import CpuBudget
from ragtrace._pipeline.feedback import RecentRecords
from ragtrace._pipeline.lifecycle import Deadline, register_process_hooks, run_bounded
from ragtrace._pipeline.metrics import PipelineMetrics, skipped
from ragtrace._pipeline.options import PipelineOptions
from ragtrace._pipeline.queues import (
    MemoryQueue,
    Shipper,
    WorkConsumer,
    WorkItem,
    WorkProducer,
    WorkQueue,
)
from ragtrace._pipeline.queues.base import check_protocol
from ragtrace._pipeline.raw_text import RawTextReaders, evaluate_before_shipping
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.session_store import MemorySessions, SessionStore
from ragtrace._pipeline.sinks import RecordSink, ScoreSinks
from ragtrace._pipeline.workers import DELIVER_TIMEOUT_S, Workers
from ragtrace._redaction import NO_REDACTION, Redaction
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._conversation import conversation_evaluators


class EvaluationPipeline:
    """Samples, queues and evaluates records off the request path, then publishes the scores.

    This class is the submit side (``submit``, ``run_inline``, ``attach_feedback``) and wires
    the worker side (``Workers``, ``EvaluationEngine``, ``ScoreSinks``) to it through the queue.

    Args:
        diagnostics: Where errors are reported (never raised into the application).
        metrics: What the pipeline counts.
        evaluators: Evaluators with distinct names; run cheapest first.
        sampler: Decides which evaluators see a record (default: all of them).
        sinks: Score sinks each record's evaluations are published to.
        options: Sizes and timings.
        queue: Where work items wait, both ends in this process (default: a ``MemoryQueue``
            of ``options.config.queue_size``).
        shipper: Instead of ``queue``: where work items go to be evaluated by other processes
            (this one starts no workers).
        consumer: Instead of ``queue``: where work items other processes sent come from
            (nothing is submitted to it).
        redaction: The policy evaluations go through before the sinks (and before they leave
            with a shipped item); ``Config.redact``.
        raw_text_evaluators: Evaluators given the record before redaction where it exists
            (``Config.raw_text_evaluators``; never judges).
        cpu_budget: The CPU the model-backed evaluators may use here
            (``ragtrace._pipeline.cpu_budget``): their calls are charged to it, and a run it
            refuses is skipped and counted (``sampling_decisions_total{decision="dropped",
            reason="cpu_budget"}``). None: ``options.config.model_cpu_share`` if it is > 0, else
            no limit.
        session_store: Where the turns of open conversations wait to be scored as a whole
            (``ragtrace._pipeline.conversations``; a ``ragtrace worker`` gives the fleet's
            Redis one). None: a ``MemorySessions`` of the config's bounds. Sessions are scored
            when ``options.config.session_idle_s`` > 0 and this process evaluates (not when it
            only ships).

    Raises:
        ValueError: Two evaluators share a name.
        ValueError: More than one of ``queue``, ``shipper`` and ``consumer`` is given.
        ValueError: ``session_evaluators`` names an unknown conversation evaluator.
        TypeError: One of them lacks part of its protocol (``WorkQueue``, ``Shipper``,
            ``WorkConsumer``).
    """

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
        shipper: Shipper | None = None,
        consumer: WorkConsumer | None = None,
        redaction: Redaction = NO_REDACTION,
        raw_text_evaluators: Collection[str] = (),
        cpu_budget: CpuBudget | None = None,
        session_store: SessionStore | None = None,
    ) -> None:
        check_distinct_names(evaluators)
        if sum(q is not None for q in (queue, shipper, consumer)) > 1:
            raise ValueError("give the pipeline one of queue, shipper and consumer")
        for given, protocol in ((queue, WorkQueue), (shipper, Shipper), (consumer, WorkConsumer)):
            if given is not None:
                check_protocol(given, protocol)
        self.options = options or PipelineOptions()
        config = self.options.config
        self.sampler = sampler or Sampler()
        self._diag = diagnostics
        self._metrics = metrics
        self._evaluators = {e.name: e for e in self.sampler.cascade_order(list(evaluators))}
        self._background = tuple(e for e in self._evaluators.values() if not e.inline)
        self._inline = tuple(e for e in self._evaluators.values() if e.inline)
        self._redaction = redaction
        self._raw_text = RawTextReaders(
            list(self._evaluators.values()), raw_text_evaluators, diagnostics
        )
        self._score_sinks = ScoreSinks(sinks, diagnostics, redaction)
        self._record_sinks: tuple[RecordSink, ...] = ()
        self._custom_queue = queue is not None
        self._shipper = shipper
        self._local: WorkQueue | None = None
        if shipper is None and consumer is None:
            self._local = queue if queue is not None else MemoryQueue(config.queue_size)
        self._producer: WorkProducer | None = self._local if self._local is not None else shipper
        self._consumer: WorkConsumer | None = self._local if self._local is not None else consumer
        # Whether the sampler runs off the request path: on the workers in-process, or on the
        # shipper's sending thread.
        self._choose_later = self._local is not None or shipper is not None
        # A turn of a sampled conversation goes to the workers even with no evaluator chosen.
        self._ships_turns = shipper is not None and config.session_idle_s > 0
        if shipper is not None:
            shipper.choose_with(self._choose_queued)
        self._lock = threading.Lock()
        if cpu_budget is None and config.model_cpu_share:
            cpu_budget = CpuBudget(config.model_cpu_share)
        self.cpu_budget = cpu_budget
        self._engine = EvaluationEngine(
            self._background,
            workers=config.workers,
            max_call_threads=max(config.workers, self.options.max_call_threads),
            processes=config.processes,
            shared_cache_mb=config.shared_cache_mb,
            passage_store=config.passage_store,
            on_cpu=self._charge if cpu_budget is not None else None,
            diagnostics=diagnostics,
        )
        self.conversations = self._conversation_scoring(session_store)
        self._started = False
        self._workers = self._new_workers()
        self._pid = os.getpid()
        self._closed = False
        self._inline_results = threading.local()
        # None when nothing feedback could send a record to: keeps the hot path lock-free.
        self._recent = (
            RecentRecords(self.options.feedback_window)
            if self.options.feedback_window and self._background
            else None
        )
        self.submitted = 0
        metrics.watch_queue_depth(self._producer.depth if self._producer else _nothing_waits)
        register_process_hooks(self)

    # -- the application's side ----------------------------------------------------------------

    @property
    def evaluators(self) -> tuple[Evaluator, ...]:
        return tuple(self._evaluators.values())

    @property
    def shipper(self) -> Shipper | None:
        """Where work items leave for other processes, if they do (a caller that submits may
        look at its room)."""
        return self._shipper

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
            self._score_sinks.add(sink)

    def run_inline(self, record: RagRecord, raw: RagRecord | None = None) -> list[Evaluation]:
        """Run the sampled inline evaluators on the calling thread (before the RAG span ends);
        a raw-text one reads ``raw`` (the record before redaction). The results, redacted, are
        kept for the ``submit`` of the same record on this thread.
        """
        done: list[Evaluation] = []
        if not self._inline or self._closed:
            return done
        try:
            item = WorkItem(record, None, raw=raw)
            for name in self._choose(record, self._inline):
                evaluator = self._evaluators[name]
                read = self._raw_text.input(evaluator, item)
                if read is None:
                    self._metrics.count_evaluation(name, "skipped", record.app)
                elif not skipped(self._metrics, evaluator, read):
                    done.append(evaluate_inline(evaluator, read))
            done = list(self._redaction.evaluations(done))
        except Exception as exc:
            self._diag.error("pipeline.run_inline", exc)
            done = []
        self._inline_results.value = (record.span_id, tuple(done))
        return done

    def submit(self, record: RagRecord, raw: RagRecord | None = None) -> bool:
        """Hand on one finished record (and, with a redaction policy on, the same record
        before redaction, for the raw-text evaluators: kept in memory only). Never blocks,
        never raises; False if it was dropped."""
        try:
            for sink in self._record_sinks:
                try:
                    sink(record)
                except Exception as exc:
                    self._diag.error("pipeline.record_sink", exc)
            done = self._take_inline_results(record) if self._inline else ()
            if self._closed:
                self._metrics.count_drop("shutdown")
                return False
            self.submitted += 1
            if self._tracks_on_submit:
                self.conversations.track(record)  # type: ignore[union-attr]
            recent = self._recent
            if not self._choose_later:  # the item names its evaluators before it leaves
                chosen = self._choose(record, self._background)
                if recent is not None:
                    recent.remember(record, chosen)
                item = self._before_shipping(WorkItem(record, chosen, done, raw=raw))
                return self._enqueue(item)
            if not self._background and not done:
                return True
            if recent is not None:
                recent.remember(record)
            if self._enqueue(WorkItem(record, None, done, raw=raw)):
                return True
            if recent is not None:  # refused: feedback may still send it to evaluators
                recent.refuse(record)
            return False
        except Exception as exc:
            self._diag.error("pipeline.submit", exc)
            return False

    def attach_feedback(self, trace_id: str, feedback: object) -> bool:
        """Attach user feedback to a recent record and evaluate it again under the sampler's
        rules (a ``feedback`` rule can send it to evaluators it skipped the first time).

        Evaluators that already ran on the record do not run twice. A record still queued
        (its evaluators not chosen yet) gets the feedback before the sampler sees it, and this
        returns True. Returns False when the record is no longer among the last
        ``feedback_window`` ones (or nothing new was chosen). Never raises.
        """
        try:
            recent = self._recent
            if recent is None or self._closed:
                return False
            found = recent.attach(trace_id, feedback)
            if found is None:
                return False
            if found.waiting:
                return True
            todo = [e for e in self._background if e.name not in found.ran]
            chosen = self._choose(found.record, todo)
            recent.remember(found.record, (*found.ran, *chosen))
            return bool(chosen) and self._enqueue(WorkItem(found.record, chosen))
        except Exception as exc:
            self._diag.error("pipeline.attach_feedback", exc)
            return False

    def end_session(self, session_id: str) -> bool:
        """Score conversation ``session_id`` now rather than when it goes quiet. In process
        its turns still queued here are not waited for; False when it has no open session of
        that id. When this process ships its turns to workers, an end mark goes to them
        (``Shipper.end_session``: they score the session once its last turns had time to
        arrive); False when it could not be written (counted). False when sessions are off.
        Never raises."""
        if self._closed:
            return False
        scoring = self.conversations
        if scoring is not None:
            return scoring.end(str(session_id))
        shipper = self._shipper
        return shipper is not None and self._ships_turns and shipper.end_session(str(session_id))

    def _conversation_scoring(self, store: SessionStore | None) -> ConversationScoring | None:
        """What scores quiet sessions here: None when ``session_idle_s`` is 0, when this
        process only ships, or when no conversation evaluator applies."""
        config = self.options.config
        self._tracks_on_submit = False
        if not config.session_idle_s or self._consumer is None:
            return None
        relevance = self._evaluators.get("answer_relevance")
        evaluators = conversation_evaluators(config.session_evaluators, relevance)
        if not evaluators:
            return None
        if store is None:
            store = MemorySessions(
                config.session_idle_s, config.max_open_sessions, config.max_session_turns
            )
        self._tracks_on_submit = self._local is not None
        return ConversationScoring(
            store,
            evaluators,
            self._score_sinks,
            self.sampler,
            self._metrics,
            self._diag,
            idle_s=config.session_idle_s,
            deliver_timeout_s=float(
                getattr(self._consumer, "deliver_timeout_s", DELIVER_TIMEOUT_S)
            ),
        )

    def _enqueue(self, item: WorkItem) -> bool:
        """Put a work item on the queue; count a drop when it is full."""
        if item.evaluators == () and not item.done:
            return True
        try:
            if self._workers is not None:
                self._ensure_workers()
            elif self._pid != os.getpid():
                self._after_fork()
            producer = self._producer
            if producer is not None and producer.put(item):
                return True
            # No producer: items come from other processes, nothing is submitted here.
            full = "queue_full" if producer is None else producer.full_reason
            self._metrics.count_drop("shutdown" if self._closed else full)
            return False
        except Exception as exc:
            self._diag.error("pipeline.enqueue", exc)
            return False

    def _choose(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> tuple[str, ...]:
        """The evaluators the sampler picks for ``record``; its decisions are counted."""
        if not evaluators:
            return ()
        chosen, tally = self.sampler.choose(record, evaluators)
        for (decision, reason), n in tally.items():
            self._metrics.count_sampling(decision, reason, n)
        return chosen

    def _choose_queued(self, item: WorkItem) -> WorkItem:
        """On a worker thread: ``item`` with the evaluators the sampler chooses for its record
        (as it is now: feedback may have reached it while it was queued)."""
        recent = self._recent
        record, tracked = (item.record, False) if recent is None else recent.claim(item.record)
        chosen: tuple[str, ...] = ()
        try:
            chosen = self._choose(record, self._background)
        except Exception as exc:  # a sampler subclass that raises: the record is not evaluated
            self._diag.error("pipeline.sample", exc)
            self._metrics.count_drop("sampler_error")
        if tracked and recent is not None:
            recent.settle(item.record, chosen)
        chosen_item = WorkItem(record, chosen, item.done, item.receipt, item.key, item.raw)
        if self._shipper is None:
            return chosen_item
        if not chosen and self._ships_turns and session_sampled(record, self.sampler):
            chosen_item.ship_unevaluated = True  # the workers score its conversation
        return self._before_shipping(chosen_item)

    def _before_shipping(self, item: WorkItem) -> WorkItem:
        """``item`` as it may leave the process: its raw-text evaluators run here, on the raw
        record, which stays behind (``evaluate_before_shipping``)."""
        if item.raw is None:
            return item
        try:
            return evaluate_before_shipping(
                item, self._background, self._raw_text, self._redaction, self._metrics
            )
        except Exception as exc:
            self._diag.error("pipeline.raw_text", exc)
            return dataclasses.replace(item, raw=None)

    def _take_inline_results(self, record: RagRecord) -> tuple[Evaluation, ...]:
        stash = getattr(self._inline_results, "value", None)
        if stash is None:
            return ()
        self._inline_results.value = None
        span_id, done = stash
        return done if span_id == record.span_id else ()

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers now rather than at the first record (a worker process reading a
        remote queue calls this; an application that only ships records has none)."""
        if self._workers is not None:
            self._ensure_workers()

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued record has been evaluated and published.

        With a queue that ships records elsewhere: until they are all shipped. With a queue
        other processes fill: until no batch is being evaluated.
        """
        if self._producer is not None:
            return self._producer.flush(timeout_s)
        return self._workers.wait_idle(timeout_s) if self._workers is not None else True

    def prime(self, records: Sequence[RagRecord]) -> int:
        """Score ``records`` with the background evaluators wherever they run (every worker
        process, and this process for those on threads) and publish nothing.

        For a service's start: passing, say, a sample of the knowledge base's passages fills
        the evaluators' caches before traffic arrives. Each call keeps its evaluator's timeout;
        a record lacking an evaluator's required field is skipped, as the workers skip it;
        failed calls are reported to diagnostics (``pipeline.prime``). Returns how many
        (record, evaluator) pairs got an error Score.

        Raises:
            RuntimeError: The pipeline is shut down.
        """
        if self._closed:
            raise RuntimeError("the pipeline is shut down")
        self._ensure_workers()
        failed = self._engine.prime(list(records))
        for name, error in failed:
            self._diag.error("pipeline.prime", f"{name}: {error}")
        return len(failed)

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Flush, then stop the workers and close the sinks, all within ``timeout_s``.

        Nothing is waited for past the deadline: records still queued then are counted as
        dropped (``shutdown``); a worker stuck in an evaluator, worker processes that do not
        stop and sinks that do not close are left to end with the process. Idempotent.

        Returns:
            True if everything was published and stopped in time.
        """
        if self._closed:
            return True
        deadline = Deadline(timeout_s)
        flushed = self.flush(timeout_s)
        self._closed = True

        def bounded(name: str, step: Callable[[], object]) -> bool:
            return run_bounded(step, deadline.remaining(), name=name, on_error=self._shutdown_error)

        stopped = []
        if self._workers is not None:  # closes the consumer; a remote one keeps what is left
            stopped.append(bounded("stop-workers", self._workers.stop))
        if self._shipper is not None:  # closing it counts what it still holds
            stopped.append(bounded("close-shipper", self._shipper.close))
        if self.conversations is not None:
            scoring = self.conversations
            stopped.append(bounded("score-sessions", lambda: scoring.stop(deadline.share(0.5))))
        stopped.append(bounded("stop-calls", self._engine.close))
        if self._local is not None:
            self._local.close()  # at once, even if the stopping thread has not got that far
            for _ in range(self._local.take_remaining()):
                self._metrics.count_drop("shutdown")
        stopped.append(bounded("close-sinks", self._score_sinks.shutdown))
        return flushed and all(stopped)

    def _charge(self, evaluator: Evaluator, records: int, cpu_s: float) -> None:
        """A call's CPU time, charged to the budget when the evaluator is model-backed."""
        budget = self.cpu_budget
        if budget is not None and evaluator.kind == "model":
            budget.charge(evaluator.name, cpu_s, records)

    def _shutdown_error(self, exc: BaseException) -> None:
        self._diag.error("pipeline.shutdown", exc)

    def _new_workers(self) -> Workers | None:
        """Threads for the consumer, if there is one here."""
        if self._consumer is None:
            return None
        return Workers(
            self._consumer,
            self._background,
            self.sampler,
            self._engine,
            self._score_sinks,
            self._diag,
            self._metrics,
            self.options,
            choose=self._choose_queued,
            on_done=self._consumer.task_done,
            redelivers=self._local is None,
            raw_text=self._raw_text,
            cpu_budget=self.cpu_budget,
            track_sessions=(
                self.conversations.track_batch
                if self.conversations is not None and not self._tracks_on_submit
                else None
            ),
        )

    def _ensure_workers(self) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        if self._started:
            return
        with self._lock:
            if self._started or self._closed:
                return
            self._engine.start()
            if self._workers is not None:
                self._workers.start()
            if self.conversations is not None:
                self.conversations.start()
            self._started = True

    def _after_fork(self) -> None:
        """In a forked child: the parent's threads are gone (and its locks may have been held
        mid-fork); start afresh with an empty queue. The child is single-threaded here."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        if self._local is not None and not self._custom_queue:
            self._local = self._producer = self._consumer = MemoryQueue(
                self.options.config.queue_size
            )
        if self._shipper is not None:
            self._shipper.after_fork()
        self._started = False
        if self._recent is not None:
            self._recent.after_fork()
        if self.conversations is not None:
            self.conversations.after_fork()
        self._engine.after_fork()  # the parent's processes: never ours to use or stop
        if self.cpu_budget is not None:  # its lock may have been held mid-fork
            self.cpu_budget = CpuBudget(self.cpu_budget.share, self.cpu_budget.window_s)
        self._workers = self._new_workers()


def _nothing_waits() -> int:
    """The depth of a queue this process only reads (the stream holds what waits)."""
    return 0
