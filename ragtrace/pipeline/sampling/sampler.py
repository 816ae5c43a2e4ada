"""The sampler: which evaluators run on which record, and when the worker may run them.

Three stages, each cheap and counted:

1. ``select(record, evaluators)`` on the application's thread: rules first (the first matching
   rule that applies to an evaluator decides: ``always`` or ``never``), then a ratio decided
   from the low 64 bits of the trace id exactly like OpenTelemetry's ``TraceIdRatioBased``, so
   a trace sampled there is sampled here. An evaluator listed in ``evaluator_rates`` uses its
   own rate *instead of* the global one (it may be higher or lower).
2. ``cascade_ready(name, scores)`` at worker time: a cascaded (expensive) evaluator runs only
   when the score of the cheaper one it follows lies in ``[low, high]``; ``cascade_order`` puts
   evaluators cheapest first with every cascaded one after the one it depends on.
3. ``admit(evaluator)`` just before running: a token bucket per rate-limited evaluator and an
   hourly spend budget for judge evaluators (``kind == "judge"``, charged ``cost_usd``).

Usage (``Rule`` and ``Cascade`` live in ``ragtrace.pipeline.sampling.rules``)::

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

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ragtrace.evaluators.base import Evaluator
from ragtrace.model import RagRecord, Score
from ragtrace.pipeline.sampling.rules import (
    Cascade,
    Rule,
    check_acyclic,
    finite_number,
    per_evaluator_numbers,
)

SAMPLED, DROPPED = "sampled", "dropped"
RATIO, RATIO_OUT = "ratio", "ratio_out"
RATE_LIMITED, BUDGET_EXHAUSTED = "rate_limited", "budget_exhausted"
CASCADE_OUT_OF_BAND, CASCADE_MISSING = "cascade_out_of_band", "cascade_missing"
SAMPLER_ERROR = "sampler_error"
ADMITTED, NO_CASCADE, CASCADE_IN_BAND = "admitted", "no_cascade", "cascade_in_band"

_KIND_RANK = {"lexical": 0, "model": 1, "judge": 2, "human": 3}
_LOW64 = (1 << 64) - 1
_HOUR_S = 3600.0
_log = logging.getLogger(__name__)


def ratio_bound(rate: float) -> int:
    """The bound ``TraceIdRatioBased`` compares the low 64 bits of a trace id with."""
    return round(rate * (_LOW64 + 1))


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether ``evaluator`` runs on a record, and why (a bounded label value)."""

    evaluator: str
    sampled: bool
    reason: str

    @property
    def decision(self) -> str:
        """``sampled`` or ``dropped``."""
        return SAMPLED if self.sampled else DROPPED


