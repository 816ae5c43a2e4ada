"""The evaluation engine: every path that scores records calls evaluators through it.

``EvaluationEngine`` (``evaluation``) runs evaluator calls with timeouts, batch fallbacks and
checked outputs, on ``callpool`` threads or in worker ``processes`` (``call_errors``: what a
call that failed outside the evaluator says), and reports one ``Outcome`` per record
(``outcomes``). The online pipeline's workers (``ragtrace.init``, ``ragtrace worker``,
``ragtrace ingest``), ``ragtrace eval``, ``ragtrace.evaluate`` and the pytest plugin all use it,
under this one name.
"""

from __future__ import annotations

from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._engine.outcomes import EvaluatorStats, Outcome, Skip

__all__ = ["EvaluationEngine", "EvaluatorStats", "Outcome", "Skip"]
