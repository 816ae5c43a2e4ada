"""The conversations part of ``ragtrace eval``'s summary: the conversation scores, per system.

``SessionLines`` (``ragtrace._offline.session_lines``) hands each conversation line's Scores to
a ``ConversationSummary`` as it writes them. Per system and conversation score name:

- ``sessions``: sessions scored with a value; ``errors``: sessions whose evaluator failed (an
  error Score, or one without a value: counted here, never as a fail);
- ``mean``: the mean value over the sessions scored;
- ``passed`` and ``pass_rate``: passes among the sessions with a verdict (a score without a
  threshold has none: pass rate ``-``/null); ``thresholds``: those seen;
- ``worst``: the ``WORST_SESSIONS`` sessions with the worst values (lowest where higher is
  better), worst first, ties in first-seen order, each as ``{"session_id", "value"}``, so they
  can be found in the scores file (their lines' ``session_id``).

Memory is constant per (system, score name). A run that scored no session has no rows, and the
summary shows nothing of it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ragtrace._model import Score
from ragtrace._offline.summary import markdown_table
from ragtrace._offline.verdicts import score_status

WORST_SESSIONS = 3


@dataclass(slots=True)
class _Row:
    evaluator: str
    sessions: int = 0
    total: float = 0.0
    passed: int = 0
    judged: int = 0
    errors: int = 0
    thresholds: set[float] = field(default_factory=set)
    # a max-heap of the worst sessions by (badness, first seen), as (-badness, -order, id, value)
    worst: list[tuple[float, int, str, float]] = field(default_factory=list)


class ConversationSummary:
    """Counts, means and the worst sessions of the conversation scores of a run.

    Args:
        worst: How many of the worst sessions each row names.
    """

    def __init__(self, worst: int = WORST_SESSIONS) -> None:
        if worst < 0:
            raise ValueError(f"worst must be >= 0, got {worst}")
        self._worst = worst
        self._rows: dict[tuple[str, str], _Row] = {}
        self._seen = 0

    def add(self, system: str, session_id: str, scores: Iterable[tuple[str, Score]]) -> None:
        """Count one session's ``(evaluator, Score)`` pairs, for ``system``."""
        for evaluator, score in scores:
            row = self._rows.setdefault((system, score.name), _Row(evaluator))
            if score.threshold is not None:
                row.thresholds.add(score.threshold)
            status = score_status(score)
            if status == "error" or score.value is None:
                row.errors += 1
                continue
            row.sessions += 1
            row.total += score.value
            if status != "no threshold":
                row.judged += 1
                row.passed += status == "pass"
            self._keep_worst(row, session_id, score)

    def _keep_worst(self, row: _Row, session_id: str, score: Score) -> None:
        if not self._worst or score.value is None:
            return
        badness = score.value if score.direction == "lower_is_better" else -score.value
        self._seen += 1
        entry = (badness, -self._seen, session_id, score.value)
        if len(row.worst) < self._worst:
            heapq.heappush(row.worst, entry)
        elif entry > row.worst[0]:
            heapq.heapreplace(row.worst, entry)

    @property
    def errors(self) -> int:
        """Sessions, over every system and score, whose conversation evaluator failed."""
        return sum(row.errors for row in self._rows.values())

    def __bool__(self) -> bool:
        return bool(self._rows)

    def rows(self) -> list[dict[str, Any]]:
        """One mapping per system and score name, in first-seen order."""
        return [
            {
                "system": system,
                "name": name,
                "evaluator": row.evaluator,
                "sessions": row.sessions,
                "mean": row.total / row.sessions if row.sessions else None,
                "passed": row.passed,
                "pass_rate": row.passed / row.judged if row.judged else None,
                "thresholds": sorted(row.thresholds),
                "errors": row.errors,
                "worst": [
                    {"session_id": session, "value": value}
                    for _, _, session, value in sorted(row.worst, reverse=True)
                ],
            }
            for (system, name), row in self._rows.items()
        ]

    def table(self, *, with_system: bool) -> str:
        """A Markdown table of ``rows()`` (with a ``system`` column when ``with_system``)."""
        header = ("score", "sessions", "mean", "pass rate", "threshold", "errors", "worst sessions")
        body = [
            (
                *((r["system"],) if with_system else ()),
                r["name"],
                f"{r['sessions']:,}",
                "-" if r["mean"] is None else f"{r['mean']:.3f}",
                "-" if r["pass_rate"] is None else f"{100 * r['pass_rate']:.1f}%",
                "/".join(f"{t:g}" for t in r["thresholds"]) or "-",
                f"{r['errors']:,}",
                ", ".join(w["session_id"] for w in r["worst"]) or "-",
            )
            for r in self.rows()
        ]
        return markdown_table(("system", *header) if with_system else header, body)
