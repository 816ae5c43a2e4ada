"""Sampling: which evaluators run on which record, and when a worker may run them.

``Sampler`` decides (trace-id ratio, rules, per-evaluator rates, rate limits, budgets, cascades);
``Rule`` and ``Cascade`` describe the rules and cascades it takes. Inside, ``limits`` admits runs
under the rate limits and hourly budget, and ``cascades`` orders evaluators and checks bands.
"""

from __future__ import annotations

from ragtrace.pipeline.sampling.rules import STATUSES, Cascade, Rule
from ragtrace.pipeline.sampling.sampler import (
    DROPPED,
    SAMPLED,
    Decision,
    Sampler,
    ratio_bound,
)

__all__ = [
    "DROPPED",
    "SAMPLED",
    "STATUSES",
    "Cascade",
    "Decision",
    "Rule",
    "Sampler",
    "ratio_bound",
]
