"""The judge client: any litellm model, with the guards a production pipeline needs.

``JudgeClient.complete`` sends chat messages and returns a ``JudgeReply`` whose ``data`` is JSON
validated against the caller's schema. Around that one call it adds:

- structured output: the schema goes out as ``response_format`` (servers that support it turn
  it into a grammar), and the answer is validated strictly either way (``exchange.py``); its
  length and count limits (``maxItems``...) go only to judges on this machine, whose grammars
  honour them (``exchange.without_limits``);
- retries with exponential backoff and jitter on transient failures (timeouts, HTTP 429 with
  its ``Retry-After``, 5xx, refused connections), none on permanent ones (400, 401, 404);
- one repair round on an unparseable answer (the judge sees its answer and the error);
- a per-call timeout, a concurrency limit, and a short circuit breaker after repeated
  unreachable-server failures, so a dead judge costs the pipeline milliseconds, not minutes
  (``transport.CallPolicy``);
- a response cache keyed by prompt, model and parameters (SQLite, see ``cache.py``);
- accounting: every call is reported as a ``usage.JudgeCall`` (outcome, tokens, litellm's cost
  estimate, seconds), which ``ragtrace.init`` turns into ``ragtrace_judge_*`` metrics and
  charges to the sampler's hourly budget.

The call itself (untraced, unlogged by the user's litellm callbacks, its failures classified)
and which judge is called (``JudgeEndpoint``) are in ``transport.py``. With no model given, the
client uses ``RAGTRACE_JUDGE_MODEL`` (and ``RAGTRACE_JUDGE_API_BASE``,
``RAGTRACE_JUDGE_API_KEY``), else the embedded local llama.cpp judge (``ragtrace._judges.local``),
started on first use.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrace._judges import usage
from ragtrace._judges.cache import CachedResponse, JudgeCache, cache_key
from ragtrace._judges.exchange import (
    JudgeReply,
    JudgeRequest,
    RawAnswer,
    TokenLogprob,
    logprobs_from_json,
    logprobs_to_json,
    without_limits,
)
from ragtrace._judges.transport import CallPolicy, JudgeEndpoint, LitellmTransport
from ragtrace._judges.usage import JudgeError, JudgeParseError

__all__ = ["JudgeClient", "JudgeReply", "TokenLogprob"]


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
        schema_limits: Keep the schemas' length and count limits (``maxItems``,
            ``maxLength``...) in what is sent and validated. None: only for a judge on loopback
            (the embedded judge, a local llama.cpp, vLLM or Ollama server); hosted providers'
            strict modes reject or ignore them.
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
        schema_limits: bool | None = None,
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
        self.endpoint = JudgeEndpoint.from_settings(model, api_base, api_key)
        self.policy = CallPolicy(
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
            concurrency=concurrency,
        )
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)
        self.structured_output = bool(structured_output)
        self.parse_retries = int(parse_retries)
        self.schema_limits = (
            self.endpoint.on_this_machine if schema_limits is None else bool(schema_limits)
        )
        self.options = dict(options or {})
        self.cache = _as_cache(cache)
        self._transport = LitellmTransport(self.endpoint, self.policy, self.options)

    # -- settings and identity --------------------------------------------------------------

    @property
    def timeout_s(self) -> float:
        """Most seconds one HTTP call may take (also the wait for a free slot)."""
        return self.policy.timeout_s

    @property
    def max_retries(self) -> int:
        """Extra attempts after a transient failure."""
        return self.policy.max_retries

    @property
    def backoff_s(self) -> float:
        """First retry delay."""
        return self.policy.backoff_s

    @property
    def max_backoff_s(self) -> float:
        """Longest retry delay."""
        return self.policy.max_backoff_s

    @property
    def concurrency(self) -> int:
        """Most calls in flight at once from this client."""
        return self.policy.concurrency

    @property
    def model_name(self) -> str:
        """The litellm model string (for the local judge: ``openai/<alias>``)."""
        return self.endpoint.model_name

    @property
    def is_local(self) -> bool:
        """Whether this client talks to the embedded local judge."""
        return self.endpoint.is_local

    def __repr__(self) -> str:
        return (
            f"<JudgeClient model={self.endpoint.model or 'local'!r}"
            f" api_base={self.endpoint.api_base!r}>"
        )

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
        request = JudgeRequest.build(
            messages,
            schema=schema if schema is None or self.schema_limits else without_limits(schema),
            prompt_id=prompt_id,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            seed=seed,
            logprobs=logprobs,
        )
        model = self.model_name
        spent = usage.CallUsage()

        def report(outcome: str) -> None:
            seconds = time.perf_counter() - started
            usage.report(
                spent.as_call(
                    evaluator=evaluator,
                    model=model,
                    outcome=outcome,
                    seconds=seconds,
                    prompt_id=prompt_id,
                )
            )

        try:
            reply = self._answer(request, model, use_cache, spent)
        except JudgeError as exc:
            report(exc.outcome)
            raise
        except Exception as exc:  # anything unexpected is still a counted judge failure
            report(usage.ERROR)
            raise JudgeError(f"{type(exc).__name__}: {exc}") from exc
        report(usage.CACHED if reply.cached else usage.OK)
        return reply

    def _answer(
        self, request: JudgeRequest, model: str, use_cache: bool, spent: usage.CallUsage
    ) -> JudgeReply:
        """The reply from the cache, else from the judge (then cached)."""
        started = time.perf_counter()
        cache = self.cache if use_cache else None
        key = self._cache_key(request, model) if cache is not None else ""
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                try:
                    data = request.parse(hit.text)
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
                        logprobs_from_json(hit.logprobs),
                        request.prompt_id,
                    )
        data, raw = self._ask(request, spent)
        if cache is not None:
            stored = CachedResponse(
                raw.text, spent.input_tokens, spent.output_tokens, logprobs_to_json(raw.logprobs)
            )
            cache.put(key, model=model, prompt_id=request.prompt_id, response=stored)
        return JudgeReply(
            data,
            raw.text,
            model,
            spent.input_tokens,
            spent.output_tokens,
            spent.cost_usd,
            time.perf_counter() - started,
            False,
            raw.logprobs,
            request.prompt_id,
        )

    def _ask(self, request: JudgeRequest, spent: usage.CallUsage) -> tuple[Any, RawAnswer]:
        """The judge's validated answer and the raw one, after up to ``parse_retries`` repairs."""
        params = request.send_params(self.structured_output)
        conversation: Sequence[dict[str, str]] = request.messages
        for repair in range(self.parse_retries + 1):
            send = functools.partial(self._transport.send, conversation, params, spent)
            raw = self.policy.call(send)
            try:
                return request.parse(raw.text), raw
            except JudgeParseError as exc:
                if repair == self.parse_retries:
                    raise
                conversation = request.repair(raw.text, exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def _cache_key(self, request: JudgeRequest, model: str) -> str:
        return cache_key(
            model=model,
            api_base=None if self.is_local else self.endpoint.api_base,
            messages=request.messages,
            schema=request.schema,
            params=request.params,
            structured=self.structured_output,
            options=self.options,
        )


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
