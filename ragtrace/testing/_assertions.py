"""``assert_scores``: score one test case and fail the test, readably, when a score fails.

::

    assert_scores(record, ["faithfulness", "answer_relevance"], thresholds={"faithfulness": 0.8})

runs the evaluators on the engine ``ragtrace.evaluate`` uses (with no printout and no progress
bar) and raises ``ScoresAssertionError`` (an ``AssertionError``) when a score is under its
threshold (over it, for a lower-is-better score), an evaluator failed on the case, or an
evaluator could not run on it (the case lacks a field it needs: no verdict is no pass). The
message names the case, then each failed score with its value, threshold and explanation::

    ragtrace: 1 of 2 checks failed for case 'q-17' (What is AI? -> AI includes electric sheep.)
      - faithfulness = 0.0322 < threshold 0.7532 (higher is better): hallucination probability
        0.97 (qa, flagged above 0.25); 1 of 1 claims unsupported by the retrieved context

On success it returns the ``CaseResult`` (every score, for further checks). Under pytest the
plugin adds the scores to the session's table and scores file, passed or not.

An evaluator whose scores have no threshold gives no verdict: naming it here is a usage error
(``ValueError``) unless ``thresholds`` gives its scores one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ragtrace._model import RagRecord

if TYPE_CHECKING:
    from ragtrace._offline.cases import Case
    from ragtrace._offline.results import CaseResult
    from ragtrace._offline.selection import EvaluatorSpec
    from ragtrace._offline.verdicts import Failure

TEXT_CHARS = 120


class ScoresAssertionError(AssertionError):
    """Scores of a test case failed; ``case`` holds every score, ``failures`` the failed ones."""

    __module__ = "ragtrace.testing"  # how tracebacks name it: the documented path

    def __init__(self, case: CaseResult, failures: Sequence[Failure]) -> None:
        self.case = case
        self.failures = tuple(failures)
        super().__init__(failure_message(case, self.failures))


def assert_scores(
    case: Case,
    evaluators: EvaluatorSpec | Sequence[EvaluatorSpec],
    *,
    thresholds: Mapping[str, float] | None = None,
    system: str | None = None,
    timeout_s: float | None = None,
) -> CaseResult:
    """Score ``case`` with ``evaluators``; raise ``ScoresAssertionError`` if any check fails.

    Args:
        case: One test case: a ``RagRecord`` (e.g. from ``ragtrace.testing.ask``) or a mapping
            (``input``, ``actual_output``, ``expected_output``, ``retrieval_context``, or the
            ``ragtrace eval`` field names).
        evaluators: Names, ``(name, options)`` pairs, mappings with a ``name``, or objects.
        thresholds: Pass/fail boundaries by score name, replacing the evaluators' own.
        system: The system the case's answer came from (default: its model, else its app).
        timeout_s: Seconds an evaluator may take on the case (default: its own timeout).

    Returns:
        The case's scores when every check passed.

    Raises:
        ScoresAssertionError: A score failed its threshold, or an evaluator failed or could not
            run on the case (the message lists each, with value, threshold and reason).
        TypeError: ``case`` is not one case.
        ValueError: An evaluator gives no verdict (no threshold), or a bad evaluator, option,
            threshold or case (the message says which).
    """
    __tracebackhide__ = True
    from ragtrace._offline.api import evaluate

    if not isinstance(case, RagRecord | Mapping):
        raise TypeError(
            f"assert_scores takes one case (a RagRecord or a mapping), got "
            f"{type(case).__name__}; for a data set use ragtrace.evaluate(...) or "
            "ragtrace.testing.parametrize_cases(...)"
        )
    result = evaluate(
        [case],
        evaluators,
        thresholds=thresholds,
        system=system,
        timeout_s=timeout_s,
        progress=False,
        display="none",
    )
    scored = result.cases[0]
    _refuse_no_verdict(scored, result.evaluators)
    failures = scored.failures()
    if failures:
        raise ScoresAssertionError(scored, failures)
    return scored


def failure_message(case: CaseResult, failures: Sequence[Failure]) -> str:
    """What failed for ``case``: a headline, then one line per failure."""
    from ragtrace._offline.metrics_summary import failure_line, one_line

    checks = sum(1 for _, s in case.scored if s.passed is not None or s.error is not None)
    checks += len(case.skipped)
    record = case.record
    texts = f"{one_line(record.query, TEXT_CHARS)} -> {one_line(record.response, TEXT_CHARS)}"
    system = f" of system {case.system!r}" if case.system != "default" else ""
    lines = [
        f"ragtrace: {len(failures)} of {checks} check(s) failed for case {case.id!r}{system} "
        f"({texts})"
    ]
    lines.extend(f"  - {failure_line(f)}" for f in failures)
    return "\n".join(lines)


def _refuse_no_verdict(case: CaseResult, evaluators: Sequence[str]) -> None:
    """A ValueError when an evaluator's scores all came without a threshold (no verdict)."""
    for evaluator in evaluators:
        scores = [s for e, s in case.scored if e == evaluator]
        if scores and all(s.passed is None and s.error is None for s in scores):
            names = ", ".join(repr(s.name) for s in scores)
            raise ValueError(
                f"assert_scores: {evaluator} gives no verdict (its scores {names} have no "
                f"threshold); pass thresholds={{{scores[0].name!r}: ...}} or drop it"
            )
