"""Sampling: which evaluators run on which record, and when a worker may run them.

``Sampler`` decides (trace-id or session ratio, rules, per-evaluator rates, rate limits, budgets,
cascades); ``Rule`` and ``Cascade`` describe the rules and cascades it takes, ``FailedSessions``
the sessions whose later turns ``after_failure`` rules keep. Inside, ``limits`` admits runs
under the rate limits and hourly budget, ``cascades`` orders evaluators and checks bands, and
``sessions`` hashes session ids and remembers failed sessions.
"""

from __future__ import annotations

from ragtrace._pipeline.sampling.rules import STATUSES, Cascade, Rule
from ragtrace._pipeline.sampling.sampler import (
    DROPPED,
    SAMPLED,
    Sampler,
    SamplingDecision,
    ratio_bound,
)
from ragtrace._pipeline.sampling.sessions import FailedSessions

__all__ = [
    "DROPPED",
    "SAMPLED",
    "STATUSES",
    "Cascade",
    "FailedSessions",
    "Rule",
    "Sampler",
    "SamplingDecision",
    "ratio_bound",
]
