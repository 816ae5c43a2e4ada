"""The documented path of ``set_default_judge``; it lives in ``ragtrace.evaluators.judge.base``."""

from __future__ import annotations

from ragtrace.evaluators.judge.base import set_default_judge

__all__ = ["set_default_judge"]
