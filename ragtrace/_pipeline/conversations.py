"""Whole conversations scored online: once a session goes quiet, its turns are read together.

The pipeline hands every turn that has a session id to ``ConversationScoring.track`` (in
process: on the application's thread, one dict update; in a ``ragtrace worker``: per batch
taken off the queue, into Redis). A background thread asks the ``SessionStore`` every
``tick_s`` for the sessions without a turn for ``Config.session_idle_s`` seconds (or ended by
``ragtrace.end_session``), runs the conversation evaluators
(``ragtrace.evaluators._conversation``) over each one's turns, and publishes the Scores through
the score sinks as one record's evaluations, the record being the session's last turn: the
``gen_ai.evaluation.result`` events land on that turn's trace and span with
``gen_ai.conversation.id``, and Prometheus counts them in ``ragtrace_evaluations_total`` and
``ragtrace_evaluation_score`` under the evaluator's name and the app::

    scoring = ConversationScoring(MemorySessions(300, 10_000, 50), evaluators, sinks,
                                  sampler, metrics, diagnostics)
    scoring.track(record)      # each turn
    scoring.start()            # the thread that scores quiet sessions
    scoring.stop(timeout_s)    # in process: the sessions still open are scored now

Sampling is per session: kept when the hash of the session id falls under the sampler's rate
(``session_low64``, the number ``Sampler(by="session")`` decides on), so a session is scored
whole or not at all, in every process alike. The decision is counted once per session, when it
goes quiet, in ``ragtrace_sampling_decisions_total`` (``session_ratio`` / ``session_ratio_out``).
Turns lost to the store's bounds are counted in ``ragtrace_dropped_records_total``
(``sessions_full``, ``session_turns``). With a store that outlives the process (Redis) a
session whose scores a sink did not confirm is released and scored again later.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ragtrace._diagnostics import Diagnostics
from ragtrace._model import Evaluation, RagRecord
from ragtrace._pipeline.lifecycle import Deadline
from ragtrace._pipeline.metrics import PipelineMetrics
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.sampler import DROPPED, SAMPLED, ratio_bound
from ragtrace._pipeline.sampling.sessions import session_id_of, session_low64
from ragtrace._pipeline.session_store import DueSession, SessionStore, TrackedTurn
from ragtrace._pipeline.sinks import ScoreSinks
from ragtrace.evaluators._conversation import (
    ConversationEvaluator,
    group_sessions,
    run_conversation_evaluators,
)

SESSION_RATIO, SESSION_RATIO_OUT = "session_ratio", "session_ratio_out"
MAX_TICK_S = 1.0


def session_sampled(record: RagRecord, sampler: Sampler) -> bool:
    """Whether ``record``'s session is kept at ``sampler.rate`` (False without a session)."""
    if session_id_of(record) is None:
        return False
    return sampler.rate >= 1.0 or session_low64(record) < ratio_bound(sampler.rate)


