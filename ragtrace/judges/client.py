"""The judge client: any litellm model, with the guards a production pipeline needs.

``JudgeClient.complete`` sends chat messages and returns a ``JudgeReply`` whose ``data`` is JSON
validated against the caller's schema. Around that one call it adds:

- structured output: the schema goes out as ``response_format`` (servers that support it turn
  it into a grammar), and the answer is validated strictly either way;
- retries with exponential backoff and jitter on transient failures (timeouts, HTTP 429 with
  its ``Retry-After``, 5xx, refused connections), none on permanent ones (400, 401, 404);
- one repair round on an unparseable answer (the judge sees its answer and the error);
- a per-call timeout, a concurrency limit, and a short circuit breaker after repeated
  unreachable-server failures, so a dead judge costs the pipeline milliseconds, not minutes;
- a response cache keyed by prompt, model and parameters (SQLite, see ``cache.py``);
- accounting: every call is reported as a ``usage.JudgeCall`` (outcome, tokens, litellm's cost
  estimate, seconds), which ``ragtrace.init`` turns into ``ragtrace_judge_*`` metrics and
  charges to the sampler's hourly budget.

Calls made here are not part of the user's application: they run with OpenTelemetry
instrumentation suppressed in an empty context (no parent span), and with litellm's ``no-log``
flag so the user's litellm callbacks do not log them.

With no model given, the client uses ``RAGTRACE_JUDGE_MODEL`` (and ``RAGTRACE_JUDGE_API_BASE``,
``RAGTRACE_JUDGE_API_KEY``), else the embedded local llama.cpp judge (``ragtrace.judges.local``),
started on first use.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragtrace.judges import usage
from ragtrace.judges.cache import CachedResponse, JudgeCache, cache_key
from ragtrace.judges.errors import (
    JudgeError,
    JudgeParseError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
)
from ragtrace.judges.structured import parse_reply, response_format

_TRANSIENT = (JudgeTimeout, JudgeRateLimited, JudgeServerError, JudgeUnavailable)
_BREAKER_FAILURES = 3  # consecutive unreachable-server failures that open the breaker


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


class JudgeClient:
    """Calls one judge model through litellm. Thread-safe; share one per judge model.

    Args:
        model: Any litellm model string (``"gpt-4o-mini"``, ``"openai/<alias>"`` with
            ``api_base``, ``"ollama/llama3"``...). None: ``RAGTRACE_JUDGE_MODEL``, else the
            embedded local judge.
        api_base, api_key: Passed to litellm (None: ``RAGTRACE_JUDGE_API_BASE`` /
            ``RAGTRACE_JUDGE_API_KEY``, else litellm's own environment variables).
        timeout_s: Most seconds one HTTP call may take (also the wait for a free slot).
        max_retries: Extra attempts after a transient failure.
        backoff_s, max_backoff_s: First retry delay (doubled each time, with jitter) and cap.
        concurrency: Most calls in flight at once from this client.
        cache: True (the default SQLite file), False/None (no cache), a path, or a JudgeCache.
        temperature, max_tokens: Defaults for every call (a call may override them).
        structured_output: Send the schema as ``response_format`` (turn off for providers
            that reject it; the answer is validated either way).
        parse_retries: Repair rounds after an unparseable answer.
        options: Other litellm ``completion`` keyword arguments, passed through.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        concurrency: int = 4,
        cache: bool | str | os.PathLike[str] | JudgeCache | None = True,
        temperature: float = 0.0,
        max_tokens: int = 512,
        structured_output: bool = True,
        parse_retries: int = 1,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("JudgeClient: timeout_s must be > 0")
        if max_retries < 0 or parse_retries < 0:
            raise ValueError("JudgeClient: max_retries and parse_retries must be >= 0")
        if concurrency < 1:
            raise ValueError("JudgeClient: concurrency must be >= 1")
        if max_tokens < 1:
            raise ValueError("JudgeClient: max_tokens must be >= 1")
        self._model = model or os.environ.get("RAGTRACE_JUDGE_MODEL") or None
        self._api_base = api_base or os.environ.get("RAGTRACE_JUDGE_API_BASE") or None
        self._api_key = api_key or os.environ.get("RAGTRACE_JUDGE_API_KEY") or None
        self._local = self._model is None
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)
        self.structured_output = bool(structured_output)
        self.parse_retries = int(parse_retries)
        self.options = dict(options or {})
        self.cache = _as_cache(cache)
        self.concurrency = int(concurrency)
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._unreachable = 0
        self._breaker_until = 0.0

    # -- identity ---------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The litellm model string (for the local judge: ``openai/<alias>``)."""
        if self._model is None:
            from ragtrace.judges.local import local_model_name

            return local_model_name()
        return self._model

    @property
    def is_local(self) -> bool:
        """Whether this client talks to the embedded local judge."""
        return self._local

    def _endpoint(self) -> tuple[str, str | None]:
        if self._model is None:
            from ragtrace.judges.local import default_endpoint

            try:
                return default_endpoint()
            except Exception as exc:  # a missing extra, a model that fails its hash check...
                raise JudgeUnavailable(f"the local judge could not start: {exc}") from exc
        return self._model, self._api_base

    def __repr__(self) -> str:
        return f"<JudgeClient model={self._model or 'local'!r} api_base={self._api_base!r}>"

    # -- the call ---------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None,
        evaluator: str = "judge",
        prompt_id: str = "",
        temperature: float | None = None,
        seed: int | None = None,
        logprobs: int | None = None,
        max_tokens: int | None = None,
        use_cache: bool = True,
    ) -> JudgeReply:
        """Ask the judge; return its validated JSON answer. Raises ``JudgeError`` on failure.

        ``logprobs=k`` asks for the top-k alternatives of every output token (servers that
        do not return them give ``reply.logprobs is None``).
        """
        started = time.perf_counter()
        params: dict[str, Any] = {
            "temperature": self.temperature if temperature is None else float(temperature),
            "max_tokens": self.max_tokens if max_tokens is None else int(max_tokens),
        }
        if seed is not None:
            params["seed"] = int(seed)
        if logprobs:
            params.update(logprobs=True, top_logprobs=int(logprobs))
        msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        model = self.model_name
        state = _CallState()
        try:
            reply = self._complete(msgs, schema, params, model, prompt_id, use_cache, state)
        except JudgeError as exc:
            self._report(evaluator, model, exc.outcome, started, state, prompt_id)
            raise
        except Exception as exc:  # anything unexpected is still a counted judge failure
            self._report(evaluator, model, usage.ERROR, started, state, prompt_id)
            raise JudgeError(f"{type(exc).__name__}: {exc}") from exc
        outcome = usage.CACHED if reply.cached else usage.OK
        self._report(evaluator, model, outcome, started, state, prompt_id)
        return reply

    def _complete(
        self,
        messages: list[dict[str, str]],
        schema: Mapping[str, Any] | None,
        params: dict[str, Any],
        model: str,
        prompt_id: str,
        use_cache: bool,
        state: _CallState,
    ) -> JudgeReply:
        started = time.perf_counter()
        key = ""
        if self.cache is not None and use_cache:
            key = cache_key(
                model=model,
                api_base=None if self._local else self._api_base,
                messages=messages,
                schema=schema,
                params=params,
                structured=self.structured_output,
                options=self.options,
            )
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    data = parse_reply(hit.text, schema)
                except JudgeParseError:
                    pass  # a stale entry (the schema changed): ask again
                else:
                    return JudgeReply(
                        data,
                        hit.text,
                        model,
                        hit.input_tokens,
                        hit.output_tokens,
                        0.0,
                        time.perf_counter() - started,
                        True,
                        _logprobs_from_json(hit.logprobs),
                        prompt_id,
                    )
        if schema is not None and self.structured_output:
            params = {**params, "response_format": response_format(schema, prompt_id or "answer")}
        conversation = list(messages)
        for repair in range(self.parse_retries + 1):
            raw = self._request_with_retries(conversation, params, state)
            text = raw.text
            try:
                data = parse_reply(text, schema)
            except JudgeParseError as exc:
                if repair == self.parse_retries:
                    raise
                conversation = [
                    *messages,
                    {"role": "assistant", "content": text[:2000]},
                    {
                        "role": "user",
                        "content": f"That answer was not valid: {exc}. "
                        "Reply again with only the JSON object.",
                    },
                ]
                continue
            if key and self.cache is not None:
                stored = CachedResponse(
                    text, state.input_tokens, state.output_tokens, _logprobs_to_json(raw.logprobs)
                )
                self.cache.put(key, model=model, prompt_id=prompt_id, response=stored)
            return JudgeReply(
                data,
                text,
                model,
                state.input_tokens,
                state.output_tokens,
                state.cost_usd,
                time.perf_counter() - started,
                False,
                raw.logprobs,
                prompt_id,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _request_with_retries(
        self, messages: list[dict[str, str]], params: dict[str, Any], state: _CallState
    ) -> _RawAnswer:
        delay = self.backoff_s
        for attempt in range(self.max_retries + 1):
            state.attempts += 1
            try:
                return self._request(messages, params, state)
            except _TRANSIENT as exc:
                if attempt == self.max_retries or self._breaker_open():
                    raise
                wait = getattr(exc, "retry_after", None) or delay * (0.5 + random.random())
                time.sleep(min(float(wait), self.max_backoff_s))
                delay = min(delay * 2, self.max_backoff_s)
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(
        self, messages: list[dict[str, str]], params: dict[str, Any], state: _CallState
    ) -> _RawAnswer:
        if self._breaker_open():
            raise JudgeUnavailable("judge unreachable recently; not calling it for a few seconds")
        if not self._slots.acquire(timeout=self.timeout_s):
            raise JudgeTimeout(f"no free judge slot within {self.timeout_s:g} s")
        try:
            model, api_base = self._endpoint()
            litellm = _litellm()
            kwargs: dict[str, Any] = {
                **self.options,
                **params,
                "model": model,
                "messages": messages,
                "timeout": self.timeout_s,
                "num_retries": 0,
                "max_retries": 0,
                "no-log": True,
            }
            if api_base:
                kwargs["api_base"] = api_base
            if self._api_key:
                kwargs["api_key"] = self._api_key
            elif self._local or (
                api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY")
            ):
                kwargs["api_key"] = "none"  # an OpenAI-compatible server that wants no key
            with _untraced():
                try:
                    response = litellm.completion(**kwargs)
                except Exception as exc:
                    error = _classify(exc)
                    self._note_reachability(error)
                    raise error from exc
            self._note_reachability(None)
        finally:
            self._slots.release()
        answer = _RawAnswer.from_response(response)
        state.input_tokens += answer.input_tokens
        state.output_tokens += answer.output_tokens
        cost = 0.0 if self._local or _is_loopback(api_base) else _cost(litellm, response)
        if cost is not None:
            state.cost_usd = (state.cost_usd or 0.0) + cost
        return answer

    # -- circuit breaker --------------------------------------------------------------------

    def _breaker_open(self) -> bool:
        with self._lock:
            return time.monotonic() < self._breaker_until

    def _note_reachability(self, error: JudgeError | None) -> None:
        with self._lock:
            if isinstance(error, JudgeUnavailable):
                self._unreachable += 1
                if self._unreachable >= _BREAKER_FAILURES:
                    self._breaker_until = time.monotonic() + min(30.0, 2.0 * self._unreachable)
            elif error is None:
                self._unreachable, self._breaker_until = 0, 0.0

    # -- accounting -------------------------------------------------------------------------

    def _report(
        self,
        evaluator: str,
        model: str,
        outcome: str,
        started: float,
        state: _CallState,
        prompt_id: str,
    ) -> None:
        usage.report(
            usage.JudgeCall(
                evaluator=evaluator,
                model=model,
                outcome=outcome,
                seconds=time.perf_counter() - started,
                input_tokens=state.input_tokens,
                output_tokens=state.output_tokens,
                cost_usd=state.cost_usd,
                attempts=state.attempts,
                prompt_id=prompt_id,
            )
        )


class _CallState:
    """Usage summed over the attempts of one ``complete`` call."""

    __slots__ = ("attempts", "cost_usd", "input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.attempts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = None


@dataclass(frozen=True)
class _RawAnswer:
    text: str
    input_tokens: int
    output_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None

    @classmethod
    def from_response(cls, response: Any) -> _RawAnswer:
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


def _logprobs_to_json(logprobs: tuple[TokenLogprob, ...] | None) -> Any:
    if logprobs is None:
        return None
    return [[t.token, t.logprob, [list(a) for a in t.top]] for t in logprobs]


def _logprobs_from_json(data: Any) -> tuple[TokenLogprob, ...] | None:
    if not data:
        return None
    return tuple(
        TokenLogprob(str(tok), float(lp), tuple((str(a), float(b)) for a, b in top))
        for tok, lp, top in data
    )


def _classify(exc: Exception) -> JudgeError:
    """Map a litellm/httpx exception to the judge outcome it is counted under."""
    litellm = _litellm()
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


def _is_loopback(api_base: str | None) -> bool:
    """A judge on this machine: no API spend (litellm has no price for it anyway)."""
    if not api_base:
        return False
    host = urlsplit(api_base).hostname or ""
    return host in ("127.0.0.1", "::1", "localhost")


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # a model litellm has no price for
        return None


@contextmanager
def _untraced() -> Iterator[None]:
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


def _litellm() -> Any:
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


def _as_cache(cache: bool | str | os.PathLike[str] | JudgeCache | None) -> JudgeCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return JudgeCache()
    if isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, str | os.PathLike):
        return JudgeCache(Path(cache))
    raise TypeError(f"JudgeClient: cache must be a bool, a path or a JudgeCache, got {cache!r}")
