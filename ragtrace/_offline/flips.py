"""Verdict flips under perturbations: how often a small change to the question changes a verdict.

``FlipCounter`` is fed every scored answer of a ``ragtrace eval --perturb`` run. For each system,
test case and score name it compares the verdict (``passed``) of the answer to the original
question with the verdict of each perturbed answer; a case *flipped* under a perturbation when
both verdicts exist and differ. Cases where either verdict is missing (a skipped evaluator, an
error, a score without a threshold, a system that failed) are not compared.

Memory: the original verdicts of a case are kept until all its perturbed answers were seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._engine.outcomes import Outcome
from ragtrace._offline.summary import markdown_table
from ragtrace._offline.systems import EvalItem

Verdicts = dict[str, bool]


@dataclass(slots=True)
class _Tally:
    flipped: int = 0
    compared: int = 0


@dataclass(slots=True)
class _Case:
    original: Verdicts | None = None
    waiting: list[tuple[str, Verdicts]] | None = None
    seen: int = 0


class FlipCounter:
    """Counts, per system, score name and perturbation, the cases whose verdict flipped.

    Args:
        perturbations: The perturbations of the run, in the order to show them.
    """

    def __init__(self, perturbations: Sequence[str]) -> None:
        self.perturbations = tuple(perturbations)
        self._tallies: dict[tuple[str, str], dict[str, _Tally]] = {}
        self._cases: dict[tuple[str, str], _Case] = {}

    def add(self, item: EvalItem, outcome: Outcome) -> None:
        """Take one scored answer (original or perturbed)."""
        verdicts = {s.name: s.passed for _, s in outcome.scores if s.passed is not None}
        for _, score in outcome.scores:  # every score name gets a row, compared or not
            self._row(item.system, score.name)
        key = (item.system, item.case)
        case = self._cases.setdefault(key, _Case())
        if item.perturbation is None:
            case.original = verdicts
            for perturbation, later in case.waiting or ():
                self._compare(item.system, perturbation, verdicts, later)
            case.waiting = None
        else:
            case.seen += 1
            if case.original is None:
                case.waiting = [*(case.waiting or []), (item.perturbation, verdicts)]
            else:
                self._compare(item.system, item.perturbation, case.original, verdicts)
        if case.original is not None and case.seen >= len(self.perturbations):
            del self._cases[key]

    def _compare(self, system: str, perturbation: str, before: Verdicts, after: Verdicts) -> None:
        for name in before.keys() & after.keys():
            tally = self._row(system, name).setdefault(perturbation, _Tally())
            tally.compared += 1
            tally.flipped += before[name] != after[name]

    def _row(self, system: str, name: str) -> dict[str, _Tally]:
        row = self._tallies.get((system, name))
        if row is None:
            row = self._tallies[system, name] = {p: _Tally() for p in self.perturbations}
        return row

    def rows(self) -> list[dict[str, Any]]:
        """One mapping per system and score name: ``{perturbation: {flipped, compared}}``."""
        return [
            {
                "system": system,
                "name": name,
                "perturbations": {
                    p: {"flipped": t.flipped, "compared": t.compared} for p, t in row.items()
                },
            }
            for (system, name), row in self._tallies.items()
        ]

    def table(self) -> str:
        """A Markdown table: flipped / compared cases per score name and perturbation."""
        rows = self.rows()
        several = len({r["system"] for r in rows}) > 1
        header = (*(("system",) if several else ()), "score", *self.perturbations)
        body = [
            (
                *((r["system"],) if several else ()),
                r["name"],
                *(_cell(r["perturbations"][p]) for p in self.perturbations),
            )
            for r in rows
        ]
        return markdown_table(header, body)


def _cell(tally: dict[str, int]) -> str:
    return f"{tally['flipped']:,}/{tally['compared']:,}" if tally["compared"] else "-"