class ConversationScoring:
    """Tracks the turns of open sessions and scores each session once it goes quiet.

    Args:
        store: Where the turns wait (``MemorySessions`` in process, ``RedisSessions`` in a
            fleet).
        evaluators: The conversation evaluators, run in this order.
        sinks: Where a session's scores go (the pipeline's score sinks).
        sampler: Its ``rate`` is the share of sessions scored.
        metrics: Counts the session decisions and the turns dropped.
        diagnostics: Where failures are reported (``pipeline.sessions``).
        idle_s: The store's quiet time; the thread looks every ``min(idle_s / 4, 1)`` s.
        deliver_timeout_s: With a durable store, how long the sinks may take to confirm a
            session's scores before it is released to be scored again.
    """

    def __init__(
        self,
        store: SessionStore,
        evaluators: Sequence[ConversationEvaluator],
        sinks: ScoreSinks,
        sampler: Sampler,
        metrics: PipelineMetrics,
        diagnostics: Diagnostics,
        *,
        idle_s: float,
        deliver_timeout_s: float = 10.0,
    ) -> None:
        self.store = store
        self.evaluators = tuple(evaluators)
        self._sinks = sinks
        self._metrics = metrics
        self._diag = diagnostics
        self._rate = sampler.rate
        self._bound = ratio_bound(sampler.rate)
        self.tick_s = min(max(idle_s / 4, 0.01), MAX_TICK_S)
        self._deliver_timeout_s = deliver_timeout_s
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.scored = 0

    # -- turns -------------------------------------------------------------------------------

    def track(self, record: RagRecord) -> None:
        """Add one turn (a record without a session id is ignored). Never raises."""
        session = session_id_of(record)
        if session is None:
            return
        try:
            self._count_drops(self.store.track([(session, record, self._sampled(record))]))
        except Exception as exc:
            self._diag.error("pipeline.sessions", exc)
        if self._thread is None:
            self.start()

    def track_batch(self, records: Sequence[RagRecord]) -> None:
        """Add the turns among ``records`` in one call to the store.

        Raises:
            Exception: The store failed (a worker gives the batch back to be delivered again).
        """
        turns: list[TrackedTurn] = []
        for record in records:
            session = session_id_of(record)
            if session is not None:
                turns.append((session, record, self._sampled(record)))
        if turns:
            self._count_drops(self.store.track(turns))

    def end(self, session_id: str) -> bool:
        """Score ``session_id`` now rather than when it goes quiet; False when it is not open
        here. Never raises."""
        try:
            ended = self.store.end(session_id)
        except Exception as exc:
            self._diag.error("pipeline.sessions", exc)
            return False
        if ended:
            self._wake.set()
        return ended

    def _sampled(self, record: RagRecord) -> bool:
        return self._rate >= 1.0 or session_low64(record) < self._bound  # session_sampled's

    def _count_drops(self, reasons: Sequence[str]) -> None:
        for reason in reasons:
            self._metrics.count_drop(reason)

    # -- scoring -----------------------------------------------------------------------------

    def score_due(self, limit: int = 100) -> int:
        """Claim the quiet sessions (at most ``limit``) and score them; returns how many
        sessions were scored and published."""
        done = 0
        for due in self.store.claim_due(limit):
            if self._score(due):
                done += 1
        return done

    def _score(self, due: DueSession) -> bool:
        """Score and publish one claimed session. Never raises."""
        try:
            self._metrics.count_sampling(
                SAMPLED if due.sampled else DROPPED,
                SESSION_RATIO if due.sampled else SESSION_RATIO_OUT,
            )
            turns = group_sessions(due.turns).get(due.session_id, [])
            if not due.sampled or not turns:
                self.store.finished(due)
                return False
            evaluations = self.evaluate(turns)
            published = not evaluations or self._publish(turns[-1], evaluations)
            if published:
                self.store.finished(due)
                self.scored += 1
            else:
                self.store.release(due)
            return published and bool(evaluations)
        except Exception as exc:
            self._diag.error("pipeline.sessions", exc)
            try:
                self.store.release(due)
            except Exception as release_exc:
                self._diag.error("pipeline.sessions", release_exc)
            return False

    def evaluate(self, turns: list[RagRecord]) -> list[Evaluation]:
        """Each conversation evaluator's run over one session's turns (ordered)."""
        return run_conversation_evaluators(self.evaluators, turns)

    def _publish(self, last: RagRecord, evaluations: list[Evaluation]) -> bool:
        """Publish on the last turn; with a durable store, True only once every sink that
        confirms delivery did."""
        if not self.store.durable:
            self._sinks.publish(last, evaluations)
            return True
        mark = self._sinks.mark()
        failed = self._sinks.publish(last, evaluations)
        failed |= self._sinks.deliver(mark, self._deliver_timeout_s)
        return not failed

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread that scores quiet sessions (once)."""
        with self._start_lock:
            if self._thread is not None or self._stopping:
                return
            self._thread = threading.Thread(target=self._run, name="ragtrace-sessions", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.tick_s)
            self._wake.clear()
            if self._stopping:
                return
            try:
                while self.score_due() and not self._stopping:
                    pass
            except Exception as exc:  # the store is unreachable: try at the next tick
                self._diag.error("pipeline.sessions", exc)

    def stop(self, timeout_s: float) -> bool:
        """Stop the thread; in process, score the sessions still open (they would be lost),
        within ``timeout_s``: the turns of those left are counted as dropped (``shutdown``).
        True if nothing was left."""
        deadline = Deadline(timeout_s)
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(deadline.remaining())
        take_all = getattr(self.store, "take_all", None)
        if self.store.durable or not callable(take_all):
            return True
        left = list(take_all())
        while left and deadline.remaining() > 0:
            self._score(left.pop(0))
        for due in left:
            for _ in due.turns:
                self._metrics.count_drop("shutdown")
        return not left

    def after_fork(self) -> None:
        """In a forked child: no thread yet, and the parent's sessions are not ours."""
        self._thread = None
        self._start_lock = threading.Lock()
        self._wake = threading.Event()
        after_fork = getattr(self.store, "after_fork", None)
        if callable(after_fork):
            after_fork()
