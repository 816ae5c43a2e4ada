"""The contract between the evaluation pipeline and its sinks, and what the runtime builds its
own sinks on.

A built-in sink is one module with one factory, ``from_config(config, context) -> ScoreSink |
None`` (None: its option is not set), which ``ragtrace._runtime.score_sinks`` calls in turn;
``SinkContext`` carries what the runtime owns and a sink may use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from ragtrace._model import Evaluation, RagRecord, Score

if TYPE_CHECKING:
    from opentelemetry import trace
    from opentelemetry._logs import Logger

    from ragtrace._config import Config
    from ragtrace._metrics.collection import Metrics
    from ragtrace._redaction import Redaction

Outcome = Literal["pass", "fail", "error", "skipped"]


def outcome_of(score: Score) -> Outcome:
    """``error`` if the score carries an error, ``fail`` if it failed its threshold, else pass."""
    if score.error is not None:
        return "error"
    if score.passed is False:
        return "fail"
    return "pass"


class ScoreSink(Protocol):
    """Receives evaluation results: give one to ``ragtrace.init(score_sinks=[...])``.

    Public as ``ragtrace.ScoreSink``. Any object with these two methods is one (a protocol:
    no base class to inherit). Called from worker threads, never from the application's
    thread; it must be thread-safe. ``evaluations`` are ``ragtrace.Evaluation`` values, one
    per evaluator that ran on ``record``.
    """

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Publish the results of one record's evaluations."""

    def shutdown(self) -> None:
        """Release resources (flush, close); idempotent."""


class ConfirmsDelivery(Protocol):
    """A sink that can say whether what it was given has reached its destination (a sink
    that sends in the background: OTLP, Phoenix). A queue that redelivers acknowledges a
    record only after every such sink confirmed it::

        mark = sink.delivery_mark()      # before exporting the batch
        ...                              # sink.export(record, evaluations) per record
        ok = sink.deliver(mark, 5.0)     # sent with success, nothing failed since the mark
    """

    def delivery_mark(self) -> int:
        """A mark to pass to ``deliver``, taken before exporting what is to be confirmed."""

    def deliver(self, mark: int, timeout_s: float) -> bool:
        """Send what was exported since ``mark`` (and before), within ``timeout_s``; True if
        it all went out and nothing failed to since ``mark`` (a failure of anything sent
        meanwhile counts, so the answer errs towards sending again)."""


class DelegatedDelivery:
    """``ConfirmsDelivery`` for a sink whose output leaves through something else that confirms
    it (ragtrace's own span or log processor): the sink sets ``self._delivery`` to that, and
    asks it; with nothing to ask (None) every delivery is confirmed at once."""

    _delivery: ConfirmsDelivery | None = None

    def delivery_mark(self) -> int:
        return self._delivery.delivery_mark() if self._delivery is not None else 0

    def deliver(self, mark: int, timeout_s: float) -> bool:
        """Whether what the sink handed on so far was exported (``ConfirmsDelivery``)."""
        return self._delivery is None or self._delivery.deliver(mark, timeout_s)


@runtime_checkable
class Flushes(Protocol):
    """A sink that holds what it was given and sends it on ``flush`` (Phoenix's annotations):
    ``Ragtrace.flush`` asks it to, within a share of its timeout."""

    def flush(self, timeout_s: float) -> bool:
        """Send what is held within ``timeout_s``; True if it all went."""


@dataclass(frozen=True)
class SinkContext:
    """What the runtime owns that its built-in sinks are built on.

    Attributes:
        metrics: The instance's Prometheus families.
        redaction: The instance's redaction policy.
        results_mode: Where OpenTelemetry results go: ``logs``, ``spans``, ``both`` or
            ``none`` (``Config.evaluation_results``, or what ``init`` was told).
        tracer_provider: The provider the request spans go to.
        tracer: ragtrace's tracer on it, for evaluation spans.
        span_delivery: What confirms that spans were exported (``ConfirmsDelivery``).
        logger: ragtrace's OpenTelemetry logger for ``gen_ai.evaluation.result`` events
            (None unless ``results_mode`` has logs).
        log_delivery: What confirms that those log records were exported.
    """

    metrics: Metrics
    redaction: Redaction
    results_mode: str
    tracer_provider: trace.TracerProvider
    tracer: trace.Tracer
    span_delivery: ConfirmsDelivery
    logger: Logger | None = None
    log_delivery: ConfirmsDelivery | None = None


SinkFactory = Callable[["Config", SinkContext], "ScoreSink | None"]
"""A built-in sink's ``from_config``: the sink its option asks for, or None."""
