"""LLM judges: a litellm client with retries, cache and accounting, and the local llama.cpp judge.

Importing this package loads neither litellm nor xllamacpp; they are imported on first use.
"""

from __future__ import annotations

from ragtrace.judges.cache import JudgeCache
from ragtrace.judges.client import JudgeClient, JudgeReply, TokenLogprob
from ragtrace.judges.errors import (
    JudgeError,
    JudgeParseError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
)
from ragtrace.judges.local import LocalJudgeServer
from ragtrace.judges.prompts import PromptTemplate, load_prompt
from ragtrace.judges.usage import JudgeCall, UsageTally, add_listener, remove_listener

__all__ = [
    "JudgeCache",
    "JudgeCall",
    "JudgeClient",
    "JudgeError",
    "JudgeParseError",
    "JudgeRateLimited",
    "JudgeReply",
    "JudgeServerError",
    "JudgeTimeout",
    "JudgeUnavailable",
    "LocalJudgeServer",
    "PromptTemplate",
    "TokenLogprob",
    "UsageTally",
    "add_listener",
    "load_prompt",
    "remove_listener",
]
