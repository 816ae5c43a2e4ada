"""The documented import path of sampling rules; they live in ``ragtrace.pipeline.sampling``."""

from __future__ import annotations

from ragtrace.pipeline.sampling.rules import STATUSES, Cascade, Rule

__all__ = ["STATUSES", "Cascade", "Rule"]
