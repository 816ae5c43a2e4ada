"""The documented import path of the sampler; it lives in ``ragtrace.pipeline.sampling``."""

from __future__ import annotations

from ragtrace.pipeline.sampling import (
    DROPPED,
    SAMPLED,
    Decision,
    FailedSessions,
    Sampler,
    ratio_bound,
)

__all__ = ["DROPPED", "SAMPLED", "Decision", "FailedSessions", "Sampler", "ratio_bound"]
