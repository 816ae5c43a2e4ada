"""Redaction in ``ragtrace eval``: the scores file and every message hold redacted text only.

With a policy (``--redact``, ``RAGTRACE_REDACT``, the settings file's ``redact``), each answer
read is redacted as it enters a window (the offline record boundary): the evaluators get the
redacted record, judges included, since their prompts leave the process; the raw-text
evaluators (``raw_text_evaluators``: ``pii_leakage`` and ``sensitive_data`` by default) get
the record as read, on an evaluation engine of their own in this process; every Score is
redacted before it is written, and so is every message (an evaluator's error may quote the
text). The same choice as online (docs/decisions/redaction-at-the-record-boundary.md)::

    hook = RedactionHook(redaction("pii"), raw_runner, [e.name for e in evaluators])
    window, raw = hook.window(items)
    future = hook.submit(runner, window, raw)    # Outcomes, merged in evaluator order, redacted
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from concurrent.futures import Future
from dataclasses import replace

from ragtrace._engine.evaluation import EvaluationEngine
from ragtrace._engine.outcomes import Outcome
from ragtrace._model import RagRecord
from ragtrace._offline.systems import EvalItem
from ragtrace._redaction import Redaction
from ragtrace.evaluators._base import Evaluator


def raw_text_readers(
    evaluators: Sequence[Evaluator], names: Collection[str]
) -> tuple[Evaluator, ...]:
    """The evaluators named in ``names`` that may read raw text (never a judge)."""
    return tuple(e for e in evaluators if e.name in names and e.kind != "judge")


class RedactionHook:
    """Redacts a window's records, runs the raw-text evaluators on the records as read, merges.

    Args:
        redaction: The policy (active).
        raw_runner: Runs the raw-text evaluators (None: there are none).
        order: Every evaluator's name, in the order scores are written.
    """

    def __init__(
        self, redaction: Redaction, raw_runner: EvaluationEngine | None, order: Sequence[str]
    ) -> None:
        self.redaction = redaction
        self.raw_runner = raw_runner
        self._rank = {name: i for i, name in enumerate(order)}

    def window(self, items: Sequence[EvalItem]) -> tuple[list[EvalItem], list[RagRecord]]:
        """The items with their records, ids, cases and systems redacted (an id may be an
        e-mail address), and the records as they were read."""
        raw = [item.record for item in items]
        identity = self.redaction.identity
        redacted = [
            replace(
                item,
                system=identity(item.system),
                id=identity(item.id),
                case=identity(item.case),
                record=self.redaction.record(item.record),
            )
            for item in items
        ]
        return redacted, raw

    def submit(
        self, runner: EvaluationEngine, window: Sequence[EvalItem], raw: Sequence[RagRecord]
    ) -> Future[list[Outcome]]:
        """The outcomes of ``runner`` on the redacted records and of the raw-text runner on the
        records as read, merged per record in evaluator order and redacted."""
        extra = self.raw_runner.run(raw) if self.raw_runner is not None else None
        main = runner.submit([item.record for item in window])
        merged: Future[list[Outcome]] = Future()

        def finish(done: Future[list[Outcome]]) -> None:
            try:
                outcomes = done.result()
                if extra is not None:
                    outcomes = [self._merge(a, b) for a, b in zip(outcomes, extra, strict=True)]
                merged.set_result([self._redacted(o) for o in outcomes])
            except BaseException as exc:
                merged.set_exception(exc)

        main.add_done_callback(finish)
        return merged

    def _merge(self, main: Outcome, extra: Outcome) -> Outcome:
        last = len(self._rank)
        scores = sorted((*main.scores, *extra.scores), key=lambda s: self._rank.get(s[0], last))
        skipped = sorted(
            (*main.skipped, *extra.skipped), key=lambda s: self._rank.get(s.evaluator, last)
        )
        return Outcome(tuple(scores), tuple(skipped))

    def _redacted(self, outcome: Outcome) -> Outcome:
        scores = tuple((name, self.redaction.score(s)) for name, s in outcome.scores)
        return Outcome(scores, outcome.skipped)
