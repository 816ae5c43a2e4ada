"""Offline evaluation: the evaluators of the online pipeline, run over a data set.

``ragtrace eval --input records.jsonl --evaluators groundedness,looping --output scores.jsonl``
(see ``ragtrace.offline.cli``), ``ragtrace.evaluate(cases, evaluators)`` in code
(``ragtrace.offline.api``), or, lower down::

    from ragtrace.evaluators import create
    from ragtrace.offline import Runner

    with Runner([create("looping")]) as runner:
        outcomes = runner.run(records)          # one Outcome (scores, skips) per RagRecord

Modules: ``records`` (JSON Lines -> RagRecord), ``reading`` (several inputs, ids unique per
system), ``systems`` (which system gave an answer), ``runner`` (batches, timeouts, error
isolation), ``engine`` (the streaming loop), ``output`` (the scores file), ``summary`` (the
table), ``classification_summary`` (the classification report per system), ``selection``
(evaluators from names, options and settings files), ``callables``, ``answers``,
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
    from ragtrace.pipeline.runner import EvaluatorStats, Outcome, Runner, Skip

__all__ = ["EvaluatorStats", "Outcome", "Runner", "Skip"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'ragtrace.offline' has no attribute {name!r}")
    return getattr(importlib.import_module("ragtrace.pipeline.runner"), name)
