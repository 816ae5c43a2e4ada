"""Evaluators: the contract, the registry and the built-in metrics.

from ragtrace import evaluators
evaluators.names()                       # what can be built
looping = evaluators.create("looping")   # build one by name
"""

from __future__ import annotations

from ragtrace.evaluators.base import RECORD_FIELDS, Evaluator, FunctionEvaluator, evaluator
from ragtrace.evaluators.registry import ENTRY_POINT_GROUP, create, names, register, unregister

__all__ = [
    "ENTRY_POINT_GROUP",
    "RECORD_FIELDS",
    "Evaluator",
    "FunctionEvaluator",
    "create",
    "evaluator",
    "names",
    "register",
    "unregister",
]
