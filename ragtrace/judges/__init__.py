"""LLM judges: a litellm client with retries, cache and accounting, and the local llama.cpp judge.

Names are loaded on first use (``ragtrace.init`` only needs ``ragtrace.judges.usage``, so importing
ragtrace pays for none of the rest); importing this package loads neither litellm nor xllamacpp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "JudgeCache": "cache",
    "JudgeCall": "usage",
    "JudgeClient": "client",
    "JudgeError": "errors",
    "JudgeParseError": "errors",
    "JudgeRateLimited": "errors",
    "JudgeReply": "reply",
    "JudgeServerError": "errors",
    "JudgeTimeout": "errors",
    "JudgeUnavailable": "errors",
    "LocalJudgeServer": "local",
    "PromptTemplate": "prompts",
    "TokenLogprob": "reply",
    "UsageTally": "usage",
    "add_listener": "usage",
    "load_prompt": "prompts",
    "remove_listener": "usage",
}
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

if TYPE_CHECKING:
    from ragtrace.judges.cache import JudgeCache
    from ragtrace.judges.client import JudgeClient
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
    from ragtrace.judges.reply import JudgeReply, TokenLogprob
    from ragtrace.judges.usage import JudgeCall, UsageTally, add_listener, remove_listener


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragtrace.judges' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ragtrace.judges.{home}"), name)