class _Bucket:
    __slots__ = ("capacity", "last", "rate", "tokens")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity, self.tokens, self.last = rate, capacity, capacity, now

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.last)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.last = max(self.last, now)


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
        on_decision: Called ``(decision, reason)`` for every decision; errors are swallowed.

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
        self._budget = None
        if hourly_budget_usd is not None:
            self._budget = finite_number(hourly_budget_usd, "Sampler: hourly_budget_usd", 0.0)
        self.cascades = tuple(cascades)
        self._after: dict[str, list[Cascade]] = {}
        for i, cascade in enumerate(self.cascades):
            if not isinstance(cascade, Cascade):
                raise ValueError(f"Sampler: cascades[{i}] must be a Cascade")
            self._after.setdefault(cascade.evaluator, []).append(cascade)
        check_acyclic(self._after)
        if not callable(clock):
            raise ValueError("Sampler: clock must be a callable returning seconds")
        if on_decision is not None and not callable(on_decision):
            raise ValueError("Sampler: on_decision must be a callable (decision, reason)")
        self._clock, self._on_decision = clock, on_decision
        self._lock = threading.Lock()
        now = float(clock())
        self._buckets = {k: _Bucket(v, sizes.get(k, max(1.0, v)), now) for k, v in limits.items()}
        self._window_start, self._spent = now, 0.0
        self._counts: dict[str, int] = {}
        self._errors = 0

    def replace(self, **changes: Any) -> Sampler:
        """A new sampler with the same settings except ``changes`` (fresh buckets and counts)."""
        return Sampler(**{**self._options, **changes})

    def select(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> list[Decision]:
        """Decide, for each evaluator, whether it runs on ``record``. Fast; never raises."""
        try:
            decisions = self._select(record, evaluators)
        except Exception:
            self._internal_error("select")
            try:
                decisions = [Decision(str(e.name), False, SAMPLER_ERROR) for e in evaluators]
            except Exception:
                decisions = []
        self._report([(d.decision, d.reason) for d in decisions])
        return decisions

    def admit(self, evaluator: Evaluator) -> tuple[bool, str]:
        """Take a token and charge the hourly budget for one run of ``evaluator`` now."""
        try:
            charged = self._budget is not None and evaluator.kind == "judge"
            cost = float(evaluator.cost_usd) if charged else 0.0
            # A judge whose client reports real spend (``charge``) is checked against its
            # estimate here but charged only what it really costs.
            reserve = 0.0 if getattr(evaluator, "reports_spend", False) else cost
            with self._lock:
                now = float(self._clock())
                bucket = self._buckets.get(evaluator.name)
                if bucket is not None:
                    bucket.refill(now)
                if charged:
                    self._roll_window(now)
                if bucket is not None and bucket.tokens < 1.0:
                    reason = RATE_LIMITED
                elif charged and self._spent + cost > (self._budget or 0.0) * (1 + 1e-12):
                    reason = BUDGET_EXHAUSTED
                else:
                    if bucket is not None:
                        bucket.tokens -= 1.0
                    self._spent += reserve
                    return True, ADMITTED
        except Exception:
            self._internal_error("admit")
            reason = SAMPLER_ERROR
        self._report([(DROPPED, reason)])
        return False, reason

    def cascade_ready(self, evaluator_name: str, scores: Mapping[str, Score]) -> tuple[bool, str]:
        """Whether the cheaper scores ``evaluator_name`` follows (by score name) are in band."""
        reason = NO_CASCADE
        for cascade in self._after.get(evaluator_name, ()):
            score = scores.get(cascade.after)
            if score is None or score.value is None:
                reason = CASCADE_MISSING
                break
            if not cascade.low <= score.value <= cascade.high:
                reason = CASCADE_OUT_OF_BAND
                break
            reason = CASCADE_IN_BAND
        else:
            return True, reason
        self._report([(DROPPED, reason)])
        return False, reason

    def cascade_order(self, evaluators: Sequence[Evaluator]) -> list[Evaluator]:
        """Cheapest first (lexical, model, judge; stable), each cascaded one after its cheaper."""
        pending = sorted(evaluators, key=lambda e: _KIND_RANK.get(e.kind, 2))
        present = {e.name for e in pending}
        ordered: list[Evaluator] = []
        placed: set[str] = set()
        while pending:
            for i, ev in enumerate(pending):
                needs = {c.after for c in self._after.get(ev.name, ()) if c.after in present}
                if needs <= placed:
                    ordered.append(pending.pop(i))
                    placed.add(ev.name)
                    break
            else:  # unreachable: cycles are refused at construction
                ordered.extend(pending)
                break
        return ordered

    def stats(self) -> dict[str, int]:
        """Decisions so far, counted by ``"decision:reason"``."""
        with self._lock:
            return dict(self._counts)

    def charge(self, usd: float | None) -> None:
        """Add real judge spend (reported by the judge client) to this hour's budget."""
        if self._budget is None or usd is None or not usd > 0 or usd == float("inf"):
            return
        with self._lock:
            self._roll_window(float(self._clock()))
            self._spent += float(usd)

    def _roll_window(self, now: float) -> None:
        if now - self._window_start >= _HOUR_S:
            self._window_start += _HOUR_S * ((now - self._window_start) // _HOUR_S)
            self._spent = 0.0

    def budget_left_usd(self) -> float | None:
        """What the judge budget still allows in the current hour (None: no budget)."""
        if self._budget is None:
            return None
        with self._lock:
            if float(self._clock()) - self._window_start >= _HOUR_S:
                return self._budget
            return max(0.0, self._budget - self._spent)

    def __repr__(self) -> str:
        return f"<Sampler rate={self.rate} rules={len(self.rules)} cascades={len(self.cascades)}>"

    def _select(self, record: RagRecord, evaluators: Sequence[Evaluator]) -> list[Decision]:
        low = _low64(record.trace_id)
        matched: dict[int, bool] = {}
        out: list[Decision] = []
        for ev in evaluators:
            name = ev.name
            decision: Decision | None = None
            for i, rule in enumerate(self.rules):
                if rule.evaluators and name not in rule.evaluators:
                    continue
                hit = matched.get(i)
                if hit is None:
                    hit = matched[i] = self._matches(rule, record)
                if hit:
                    decision = Decision(name, rule.action == "always", rule.reason)
                    break
            if decision is None:
                keep = low < self._bounds.get(name, self._bound)
                decision = Decision(name, keep, RATIO if keep else RATIO_OUT)
            out.append(decision)
        return out

    def _matches(self, rule: Rule, record: RagRecord) -> bool:
        try:
            return rule.matches(record)
        except Exception:
            self._internal_error("rule")
            return False

    def _report(self, decisions: list[tuple[str, str]]) -> None:
        if not decisions:
            return
        with self._lock:
            for decision, reason in decisions:
                key = f"{decision}:{reason}"
                self._counts[key] = self._counts.get(key, 0) + 1
        if self._on_decision is not None:
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


def _low64(trace_id: str) -> int:
    try:
        return int(trace_id, 16) & _LOW64
    except (TypeError, ValueError):  # not hex (offline data sets): a stable hash instead
        digest = hashlib.blake2b(str(trace_id).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big")
