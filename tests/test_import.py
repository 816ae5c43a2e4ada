"""`import ragtrace` stays light: no framework, no model library, no LLM client."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "litellm",
    "langchain_core",
    "llama_index",
    "numpy",
)


def test_import_ragtrace_loads_no_optional_library() -> None:
    code = (
        "import json, sys, ragtrace\n"
        "ragtrace.init(app='probe')\n"
        "print(json.dumps(sorted(m for m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(out.stdout)
    offenders = sorted({m for m in loaded if m.split(".")[0] in HEAVY})
    assert offenders == []
    assert "ragtrace" in loaded


def test_public_api_is_pinned() -> None:
    import ragtrace

    assert sorted(ragtrace.__all__) == [
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


def test_import_ragtrace_loads_no_queue_backend() -> None:
    """Only an application that ships to Redis loads the Redis queue's modules."""
    code = "import json, sys, ragtrace\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.startswith(("redis", "ragtrace.pipeline.queues.redis"))] == []
