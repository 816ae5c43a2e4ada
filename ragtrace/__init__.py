"""ragtrace: watch a live RAG assistant with OpenTelemetry traces and online evaluators.

Three lines trace a LangChain or LlamaIndex app::

    import ragtrace
    from ragtrace.integrations.langchain import instrument   # or .llama_index
    ragtrace.init(app="support-bot"); instrument()

Importing ``ragtrace`` loads no framework and no model library.
"""

from __future__ import annotations

from ragtrace.config import Config
from ragtrace.model import Chunk, RagRecord, Score
from ragtrace.runtime import Ragtrace, current, get_current, init
from ragtrace.runtime import start_metrics_server_for_current as start_metrics_server

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
