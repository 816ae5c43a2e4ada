"""The contract between the evaluation pipeline and its sinks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ragtrace.model import RagRecord, Score

Outcome = Literal["pass", "fail", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluator's run over one record.

    Attributes:
        evaluator: The evaluator's name.
        scores: What it said (one error Score when it raised, hung or returned a bad value).
        start_ns: When the call started, UTC nanoseconds.
        end_ns: When it returned (or was given up on), UTC nanoseconds.
    """

    evaluator: str
    scores: tuple[Score, ...]
    start_ns: int
    end_ns: int

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9


def outcome_of(score: Score) -> Outcome:
    """``error`` if the score carries an error, ``fail`` if it failed its threshold, else pass."""
    if score.error is not None:
        return "error"
    if score.passed is False:
        return "fail"
    return "pass"


class ScoreSink(Protocol):
    """Receives evaluation results. Called from worker threads; must be thread-safe."""

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Publish the results of one record's evaluations."""

    def shutdown(self) -> None:
        """Release resources (flush, close); idempotent."""
