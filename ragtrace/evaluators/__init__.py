"""Evaluators: the contract, the registry and the built-in metrics.

from ragtrace import evaluators
evaluators.names()                       # what can be built
looping = evaluators.create("looping")   # build one by name

Beside the registry: the online suite in code (``online_suite``), the conversation scores that
read a whole session (``evaluate_sessions`` and its evaluators), the classification report of a
data set, and the process's default LLM judge (``set_default_judge``). The modules that
implement the metrics are internal (a leading underscore).
"""

from __future__ import annotations

from ragtrace._lazy_exports import lazy_exports
from ragtrace.evaluators._base import (
    RECORD_FIELDS,
    Evaluator,
    FunctionEvaluator,
    FunctionResult,
    evaluator,
)
from ragtrace.evaluators._registry import (
    ENTRY_POINT_GROUP,
    Factory,
    create,
    names,
    register,
    unregister,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "RECORD_FIELDS",
    "CachedResponse",
    "ConversationCompleteness",
    "ConversationEvaluator",
    "ConversationRelevancy",
    "Evaluator",
    "Factory",
    "FunctionEvaluator",
    "FunctionResult",
    "JudgeCache",
    "JudgeClient",
    "JudgeReply",
    "KnowledgeRetention",
    "TokenLogprob",
    "classification_report",
    "create",
    "evaluate_sessions",
    "evaluator",
    "group_sessions",
    "names",
    "online_suite",
    "register",
    "set_default_judge",
    "unregister",
]

# Served on first use: the suite and the judges load their models' code, the conversation
# scores the relevance model's.
_LAZY = {
    "ConversationCompleteness": "ragtrace.evaluators._conversation",
    "ConversationEvaluator": "ragtrace.evaluators._conversation",
    "ConversationRelevancy": "ragtrace.evaluators._conversation",
    "KnowledgeRetention": "ragtrace.evaluators._conversation",
    "evaluate_sessions": "ragtrace.evaluators._conversation",
    "group_sessions": "ragtrace.evaluators._conversation",
    "classification_report": "ragtrace.evaluators._classification",
    "online_suite": "ragtrace.evaluators._suites",
    "CachedResponse": "ragtrace._judges.cache",
    "JudgeCache": "ragtrace._judges.cache",
    "JudgeReply": "ragtrace._judges.exchange",
    "TokenLogprob": "ragtrace._judges.exchange",
    "JudgeClient": "ragtrace.evaluators._judge.base",
    "set_default_judge": "ragtrace.evaluators._judge.base",
}
__getattr__ = lazy_exports(__name__, _LAZY)
