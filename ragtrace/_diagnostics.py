"""Errors inside ragtrace: logged (rate-limited) and counted, never raised into the host app.

Every hook that runs on the application's thread wraps its body with ``guard(site)``; whatever
goes wrong is counted in ``ragtrace_internal_errors_total{site}`` and logged at most once per
``LOG_INTERVAL_S`` per site, with how many were suppressed in between. With a redaction policy
(``redact``), the logged message and traceback go through it first: an exception's message may
quote the text that caused it.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

logger = logging.getLogger("ragtrace")

LOG_INTERVAL_S = 60.0

ErrorCounter = Callable[[str], None]


class Diagnostics:
    """Counts and logs internal errors by site; thread-safe.

    Args:
        on_error: Counts each error by site.
        redact: Applied to what is logged (the error and its traceback); None: logged as is.
    """

    def __init__(
        self, on_error: ErrorCounter | None = None, redact: Callable[[str], str] | None = None
    ) -> None:
        self._redact = redact
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._last_log: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._on_error = on_error

    def error(self, site: str, exc: BaseException | str) -> None:
        """Record one internal error at ``site``. Never raises."""
        try:
            now = time.monotonic()
            with self._lock:
                self._counts[site] = self._counts.get(site, 0) + 1
                last = self._last_log.get(site)
                should_log = last is None or now - last >= LOG_INTERVAL_S
                if should_log:
                    self._last_log[site] = now
                    suppressed = self._suppressed.pop(site, 0)
                else:
                    self._suppressed[site] = self._suppressed.get(site, 0) + 1
            if self._on_error is not None:
                self._on_error(site)
            if should_log and self._redact is not None:
                logger.warning(
                    "ragtrace internal error at %s (%d similar suppressed): %s",
                    site,
                    suppressed,
                    _redacted(exc, self._redact),
                )
            elif should_log:
                logger.warning(
                    "ragtrace internal error at %s (%d similar suppressed): %r",
                    site,
                    suppressed,
                    exc,
                    exc_info=isinstance(exc, BaseException),
                )
        except Exception:  # pragma: no cover - the last line of defence must not raise
            pass

    @contextmanager
    def guard(self, site: str) -> Iterator[None]:
        """Run a block; an exception inside it is recorded at ``site`` and swallowed."""
        try:
            yield
        except Exception as exc:
            self.error(site, exc)

    def counts(self) -> dict[str, int]:
        """Errors so far, by site."""
        with self._lock:
            return dict(self._counts)


def _redacted(exc: BaseException | str, redact: Callable[[str], str]) -> str:
    """What is logged of ``exc`` with a policy: its text redacted before ``repr`` escapes it
    (an escaped line break would hide a multi-line secret from the detectors), then the
    traceback, redacted; a failing policy logs the error's type only."""
    try:
        if not isinstance(exc, BaseException):
            return repr(redact(exc))
        said = f"{type(exc).__name__}({redact(str(exc))!r})"
        return said + "\n" + redact("".join(traceback.format_exception(exc)).rstrip())
    except Exception:
        return f"{type(exc).__name__} (not logged: redaction failed)"


class RateLimitedWarning:
    """A warning for the host app's log, logged at most once per ``interval_s`` (the rest are
    counted and their number logged with the next one); thread-safe, never raises.

    Args:
        interval_s: The shortest time between two logged warnings.
    """

    def __init__(self, interval_s: float = LOG_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._last: float | None = None
        self.suppressed = 0

    def warn(self, message: str, *args: object) -> bool:
        """Log ``message % args`` unless one was logged within the interval; True if logged."""
        try:
            now = time.monotonic()
            with self._lock:
                if self._last is not None and now - self._last < self._interval_s:
                    self.suppressed += 1
                    return False
                self._last = now
                suppressed, self.suppressed = self.suppressed, 0
            if suppressed:
                message += " (%d similar not logged)"
                args = (*args, suppressed)
            logger.warning(message, *args)
            return True
        except Exception:  # pragma: no cover - a warning must never break the caller
            return False
