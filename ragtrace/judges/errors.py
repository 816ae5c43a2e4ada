"""Judge failures, each carrying the outcome it is counted under."""

from __future__ import annotations

from ragtrace.judges import usage


class JudgeError(Exception):
    """A judge call that gave no usable answer; ``outcome`` says how it failed."""

    outcome = usage.ERROR


class JudgeTimeout(JudgeError):
    outcome = usage.TIMEOUT


class JudgeRateLimited(JudgeError):
    outcome = usage.RATE_LIMITED


class JudgeServerError(JudgeError):
    outcome = usage.SERVER_ERROR


class JudgeUnavailable(JudgeError):
    """The judge could not be reached (connection refused, server gone, not configured)."""

    outcome = usage.UNAVAILABLE


class JudgeParseError(JudgeError):
    """The judge answered, but not with JSON matching the schema. ``text`` is what it said."""

    outcome = usage.PARSE_FAILURE

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text
