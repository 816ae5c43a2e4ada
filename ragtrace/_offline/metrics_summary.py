"""The text ``ragtrace.evaluate`` prints: a metrics summary per test case, then pass rates.

Modelled on the "Metrics Summary" of DeepEval's ``evaluate`` (the seed guide's example): for each
case, one line per metric with a pass/fail mark, the score, the threshold and the reason, then
the case's texts; at the end, each metric's pass rate over the cases::

    ======================================================================
    Metrics Summary

      - ✅ faithfulness (score: 0.9122, threshold: 0.7532, reason: 0 of 2 claims unsupported ...)
      - ❌ answer_relevance (score: 0.2104, threshold: 0.3, reason: mean similarity 0.21 ...)

    For test case q-17:
      - input: What is AI?
      - actual output: AI refers to machines mimicking human intelligence ...
      - expected output: None
      - retrieval context: 3 chunk(s): "Artificial intelligence refers to ..." | ...
    ======================================================================
    Overall Metric Pass Rates

    faithfulness: 100.00% pass rate (3 of 3; mean 0.8871)
    answer_relevance: 66.67% pass rate (2 of 3; mean 0.5023)
    ======================================================================

Marks: ✅ pass, ❌ fail, ❗ error (the evaluator failed), ⏭ skipped (the case lacks a field the
evaluator needs), ⚪ no threshold (informational). Where the output stream cannot encode them
(a non-UTF-8 console), words replace them: PASS, FAIL, ERROR, SKIPPED, INFO. Texts are cut
(``TEXT_CHARS``, ``REASON_CHARS``) and put on one line; the result object keeps them whole.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TextIO

from ragtrace._engine.outcomes import Skip
from ragtrace._model import RagRecord, Score
from ragtrace._offline.summary import judge_line
from ragtrace._offline.verdicts import Failure, VerdictStatus, missing_text, score_status

Display = Literal["all", "failing", "none"]
"""Which cases the metrics summary (``ragtrace.evaluate(display=...)``,
``EvaluationResult.print_summary``) shows in full: every one, those with a failure, or none."""


class CaseResult(Protocol):
    """What a case's block shows (``ragtrace._offline.results.CaseResult``)."""

    @property
    def id(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def record(self) -> RagRecord: ...
    @property
    def scored(self) -> tuple[tuple[str, Score], ...]: ...
    @property
    def skipped(self) -> tuple[Skip, ...]: ...
    @property
    def passed(self) -> bool: ...


class EvaluationResult(Protocol):
    """What the summary shows (``ragtrace._offline.results.EvaluationResult``)."""

    @property
    def cases(self) -> Sequence[CaseResult]: ...
    @property
    def evaluators(self) -> Sequence[str]: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def judge(self) -> Mapping[str, Any] | None: ...

    def summary_rows(self) -> list[dict[str, Any]]: ...


RULE = "=" * 70
TEXT_CHARS = 200
REASON_CHARS = 300
CHUNK_CHARS = 80
CHUNKS_SHOWN = 3
MARKS: dict[VerdictStatus, str] = {
    "pass": "\u2705",
    "fail": "\u274c",
    "error": "\u2757",
    "skipped": "\u23ed",
    "no threshold": "\u26aa",
}
WORDS: dict[VerdictStatus, str] = {
    "pass": "PASS",
    "fail": "FAIL",
    "error": "ERROR",
    "skipped": "SKIPPED",
    "no threshold": "INFO",
}
DISPLAYS = ("all", "failing", "none")


def render(result: EvaluationResult, display: Display = "all", *, marks: bool = True) -> str:
    """The whole summary (``display``: every case, only failing ones, or none of them)."""
    if display not in DISPLAYS:
        raise ValueError(f"display must be one of {', '.join(DISPLAYS)}; got {display!r}")
    shown = [c for c in result.cases if display == "all" or (display == "failing" and not c.passed)]
    parts = [case_block(case, result.evaluators, marks=marks) for case in shown]
    parts.append(_overall(result, display, len(shown)))
    return "\n".join(parts)


def print_summary(result: EvaluationResult, display: Display, file: TextIO | None) -> None:
    """Print ``render(result, display)`` to ``file`` (stdout), with words for marks the stream
    cannot encode."""
    out = file if file is not None else sys.stdout
    print(render(result, display, marks=can_encode(out, "".join(MARKS.values()))), file=out)


def can_encode(stream: object, text: str) -> bool:
    """Whether ``stream`` (by its ``encoding``, UTF-8 when it has none) can write ``text``."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def case_block(case: CaseResult, evaluators: Sequence[str] = (), *, marks: bool = True) -> str:
    """One case: its metrics (mark, score, threshold, reason) in ``evaluators``' order, then
    its texts."""
    lines = [RULE, "Metrics Summary", ""]
    skipped = {s.evaluator: s for s in case.skipped}
    order = list(dict.fromkeys([*evaluators, *(e for e, _ in case.scored), *skipped]))
    for evaluator in order:
        for name, score in case.scored:
            if name == evaluator:
                mark = _mark(score_status(score), marks)
                lines.append(f"  - {mark} {score.name} ({score_fields(score)})")
        skip = skipped.get(evaluator)
        if skip is not None:
            lines.append(
                f"  - {_mark('skipped', marks)} {skip.evaluator} "
                f"(not scored: {missing_text(skip.missing)})"
            )
    record = case.record
    system = f" (system {case.system})" if case.system != "default" else ""
    lines += [
        "",
        f"For test case {case.id}{system}:",
        f"  - input: {one_line(record.query, TEXT_CHARS)}",
        f"  - actual output: {one_line(record.response, TEXT_CHARS)}",
        f"  - expected output: {one_line(record.reference, TEXT_CHARS)}",
        f"  - retrieval context: {_contexts(case)}",
    ]
    return "\n".join(lines)


def score_fields(score: Score) -> str:
    """``score: 0.91, threshold: 0.75, reason: ...`` (or the error) for one Score."""
    if score.error is not None or score.value is None:
        return f"error: {one_line(score.error or 'no value', REASON_CHARS)}"
    parts = [f"score: {number(score.value)}"]
    if score.threshold is None:
        parts.append("no threshold")
    else:
        parts.append(f"threshold: {number(score.threshold)}")
    if score.direction == "lower_is_better":
        parts.append("lower is better")
    if score.explanation:
        parts.append(f"reason: {one_line(score.explanation, REASON_CHARS)}")
    return ", ".join(parts)


def failure_line(failure: Failure) -> str:
    """One line naming a failure: the score, its value against the threshold, and why."""
    score = failure.score
    if failure.status == "skipped" or score is None:
        return (
            f"{failure.name}: not scored: {missing_text(failure.missing)} "
            f"(evaluator {failure.evaluator} needs it)"
        )
    if failure.status == "error":
        return f"{failure.name}: error: {one_line(score.error or 'no value', REASON_CHARS)}"
    value = number(score.value) if score.value is not None else "-"
    threshold = number(score.threshold) if score.threshold is not None else "-"
    op, better = (">", "lower") if score.direction == "lower_is_better" else ("<", "higher")
    reason = f": {one_line(score.explanation, REASON_CHARS)}" if score.explanation else ""
    return f"{failure.name} = {value} {op} threshold {threshold} ({better} is better){reason}"


def number(value: float) -> str:
    """A value as the summary shows it: at most 4 decimals, ``1.0`` not ``1``."""
    return repr(round(float(value), 4))


def one_line(text: Any, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…"; ``None`` as is."""
    if text is None:
        return "None"
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def _contexts(case: CaseResult) -> str:
    chunks = case.record.chunks
    if not chunks:
        return "None"
    shown = " | ".join(f'"{one_line(c.text, CHUNK_CHARS)}"' for c in chunks[:CHUNKS_SHOWN])
    more = f" | (+{len(chunks) - CHUNKS_SHOWN} more)" if len(chunks) > CHUNKS_SHOWN else ""
    return f"{len(chunks)} chunk(s): {shown}{more}"


def _mark(status: VerdictStatus, marks: bool) -> str:
    return MARKS[status] if marks else WORDS[status]


def _overall(result: EvaluationResult, display: Display, shown: int) -> str:
    lines = [RULE, "Overall Metric Pass Rates", ""]
    several = len({c.system for c in result.cases}) > 1
    for row in result.summary_rows():
        who = f"{row['system']} / {row['name']}" if several else row["name"]
        lines.append(f"{who}: {_rate(row)}")
    failing = sum(not c.passed for c in result.cases)
    lines += ["", RULE]
    tail = (
        f"{len(result.cases)} test case(s), {len(result.evaluators)} evaluator(s), "
        f"{result.duration_s:.1f} s: {len(result.cases) - failing} passed, {failing} failed"
    )
    if display == "failing" and shown == 0 and result.cases:
        tail += " (no failing case to show)"
    lines.append(tail)
    if result.judge:
        lines.append(judge_line(result.judge))
    return "\n".join(lines)


def _rate(row: dict[str, Any]) -> str:
    notes = []
    if row["errors"]:
        notes.append(f"{row['errors']} error(s)")
    if row["skipped"]:
        notes.append(f"{row['skipped']} skipped")
    extra = f"; {', '.join(notes)}" if notes else ""
    mean = "-" if row["mean"] is None else number(row["mean"])
    if row["pass_rate"] is None:
        return f"no verdict ({row['count']} scored, mean {mean}){extra}"
    return (
        f"{100 * row['pass_rate']:.2f}% pass rate ({row['passed']} passed of {row['count']}; "
        f"mean {mean}){extra}"
    )
