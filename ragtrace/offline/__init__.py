"""Offline evaluation: the evaluators of the online pipeline, run over a data set.

``ragtrace eval --input records.jsonl --evaluators groundedness,looping --output scores.jsonl``
(see ``ragtrace.offline.cli``), ``ragtrace.evaluate(cases, evaluators)`` in code
(``ragtrace.offline.api``), or, lower down::

    from ragtrace.evaluators import create
    from ragtrace.offline import Runner

    with Runner([create("looping")]) as runner:
        outcomes = runner.run(records)          # one Outcome (scores, skips) per RagRecord

``Runner`` is the evaluation engine every path shares
(``ragtrace.pipeline.evaluation.EvaluationEngine``: batches, timeouts, error isolation, worker
processes), under the name offline code knows it by.

Modules: ``records`` (JSON Lines -> RagRecord), ``reading`` (several inputs, ids unique per
system), ``systems`` (which system gave an answer), ``engine`` (the streaming loop),
``output`` (the scores file), ``summary`` (the table), ``classification_summary`` (the
classification report per system), ``selection`` (evaluators from names, options and
settings files), ``callables``, ``answers``,
``runnable_system`` and ``asking`` (systems given as Python objects, asked the questions),
``perturb`` (question perturbations), ``flips`` (verdict flips), ``cli``; for
``ragtrace.evaluate``: ``api``, ``cases`` (test cases in code), ``results`` (what it returns),
``metrics_summary`` (what it prints), ``listeners`` (who hears its results).

Importing this package loads nothing else: the names below are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace.pipeline.evaluation import EvaluationEngine as Runner
    from ragtrace.pipeline.outcomes import EvaluatorStats, Outcome, Skip

__all__ = ["EvaluatorStats", "Outcome", "Runner", "Skip"]

_HOMES = {
    "EvaluatorStats": ("ragtrace.pipeline.outcomes", "EvaluatorStats"),
    "Outcome": ("ragtrace.pipeline.outcomes", "Outcome"),
    "Runner": ("ragtrace.pipeline.evaluation", "EvaluationEngine"),
    "Skip": ("ragtrace.pipeline.outcomes", "Skip"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'ragtrace.offline' has no attribute {name!r}")
    module, attribute = _HOMES[name]
    return getattr(importlib.import_module(module), attribute)
