"""The ``RAGTRACE_*`` environment variables that are not ``Config`` options.

These are read where they are used, by every process that uses it (a model backend in a
worker process, the judge client, a command's credentials), rather than once by ``init``.
Listed here so that a variable set with a typo is reported (``ragtrace._config.resolve``) and so
that the table of variables in docs/configuration.md has one source. A module that reads a
new one adds it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

VARIABLES: Mapping[str, str] = MappingProxyType(
    {
        "RAGTRACE_MODEL_THREADS": "threads of each local model backend (default 1)",
        "RAGTRACE_JUDGE_MODEL": "the LLM judge: any litellm model string (default: the "
        "embedded llama.cpp judge)",
        "RAGTRACE_JUDGE_API_BASE": "the judge's API base URL",
        "RAGTRACE_JUDGE_API_KEY": "the judge's API key",
        "RAGTRACE_REDACTION_KEY": "key of the hash that redacted ids carry, so distinct ids stay "
        "distinct (default: random per process)",
        "RAGTRACE_JUDGE_LOCAL_MODEL": "the embedded judge's packaged model",
        "RAGTRACE_JUDGE_THREADS": "llama.cpp threads of the embedded judge",
        "RAGTRACE_CACHE_DIR": "folder of rebuildable files: the judge's answer cache, the int8 "
        "model copy",
        "RAGTRACE_JUDGE_CACHE": "the judge's default answer cache file (overrides the folder)",
        "RAGTRACE_LIKELIHOOD_CACHE": "converted likelihood models' folder (`off`: none)",
        "RAGTRACE_EMBEDDING_BACKEND": "the embedder: auto (int8, the default), onnx-int8, "
        "onnx (float32), sentence-transformers",
        "RAGTRACE_FLEET_CACHE_MB": "`ragtrace worker`: the fleet's vector cache in Redis (0: off)",
        "RAGTRACE_REVIEW_TOKEN": "the token `ragtrace review serve` requires",
        "RAGTRACE_INGEST_TOKEN": "the bearer token `ragtrace ingest` requires",
        "RAGTRACE_DATA_DIR": "benchmarks: the folder of labelled data they read",
        "RAGTRACE_PEERS_PYTHON": "benchmarks and tests: the peers' Python (.venv-bench)",
        "RAGTRACE_BENCH_OTHER_CHECKOUT": "benchmarks: another checkout to compare with",
        "RAGTRACE_TEST_EVAL_S": "tests: how long the test evaluators take",
    }
)
"""Variable -> what it sets (the options' own variables are in ``ragtrace._config.options``)."""
