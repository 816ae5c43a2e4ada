"""Verdicts of ``ragtrace.evaluate``: what a Score says (pass, fail, error, no threshold), and
why a test case did not pass (``Failure``: a score under its threshold, an error, or a skip).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragtrace._model import Score

VerdictStatus = Literal["pass", "fail", "error", "skipped", "no threshold"]
"""What a score's verdict was in an offline run: passed or failed its threshold, errored,
skipped, or had no threshold to judge by."""

SEED_NAMES = {
    "query": "input",
    "chunks": "retrieval_context",
    "response": "actual_output",
    "reference": "expected_output",
}
"""Record fields and the DeepEval test-case names a case may have given them under."""


def missing_text(fields: tuple[str, ...]) -> str:
    """``the case lacks chunks (retrieval_context)``: the fields, with their DeepEval names."""
    named = [f"{f} ({SEED_NAMES[f]})" if f in SEED_NAMES else f for f in fields]
    return f"the case lacks {', '.join(named)}"


def score_status(score: Score) -> VerdictStatus:
    """``pass``, ``fail``, ``error`` or ``no threshold`` (an informational score)."""
    if score.error is not None or score.value is None:
        return "error"
    if score.passed is None:
        return "no threshold"
    return "pass" if score.passed else "fail"


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a case did not pass: a score under its threshold, an error, or a skip.

    Attributes:
        case: The case's id.
        system: The case's system.
        status: ``fail``, ``error`` or ``skipped``.
        name: The score's name (for a skip: the evaluator's).
        evaluator: The evaluator that gave (or could not give) the score.
        score: The Score (None for a skip).
        missing: For a skip, the record fields the case lacks.
    """

    case: str
    system: str
    status: VerdictStatus
    name: str
    evaluator: str
    score: Score | None = None
    missing: tuple[str, ...] = ()
