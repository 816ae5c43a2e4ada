"""LLM judges: a litellm client with retries, cache and accounting, and the local llama.cpp judge.

The modules, in the order a call passes through them:

- ``client``: ``JudgeClient.complete``, the one call evaluators make;
- ``exchange``: what is sent (``JudgeRequest``), how the answer is read and validated, and what
  comes back (``JudgeReply``);
- ``transport``: which judge (``JudgeEndpoint``), retries, timeouts and the circuit breaker
  (``CallPolicy``), and the litellm call itself;
- ``cache``: the SQLite response cache;
- ``usage``: how a call ends (its outcome, the ``JudgeError`` family) and what it cost, heard by
  listeners (``ragtrace.init`` turns calls into ``ragtrace_judge_*`` metrics);
- ``prompts``: versioned prompt templates and the fencing of untrusted text;
- ``local``: the embedded llama.cpp judge; ``cli``: ``ragtrace judge serve|models``.

Names are loaded on first use (``ragtrace.init`` only needs ``ragtrace._judges.usage``, so importing
ragtrace pays for none of the rest); importing this package loads neither litellm nor xllamacpp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOMES = {
    "JudgeCache": "cache",
    "JudgeCall": "usage",
    "JudgeClient": "client",
    "JudgeError": "usage",
    "JudgeParseError": "usage",
    "JudgeRateLimited": "usage",
    "JudgeReply": "exchange",
    "JudgeServerError": "usage",
    "JudgeTimeout": "usage",
    "JudgeUnavailable": "usage",
    "LocalJudgeServer": "local",
    "PromptTemplate": "prompts",
    "TokenLogprob": "exchange",
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
    from ragtrace._judges.cache import JudgeCache
    from ragtrace._judges.client import JudgeClient
    from ragtrace._judges.exchange import JudgeReply, TokenLogprob
    from ragtrace._judges.local import LocalJudgeServer
    from ragtrace._judges.prompts import PromptTemplate, load_prompt
    from ragtrace._judges.usage import (
        JudgeCall,
        JudgeError,
        JudgeParseError,
        JudgeRateLimited,
        JudgeServerError,
        JudgeTimeout,
        JudgeUnavailable,
        UsageTally,
        add_listener,
        remove_listener,
    )


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ragtrace._judges' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ragtrace._judges.{home}"), name)
