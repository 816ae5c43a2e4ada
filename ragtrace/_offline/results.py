"""What ``ragtrace.evaluate`` returns: every case's scores, and the ways to read them.

``EvaluationResult`` holds one ``CaseResult`` per test case, in input order; each holds the
case's record, every ``Score`` (value, threshold, passed, explanation, error...) with the
evaluator that gave it, and the evaluators that could not run on it (``Skip``: the fields the
case lacks). Ways out:

- ``passed`` / ``failures()``: a case fails when one of its scores failed its threshold, an
  evaluator failed on it (an error Score) or could not run on it (a skip: no verdict is no pass);
  a score without a threshold is informational and never fails;
- ``write_scores(path)``: the scores file ``ragtrace report`` reads, written line for line as
  ``ragtrace eval --output`` writes it (``ragtrace._offline.output``);
- ``to_dataframe()``: one row per score (and per skip), with pandas (``ragtrace[pandas]``);
- ``summary_rows()``: count, mean and pass rate per score name (``ragtrace._offline.summary``);
- ``metrics_summary()`` / ``print_summary()``: the text ``evaluate`` prints
  (``ragtrace._offline.metrics_summary``).

``Thresholds`` applies ``thresholds={"faithfulness": 0.8}``: each named score is judged again
against the number given (direction-aware), its ``threshold``, ``passed`` and pass/fail label
replaced, before anything is counted or written.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TextIO

from ragtrace._config.suggestions import suggest
from ragtrace._engine.outcomes import Outcome, Skip
from ragtrace._model import RagRecord, Score
from ragtrace._offline import metrics_summary
from ragtrace._offline.metrics_summary import Display
from ragtrace._offline.output import ENCODING_ERRORS, dumps, record_json
from ragtrace._offline.summary import Summary
from ragtrace._offline.systems import EvalItem
from ragtrace._offline.verdicts import Failure, missing_text, score_status

DATAFRAME_COLUMNS = (
    "system", "case", "score", "evaluator", "status", "value", "threshold", "passed", "label",
    "direction", "explanation", "error", "kind", "model", "query", "response", "reference",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One test case and what the evaluators said about it.

    Public as ``ragtrace.CaseResult``: ``EvaluationResult.cases`` holds one per case, and
    ``ragtrace.testing.assert_scores`` returns the case's.

    Attributes:
        id: The case's id (unique within its system).
        system: Which system gave the answer.
        record: What was scored.
        scored: ``(evaluator name, Score)`` pairs, evaluators in the order they were given.
        skipped: The evaluators that did not run, and the fields the case lacks for each.
    """

    id: str
    system: str
    record: RagRecord
    scored: tuple[tuple[str, Score], ...]
    skipped: tuple[Skip, ...] = ()

    @property
    def scores(self) -> tuple[Score, ...]:
        """Every Score, in order."""
        return tuple(score for _, score in self.scored)

    def score(self, name: str) -> Score:
        """The Score called ``name``.

        Raises:
            KeyError: No such score for this case (the message lists the ones it has).
        """
        for _, score in self.scored:
            if score.name == name:
                return score
        known = ", ".join(s.name for _, s in self.scored) or "none"
        raise KeyError(f"case {self.id!r} has no score {name!r}; its scores: {known}")

    def failures(self) -> list[Failure]:
        """Scores that failed or errored, then evaluators that were skipped, in order."""
        found = [
            Failure(self.id, self.system, status, score.name, evaluator, score)
            for evaluator, score in self.scored
            if (status := score_status(score)) in ("fail", "error")
        ]
        found.extend(
            Failure(self.id, self.system, "skipped", s.evaluator, s.evaluator, None, s.missing)
            for s in self.skipped
        )
        return found

    @property
    def passed(self) -> bool:
        """No score failed or errored and every evaluator ran."""
        return not self.failures()

    def scores_line(self) -> dict[str, Any]:
        """The case's line of the scores file (as ``ragtrace eval --output`` writes it)."""
        item = EvalItem(self.system, self.id, self.id, None, self.record)
        return record_json(item, Outcome(self.scored, self.skipped))


