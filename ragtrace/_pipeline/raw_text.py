"""Which evaluators read the text before redaction, and which record each evaluator reads.

With a redaction policy on (``Config.redact``), every record the pipeline carries is redacted:
that is what leaves the process. Leak detectors must see what the user saw, so the evaluators
named in ``Config.raw_text_evaluators`` (``pii_leakage`` and ``sensitive_data`` by default) are
given the record as it was before redaction, and only where that record exists: in the process
that captured the request (``WorkItem.raw``, in memory, never encoded). LLM judges never are:
their prompts leave the process.

Where the raw record is gone (a record read from a Redis stream, already redacted by the app;
a record that feedback sent back later), a raw-text evaluator does not run on the redacted text,
which would find nothing and pass: it is skipped and counted
(``ragtrace_evaluations_total{outcome="skipped"}``). An application that ships records to
workers runs its raw-text evaluators itself before the record leaves (``evaluate_before_shipping``:
on the shipper's thread, off the request path), and their scores travel with the item, redacted
(docs/decisions/redaction-at-the-record-boundary.md)::

    readers = RawTextReaders(evaluators, config.raw_text_evaluators, diagnostics)
    record = readers.input(evaluator, item)      # None: skip (and count) it
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from ragtrace._diagnostics import Diagnostics
from ragtrace._engine.evaluation import evaluate_inline
from ragtrace._model import RagRecord
from ragtrace._pipeline.metrics import PipelineMetrics
from ragtrace._pipeline.queues.base import WorkItem
from ragtrace._redaction import Redaction
from ragtrace._semconv import RAGTRACE_REDACTION
from ragtrace.evaluators._base import Evaluator


class RawTextReaders:
    """The evaluators that read the text before redaction.

    Args:
        evaluators: Every evaluator of the pipeline.
        names: Those to give the raw text (``Config.raw_text_evaluators``); judges among them
            are refused (reported once to diagnostics as ``pipeline.raw_text_judge``).
        diagnostics: Where a judge named here is reported.
    """

    def __init__(
        self, evaluators: Sequence[Evaluator], names: Collection[str], diagnostics: Diagnostics
    ) -> None:
        wanted = frozenset(names)
        judges = sorted(e.name for e in evaluators if e.name in wanted and e.kind == "judge")
        if judges:
            diagnostics.error(
                "pipeline.raw_text_judge",
                f"{judges} are LLM judges: their prompts leave the process, so they get the "
                "redacted text (raw_text_evaluators names them in vain)",
            )
        self.names = frozenset(e.name for e in evaluators if e.name in wanted and e.kind != "judge")

    def __bool__(self) -> bool:
        return bool(self.names)

    def input(self, evaluator: Evaluator, item: WorkItem) -> RagRecord | None:
        """The record ``evaluator`` reads from ``item``: the raw one for a raw-text reader,
        None when its text was redacted before it reached this process (skip it)."""
        if evaluator.name not in self.names:
            return item.record
        record = item.raw if item.raw is not None else item.record
        return None if RAGTRACE_REDACTION in record.attributes else record


def evaluate_before_shipping(
    item: WorkItem,
    evaluators: Sequence[Evaluator],
    readers: RawTextReaders,
    redaction: Redaction,
    metrics: PipelineMetrics,
) -> WorkItem:
    """``item`` ready to leave the process: the raw-text readers among its chosen evaluators
    run here on its raw record, their evaluations (redacted) join ``done``, and the raw record
    is dropped. An item without a raw record is returned without it and unchanged otherwise."""
    if item.raw is None:
        return item
    chosen = item.evaluators or ()
    here = [e for e in evaluators if e.name in chosen and e.name in readers.names]
    if not here:
        return replace(item, raw=None)
    done = list(item.done)
    for evaluator in here:
        record = readers.input(evaluator, item)
        if record is None or evaluator.missing_fields(record):
            metrics.count_evaluation(evaluator.name, "skipped", item.record.app)
            continue
        done.append(evaluate_inline(evaluator, record))
    names = {e.name for e in here}
    return replace(
        item,
        evaluators=tuple(n for n in chosen if n not in names),
        done=(*item.done, *redaction.evaluations(done[len(item.done) :])),
        raw=None,
    )
