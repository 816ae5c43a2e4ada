"""How a judge call ends, what it cost, and who hears about it.

Every ``JudgeClient.complete`` call ends with one outcome (``CALL_OUTCOMES``): an answer
(``ok``, ``cached``) or a failure, raised as the ``JudgeError`` subclass counted under it
(``JudgeTimeout``, ``JudgeRateLimited``, ``JudgeServerError``, ``JudgeUnavailable``,
``JudgeParseError``). Either way the client reports one ``JudgeCall`` (outcome, tokens, litellm's
cost estimate, seconds) to the listeners registered here. ``ragtrace.init`` registers one that
turns calls into ``ragtrace_judge_*`` metrics and charges their spend to the sampler's hourly
budget; tests and benchmarks register their own (``UsageTally``) to count tokens, seconds and
outcomes. A listener that raises is ignored (counted in ``listener_errors``): accounting must
never fail a judge call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

# Outcomes of one judge call: ok and cached are answers, the rest are failures.
OK, CACHED = "ok", "cached"
TIMEOUT, RATE_LIMITED, SERVER_ERROR = "timeout", "rate_limited", "server_error"
UNAVAILABLE, PARSE_FAILURE, ERROR = "unavailable", "parse_failure", "error"
CALL_OUTCOMES = (OK, CACHED, TIMEOUT, RATE_LIMITED, SERVER_ERROR, UNAVAILABLE, PARSE_FAILURE, ERROR)


class JudgeError(Exception):
    """A judge call that gave no usable answer; ``outcome`` says how it failed."""

    outcome = ERROR


class JudgeTimeout(JudgeError):
    outcome = TIMEOUT


class JudgeRateLimited(JudgeError):
    outcome = RATE_LIMITED


class JudgeServerError(JudgeError):
    outcome = SERVER_ERROR


class JudgeUnavailable(JudgeError):
    """The judge could not be reached (connection refused, server gone, not configured)."""

    outcome = UNAVAILABLE


class JudgeParseError(JudgeError):
    """The judge answered, but not with JSON matching the schema. ``text`` is what it said."""

    outcome = PARSE_FAILURE

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text


@dataclass(frozen=True)
class JudgeCall:
    """One judge call: who asked, which model, how it ended, what it cost."""

    evaluator: str
    model: str
    outcome: str
    seconds: float
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    attempts: int = 1
    prompt_id: str = ""


class CallUsage:
    """Usage summed over the attempts of one ``JudgeClient.complete`` call (one thread)."""

    __slots__ = ("attempts", "cost_usd", "input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.attempts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd: float | None = None

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> None:
        """Add one answered attempt (``cost_usd`` None: litellm has no price for the model)."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd

    def as_call(
        self, *, evaluator: str, model: str, outcome: str, seconds: float, prompt_id: str
    ) -> JudgeCall:
        """The ``JudgeCall`` to report for the whole call."""
        return JudgeCall(
            evaluator=evaluator,
            model=model,
            outcome=outcome,
            seconds=seconds,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            attempts=self.attempts,
            prompt_id=prompt_id,
        )


Listener = Callable[[JudgeCall], None]
L = TypeVar("L", bound=Listener)

_lock = threading.Lock()
_listeners: list[Listener] = []
listener_errors = 0


def add_listener(listener: L) -> L:
    """Hear every judge call from now on (returns ``listener`` for ``remove_listener``)."""
    with _lock:
        _listeners.append(listener)
    return listener


def remove_listener(listener: Listener) -> None:
    """Stop hearing judge calls; removing one never added is a no-op."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def report(call: JudgeCall) -> None:
    """Hand ``call`` to every listener; a listener's exception is counted, never raised."""
    global listener_errors
    with _lock:
        listeners = tuple(_listeners)
    for listener in listeners:
        try:
            listener(call)
        except Exception:
            with _lock:
                listener_errors += 1


class UsageTally:
    """A listener that adds calls up: calls by outcome, tokens, cost, seconds, cache hits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.outcomes: dict[str, int] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.seconds = 0.0

    def __call__(self, call: JudgeCall) -> None:
        with self._lock:
            self.outcomes[call.outcome] = self.outcomes.get(call.outcome, 0) + 1
            self.input_tokens += call.input_tokens
            self.output_tokens += call.output_tokens
            self.cost_usd += call.cost_usd or 0.0
            self.seconds += call.seconds

    @property
    def calls(self) -> int:
        with self._lock:
            return sum(self.outcomes.values())

    def rate(self, outcome: str) -> float:
        """Share of calls that ended with ``outcome`` (0.0 when there were none)."""
        with self._lock:
            total = sum(self.outcomes.values())
            return self.outcomes.get(outcome, 0) / total if total else 0.0