class EvaluationResult:
    """Every case's scores from one ``ragtrace.evaluate`` call (see the module docstring).

    Attributes:
        cases: One ``CaseResult`` per test case, in input order.
        evaluators: The evaluators' names, in the order given.
        duration_s: Wall time of the scoring.
        judge: What the run's judge calls cost (calls by outcome, tokens, USD, seconds), or
            None when no judge was asked.
    """

    def __init__(
        self,
        cases: Sequence[CaseResult],
        evaluators: Sequence[str],
        *,
        duration_s: float = 0.0,
        judge: Mapping[str, Any] | None = None,
    ) -> None:
        self.cases = tuple(cases)
        self.evaluators = tuple(evaluators)
        self.duration_s = duration_s
        self.judge = dict(judge) if judge is not None else None
        self._summary = Summary(self.evaluators)
        for case in self.cases:
            self._summary.add(
                Outcome(case.scored, case.skipped), case.system, error=case.record.error
            )

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[CaseResult]:
        return iter(self.cases)

    def __repr__(self) -> str:
        failing = sum(not c.passed for c in self.cases)
        return (
            f"<EvaluationResult {len(self.cases)} case(s), {len(self.evaluators)} evaluator(s): "
            f"{len(self.cases) - failing} passed, {failing} failed>"
        )

    @property
    def passed(self) -> bool:
        """Every case passed (see ``CaseResult.passed``)."""
        return all(c.passed for c in self.cases)

    def failures(self) -> list[Failure]:
        """Every failure of every case, in case order."""
        return [f for case in self.cases for f in case.failures()]

    def case(self, case_id: str, system: str | None = None) -> CaseResult:
        """The case with id ``case_id`` (of ``system`` when several systems share ids).

        Raises:
            KeyError: No such case, or several systems have one and ``system`` is not given.
        """
        found = [c for c in self.cases if c.id == case_id and system in (None, c.system)]
        if len(found) == 1:
            return found[0]
        if found:
            systems = ", ".join(c.system for c in found)
            raise KeyError(f"case {case_id!r} is in several systems ({systems}): name one")
        hint = suggest(case_id, [c.id for c in self.cases])
        raise KeyError(f"no case {case_id!r}{hint}")

    def summary_rows(self) -> list[dict[str, Any]]:
        """Per system and score name: count, mean, pass rate, errors, skipped (see
        ``ragtrace._offline.summary``)."""
        return self._summary.rows()

    def summary_table(self) -> str:
        """``summary_rows()`` as the Markdown table ``ragtrace eval`` prints."""
        return self._summary.table()

    def scores_lines(self) -> list[dict[str, Any]]:
        """The scores file's lines, one per case, as JSON-ready mappings."""
        return [case.scores_line() for case in self.cases]

    def write_scores(self, path: str | os.PathLike[str]) -> None:
        """Write the scores file ``ragtrace report`` reads (replacing ``path`` at once).

        Raises:
            OSError: The file cannot be written.
        """
        write_lines(path, self.scores_lines())

    def to_dataframe(self) -> Any:
        """A ``pandas.DataFrame``: one row per score and per skipped evaluator (columns:
        ``DATAFRAME_COLUMNS``).

        Raises:
            MissingExtraError: pandas is not installed (``pip install 'ragtrace[pandas]'``).
        """
        from ragtrace._backends._loading import import_extra

        pd = import_extra("pandas", "pandas")
        return pd.DataFrame(list(self._rows()), columns=list(DATAFRAME_COLUMNS))

    def _rows(self) -> Iterable[dict[str, Any]]:
        for case in self.cases:
            texts = {
                "query": case.record.query,
                "response": case.record.response,
                "reference": case.record.reference,
            }
            for evaluator, score in case.scored:
                yield {
                    "system": case.system,
                    "case": case.id,
                    "score": score.name,
                    "evaluator": evaluator,
                    "status": score_status(score),
                    "value": score.value,
                    "threshold": score.threshold,
                    "passed": score.passed,
                    "label": score.label,
                    "direction": score.direction,
                    "explanation": score.explanation,
                    "error": score.error,
                    "kind": score.evaluator_kind,
                    "model": score.model,
                    **texts,
                }
            for skip in case.skipped:
                yield {
                    "system": case.system,
                    "case": case.id,
                    "score": skip.evaluator,
                    "evaluator": skip.evaluator,
                    "status": "skipped",
                    "error": f"not scored: {missing_text(skip.missing)}",
                    **texts,
                }

    def metrics_summary(self, display: Display = "all", *, marks: bool = True) -> str:
        """The text ``evaluate`` prints: per case, a pass/fail mark, score, threshold and reason
        per metric, then the pass rate of each metric (``ragtrace._offline.metrics_summary``)."""
        return metrics_summary.render(self, display, marks=marks)

    def print_summary(self, display: Display = "all", file: TextIO | None = None) -> None:
        """Print ``metrics_summary(display)`` to ``file`` (stdout); plain words replace the
        marks where the stream cannot encode them."""
        metrics_summary.print_summary(self, display, file)


