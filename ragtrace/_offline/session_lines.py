"""The conversation lines of ``ragtrace eval``: each session of a data set scored as a whole.

Rows that name a ``session_id`` (``ragtrace._offline.case_conversations``; ordered by their
``turn``, then input order) are turns of one conversation. Beside each row's own line, the
scores file gets one line per (system, session), written after the rows, with the scores of the
conversation evaluators (``ragtrace.evaluators._conversation``: ``Config.session_evaluators``;
``conversation_relevancy`` only when ``answer_relevance`` is among the evaluators run)::

    {"id": "session:chat-17", "system": "gpt-x", "case": "session:chat-17",
     "perturbation": null, "session_id": "chat-17", "turns": 3,
     "scores": [{"name": "knowledge_retention", ...}, ...], "skipped": [], "record": null,
     "error": null}

so ``ragtrace report`` lists them as scores of their own beside the turn scores. A session of
one row gets no line: that row is the whole of it (a multi-turn case asked alone is given a
thread of its own). Perturbed
answers are left out (a conversation is asked as written). The turns are kept in memory until
the end of the run, at most ``max_turns`` of them in all; past it a turn is left out of its
conversation and counted (``dropped``). ``lines(summary)`` also counts each line's Scores into a
``ConversationSummary`` (``ragtrace._offline.conversation_summary``) for the end-of-run summary.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ragtrace._model import RagRecord
from ragtrace._offline.conversation_summary import ConversationSummary
from ragtrace._offline.output import score_json
from ragtrace._offline.systems import EvalItem
from ragtrace._redaction import NO_REDACTION, Redaction
from ragtrace.evaluators._conversation import (
    ConversationEvaluator,
    group_sessions,
    run_conversation_evaluators,
    session_id_of,
)

MAX_TURNS = 200_000
MIN_TURNS = 2
"""A session of one row is that row (a multi-turn case asked alone, whose system gave it a
thread of its own): no conversation line."""
LINE_PREFIX = "session:"


class SessionLines:
    """Collects the turns of each (system, session) and scores them at the end of a run.

    Args:
        evaluators: The conversation evaluators, in the order their scores are written.
        redaction: The policy the scores go through before they are written.
        max_turns: Turns kept in all (the run's memory bound).
    """

    def __init__(
        self,
        evaluators: Sequence[ConversationEvaluator],
        redaction: Redaction = NO_REDACTION,
        max_turns: int = MAX_TURNS,
    ) -> None:
        self.evaluators = tuple(evaluators)
        self._redaction = redaction
        self.max_turns = max_turns
        self._turns: dict[tuple[str, str], list[RagRecord]] = {}
        self.kept = 0
        self.dropped = 0

    def add(self, item: EvalItem) -> None:
        """Keep ``item``'s record if it is a turn of a session (and room is left)."""
        session = session_id_of(item.record)
        if session is None or item.perturbation is not None:
            return
        if self.kept >= self.max_turns:
            self.dropped += 1
            return
        self._turns.setdefault((item.system, session), []).append(item.record)
        self.kept += 1

    def lines(self, summary: ConversationSummary | None = None) -> Iterator[dict[str, Any]]:
        """One JSON-ready line per (system, session) of two turns or more that got a score,
        in first-seen order; each line's Scores are counted into ``summary`` as it is made."""
        for (system, session), records in self._turns.items():
            turns = group_sessions(records).get(session, [])
            if len(turns) < MIN_TURNS:
                continue
            evaluations = self._redaction.evaluations(
                run_conversation_evaluators(self.evaluators, turns)
            )
            scores = [score_json(e.evaluator, s) for e in evaluations for s in e.scores]
            if not scores:
                continue
            if summary is not None:
                summary.add(
                    system, session, ((e.evaluator, s) for e in evaluations for s in e.scores)
                )
            line_id = LINE_PREFIX + session
            yield {
                "id": line_id,
                "system": system,
                "case": line_id,
                "perturbation": None,
                "session_id": session,
                "turns": len(turns),
                "scores": scores,
                "skipped": [],
                "record": None,
                "error": None,
            }
