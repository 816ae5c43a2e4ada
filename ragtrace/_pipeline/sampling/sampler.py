"""The sampler: which evaluators run on which record, and when the worker may run them.

Three stages, each cheap and counted:

1. ``select(record, evaluators)`` (or ``choose``, its cheaper form) once per record: on a
   worker thread in-process, in the application before a record is shipped to a remote queue,
   on the request thread for inline evaluators. Rules first (the first matching
   rule that applies to an evaluator decides: ``always`` or ``never``), then a ratio decided
   from the low 64 bits of the trace id exactly like OpenTelemetry's ``TraceIdRatioBased``, so
   a trace sampled there is sampled here. An evaluator listed in ``evaluator_rates`` uses its
   own rate *instead of* the global one (it may be higher or lower). With ``by="session"`` the
   ratio is decided on a hash of the record's session id instead (its trace id when it has
   none), so every turn of a sampled conversation is evaluated; a rule with
   ``after_failure=True`` keeps the later turns of a session where a turn failed, as far as
   the sampler's ``FailedSessions`` memory allows (``observe`` feeds it; see
   ``ragtrace._pipeline.sampling.sessions``).
2. ``cascade_ready(name, scores)`` at worker time: a cascaded (expensive) evaluator runs only
   when the score of the cheaper one it follows lies in ``[low, high]``; ``cascade_order`` puts
   evaluators cheapest first with every cascaded one after the one it depends on
   (``ragtrace._pipeline.sampling.cascades``).
3. ``admit(evaluator)`` just before running: a token bucket per rate-limited evaluator and an
   hourly spend budget for judge evaluators (``kind == "judge"``, charged ``cost_usd``;
   ``ragtrace._pipeline.sampling.limits``).

Usage (``Rule`` and ``Cascade`` live in ``ragtrace._pipeline.sampling.rules``)::

    sampler = Sampler(
        0.1,
        evaluator_rates={"pii": 1.0},
        rules=[Rule("always", status=("error",)), Rule("never", route="healthcheck")],
        rate_limits={"judge_faithfulness": 2.0},
        hourly_budget_usd=5.0,
        cascades=[Cascade("judge_faithfulness", after="groundedness", low=0.3, high=0.7)],
    )
    chosen = [d.evaluator for d in sampler.select(record, evaluators) if d.sampled]

Every decision is counted in ``stats()`` and passed to ``on_decision(decision, reason)``:
``select`` reports one decision per (record, evaluator); ``admit`` and ``cascade_ready`` report
only their drops (a later drop of an evaluation already counted as sampled). Reasons are
bounded label values: ``ratio``, ``ratio_out``, ``rule:<name>``, ``rate_limited``,
``budget_exhausted``, ``cascade_out_of_band``, ``cascade_missing``, ``sampler_error``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._pipeline.sampling.cascades import Cascades
from ragtrace._pipeline.sampling.limits import AdmissionLimits, Limits, LimitSettings
from ragtrace._pipeline.sampling.rules import (
    Cascade,
    Rule,
    finite_number,
    per_evaluator_numbers,
)
from ragtrace._pipeline.sampling.sessions import FailedSessions, session_low64, trace_low64
from ragtrace.evaluators._base import Evaluator

SAMPLED, DROPPED = "sampled", "dropped"
RATIO, RATIO_OUT = "ratio", "ratio_out"
SAMPLER_ERROR = "sampler_error"
SAMPLE_BY = ("trace", "session")

_LOW64 = (1 << 64) - 1
_log = logging.getLogger(__name__)


def ratio_bound(rate: float) -> int:
    """The bound ``TraceIdRatioBased`` compares the low 64 bits of a trace id with."""
    return round(rate * (_LOW64 + 1))


@dataclass(frozen=True, slots=True)
class SamplingDecision:
    """Whether ``evaluator`` runs on a record, and why (a bounded label value)."""

    evaluator: str
    sampled: bool
    reason: str

    @property
    def decision(self) -> str:
        """``sampled`` or ``dropped``."""
        return SAMPLED if self.sampled else DROPPED


class Sampler:
    """Decides which evaluators run on which record (see the module docstring).

    Args:
        rate: Share of traces sampled by trace id, in [0, 1].
        evaluator_rates: Per evaluator rates that replace ``rate`` for that evaluator.
        rules: Checked in order; the first one that applies to an evaluator and matches decides.
        rate_limits: Evaluations per second per evaluator (a token bucket, checked by ``admit``).
        burst: Bucket size per rate-limited evaluator (default ``max(1, rate)``).
        hourly_budget_usd: Spend allowed per hour on judge evaluators (None: unlimited).
        cascades: Evaluators that run only when a cheaper score lies in a band.
        clock: Seconds, monotonic (injectable for tests).
        on_decision: Called ``(decision, reason)`` for every decision, on the thread that
            decided (in a pipeline: a worker's or the Redis shipper's); errors are swallowed.
        by: What the ratio is decided on: ``trace`` (the trace id, as OpenTelemetry) or
            ``session`` (a hash of the session id, the trace id for a record without one:
            every turn of a conversation gets the same decision).
        failed_sessions: The memory ``after_failure`` rules read and ``observe`` feeds
            (default: ``FailedSessions()`` when a rule has ``after_failure``, else none).

    Raises:
        ValueError: A bad argument, named in the message.
    """

    def __init__(
        self,
        rate: float = 1.0,
        *,
        evaluator_rates: Mapping[str, float] = MappingProxyType({}),
        rules: Sequence[Rule] = (),
        rate_limits: Mapping[str, float] = MappingProxyType({}),
        burst: Mapping[str, float] = MappingProxyType({}),
        hourly_budget_usd: float | None = None,
        cascades: Sequence[Cascade] = (),
        clock: Callable[[], float] = time.monotonic,
        on_decision: Callable[[str, str], None] | None = None,
        by: str = "trace",
        failed_sessions: FailedSessions | None = None,
    ) -> None:
        self._options: dict[str, Any] = {k: v for k, v in locals().items() if k != "self"}
        self.rate = finite_number(rate, "Sampler: rate", 0.0, 1.0)
        self._bound = ratio_bound(self.rate)
        self.evaluator_rates = per_evaluator_numbers(evaluator_rates, "evaluator_rates", 0.0, 1.0)
        self._bounds = {k: ratio_bound(v) for k, v in self.evaluator_rates.items()}
        self.rules = tuple(rules)
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, Rule):
                raise ValueError(f"Sampler: rules[{i}] must be a Rule, got {type(rule).__name__}")
        limits = per_evaluator_numbers(rate_limits, "rate_limits", 0.0, None)
        sizes = per_evaluator_numbers(burst, "burst", 1.0, None)
        for key in sizes.keys() - limits.keys():
            raise ValueError(f"Sampler: burst[{key!r}] given for an evaluator without rate_limits")
        budget = None
        if hourly_budget_usd is not None:
            budget = finite_number(hourly_budget_usd, "Sampler: hourly_budget_usd", 0.0)
        self._cascades = Cascades(cascades)
        self.cascades = self._cascades.all
        if not callable(clock):
            raise ValueError("Sampler: clock must be a callable returning seconds")
        if on_decision is not None and not callable(on_decision):
            raise ValueError("Sampler: on_decision must be a callable (decision, reason)")
        self._on_decision = on_decision
        if by not in SAMPLE_BY:
            raise ValueError(f"Sampler: by must be 'trace' or 'session', got {by!r}")
        self.by = by
        self._low64: Callable[[RagRecord], int] = session_low64 if by == "session" else _trace_low64
        if failed_sessions is not None and not isinstance(failed_sessions, FailedSessions):
            raise ValueError("Sampler: failed_sessions must be a FailedSessions")
        if failed_sessions is None and any(r.after_failure is not None for r in self.rules):
            failed_sessions = FailedSessions()
        self.failed_sessions = failed_sessions
        self._limits: AdmissionLimits = Limits(limits, sizes, budget, clock)
        self.limit_settings = LimitSettings(limits, sizes, budget)
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        # The names of the last evaluator sequence ``choose`` saw (the pipeline's is fixed).
        self._names: tuple[Sequence[Evaluator], tuple[str, ...]] | None = None
        self._errors = 0

    def replace(self, **changes: Any) -> Sampler:
        """A new sampler with the same settings except ``changes`` (fresh buckets and counts)."""
        return Sampler(**{**self._options, **changes})

    def select(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> list[SamplingDecision]:
        """Decide, for each evaluator, whether it runs on ``record``. Fast; never raises."""
        decided = self._decide_safely(record, evaluators)
        self._report([(SAMPLED if keep else DROPPED, reason) for _, keep, reason in decided])
        return [SamplingDecision(name, keep, reason) for name, keep, reason in decided]

    def choose(
        self, record: RagRecord, evaluators: Sequence[Evaluator]
    ) -> tuple[tuple[str, ...], dict[tuple[str, str], int]]:
        """``select`` for the pipeline: the names of the evaluators that run on ``record`` and
        the decisions counted by (decision, reason), with no object per decision.

        Counted in ``stats()`` and passed to ``on_decision`` exactly as ``select`` does. A
        subclass that overrides ``select`` is asked through its ``select``.
        """
        if type(self).select is not Sampler.select:
            picked = self.select(record, evaluators)
            chosen_by_select = tuple(d.evaluator for d in picked if d.sampled)
            counted: dict[tuple[str, str], int] = {}
            for d in picked:
                key = (d.decision, d.reason)
                counted[key] = counted.get(key, 0) + 1
            return chosen_by_select, counted
        if not self.rules and not self._bounds and self._on_decision is None:
            return self._choose_by_ratio(record, evaluators)
        decided = self._decide_safely(record, evaluators)
        chosen: list[str] = []
        tally: dict[tuple[str, str], int] = {}
        for name, keep, reason in decided:
            if keep:
                chosen.append(name)
                key = (SAMPLED, reason)
            else:
                key = (DROPPED, reason)
            tally[key] = tally.get(key, 0) + 1
        if tally:
            self._tally(tally)
            if self._on_decision is not None:
                self._call_on_decision(
                    [(SAMPLED if keep else DROPPED, reason) for _, keep, reason in decided]
                )
        return tuple(chosen), tally

    def observe(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Learn how ``record`` fared: a failed evaluation makes its session's later turns
        match ``after_failure`` rules (``FailedSessions.observe``). Never raises."""
        memory = self.failed_sessions
        if memory is None:
            return
        try:
            memory.observe(record, evaluations)
        except Exception:
            self._internal_error("observe")

    def admit(self, evaluator: Evaluator) -> tuple[bool, str]:
        """Take a token and charge the hourly budget for one run of ``evaluator`` now."""
        try:
            ok, reason = self._limits.admit(evaluator)
        except Exception:
            self._internal_error("admit")
            ok, reason = False, SAMPLER_ERROR
        if not ok:
            self._report([(DROPPED, reason)])
        return ok, reason

    def cascade_ready(self, evaluator_name: str, scores: Mapping[str, Score]) -> tuple[bool, str]:
        """Whether the cheaper scores ``evaluator_name`` follows (by score name) are in band."""
        ok, reason = self._cascades.ready(evaluator_name, scores)
        if not ok:
            self._report([(DROPPED, reason)])
        return ok, reason

    def cascade_order(self, evaluators: Sequence[Evaluator]) -> list[Evaluator]:
        """Cheapest first (lexical, model, judge; stable), each cascaded one after its cheaper."""
        return self._cascades.order(evaluators)

    def stats(self) -> dict[str, int]:
        """Decisions so far, counted by ``"decision:reason"``."""
        with self._lock:
            return {f"{decision}:{reason}": n for (decision, reason), n in self._counts.items()}

    def charge(self, usd: float | None) -> None:
        """Add real judge spend (reported by the judge client) to this hour's budget."""
        self._limits.charge(usd)

    def budget_left_usd(self) -> float | None:
        """What the judge budget still allows in the current hour (None: no budget)."""
        return self._limits.budget_left_usd()

    def share_limits(self, make: Callable[[LimitSettings], AdmissionLimits]) -> None:
        """Enforce rate limits and the judge budget with ``make(self.limit_settings)`` instead
        of in this process: ``ragtrace worker`` shares them through Redis, so N workers do not
        spend N budgets."""
        self._limits = make(self.limit_settings)

    def __repr__(self) -> str:
        return f"<Sampler rate={self.rate} rules={len(self.rules)} cascades={len(self.cascades)}>"

    def _choose_by_ratio(
        self, record: RagRecord, evaluators: Sequence[Evaluator]
    ) -> tuple[tuple[str, ...], dict[tuple[str, str], int]]:
        """``choose`` with one rate for every evaluator and no rules: one decision for all."""
        try:
            keep = self._low64(record) < self._bound
            cached = self._names
            if cached is None or cached[0] is not evaluators:
                cached = self._names = (evaluators, tuple(str(e.name) for e in evaluators))
        except Exception:
            self._internal_error("select")
            return (), {}
        names = cached[1]
        if not names:
            return (), {}
        key = (SAMPLED, RATIO) if keep else (DROPPED, RATIO_OUT)
        tally = {key: len(names)}
        self._tally(tally)
        return (names if keep else ()), tally

    def _decide_safely(
        self, record: RagRecord, evaluators: Sequence[Evaluator]
    ) -> list[tuple[str, bool, str]]:
        try:
            return self._decide(record, evaluators)
        except Exception:
            self._internal_error("select")
            try:
                return [(str(e.name), False, SAMPLER_ERROR) for e in evaluators]
            except Exception:
                return []

    def _decide(
        self, record: RagRecord, evaluators: Sequence[Evaluator]
    ) -> list[tuple[str, bool, str]]:
        """(evaluator name, runs?, reason) for each evaluator, in order."""
        low = self._low64(record)
        out: list[tuple[str, bool, str]] = []
        rules = self.rules
        bounds = self._bounds
        matched: dict[int, bool] = {}
        for ev in evaluators:
            name = ev.name
            decided = False
            for i, rule in enumerate(rules):
                if rule.evaluators and name not in rule.evaluators:
                    continue
                hit = matched.get(i)
                if hit is None:
                    hit = matched[i] = self._matches(rule, record)
                if hit:
                    out.append((name, rule.action == "always", rule.reason))
                    decided = True
                    break
            if not decided:
                keep = low < bounds.get(name, self._bound)
                out.append((name, keep, RATIO if keep else RATIO_OUT))
        return out

    def _matches(self, rule: Rule, record: RagRecord) -> bool:
        try:
            if not rule.matches(record):
                return False
            if rule.after_failure is None or self.failed_sessions is None:
                return True
            # Asked last, and counted only when it keeps the turn (an always rule's match).
            kept = self.failed_sessions.keeps(record, count=rule.after_failure)
            return kept == rule.after_failure
        except Exception:
            self._internal_error("rule")
            return False

    def _report(self, decisions: list[tuple[str, str]]) -> None:
        if not decisions:
            return
        tally: dict[tuple[str, str], int] = {}
        for key in decisions:
            tally[key] = tally.get(key, 0) + 1
        self._tally(tally)
        if self._on_decision is not None:
            self._call_on_decision(decisions)

    def _tally(self, tally: Mapping[tuple[str, str], int]) -> None:
        counts = self._counts
        with self._lock:
            for key, n in tally.items():
                counts[key] = counts.get(key, 0) + n

    def _call_on_decision(self, decisions: list[tuple[str, str]]) -> None:
        assert self._on_decision is not None
        for decision, reason in decisions:
            try:
                self._on_decision(decision, reason)
            except Exception:
                self._internal_error("on_decision")

    def _internal_error(self, site: str) -> None:
        self._errors += 1
        if self._errors & (self._errors - 1) == 0:  # 1st, 2nd, 4th, 8th, ... time
            _log.warning(
                "ragtrace sampler failed in %s (%d times)", site, self._errors, exc_info=True
            )


def _trace_low64(record: RagRecord) -> int:
    return trace_low64(record.trace_id)
