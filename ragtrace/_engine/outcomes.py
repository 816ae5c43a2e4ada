"""What the evaluation engine reports: per record an ``Outcome``, per evaluator ``EvaluatorStats``.

``ragtrace._engine.evaluation.EvaluationEngine.run`` returns one ``Outcome`` per record (the
Scores of every evaluator that ran, a ``Skip`` for each that lacked a required field); the
offline tools write, summarise and compare them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from ragtrace._model import Score


@dataclass(frozen=True, slots=True)
class Skip:
    """An evaluator that did not run on a record, and the required fields the record lacks.

    Public as ``ragtrace.Skip``: ``CaseResult.skipped`` holds them.

    Attributes:
        evaluator: The evaluator's name.
        missing: The fields it requires that the record lacks (``RagRecord`` field names).
    """

    evaluator: str
    missing: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the evaluators said about one record.

    Attributes:
        scores: ``(evaluator name, Score)`` pairs, evaluators in the engine's order.
        skipped: The evaluators that did not run, in the engine's order.
    """

    scores: tuple[tuple[str, Score], ...]
    skipped: tuple[Skip, ...]


@dataclass(slots=True)
class EvaluatorStats:
    """Time and calls spent in one evaluator (wall time of its ``evaluate_batch`` calls).

    Attributes:
        calls: Calls made, fallbacks to one-by-one included.
        records: Records handed to it (a record retried one by one counts twice).
        seconds: Wall time of all calls, the first included.
        first_call_s: Wall time of the first call (model loading shows up here).
        fallbacks: Batches that failed and were run again one record at a time.
        timeouts: Calls that timed out.
    """

    calls: int = 0
    records: int = 0
    seconds: float = 0.0
    first_call_s: float | None = None
    fallbacks: int = 0
    timeouts: int = 0

    @classmethod
    def summed(cls, parts: Iterable[EvaluatorStats]) -> EvaluatorStats:
        """Counts and seconds added up; ``first_call_s`` the longest first call."""
        total = cls()
        for part in parts:
            for f in fields(cls):
                if f.name != "first_call_s":
                    setattr(total, f.name, getattr(total, f.name) + getattr(part, f.name))
            if part.first_call_s is not None:
                total.first_call_s = max(total.first_call_s or 0.0, part.first_call_s)
        return total
