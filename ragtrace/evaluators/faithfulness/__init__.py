"""Faithfulness: placeholder."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace.evaluators.faithfulness.detector import (
        ClaimCheck,
        SupportDetector,
        claim_support,
        default_detector,
    )
    from ragtrace.evaluators.faithfulness.evaluator import Faithfulness, Hallucination

# Each public name and its module, imported on first use so that a module of the family (the
# features that groundedness reads, the claim splitters) loads without the rest of it.
_EXPORTS = {
    "Faithfulness": "evaluator",
    "Hallucination": "evaluator",
    "SupportDetector": "detector",
    "ClaimCheck": "detector",
    "claim_support": "detector",
    "default_detector": "detector",
}
__all__ = [
    "ClaimCheck",
    "Faithfulness",
    "Hallucination",
    "SupportDetector",
    "claim_support",
    "default_detector",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
