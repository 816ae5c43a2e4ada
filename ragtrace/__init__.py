"""ragtrace: watch a live RAG assistant with OpenTelemetry traces and online evaluators.

Three lines trace a LangChain or LlamaIndex app::

    import ragtrace
    from ragtrace.integrations.langchain import instrument   # or .llama_index
    ragtrace.init(app="support-bot"); instrument()

Scoring test cases in code (a pytest test, a notebook) is one call, which prints a metrics
summary and returns every score (``ragtrace.testing`` has the assertions and a pytest plugin)::

    result = ragtrace.evaluate(cases, ["faithfulness", "answer_relevance"])

A chat assistant names the conversation each request belongs to (LangGraph's ``thread_id`` and
LangChain's ``session_id`` metadata are read by themselves)::

    with ragtrace.session(thread_id, user_id=user):
        answer = chain.invoke(question)
    ragtrace.end_session(thread_id)   # when the chat is closed: score it as a whole now

(a session also gets its conversation scores after ``Config.session_idle_s`` without a turn).

Importing ``ragtrace`` loads no framework and no model library, and not even the runtime: the
OpenTelemetry SDK, prometheus_client and the pipeline are imported when ``init`` (or another
runtime name below) is first used, and the offline engine when ``evaluate`` is, so a process
that imports ragtrace only for its types, or a CLI that never traces, does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragtrace._config import Config, EvaluatorLike, Redactor, SamplerLike, SettingsError
from ragtrace._model import (
    Chunk,
    Conversation,
    Direction,
    Evaluation,
    EvaluatorKind,
    RagRecord,
    RequestStatus,
    Score,
    ToolCall,
    ToolStatus,
    Turn,
)

if TYPE_CHECKING:
    from ragtrace._backends.passage_store import PassageStore, PassageStoreError, StoreSummary
    from ragtrace._backends.passage_store import install as install_passage_store
    from ragtrace._capture.conversation import session
    from ragtrace._engine.outcomes import Skip
    from ragtrace._exporters.base import ScoreSink
    from ragtrace._metrics.endpoint import MetricsServer
    from ragtrace._offline.api import evaluate
    from ragtrace._offline.cases import Case, Cases
    from ragtrace._offline.index import IndexReport, index_passages
    from ragtrace._offline.metrics_summary import Display
    from ragtrace._offline.results import CaseResult, EvaluationResult
    from ragtrace._offline.selection import EvaluatorSpec
    from ragtrace._offline.verdicts import Failure, VerdictStatus
    from ragtrace._pipeline.options import PipelineOptions
    from ragtrace._pipeline.sampling import Cascade, FailedSessions, Rule, Sampler, SamplingDecision
    from ragtrace._pipeline.sampling.limits import AdmissionLimits, LimitSettings
    from ragtrace._pipeline.sinks import RecordSink
    from ragtrace._redaction.policy import Redaction
    from ragtrace._runtime.current import current, end_session, get_current, init
    from ragtrace._runtime.current import (
        start_metrics_server_for_current as start_metrics_server,
    )
    from ragtrace._runtime.evaluation_settings import (
        EvaluationSettings,
        load_settings,
        settings_from_mapping,
    )
    from ragtrace._runtime.instance import Ragtrace

__version__ = "0.1.0"

__all__ = [
    "AdmissionLimits",
    "Cascade",
    "Case",
    "CaseResult",
    "Cases",
    "Chunk",
    "Config",
    "Conversation",
    "Direction",
    "Display",
    "Evaluation",
    "EvaluationResult",
    "EvaluationSettings",
    "EvaluatorKind",
    "EvaluatorLike",
    "EvaluatorSpec",
    "FailedSessions",
    "Failure",
    "IndexReport",
    "LimitSettings",
    "MetricsServer",
    "PassageStore",
    "PassageStoreError",
    "PipelineOptions",
    "RagRecord",
    "Ragtrace",
    "RecordSink",
    "Redaction",
    "Redactor",
    "RequestStatus",
    "Rule",
    "Sampler",
    "SamplerLike",
    "SamplingDecision",
    "Score",
    "ScoreSink",
    "SettingsError",
    "Skip",
    "StoreSummary",
    "ToolCall",
    "ToolStatus",
    "Turn",
    "VerdictStatus",
    "__version__",
    "current",
    "end_session",
    "evaluate",
    "get_current",
    "index_passages",
    "init",
    "install_passage_store",
    "load_settings",
    "session",
    "settings_from_mapping",
    "start_metrics_server",
]

# Public names served by other modules (the runtime, the offline engine), imported on first use.
_LAZY_NAMES = {
    "Ragtrace": ("ragtrace._runtime", "Ragtrace"),
    "current": ("ragtrace._runtime", "current"),
    "end_session": ("ragtrace._runtime", "end_session"),
    "get_current": ("ragtrace._runtime", "get_current"),
    "init": ("ragtrace._runtime", "init"),
    "start_metrics_server": ("ragtrace._runtime", "start_metrics_server_for_current"),
    "session": ("ragtrace._capture.conversation", "session"),
    "evaluate": ("ragtrace._offline.api", "evaluate"),
    "EvaluationResult": ("ragtrace._offline.results", "EvaluationResult"),
    "CaseResult": ("ragtrace._offline.results", "CaseResult"),
    "Skip": ("ragtrace._engine.outcomes", "Skip"),
    "Case": ("ragtrace._offline.cases", "Case"),
    "Cases": ("ragtrace._offline.cases", "Cases"),
    "Display": ("ragtrace._offline.metrics_summary", "Display"),
    "EvaluatorSpec": ("ragtrace._offline.selection", "EvaluatorSpec"),
    "EvaluationSettings": ("ragtrace._runtime.evaluation_settings", "EvaluationSettings"),
    "load_settings": ("ragtrace._runtime.evaluation_settings", "load_settings"),
    "settings_from_mapping": ("ragtrace._runtime.evaluation_settings", "settings_from_mapping"),
    "Sampler": ("ragtrace._pipeline.sampling", "Sampler"),
    "Rule": ("ragtrace._pipeline.sampling", "Rule"),
    "Cascade": ("ragtrace._pipeline.sampling", "Cascade"),
    "FailedSessions": ("ragtrace._pipeline.sampling", "FailedSessions"),
    "PassageStore": ("ragtrace._backends.passage_store", "PassageStore"),
    "PassageStoreError": ("ragtrace._backends.passage_store", "PassageStoreError"),
    "install_passage_store": ("ragtrace._backends.passage_store", "install"),
    "index_passages": ("ragtrace._offline.index", "index_passages"),
    "IndexReport": ("ragtrace._offline.index", "IndexReport"),
    "PipelineOptions": ("ragtrace._pipeline.options", "PipelineOptions"),
    "ScoreSink": ("ragtrace._exporters.base", "ScoreSink"),
    "MetricsServer": ("ragtrace._metrics.endpoint", "MetricsServer"),
    "Redaction": ("ragtrace._redaction.policy", "Redaction"),
    "Failure": ("ragtrace._offline.verdicts", "Failure"),
    "VerdictStatus": ("ragtrace._offline.verdicts", "VerdictStatus"),
    "RecordSink": ("ragtrace._pipeline.sinks", "RecordSink"),
    "SamplingDecision": ("ragtrace._pipeline.sampling", "SamplingDecision"),
    "AdmissionLimits": ("ragtrace._pipeline.sampling.limits", "AdmissionLimits"),
    "LimitSettings": ("ragtrace._pipeline.sampling.limits", "LimitSettings"),
    "StoreSummary": ("ragtrace._backends.passage_store", "StoreSummary"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY_NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'ragtrace' has no attribute {name!r}")
    module, attribute = target
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES))
