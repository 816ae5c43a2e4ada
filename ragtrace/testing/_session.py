"""The scores of one pytest session: collected, written, summarised in a table, gated.

``SessionScores.hear`` is a result listener (``ragtrace._offline.listeners``): every case that
``ragtrace.evaluate`` or ``assert_scores`` scores during the session is kept as its scores-file
line, with the test that scored it (``nodeid``, set by the plugin around each test). Under
pytest-xdist each worker keeps its own and hands them over as ``wire()`` text; the controller
adds them with ``add_wire``.

At the end, ``lines()`` gives the scores file (``ragtrace eval --output``'s format, plus the
test's node id under ``test``): one line per scored case, ``case`` the case's id, ``id`` the
case's id when the session scored that case once for its system, else ``"{case} @ {test}"``.
``report(path)`` writes them and builds the report ``ragtrace report`` would
(``ragtrace._report.build``), so the table (``table(report)``: per score, cases, pass rate, mean,
worst case) and the gates (``ragtrace._report.gates``) read the very numbers ``ragtrace report``
prints for that file. A case scored twice for one system counts once there, the first time, as
``ragtrace report`` counts it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace._offline.results import EvaluationResult
    from ragtrace._report.gates import Gate

OUTSIDE_TESTS = "<session>"
MIN_RESAMPLES = 10  # the fewest ragtrace._report.stats.Bootstrap takes
TEST_CHARS = 60
_JUDGE_COUNTS = ("calls", "input_tokens", "output_tokens", "cost_usd", "seconds")


@dataclass(frozen=True, slots=True)
class Entry:
    """One scored case: the test that scored it and its scores-file line."""

    nodeid: str
    line: Mapping[str, Any]


class SessionScores:
    """Every case scored during a session (see the module docstring)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.judge: dict[str, Any] = {}
        self.nodeid: str | None = None
        self._lock = threading.Lock()

    def hear(self, result: EvaluationResult) -> None:
        """Keep every case of ``result`` (a listener of ``ragtrace.evaluate``)."""
        nodeid = self.nodeid or OUTSIDE_TESTS
        entries = [Entry(nodeid, case.scores_line()) for case in result.cases]
        with self._lock:
            self.entries.extend(entries)
            if result.judge:
                self._add_judge(result.judge)

    def _add_judge(self, judge: Mapping[str, Any]) -> None:
        for key in _JUDGE_COUNTS:
            self.judge[key] = self.judge.get(key, 0) + judge.get(key, 0)
        outcomes = self.judge.setdefault("outcomes", {})
        for outcome, n in judge.get("outcomes", {}).items():
            outcomes[outcome] = outcomes.get(outcome, 0) + n

    def wire(self) -> str:
        """Everything kept, as JSON text (what an xdist worker sends its controller)."""
        from ragtrace._offline.output import dumps

        with self._lock:
            entries = [[e.nodeid, e.line] for e in self.entries]
            return dumps({"entries": entries, "judge": self.judge})

    def add_wire(self, text: str) -> None:
        """Add what ``wire()`` gave in another process."""
        data = json.loads(text)
        with self._lock:
            self.entries.extend(Entry(nodeid, line) for nodeid, line in data["entries"])
            if data.get("judge"):
                self._add_judge(data["judge"])

    def lines(self) -> list[dict[str, Any]]:
        """The scores file's lines, ids unique per system (see the module docstring)."""
        with self._lock:
            entries = list(self.entries)
        times = Counter((e.line["system"], e.line["case"]) for e in entries)
        used: set[tuple[str, str]] = set()
        lines = []
        for entry in entries:
            system, case = entry.line["system"], entry.line["case"]
            base = case if times[system, case] == 1 else f"{case} @ {entry.nodeid}"
            ident, again = base, 2
            while (system, ident) in used:
                ident, again = f"{base} #{again}", again + 1
            used.add((system, ident))
            lines.append({**entry.line, "id": ident, "test": entry.nodeid})
        return lines

    def report(
        self, path: str | None = None, *, intervals: bool = True
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Write the scores file to ``path`` (None: a temporary file) and build the report
        ``ragtrace report`` would give for it; the report and the lines.

        ``intervals=False`` draws the fewest bootstrap resamples: counts, means and pass rates
        are the same, only the confidence intervals (``*_low``, ``*_high``, ``diff*``) are
        rough, and a large session is summarised in a tenth of the time.

        Raises:
            OSError: ``path`` cannot be written.
        """
        from ragtrace._offline.results import write_lines
        from ragtrace._report.build import ReportOptions, build_report
        from ragtrace._report.load import load_scores

        options = ReportOptions() if intervals else ReportOptions(resamples=MIN_RESAMPLES)
        lines = self.lines()
        if path is not None:
            write_lines(path, lines)
            return build_report(load_scores([path]), options), lines
        with tempfile.TemporaryDirectory(prefix="ragtrace-session-") as folder:
            scratch = os.path.join(folder, "scores.jsonl")
            write_lines(scratch, lines)
            return build_report(load_scores([scratch]), options), lines


def table(report: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]) -> str:
    """Per score (and system, when there are several): cases, errors, pass rate, mean and the
    worst case with the test that scored it."""
    from ragtrace._offline.summary import markdown_table

    several = len(report["systems"]) > 1
    rows = []
    for section in report["scores"]:
        for entry in section["leaderboard"]:
            worst = worst_case(lines, section["name"], entry["system"], section["direction"])
            rows.append(
                (
                    section["name"],
                    *((entry["system"],) if several else ()),
                    f"{entry['n'] + entry['errors']:,}",
                    f"{entry['errors']:,}",
                    "-" if entry["pass_rate"] is None else f"{100 * entry['pass_rate']:.1f}%",
                    "-" if entry["mean"] is None else f"{entry['mean']:.3f}",
                    worst,
                )
            )
    header = ("score", *(("system",) if several else ()), "cases", "errors", "pass rate", "mean")
    return markdown_table((*header, "worst case (test)"), rows)


def worst_case(lines: Sequence[Mapping[str, Any]], name: str, system: str, direction: str) -> str:
    """``case = value (test)`` for the system's worst value of score ``name``, or ``-``."""
    sign = -1.0 if direction == "lower_is_better" else 1.0
    found: tuple[float, str, str] | None = None
    for line in lines:
        if line["system"] != system:
            continue
        for score in line["scores"]:
            value = score.get("value")
            if score.get("name") != name or not isinstance(value, int | float):
                continue
            if not math.isfinite(value):
                continue
            if found is None or sign * value < sign * found[0]:
                found = (float(value), str(line["case"]), str(line.get("test", "")))
    if found is None:
        return "-"
    value, case, test = found
    if len(test) > TEST_CHARS:
        test = "\u2026" + test[-(TEST_CHARS - 1) :]
    return f"{case} = {value:.3f} ({test})"


def notes(report: Mapping[str, Any], lines: Sequence[Mapping[str, Any]]) -> list[str]:
    """Lines under the table: repeated cases, evaluators that could not run, tests counted."""
    found = []
    tests = len({line.get("test") for line in lines})
    found.append(f"{len(lines):,} scored case(s) from {tests:,} test(s)")
    repeated = sum(s.get("repeated_cases", 0) for s in report["scores"])
    if repeated:
        found.append(
            f"{repeated:,} score(s) of a case scored again for the same system are left out of "
            "the table and gates (the first one counts, as in `ragtrace report`)"
        )
    skipped = Counter(s["evaluator"] for line in lines for s in line.get("skipped", []))
    if skipped:
        listed = ", ".join(f"{name} {n:,}" for name, n in skipped.items())
        found.append(f"not scored (the case lacked a field the evaluator needs): {listed}")
    return found


def needs_intervals(gates: Sequence[Gate]) -> bool:
    """Whether a gate reads a confidence interval (``mean_low``, ``diff``...)."""
    return any(g.stat.endswith(("_low", "_high")) or g.stat.startswith("diff") for g in gates)


def check_gates(gates: Sequence[Gate], report: Mapping[str, Any]) -> list[tuple[bool, str]]:
    """``(failed, message)`` per gate check; a gate that cannot be checked (a score the
    session never asserted) fails, with the reason."""
    from ragtrace._report.gates import GateError, check_gate

    outcomes: list[tuple[bool, str]] = []
    for gate in gates:
        try:
            result = check_gate(gate, report)
        except GateError as exc:
            outcomes.append((True, f"cannot be checked: {exc}"))
            continue
        if not result.checks:
            outcomes.append((True, f"{gate.expression}: no system has this score"))
        for check in result.checks:
            outcomes.append((check["failed"], check["message"]))
    return outcomes
