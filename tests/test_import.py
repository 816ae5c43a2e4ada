"""`import ragtrace` stays light: no framework, no model library, no LLM client."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "litellm",
    "langchain_core",
    "llama_index",
    "numpy",
)


def printed_json(code: str) -> Any:
    """What ``code`` prints as JSON, run in a fresh interpreter (nothing imported for it)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(out.stdout)


def test_import_ragtrace_loads_no_optional_library() -> None:
    code = (
        "import json, sys, ragtrace\n"
        "ragtrace.init(app='probe')\n"
        "print(json.dumps(sorted(m for m in sys.modules)))"
    )
    loaded = printed_json(code)
    offenders = sorted({m for m in loaded if m.split(".")[0] in HEAVY})
    assert offenders == []
    assert "ragtrace" in loaded


def test_public_api_is_pinned() -> None:
    import ragtrace

    assert sorted(ragtrace.__all__) == [
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


def test_import_ragtrace_loads_no_queue_backend() -> None:
    """Only an application that ships to Redis loads the Redis queue's modules."""
    code = "import json, sys, ragtrace\nprint(json.dumps(sorted(sys.modules)))"
    loaded = printed_json(code)
    assert [m for m in loaded if m.startswith(("redis", "ragtrace._pipeline.queues.redis"))] == []


def test_import_ragtrace_defers_the_runtime_until_it_is_used() -> None:
    """``import ragtrace`` loads neither the OpenTelemetry SDK, prometheus_client nor the
    pipeline; the first use of a runtime name (``ragtrace.init``) does."""
    code = (
        "import json, sys, ragtrace\n"
        "before = sorted(sys.modules)\n"
        "init = ragtrace.init\n"
        "print(json.dumps([before, sorted(sys.modules), init.__module__]))"
    )
    before, after, module = printed_json(code)
    deferred = ("opentelemetry.sdk", "prometheus_client", "ragtrace._pipeline", "ragtrace._runtime")
    assert [m for m in before if m.startswith(deferred)] == []
    assert "ragtrace._runtime" in after and "prometheus_client" in after
    assert module == "ragtrace._runtime.current"


def test_runtime_names_resolve_lazily_and_unknown_names_raise() -> None:
    import ragtrace
    from ragtrace._runtime import (
        Ragtrace,
        current,
        get_current,
        init,
        start_metrics_server_for_current,
    )

    assert ragtrace.init is init and ragtrace.current is current
    assert ragtrace.get_current is get_current and ragtrace.Ragtrace is Ragtrace
    assert ragtrace.start_metrics_server is start_metrics_server_for_current
    assert set(ragtrace.__all__) <= set(dir(ragtrace))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ragtrace.nope


def test_evaluate_loads_the_offline_engine_on_first_use_only() -> None:
    """``import ragtrace`` (and the testing package the pytest plugin imports) loads no part of
    the offline engine; ``ragtrace.evaluate`` resolves to it, still without model libraries."""
    code = (
        "import json, sys, ragtrace, ragtrace.testing, ragtrace._offline.listeners\n"
        "before = sorted(sys.modules)\n"
        "evaluate, result = ragtrace.evaluate, ragtrace.EvaluationResult\n"
        "print(json.dumps([before, sorted(sys.modules), evaluate.__module__, result.__module__]))"
    )
    before, after, module, result_module = printed_json(code)
    assert [m for m in before if m.startswith(("ragtrace._offline.", "ragtrace._pipeline"))] == [
        "ragtrace._offline.listeners"
    ]
    assert (module, result_module) == ("ragtrace._offline.api", "ragtrace._offline.results")
    assert "ragtrace._offline.loop" not in after  # loaded when evaluate runs
    assert sorted({m for m in after if m.split(".")[0] in HEAVY}) == []
