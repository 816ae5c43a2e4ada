"""Reaching a judge: which one, one attempt through litellm, and the guards around attempts.

- ``JudgeEndpoint``: which judge a client talks to. With no model given,
  ``JudgeEndpoint.from_settings`` takes ``RAGTRACE_JUDGE_MODEL`` (and
  ``RAGTRACE_JUDGE_API_BASE``, ``RAGTRACE_JUDGE_API_KEY``); with none set either, the endpoint
  is the embedded local llama.cpp judge (``ragtrace._judges.local``), started on first use.
- ``CallPolicy``: when and how often a judge is called. ``CallPolicy.call(send)`` runs one
  request with retries: exponential backoff with jitter (or the server's ``Retry-After``) after
  a transient failure (timeout, HTTP 429, 5xx, an unreachable server), none after a permanent
  one (400, 401, 404, an unparseable answer). Inside ``send``, ``slot()`` guards an attempt (it
  fails at once while the circuit breaker is open, and waits at most ``timeout_s`` for one of
  ``concurrency`` slots) and ``watch()`` wraps the part that reaches the server: repeated
  unreachable-server failures open the ``CircuitBreaker`` for a few seconds, so a dead judge
  costs milliseconds, not minutes.
- ``LitellmTransport.send``: one attempt under a policy slot, returning the ``RawAnswer``; a
  failure is raised as the ``JudgeError`` it is counted under (``classify``), so the policy
  knows whether to retry. Tokens and litellm's cost estimate are added to the call's
  ``CallUsage`` (a judge on this machine costs nothing).

Calls made here are not part of the user's application: they run with OpenTelemetry
instrumentation suppressed in an empty context (``untraced``: no parent span), and with
litellm's ``no-log`` flag so the user's litellm callbacks do not log them. litellm is imported
on first use (``load_litellm``), with its packaged price map so that no call goes out for it.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ragtrace._judges.exchange import RawAnswer
from ragtrace._judges.usage import (
    CallUsage,
    JudgeError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def is_loopback(api_base: str | None) -> bool:
    """Whether ``api_base`` is a server on this machine (an unparseable URL is not)."""
    if not api_base:
        return False
    try:
        host = urlsplit(api_base).hostname
    except ValueError:
        return False
    return host in LOOPBACK_HOSTS


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where a judge is reached.

    Attributes:
        model: A litellm model string; None for the embedded local judge.
        api_base: The server's URL (None: litellm's default for the model).
        api_key: The key sent to the server (None: litellm's own environment variables).
    """

    model: str | None
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(
        cls, model: str | None, api_base: str | None, api_key: str | None
    ) -> JudgeEndpoint:
        """The given settings, each falling back to its ``RAGTRACE_JUDGE_*`` variable."""
        return cls(
            model or os.environ.get("RAGTRACE_JUDGE_MODEL") or None,
            api_base or os.environ.get("RAGTRACE_JUDGE_API_BASE") or None,
            api_key or os.environ.get("RAGTRACE_JUDGE_API_KEY") or None,
        )

    @property
    def is_local(self) -> bool:
        """Whether this is the embedded local judge."""
        return self.model is None

    @property
    def on_this_machine(self) -> bool:
        """Whether the judge listens on loopback: the embedded judge, ``ragtrace judge serve``
        or a server the user runs here (llama.cpp, vLLM, Ollama)."""
        return self.is_local or is_loopback(self.api_base)

    @property
    def model_name(self) -> str:
        """The litellm model string (for the local judge: ``openai/<alias>``)."""
        if self.model is None:
            from ragtrace._judges.local import local_model_name

            return local_model_name()
        return self.model

    def litellm_target(self) -> dict[str, Any]:
        """The litellm arguments that reach this judge: ``model``, ``api_base``, ``api_key``.

        ``api_base`` and ``api_key`` only when needed; the local judge is started on first use.

        Raises:
            JudgeUnavailable: The local judge could not start.
        """
        model, api_base = self._resolve()
        target: dict[str, Any] = {"model": model}
        if api_base:
            target["api_base"] = api_base
        if self.api_key:
            target["api_key"] = self.api_key
        elif self.is_local or (
            api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")
        ):
            target["api_key"] = "none"  # an OpenAI-compatible server that wants no key
        return target

    def _resolve(self) -> tuple[str, str | None]:
        if self.model is None:
            from ragtrace._judges.local import default_endpoint

            try:
                return default_endpoint()
            except Exception as exc:  # a missing extra, a model that fails its hash check...
                raise JudgeUnavailable(f"the local judge could not start: {exc}") from exc
        return self.model, self.api_base


