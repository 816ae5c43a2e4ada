"""What comes back from a judge: the parsed reply, token log-probabilities, the raw answer.

``JudgeReply`` is what ``JudgeClient.complete`` returns. ``RawAnswer.from_response`` reads the
text, token counts and log-probabilities out of one litellm response; ``logprobs_to_json`` and
``logprobs_from_json`` carry log-probabilities through the response cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragtrace.judges.errors import JudgeParseError


@dataclass(frozen=True)
class TokenLogprob:
    """One output token, its log-probability and the top alternatives the server returned."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class JudgeReply:
    """A parsed judge answer and what it cost."""

    data: Any
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    seconds: float
    cached: bool
    logprobs: tuple[TokenLogprob, ...] | None = None
    prompt_id: str = ""


@dataclass(frozen=True)
class RawAnswer:
    """One answer as the server sent it: text not yet parsed, tokens, log-probabilities."""

    text: str
    input_tokens: int
    output_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None

    @classmethod
    def from_response(cls, response: Any) -> RawAnswer:
        """Read a litellm ``ModelResponse``.

        Raises:
            JudgeParseError: The response holds no message.
        """
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
        except (AttributeError, IndexError, TypeError) as exc:
            raise JudgeParseError(f"the judge's response has no message: {exc}") from exc
        use = getattr(response, "usage", None)
        return cls(
            str(text),
            int(getattr(use, "prompt_tokens", 0) or 0),
            int(getattr(use, "completion_tokens", 0) or 0),
            _logprobs_from_choice(choice),
        )


def _logprobs_from_choice(choice: Any) -> tuple[TokenLogprob, ...] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if content is None and isinstance(getattr(choice, "logprobs", None), Mapping):
        content = choice.logprobs.get("content")
    if not content:
        return None
    out = []
    for item in content:
        top = tuple(
            (str(_field(t, "token")), float(_field(t, "logprob")))
            for t in (_field(item, "top_logprobs") or ())
        )
        out.append(TokenLogprob(str(_field(item, "token")), float(_field(item, "logprob")), top))
    return tuple(out)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def logprobs_to_json(logprobs: tuple[TokenLogprob, ...] | None) -> Any:
    """Log-probabilities as JSON lists ``[token, logprob, [[alternative, logprob], ...]]``."""
    if logprobs is None:
        return None
    return [[t.token, t.logprob, [list(a) for a in t.top]] for t in logprobs]


def logprobs_from_json(data: Any) -> tuple[TokenLogprob, ...] | None:
    """The inverse of ``logprobs_to_json`` (None for no log-probabilities)."""
    if not data:
        return None
    return tuple(
        TokenLogprob(str(tok), float(lp), tuple((str(a), float(b)) for a, b in top))
        for tok, lp, top in data
    )
