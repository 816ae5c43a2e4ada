"""One chat completion through litellm: the call, its failure class, its tokens and cost.

``LitellmTransport.send`` makes one attempt under a ``CallPolicy`` slot and returns the
``RawAnswer``; a failure is raised as the ``JudgeError`` it is counted under (``classify``), so
the policy knows whether to retry. Tokens and litellm's cost estimate are added to the call's
``CallUsage`` (a judge on this machine costs nothing).

Calls made here are not part of the user's application: they run with OpenTelemetry
instrumentation suppressed in an empty context (``untraced``: no parent span), and with
litellm's ``no-log`` flag so the user's litellm callbacks do not log them. litellm is imported
on first use (``load_litellm``), with its packaged price map so that no call goes out for it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ragtrace.judges.endpoint import JudgeEndpoint
from ragtrace.judges.errors import (
    JudgeError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
)
from ragtrace.judges.policy import CallPolicy
from ragtrace.judges.reply import RawAnswer
from ragtrace.judges.usage import CallUsage


class LitellmTransport:
    """Sends chat completions to one judge endpoint. Thread-safe.

    Args:
        endpoint: Where the judge is.
        policy: Gives each attempt its slot, timeout and circuit breaker.
        options: Other litellm ``completion`` keyword arguments, passed through.
    """

    def __init__(
        self, endpoint: JudgeEndpoint, policy: CallPolicy, options: dict[str, Any]
    ) -> None:
        self.endpoint = endpoint
        self.policy = policy
        self.options = options

    def send(
        self, messages: Sequence[dict[str, str]], params: dict[str, Any], usage: CallUsage
    ) -> RawAnswer:
        """One attempt; its tokens and cost are added to ``usage``.

        Raises:
            JudgeError: The subclass the failure is counted under.
        """
        usage.attempts += 1
        with self.policy.slot():
            target = self.endpoint.litellm_target()
            litellm = load_litellm()
            kwargs: dict[str, Any] = {
                **self.options,
                **params,
                "messages": list(messages),
                "timeout": self.policy.timeout_s,
                "num_retries": 0,
                "max_retries": 0,
                "no-log": True,
                **target,
            }
            with untraced(), self.policy.watch():
                try:
                    response = litellm.completion(**kwargs)
                except Exception as exc:
                    raise classify(exc) from exc
        answer = RawAnswer.from_response(response)
        free = self.endpoint.on_this_machine  # no API spend (litellm has no price for it)
        usage.add(
            answer.input_tokens, answer.output_tokens, 0.0 if free else _cost(litellm, response)
        )
        return answer


def classify(exc: Exception) -> JudgeError:
    """Map a litellm/httpx exception to the judge outcome it is counted under."""
    litellm = load_litellm()
    message = f"{type(exc).__name__}: {str(exc)[:300]}"
    if isinstance(exc, litellm.Timeout):
        return JudgeTimeout(message)
    if isinstance(exc, litellm.RateLimitError):
        error: JudgeError = JudgeRateLimited(message)
        error.retry_after = _retry_after(exc)  # type: ignore[attr-defined]
        return error
    if isinstance(exc, litellm.APIConnectionError | ConnectionError) or _lost_connection(exc):
        return JudgeUnavailable(message)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return JudgeServerError(message)
    if isinstance(exc, litellm.InternalServerError | litellm.ServiceUnavailableError):
        return JudgeServerError(message)
    return JudgeError(message)


def _lost_connection(exc: BaseException) -> bool:
    """Whether the cause chain holds a refused, reset or dropped connection (not a timeout)."""
    import httpx

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, httpx.TimeoutException):
            return False
        if isinstance(seen, httpx.TransportError | ConnectionError):
            return True
        if type(seen).__name__ == "APIConnectionError" and "timed out" not in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retry_after(exc: Exception) -> float | None:
    headers: Any = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        value = float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a model litellm has no price for
        return None


@contextmanager
def untraced() -> Iterator[None]:
    """Run with OpenTelemetry instrumentation suppressed and no parent span."""
    from opentelemetry import context

    ctx = context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True, context.Context())
    ctx = context.set_value(context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, ctx)
    token = context.attach(ctx)
    try:
        yield
    finally:
        context.detach(token)


_litellm_module: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once, offline-safe (its price map is the packaged copy)."""
    global _litellm_module
    if _litellm_module is None:
        with _litellm_lock:
            if _litellm_module is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                from ragtrace.backends._loading import import_extra

                module: Any = import_extra("litellm", "judge")
                module.telemetry = False
                module.suppress_debug_info = True
                _litellm_module = module
    return _litellm_module