TRANSIENT = (JudgeTimeout, JudgeRateLimited, JudgeServerError, JudgeUnavailable)
BREAKER_FAILURES = 3  # consecutive unreachable-server failures that open the breaker
BREAKER_MAX_OPEN_S = 30.0

T = TypeVar("T")


class CircuitBreaker:
    """Opens after ``failures`` unreachable-server failures in a row; a success closes it.

    It stays open two seconds per failure so far, at most ``BREAKER_MAX_OPEN_S``. Thread-safe.
    """

    def __init__(self, failures: int = BREAKER_FAILURES) -> None:
        self.failures = failures
        self._lock = threading.Lock()
        self._unreachable = 0
        self._open_until = 0.0

    def is_open(self) -> bool:
        """Whether calls should fail without trying the server."""
        with self._lock:
            return time.monotonic() < self._open_until

    def record(self, error: JudgeError | None) -> None:
        """Count the outcome of one server call (None: it answered)."""
        with self._lock:
            if isinstance(error, JudgeUnavailable):
                self._unreachable += 1
                if self._unreachable >= self.failures:
                    wait = min(BREAKER_MAX_OPEN_S, 2.0 * self._unreachable)
                    self._open_until = time.monotonic() + wait
            elif error is None:
                self._unreachable, self._open_until = 0, 0.0


class CallPolicy:
    """Retries, backoff, per-attempt timeout and concurrency for one judge. Thread-safe.

    Args:
        timeout_s: Most seconds one HTTP call may take (also the wait for a free slot).
        max_retries: Extra attempts after a transient failure.
        backoff_s, max_backoff_s: First retry delay (doubled each time, with jitter) and cap.
        concurrency: Most calls in flight at once.
    """

    def __init__(
        self,
        *,
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        max_backoff_s: float,
        concurrency: int,
    ) -> None:
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.concurrency = int(concurrency)
        self.breaker = CircuitBreaker()
        self._slots = threading.BoundedSemaphore(self.concurrency)

    def call(self, send: Callable[[], T]) -> T:
        """``send()``, tried again after a transient failure while retries and the breaker allow.

        Raises:
            JudgeError: The last failure, or the first permanent one.
        """
        delay = self.backoff_s
        for attempt in range(self.max_retries + 1):
            try:
                return send()
            except TRANSIENT as exc:
                if attempt == self.max_retries or self.breaker.is_open():
                    raise
                wait = getattr(exc, "retry_after", None) or delay * (0.5 + random.random())
                time.sleep(min(float(wait), self.max_backoff_s))
                delay = min(delay * 2, self.max_backoff_s)
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the concurrency slots for an attempt.

        Raises:
            JudgeUnavailable: The breaker is open.
            JudgeTimeout: No slot came free within ``timeout_s``.
        """
        if self.breaker.is_open():
            raise JudgeUnavailable("judge unreachable recently; not calling it for a few seconds")
        if not self._slots.acquire(timeout=self.timeout_s):
            raise JudgeTimeout(f"no free judge slot within {self.timeout_s:g} s")
        try:
            yield
        finally:
            self._slots.release()

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Run the code that reaches the server; its ``JudgeError`` or success feeds the breaker."""
        try:
            yield
        except JudgeError as error:
            self.breaker.record(error)
            raise
        self.breaker.record(None)


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
                from ragtrace._backends._loading import import_extra

                module: Any = import_extra("litellm", "judge")
                module.telemetry = False
                module.suppress_debug_info = True
                _litellm_module = module
    return _litellm_module
