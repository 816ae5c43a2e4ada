"""ragtrace: watch a live RAG assistant with OpenTelemetry traces and online evaluators.

Three lines trace a LangChain or LlamaIndex app::

    import ragtrace
    from ragtrace.integrations.langchain import instrument   # or .llama_index
    ragtrace.init(app="support-bot"); instrument()

Importing ``ragtrace`` loads no framework and no model library, and not even the runtime: the
OpenTelemetry SDK, prometheus_client and the pipeline are imported when ``init`` (or another
runtime name below) is first used, so a process that imports ragtrace only for its types, or
a CLI that never traces, does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragtrace.config import Config
from ragtrace.model import Chunk, RagRecord, Score

if TYPE_CHECKING:
    from ragtrace.runtime.current import current, get_current, init
    from ragtrace.runtime.current import (
        start_metrics_server_for_current as start_metrics_server,
    )
    from ragtrace.runtime.instance import Ragtrace

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "Config",
    "RagRecord",
    "Ragtrace",
    "Score",
    "__version__",
    "current",
    "get_current",
    "init",
    "start_metrics_server",
]

# Public names served by ``ragtrace.runtime``, imported on first use.
_RUNTIME_NAMES = {
    "Ragtrace": "Ragtrace",
    "current": "current",
    "get_current": "get_current",
    "init": "init",
    "start_metrics_server": "start_metrics_server_for_current",
}


def __getattr__(name: str) -> Any:
    target = _RUNTIME_NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'ragtrace' has no attribute {name!r}")
    value = getattr(importlib.import_module("ragtrace.runtime"), target)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_RUNTIME_NAMES))
