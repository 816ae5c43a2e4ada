"""The contract between the evaluation pipeline and its sinks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from ragtrace._model import Evaluation, RagRecord, Score

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
