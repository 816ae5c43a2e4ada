"""The end-of-run summary of ``ragtrace eval``: per score name, how many, how good, what failed.

``Summary`` takes each record's ``Outcome`` as it is produced (constant memory per score name)
and gives a table for people and a JSON-ready mapping for machines. There is one row per
system and score name (systems in first-seen order; the table has a ``system`` column only when
a run has several). Per row:

- ``count``: Scores with a value (error Scores not counted);
- ``unanswered``: records the system left unanswered (it raised or gave no response) that the
  evaluator would have scored (it lacked only what the system was to produce). They count as
  ``ragtrace report`` counts them by default: as failures, so a system that skips the hard
  questions never looks best here;
- ``n``: the cases the mean and pass rate are over: ``count`` plus ``unanswered`` (``count``
  alone for a score whose values are not all in [0, 1]: it has no worst value);
- ``mean``: the mean value, an unanswered case taking the worst value (0 where higher is
  better, 1 where lower is better); ``answered_mean``: the mean over the answers alone;
- ``pass_rate``: the share of passes among the Scores with a verdict and the unanswered cases
  (a score without a threshold has no verdict: pass rate ``-``/null); ``thresholds``: those
  seen;
- ``errors``: error Scores with that name (an evaluator that fails as a whole reports one error
  Score named after itself, so its failures show in a row of that name);
- ``skipped``: records of an answer its evaluator did not run on for lack of a required field
  (unanswered records are counted in ``unanswered``); every score name of that evaluator
  carries the count, since each of them is missing from those records.

An evaluator that produced no Score at all still gets a row, named after itself.

``judge_summary(tally)`` and ``judge_line(...)`` say what a run's judge calls cost (calls by
outcome, cached ones included, tokens, USD).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ragtrace._engine.outcomes import Outcome

if TYPE_CHECKING:
    from ragtrace._judges.usage import UsageTally

DEFAULT_SYSTEM = "default"
SYSTEM_FIELDS = frozenset({"response", "chunks", "model", "error"})
"""What the system produces: an evaluator skipped for lack of these only would have run on an
answer (as ``ragtrace._report.groups`` reads a skip)."""


@dataclass(slots=True)
class InputCounts:
    """What reading the input found.

    Attributes:
        lines: Physical lines read.
        records: Records evaluated.
        bad_lines: Lines refused (unreadable, invalid, too long, duplicate id).
        duplicate_ids: Of the bad lines, those refused because their id came earlier.
        blank_lines: Empty or whitespace-only lines (ignored).
    """

    lines: int = 0
    records: int = 0
    bad_lines: int = 0
    duplicate_ids: int = 0
    blank_lines: int = 0


@dataclass(slots=True)
class _Row:
    count: int = 0
    total: float = 0.0
    passed: int = 0
    judged: int = 0
    errors: int = 0
    no_value: int = 0
    thresholds: set[float] = field(default_factory=set)
    bounded: bool = True
    lower_is_better: bool = False


class Summary:
    """Counts and means over a run, per evaluator and score name."""

    def __init__(self, evaluators: Sequence[str]) -> None:
        self.input = InputCounts()
        self._evaluators = list(evaluators)
        self._systems: dict[str, dict[str, dict[str, _Row]]] = {}
        self._skipped: Counter[tuple[str, str]] = Counter()
        self._unanswered: Counter[tuple[str, str]] = Counter()

    @property
    def systems(self) -> list[str]:
        """The systems seen, in first-seen order."""
        return list(self._systems)

    def add(
        self, outcome: Outcome, system: str = DEFAULT_SYSTEM, *, error: str | None = None
    ) -> None:
        """Count one record's scores and skips, for ``system``; ``error`` is why the system
        gave no answer (the record's ``error``). A record is unanswered when it has one, or
        when an evaluator was skipped for lack of the response."""
        self.input.records += 1
        rows_of = self._rows_of(system)
        unanswered = error is not None or any("response" in s.missing for s in outcome.skipped)
        for skip in outcome.skipped:
            if unanswered and set(skip.missing) <= SYSTEM_FIELDS:
                self._unanswered[system, skip.evaluator] += 1
            else:
                self._skipped[system, skip.evaluator] += 1
        for evaluator, score in outcome.scores:
            row = rows_of.setdefault(evaluator, {}).setdefault(score.name, _Row())
            if score.threshold is not None:
                row.thresholds.add(score.threshold)
            if score.error is not None:
                row.errors += 1
                continue
            if score.value is None:
                row.no_value += 1
                continue
            row.count += 1
            row.total += score.value
            row.bounded = row.bounded and 0.0 <= score.value <= 1.0
            row.lower_is_better = score.direction == "lower_is_better"
            if score.passed is not None:
                row.judged += 1
                row.passed += score.passed

    def _rows_of(self, system: str) -> dict[str, dict[str, _Row]]:
        rows = self._systems.get(system)
        if rows is None:
            rows = self._systems[system] = {name: {} for name in self._evaluators}
        return rows

    @property
    def errors(self) -> int:
        """Error Scores over all systems and evaluators."""
        return sum(
            r.errors
            for by_evaluator in self._systems.values()
            for rows in by_evaluator.values()
            for r in rows.values()
        )

    def rows(self) -> list[dict[str, Any]]:
        """One mapping per system and score name: systems in first-seen order (the default one
        when none was seen), evaluators in order, names in first-seen order."""
        found = []
        systems = self._systems or {DEFAULT_SYSTEM: {name: {} for name in self._evaluators}}
        for system, by_evaluator in systems.items():
            for evaluator, rows in by_evaluator.items():
                found.extend(self._row(system, evaluator, rows))
        return found

    def _row(self, system: str, evaluator: str, rows: dict[str, _Row]) -> list[dict[str, Any]]:
        unanswered = self._unanswered[system, evaluator]
        found = []
        for name, row in rows.items() or [(evaluator, _Row())]:
            worst = 1.0 if row.lower_is_better else 0.0
            counted = unanswered if row.count and row.bounded else 0
            n = row.count + counted
            judged = row.judged + unanswered if row.judged else 0
            found.append(
                {
                    "system": system,
                    "name": name,
                    "evaluator": evaluator,
                    "count": row.count,
                    "unanswered": unanswered,
                    "n": n,
                    "mean": (row.total + worst * counted) / n if n else None,
                    "answered_mean": row.total / row.count if row.count else None,
                    "passed": row.passed,
                    "pass_rate": row.passed / judged if judged else None,
                    "thresholds": sorted(row.thresholds),
                    "errors": row.errors,
                    "skipped": self._skipped[system, evaluator],
                    "no_value": row.no_value,
                }
            )
        return found

    def to_json(self, **extra: Any) -> dict[str, Any]:
        """The summary as JSON-ready data (``extra`` keys added at the top level)."""
        return {"input": asdict(self.input), "scores": self.rows(), **extra}

    def table(self) -> str:
        """A Markdown table of ``rows()`` (with a ``system`` column when there are several):
        ``n`` counts the unanswered cases the mean and pass rate count as failures."""
        several = len(self._systems) > 1
        header = (
            "score", "evaluator", "n", "unanswered", "mean", "pass rate", "threshold", "errors",
            "skipped",
        )  # fmt: skip
        body = [
            (
                *((r["system"],) if several else ()),
                r["name"],
                r["evaluator"],
                f"{r['n']:,}",
                f"{r['unanswered']:,}",
                "-" if r["mean"] is None else f"{r['mean']:.3f}",
                "-" if r["pass_rate"] is None else f"{100 * r['pass_rate']:.1f}%",
                "/".join(f"{t:g}" for t in r["thresholds"]) or "-",
                f"{r['errors']:,}",
                f"{r['skipped']:,}",
            )
            for r in self.rows()
        ]
        return markdown_table(("system", *header) if several else header, body)

    def input_line(self) -> str:
        """One line about the input: records evaluated and lines refused."""
        n = self.input
        return (
            f"{n.records:,} records from {n.lines:,} lines; {n.bad_lines:,} bad lines "
            f"({n.duplicate_ids:,} of them duplicate ids), {n.blank_lines:,} blank"
        )


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as a Markdown table with padded columns (numbers are right-aligned)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = [
        i > 0 and all(_looks_numeric(r[i]) for r in rows) and bool(rows) for i in range(len(header))
    ]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if right else c.ljust(w)
            for c, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + (":" if r else "-") for w, r in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _looks_numeric(cell: str) -> bool:
    return cell == "-" or cell.replace(",", "").replace(".", "").rstrip("%").isdigit()


def judge_summary(tally: UsageTally) -> dict[str, Any]:
    """What the run's judge calls cost: calls by outcome, tokens, USD, seconds."""
    return {
        "calls": tally.calls,
        "outcomes": dict(sorted(tally.outcomes.items())),
        "input_tokens": tally.input_tokens,
        "output_tokens": tally.output_tokens,
        "cost_usd": round(tally.cost_usd, 6),
        "seconds": round(tally.seconds, 3),
    }


def judge_line(judge: Mapping[str, Any]) -> str:
    """One line for the end of a run (from ``judge_summary``): calls, failures, cache hits,
    tokens, cost."""
    outcomes = ", ".join(f"{k} {v:,}" for k, v in sorted(judge["outcomes"].items()))
    return (
        f"judge: {judge['calls']:,} calls ({outcomes}); tokens {judge['input_tokens']:,} in, "
        f"{judge['output_tokens']:,} out; ${judge['cost_usd']:.4f}"
    )