def write_lines(path: str | os.PathLike[str], lines: Iterable[Mapping[str, Any]]) -> None:
    """Write scores lines to ``path`` through a temporary file, so a reader never sees half.

    Raises:
        OSError: The file cannot be written.
    """
    target = os.fspath(path)
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", errors=ENCODING_ERRORS, newline="\n") as f:
            for line in lines:
                f.write(dumps(line) + "\n")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Thresholds:
    """Pass/fail boundaries given at call time, by score name (``{"faithfulness": 0.8}``).

    Raises:
        TypeError: Not a mapping of names to numbers.
        ValueError: A number that is not finite.
    """

    def __init__(self, thresholds: Mapping[str, float] | None) -> None:
        if thresholds is None:
            thresholds = {}
        if not isinstance(thresholds, Mapping):
            raise TypeError(
                f"thresholds must map score names to numbers, e.g. {{'faithfulness': 0.8}}; "
                f"got {type(thresholds).__name__}"
            )
        self.by_name: dict[str, float] = {}
        for name, value in thresholds.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"thresholds: a score name must be a non-empty string: {name!r}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(
                    f"thresholds[{name!r}] must be a number, got {type(value).__name__} "
                    f"{value!r:.40}; an evaluator's own options (a named operating point, ...) "
                    f"go with the evaluator: ({name!r}, {{'threshold': ...}})"
                )
            if not math.isfinite(value):
                raise ValueError(f"thresholds[{name!r}] must be finite, got {value!r}")
            self.by_name[name] = float(value)

    def apply(self, outcome: Outcome) -> Outcome:
        """``outcome`` with every named score judged against its threshold given here."""
        if not self.by_name:
            return outcome
        return Outcome(
            tuple((evaluator, self._judged(score)) for evaluator, score in outcome.scores),
            outcome.skipped,
        )

    def _judged(self, score: Score) -> Score:
        threshold = self.by_name.get(score.name)
        if threshold is None:
            return score
        if score.value is None:
            return replace(score, threshold=threshold)
        if score.direction == "lower_is_better":
            passed = score.value <= threshold
        else:
            passed = score.value >= threshold
        label = score.label
        if label in (None, "pass", "fail"):
            label = "pass" if passed else "fail"
        return replace(score, threshold=threshold, passed=passed, label=label)

    def check_names(self, cases: Sequence[CaseResult], evaluators: Sequence[str]) -> None:
        """Refuse names that are neither a score of the run nor an evaluator that gave none.

        Raises:
            ValueError: A name that matches nothing (with a did-you-mean), or an evaluator's
                name where its scores have names of their own.
        """
        names = {s.name: e for c in cases for e, s in c.scored}
        scoring = set(names.values())
        for key in self.by_name:
            if key in names:
                continue
            if key in evaluators and key in scoring:
                own = sorted(n for n, e in names.items() if e == key)
                raise ValueError(
                    f"thresholds[{key!r}]: evaluator {key!r} gives scores named "
                    f"{', '.join(own)}; key thresholds by score name"
                )
            if key in evaluators:
                continue  # it gave no score at all (skipped or failed): nothing to judge
            known = sorted(names)
            hint = suggest(key, [*known, *evaluators])
            raise ValueError(
                f"thresholds[{key!r}]: no such score{hint}; scores: {', '.join(known) or 'none'}"
            )
