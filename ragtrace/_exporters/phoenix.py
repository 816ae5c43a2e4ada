"""Scores as Arize Phoenix span annotations on the request's root span, over Phoenix's REST API.

Phoenix reads no OTLP logs and turns no span attribute into an annotation, but its evaluation
features (annotation columns and chips on each trace, per-annotation averages, filters such as
``annotations['faithfulness'].label == 'fail'``) all read span annotations. This sink posts one
annotation per score to ``POST {endpoint}/v1/span_annotations?sync=true``::

    sink = PhoenixAnnotationSink("http://127.0.0.1:6006", metrics.exports)
    sink.export(record, evaluations)     # a worker thread: queues, never blocks
    sink.close(timeout_s=2.0)            # at shutdown: bounded, the rest counted

Each annotation goes on ``record.span_id`` (the RAG root span), in the form
``phoenix_annotations`` builds: name, annotator kind (``CODE``, ``LLM`` for judges),
``{label: pass | fail | error | none, score, explanation}``, metadata, and the identifier
``ragtrace``, so a score published again (at-least-once delivery from a ``ragtrace worker``
fleet) replaces the earlier one instead of adding a second.

A conversation's scores (published on the session's last turn) go to
``POST {endpoint}/v1/session_annotations?sync=true`` as session annotations instead (batches
hold one form or the other). A session Phoenix does not have yet waits like a span, and goes on
the last turn's span when ``span_wait_s`` passes; a Phoenix without that route (404 Not Found,
405: before Phoenix 12) gets every conversation score on the last turn's span from then on.

Delivery: one background thread posts batches of up to ``batch_size`` annotations (sooner when a
batch fills), from a buffer of at most ``max_queue``. Phoenix answers 404, naming them, for
spans it does not have yet (the request's span may still sit in the app's span processor): those
annotations wait (``missing_retry_s``, doubling) and are posted again, for up to
``span_wait_s``; the rest of the batch is posted again at once. A connection error, a timeout,
429 or 5xx pauses posting with exponential backoff (``backoff_s`` doubling up to
``max_backoff_s``) and retries the batch up to ``max_attempts`` times. Every annotation not
delivered is counted once in ``ragtrace_dropped_annotations_total{sink="phoenix",reason}``
(``export_metrics``); delivered ones in ``ragtrace_annotations_sent_total{sink="phoenix"}``;
failures are logged at most once a minute.

The runtime builds one when ``Config.phoenix_endpoint`` is set (``from_config``), closed with
the pipeline's other sinks within ``PHOENIX_SHUTDOWN_SHARE`` of the shutdown budget, and
flushed by ``Ragtrace.flush``.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._diagnostics import RateLimitedWarning
from ragtrace._exporters.base import SinkContext
from ragtrace._exporters.otel import request_span_context
from ragtrace._exporters.phoenix_annotations import (
    annotation,
    is_conversation_score,
    session_annotation,
    session_id_of_annotation,
)
from ragtrace._metrics.exports import ExportMetrics
from ragtrace._model import Evaluation, RagRecord

logger = logging.getLogger("ragtrace")

SINK = "phoenix"
PHOENIX_SHUTDOWN_SHARE = 0.3
"""Share of the shutdown budget the Phoenix sink may use to post what it still holds."""
PATH = "/v1/span_annotations"
SESSION_PATH = "/v1/session_annotations"
_MISSING = re.compile(r"(?:Spans|Sessions) with IDs (.+) do not exist")

Post = Callable[[str, bytes, dict[str, str], float], tuple[int, str]]
"""``post(url, body, headers, timeout_s) -> (status, text)``; raises ``OSError`` when the
server cannot be reached."""


@dataclass(frozen=True)
class PhoenixOptions:
    """How the sink batches, retries and gives up.

    Attributes:
        batch_size: Most annotations per request.
        max_queue: Most annotations waiting (beyond it: dropped as ``queue_full``).
        flush_interval_s: Longest an annotation waits for its batch to fill.
        timeout_s: Each request's timeout.
        max_attempts: Tries per batch while Phoenix is unreachable or answers 429 / 5xx.
        backoff_s: The first pause after a failed try; doubles with each further one.
        max_backoff_s: The longest pause.
        missing_retry_s: How long an annotation waits for its span after a first 404;
            doubles with each further one, up to ``max_backoff_s``.
        span_wait_s: How long, in all, an annotation waits for its span to reach Phoenix.
        shutdown_timeout_s: The budget of ``shutdown()``.
    """

    batch_size: int = 500
    max_queue: int = 20_000
    flush_interval_s: float = 1.0
    timeout_s: float = 10.0
    max_attempts: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    missing_retry_s: float = 2.0
    span_wait_s: float = 120.0
    shutdown_timeout_s: float = 2.0

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.max_queue < 1 or self.max_attempts < 1:
            raise ValueError("phoenix sink: batch_size, max_queue and max_attempts must be >= 1")
        for name in ("flush_interval_s", "timeout_s", "backoff_s", "missing_retry_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"phoenix sink: {name} must be > 0")


@dataclass
class _Pending:
    annotation: dict[str, Any]
    since: float = field(default_factory=time.monotonic)
    attempts: int = 0
    waits: int = 0
    fallback: dict[str, Any] | None = None  # a session annotation's span form

    @property
    def session(self) -> str | None:
        return session_id_of_annotation(self.annotation)

    @property
    def target(self) -> str:
        """The id of the span or session annotated."""
        return self.session or str(self.annotation.get("span_id"))

    def as_span_annotation(self) -> _Pending:
        return _Pending(self.fallback) if self.fallback is not None else self


class PhoenixAnnotationSink:
    """Posts every score as a Phoenix span annotation (see the module docs).

    Args:
        endpoint: Phoenix's base URL (``http://phoenix:6006``).
        metrics: Where deliveries and drops are counted (``Metrics.exports``); None: nowhere.
        api_key: Sent as ``Authorization: Bearer <key>`` (Phoenix with authentication on).
        options: Batching, retries, limits.
        post: The HTTP call (default: ``urllib``; tests may pass their own).
    """

    def __init__(
        self,
        endpoint: str,
        metrics: ExportMetrics | None = None,
        *,
        api_key: str | None = None,
        options: PhoenixOptions | None = None,
        post: Post | None = None,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"phoenix endpoint must be an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.url = f"{self.endpoint}{PATH}?sync=true"
        self.session_url = f"{self.endpoint}{SESSION_PATH}?sync=true"
        self.sessions_supported: bool | None = None  # False once Phoenix lacks the route
        self.options = options or PhoenixOptions()
        self._metrics = metrics
        self._post = post or _urllib_post
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._closed = False
        self._warning = RateLimitedWarning()
        self.sent = 0
        self.dropped: dict[str, int] = {}
        self._failed = 0  # annotations dropped for a reason other than ``no_span``
        self._start()
        ref = weakref.ref(self)

        def restart_in_child() -> None:
            sink = ref()
            if sink is not None and not sink._closed:
                sink._start()

        os.register_at_fork(after_in_child=restart_in_child)

    def _start(self) -> None:
        """Fresh state and a posting thread (at creation, and in a forked child, which starts
        empty: what the parent held is the parent's to post)."""
        self._cond = threading.Condition(threading.Lock())
        self._ready: deque[_Pending] = deque()
        self._later: list[tuple[float, int, _Pending]] = []  # (due, tie-breaker, item)
        self._seq = 0
        self._in_flight = 0
        self._flushing = 0
        self._pause_until = 0.0
        self._thread = threading.Thread(target=self._run, name="ragtrace-phoenix", daemon=True)
        self._thread.start()

    # -- the pipeline's worker threads -------------------------------------------------------

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Queue the record's scores as annotations; never blocks."""
        if not any(e.scores for e in evaluations):
            return
        if request_span_context(record) is None:
            self._drop("no_span", sum(len(e.scores) for e in evaluations))
            return
        items = self._pending(record, evaluations)
        with self._cond:
            if self._closed:
                reason, n = "shutdown", len(items)
            else:
                room = self.options.max_queue - self._size()
                reason, n = "queue_full", max(0, len(items) - max(0, room))
                self._ready.extend(items[: len(items) - n])
                if len(self._ready) >= self.options.batch_size:
                    self._cond.notify_all()
        self._drop(reason, n)

    def _pending(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> list[_Pending]:
        """The record's scores as annotations to post: a conversation's as session
        annotations (their span form kept), unless this Phoenix has no session route."""
        items = []
        for evaluation in evaluations:
            name = evaluation.evaluator
            by_session = self.sessions_supported is not False and is_conversation_score(
                record, name
            )
            for score in evaluation.scores:
                span = annotation(record, name, score)
                if by_session:
                    found = session_annotation(record, name, score)
                    items.append(_Pending(found, fallback=span))
                else:
                    items.append(_Pending(span))
        return items

    # -- flushing and shutdown ---------------------------------------------------------------

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Post everything queued now (annotations waiting for their span included); False if
        some were still waiting after ``timeout_s``."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._size():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(min(remaining, 0.1))
                return True
            finally:
                self._flushing -= 1

    def delivery_mark(self) -> int:
        """Annotations given up on so far (``deliver``'s mark; ``no_span`` ones, which could
        never be posted, do not count)."""
        with self._cond:
            return self._failed

    def deliver(self, mark: int, timeout_s: float) -> bool:
        """``flush`` within ``timeout_s``; True if everything queued was posted and none was
        given up on since ``mark``."""
        return self.flush(timeout_s) and self.delivery_mark() == mark

    def close(self, timeout_s: float | None = None) -> bool:
        """Refuse new annotations, post what is queued within ``timeout_s`` (default:
        ``options.shutdown_timeout_s``), count the rest as ``shutdown``. Idempotent.

        Returns:
            True if nothing was left undelivered for want of time.
        """
        with self._cond:
            if self._closed:
                return True
            self._closed = True
        budget = self.options.shutdown_timeout_s if timeout_s is None else timeout_s
        done = self.flush(budget)
        with self._cond:
            left = len(self._ready) + len(self._later) + self._in_flight
            self._ready.clear()
            self._later.clear()
            self._in_flight = 0  # a post still on the wire is counted here, not by the thread
            self._cond.notify_all()
        self._drop("shutdown", left)
        return done and not left

    def shutdown(self) -> None:
        """``close()`` within ``options.shutdown_timeout_s``."""
        self.close()

    @property
    def waiting(self) -> int:
        """Annotations queued, waiting for their span, or being posted."""
        with self._cond:
            return self._size()

    def _size(self) -> int:
        return len(self._ready) + len(self._later) + self._in_flight

    # -- the posting thread ------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                outcome = self._send(batch)
            except Exception as exc:  # never let the thread die
                self._warn("phoenix annotations: %r", exc)
                outcome = _Outcome(retry=batch)
            self._settle(batch, outcome)

    def _next_batch(self) -> list[_Pending] | None:
        opts = self.options
        with self._cond:
            due = time.monotonic() + opts.flush_interval_s
            while True:
                now = time.monotonic()
                while self._later and self._later[0][0] <= now:
                    self._ready.append(heapq.heappop(self._later)[2])
                if self._closed and not self._flushing and not self._ready:
                    return None
                hurry = self._flushing or self._closed or len(self._ready) >= opts.batch_size
                if self._ready and now >= self._pause_until and (hurry or now >= due):
                    batch = self._take_batch(opts.batch_size)
                    self._in_flight = len(batch)
                    return batch
                wake = [due if self._ready else now + opts.flush_interval_s]
                if self._later:
                    wake.append(self._later[0][0])
                if self._ready and self._pause_until > now:
                    wake.append(self._pause_until)
                if not self._ready:
                    due = now + opts.flush_interval_s
                self._cond.wait(max(0.01, min(wake) - now))

    def _take_batch(self, size: int) -> list[_Pending]:
        """Up to ``size`` ready annotations of the first one's form (span or session: they go
        to different routes), in order; the others stay first in line. Holds ``_cond``."""
        first = self._ready.popleft()
        by_session = first.session is not None
        batch = [first]
        others: list[_Pending] = []
        while self._ready and len(batch) < size:
            p = self._ready.popleft()
            (batch if (p.session is not None) == by_session else others).append(p)
        self._ready.extendleft(reversed(others))
        return batch

    def _send(self, batch: list[_Pending]) -> _Outcome:
        """Post ``batch``; where Phoenix names spans it lacks (404), post the rest again at
        once, so annotations waiting for their span never hold up the others."""
        missing: list[_Pending] = []
        while batch:
            outcome = self._post_once(batch)
            if outcome.again and len(outcome.again) < len(batch):
                missing.extend(outcome.missing)
                batch = outcome.again
                continue
            outcome.missing = missing + outcome.missing
            return outcome
        return _Outcome(missing=missing)

    def _post_once(self, batch: list[_Pending]) -> _Outcome:
        by_session = batch[0].session is not None
        url = self.session_url if by_session else self.url
        body = json.dumps({"data": [p.annotation for p in batch]}, default=str).encode()
        try:
            status, text = self._post(url, body, self._headers, self.options.timeout_s)
        except OSError as exc:
            self._warn("phoenix annotations: %s unreachable: %s", self.endpoint, exc)
            return _Outcome(retry=batch)
        if 200 <= status < 300:
            if by_session:
                self.sessions_supported = True
            return _Outcome(sent=len(batch))
        if status in (404, 405):
            missing = _missing_ids(text) if status == 404 else set()
            if missing:
                waiting = [p for p in batch if p.target in missing]
                others = [p for p in batch if p.target not in missing]
                return _Outcome(missing=waiting, again=others)
            if by_session and not self.sessions_supported:  # a Phoenix before session routes
                self.sessions_supported = False
                note = "conversation scores go on their last turn's span"
                self._warn("phoenix annotations: %s answered %d; %s", url, status, note)
                return _Outcome(again=[p.as_span_annotation() for p in batch])
        if status == 429 or status >= 500 or status == 404:
            self._warn("phoenix annotations: %s answered %d: %s", url, status, text[:300])
            return _Outcome(retry=batch)
        self._warn("phoenix annotations: %s refused a batch (%d): %s", url, status, text[:300])
        return _Outcome(rejected=len(batch))

    def _settle(self, batch: list[_Pending], outcome: _Outcome) -> None:
        opts = self.options
        drops: list[tuple[str, int]] = []
        with self._cond:
            if self._in_flight == 0 and self._closed:  # close() counted this batch already
                self._cond.notify_all()
                return
            self._in_flight = 0
            self.sent += outcome.sent
            now = time.monotonic()
            for p in reversed(outcome.again):
                self._ready.appendleft(p)
            gave_up = 0
            for p in outcome.missing:
                if p.fallback is not None and now - p.since >= opts.span_wait_s:
                    self._ready.append(p.as_span_annotation())  # no such session: its last turn
                elif now - p.since >= opts.span_wait_s or self._closed:
                    gave_up += 1
                else:
                    wait = min(opts.max_backoff_s, opts.missing_retry_s * 2**p.waits)
                    p.waits += 1
                    self._seq += 1
                    heapq.heappush(self._later, (now + wait, self._seq, p))
            drops.append(("span_not_found", gave_up))
            failed = 0
            if outcome.retry:
                attempts = max(p.attempts for p in outcome.retry) + 1
                if attempts >= opts.max_attempts or self._closed:
                    failed = len(outcome.retry)
                else:
                    for p in reversed(outcome.retry):
                        p.attempts = attempts
                        self._ready.appendleft(p)
                    pause = min(opts.max_backoff_s, opts.backoff_s * 2 ** (attempts - 1))
                    self._pause_until = now + pause
            else:
                self._pause_until = 0.0
            drops.append(("export_failed", failed))
            drops.append(("rejected", outcome.rejected))
            self._cond.notify_all()
        if self._metrics is not None:
            with contextlib.suppress(Exception):
                self._metrics.count_annotations_sent(SINK, outcome.sent)
        for reason, n in drops:
            self._drop(reason, n)

    def _drop(self, reason: str, n: int) -> None:
        if n <= 0:
            return
        with self._cond:
            self.dropped[reason] = self.dropped.get(reason, 0) + n
            if reason != "no_span":
                self._failed += n
        if self._metrics is not None:
            with contextlib.suppress(Exception):  # counting must never break a worker
                self._metrics.count_dropped_annotations(SINK, reason, n)

    def _warn(self, message: str, *args: object) -> None:
        self._warning.warn("ragtrace: " + message, *args)


@dataclass
class _Outcome:
    """What became of a posted batch."""

    sent: int = 0
    rejected: int = 0
    retry: list[_Pending] = field(default_factory=list)  # back off, then post again
    again: list[_Pending] = field(default_factory=list)  # post again at once
    missing: list[_Pending] = field(default_factory=list)  # wait for their span


def from_config(config: Config, context: SinkContext) -> PhoenixAnnotationSink | None:
    """Phoenix span annotations, when ``Config.phoenix_endpoint`` is set."""
    endpoint = config.phoenix_endpoint
    if not endpoint:
        return None
    sink = PhoenixAnnotationSink(
        endpoint,
        context.metrics.exports,
        api_key=config.phoenix_api_key,
        options=PhoenixOptions(
            shutdown_timeout_s=config.shutdown_timeout_s * PHOENIX_SHUTDOWN_SHARE
        ),
    )
    _check_project(context.tracer_provider, config)
    return sink


def _check_project(tracer_provider: trace.TracerProvider, config: Config) -> None:
    """Say once, at init, when the application's provider names no Phoenix project: Phoenix
    then files its traces under ``default``; ragtrace cannot change another's resource."""
    resource = getattr(tracer_provider, "resource", None)
    if isinstance(resource, Resource) and sc.OI_PROJECT_NAME not in resource.attributes:
        logger.info(
            "ragtrace: your tracer provider's resource has no %s, so Phoenix files these "
            "traces under its 'default' project; add Resource.create({'%s': %r}) to it "
            "(or OTEL_RESOURCE_ATTRIBUTES=%s=%s) to file them under %r",
            sc.OI_PROJECT_NAME,
            sc.OI_PROJECT_NAME,
            config.app,
            sc.OI_PROJECT_NAME,
            config.app,
            config.app,
        )


def _missing_ids(text: str) -> set[str]:
    """The span or session ids a 404 names (``Spans with IDs a, b do not exist.``,
    ``Sessions with IDs ...``)."""
    try:
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError):
        detail = text
    match = _MISSING.search(str(detail))
    if match is None:
        return set()
    return {part.strip() for part in match.group(1).split(",") if part.strip()}


def _urllib_post(
    url: str, body: bytes, headers: dict[str, str], timeout_s: float
) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        with contextlib.suppress(Exception):
            return exc.code, exc.read(65536).decode("utf-8", "replace")
        return exc.code, ""
    except TimeoutError as exc:  # a read timeout: the server is there but too slow
        raise OSError(f"timed out after {timeout_s:g} s") from exc
