"""Conversation-level scores: one Score per session, read over its turns in order (offline tier).

A record is one user turn; these evaluators read all the records of one conversation (one
``conversation.session_id``) together, in the spirit of DeepEval's conversational metrics (the
code and the rules are ours). CPU only, no server::

    from ragtrace.evaluators._conversation import evaluate_sessions, group_sessions
    sessions = group_sessions(records)            # session id -> its records, in turn order
    scores = evaluate_sessions(records)           # session id -> [Score, ...]
    KnowledgeRetention().evaluate(sessions["s1"]) # one evaluator, one session

- ``knowledge_retention`` (lexical, ``conversation_facts``): share of the answers that keep the
  facts the user stated earlier in the session (neither state them otherwise nor ask for them
  again). Threshold 1.0: one lapse fails the session.
- ``conversation_relevancy`` (model): share of the turns whose answer is relevant to its own
  question by ``answer_relevance``'s verdict. A turn that fails against its own question (the
  standalone one where the app rewrote it) is judged once more against a window of the user's
  questions (``window``, default 3: the two before it and its own, newest last), so a follow-up
  whose subject lives in an earlier turn ("and in winter?") is not counted off-topic. Turns
  without an answer (an error, an empty response, a refusal) are left to
  ``conversation_completeness`` and not judged here.
  Threshold 0.5: ``answer_relevance`` fails at most 3.1% of normal answers at its default point
  (docs/evaluators-online.md), so a session of normal answers fails only when half its judged
  turns are false alarms (under 0.3% for two or more turns, taking turns as independent), while
  an assistant that misses most questions fails.
- ``conversation_completeness`` (lexical): share of the user's turns that got an answer, not an
  error, an empty response or a refusal (``non_answer``). Threshold 0.5: a session fails when
  the user left with most questions unanswered; a single "I don't know" where the knowledge
  base has no answer is the right reply, not a failure.

No labelled multi-turn data was available (the shared data sets hold single turns), so the
thresholds are rules, as said above, not tuned numbers. Each evaluator returns ``[]`` when
there is nothing to judge (no turn with an answer; for ``knowledge_retention`` no fact stated
before an answer), and an error Score, never an exception, when something goes wrong.
"""

from __future__ import annotations

import dataclasses
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace._model import Direction, Evaluation, EvaluatorKind, RagRecord, Score
from ragtrace.evaluators._base import Evaluator, positive_int, unit_option
from ragtrace.evaluators._conversation_facts import retention
from ragtrace.evaluators._question import question_of, standalone_query
from ragtrace.evaluators._statement_support import as_text, clip
from ragtrace.evaluators._text import split_sentences

DETAIL_ROWS = 20  # turns listed in details
DEFAULT_WINDOW = 3
_NEGATION = (
    "(?:can't|cannot|can not|couldn't|could not|am unable to|'m unable to|are unable to|"
    "am not able to|'m not able to|was unable to|wasn't able to)"
)
_NON_ANSWER = tuple(
    re.compile(p)
    for p in (
        rf"\b(?:i|we) {_NEGATION} (?:help|assist|answer|provide|find|locate|say|tell|share|"
        r"access|give|respond|determine|confirm)\b",
        r"\b(?:i|we) (?:don't|do not|didn't|did not) (?:know\b|have (?:any |enough |that |the |"
        r"this |specific |more )?(?:information|info|details|data|access|knowledge)\b)",
        r"\b(?:no|not enough|insufficient) (?:relevant |specific )?(?:information|info|details|"
        r"data|mention|answer)\b.{0,20}\b(?:about|on|regarding|for|of|in|to)\b",
        r"\b(?:context|documents?|sources?|passages?|information|knowledge base|texts?|results?)"
        r"\b.{0,40}\b(?:doesn't|does not|do not|don't|did not|didn't) (?:contain|mention|say|"
        r"include|cover|provide|specify|state|answer)\b",
        r"\b(?:unable|not able) to (?:answer|help|assist|find|provide|determine)\b",
        r"\bas an ai\b",
        r"\b(?:outside|beyond) (?:the scope|my (?:knowledge|scope))\b",
        r"\bthere (?:is|was) no (?:information|mention|answer|data)\b",
    )
)
_CONTRAST = re.compile(r"\b(?:but|however|although|though)\b")
_MAX_NON_ANSWER_SENTENCES = 3


def group_sessions(records: Iterable[RagRecord]) -> dict[str, list[RagRecord]]:
    """The records of each session (``conversation.session_id``), in turn order.

    Ordered by ``conversation.turn``, then start time; records without a turn number come
    after those with one, by start time. A record seen twice (the same trace and span id:
    at-least-once delivery) is kept once. Records without a session id are left out. Sessions
    come in the order their first record came.
    """
    found: dict[str, list[RagRecord]] = {}
    seen: set[tuple[str, str]] = set()
    for record in records:
        session = session_id_of(record)
        key = (record.trace_id, record.span_id)
        if session is None or key in seen:
            continue
        seen.add(key)
        found.setdefault(session, []).append(record)
    return {session: _ordered(turns) for session, turns in found.items()}


def evaluate_sessions(
    records: Iterable[RagRecord], evaluators: Sequence[ConversationEvaluator] | None = None
) -> dict[str, list[Score]]:
    """Session id -> the Scores of ``evaluators`` (default: all three) over its records."""
    chosen = (
        list(evaluators)
        if evaluators is not None
        else [KnowledgeRetention(), ConversationRelevancy(), ConversationCompleteness()]
    )
    return {
        session: [score for evaluator in chosen for score in evaluator.evaluate(turns)]
        for session, turns in group_sessions(records).items()
    }


def non_answer(response: object) -> str | None:
    """Why ``response`` is no answer (empty, or a refusal such as "I don't know" or "the
    documents do not mention it"), or None when it answers.

    A refusal is read in the first sentence of an answer of at most three sentences, and not
    when that sentence goes on after it with "but" or "however" ("I don't know the exact date,
    but it was in 1967."): a long answer that opens with an apology usually answers after it.
    """
    text = as_text(response).strip()
    if not text:
        return "empty response"
    found = split_sentences(text[:5000])
    if not found or len(found) > _MAX_NON_ANSWER_SENTENCES:
        return None
    first = found[0].lower().replace("\u2019", "'")
    for pattern in _NON_ANSWER:
        m = pattern.search(first)
        if m and not _CONTRAST.search(first, m.end()):
            return f"refusal: {m.group(0)!r}"
    return None


class ConversationEvaluator(ABC):
    """Base of the conversation-level evaluators: one Score about the records of one session.

    Stateless like record evaluators (one instance may serve many sessions and threads).
    ``evaluate(records)`` takes one session's records (ordered again by turn, duplicates
    dropped) and never raises.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[EvaluatorKind] = "lexical"
    direction: ClassVar[Direction] = "higher_is_better"
    threshold: float | None = None

    def __init__(self, *, threshold: float | None = None) -> None:
        self.threshold = unit_option(self.name, "threshold", threshold, self.threshold)

    def evaluate(self, records: Sequence[RagRecord]) -> list[Score]:
        """The Score of one session's records, [] when nothing can be judged."""
        try:
            sessions = {session_id_of(r) for r in records}
            if len(sessions - {None}) > 1:
                return [self.error_score("records of several sessions (use group_sessions)")]
            unique = {(r.trace_id, r.span_id): r for r in reversed(tuple(records))}
            turns = _ordered(list(unique.values()))
            if not turns:
                return []
            found = self.judge(turns)
            return [] if found is None else [found]
        except Exception as exc:
            return [self.error_score(f"{type(exc).__name__}: {exc}")]

    @abstractmethod
    def judge(self, turns: list[RagRecord]) -> Score | None:
        """The Score of a session's turns (ordered, at least one), None when not applicable."""

    def score(
        self,
        value: float,
        turns: list[RagRecord],
        *,
        explanation: str,
        details: dict[str, Any],
        model: str | None = None,
    ) -> Score:
        """A Score of this evaluator, with ``passed`` and the label from the threshold."""
        passed = None if self.threshold is None else value >= self.threshold
        return Score(
            name=self.name,
            value=value,
            label=None if passed is None else ("pass" if passed else "fail"),
            explanation=explanation,
            direction=self.direction,
            threshold=self.threshold,
            passed=passed,
            evaluator_kind=self.kind,
            model=model,
            details={"session_id": session_id_of(turns[0]), "turns": len(turns), **details},
        )

    def error_score(self, error: str) -> Score:
        """A Score saying this evaluator failed on a session."""
        return Score(
            name=self.name,
            value=None,
            label="error",
            direction=self.direction,
            threshold=self.threshold,
            error=error,
            evaluator_kind=self.kind,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} threshold={self.threshold}>"


class KnowledgeRetention(ConversationEvaluator):
    """Share of the answers that keep what the user stated earlier (``conversation_facts``)."""

    name: ClassVar[str] = "knowledge_retention"
    threshold: float | None = 1.0

    def judge(self, turns: list[RagRecord]) -> Score | None:
        earlier = _history(turns[0], "user")
        found = retention(earlier, [as_text(t.query) for t in turns], [_answer(t) for t in turns])
        if not found.checked:
            return None
        kept = found.checked - len(found.lapsed_turns)
        value = kept / found.checked
        lapses = found.lapses[:DETAIL_ROWS]
        explanation = f"{kept} of {found.checked} answers keep the facts the user stated" + (
            ": "
            + "; ".join(
                f"turn {lapse['turn']} {lapse['kind'].replace('_', ' ')} "
                f"{', '.join(lapse['values'])!r}"
                for lapse in lapses[:3]
            )
            if lapses
            else ""
        )
        return self.score(
            value,
            turns,
            explanation=explanation,
            details={
                "checked": found.checked,
                "facts": [fact.public() for fact in found.facts[:DETAIL_ROWS]],
                "lapses": lapses,
            },
        )


class ConversationRelevancy(ConversationEvaluator):
    """Share of the turns whose answer is relevant to its question (``answer_relevance``)."""

    name: ClassVar[str] = "conversation_relevancy"
    kind: ClassVar[EvaluatorKind] = "model"
    threshold: float | None = 0.5

    def __init__(
        self,
        *,
        relevance: Evaluator | None = None,
        window: int = DEFAULT_WINDOW,
        threshold: float | None = None,
    ) -> None:
        """Build the evaluator.

        Args:
            relevance: The record evaluator whose verdict (``Score.passed`` of its first
                Score) decides each turn (None: ``answer_relevance`` with default options).
            window: User questions the second reading joins (the turn's own and the ones
                before it); 1 judges each answer against its own question only.
            threshold: Pass when at least this share of the judged turns is relevant.
        """
        super().__init__(threshold=threshold)
        self.window = positive_int(self.name, "window", window)
        if relevance is None:
            from ragtrace.evaluators._registry import create

            relevance = create("answer_relevance")
        self.relevance = relevance

    def judge(self, turns: list[RagRecord]) -> Score | None:
        at = [
            i
            for i, t in enumerate(turns)
            if not self.relevance.missing_fields(t) and _unanswered(t) is None
        ]
        if not at:
            return None
        judged = [turns[i] for i in at]
        first = self.relevance.evaluate_batch(judged)
        verdicts = [self._verdict(s) for s in first]
        model = next((s.model for scores in first for s in scores if s.model), None)
        by = ["question"] * len(judged)
        again = [
            i
            for i, (ok, _, _) in enumerate(verdicts)
            if ok is False and self.window > 1 and standalone_query(judged[i]) is None
        ]
        windowed = [self._windowed(turns, at[i]) for i in again]
        for i, record, scores in zip(
            again, windowed, self.relevance.evaluate_batch(windowed), strict=True
        ):
            if record is not judged[i] and self._verdict(scores)[0]:
                verdicts[i], by[i] = self._verdict(scores), "window"
        counted = [v for v in verdicts if v[0] is not None]
        if not counted:
            errors = [v[2] for v in verdicts if v[2]]
            return self.error_score(f"no turn judged: {errors[0] if errors else 'no verdict'}")
        relevant = sum(1 for v in counted if v[0])
        rows = [
            {
                "turn": index,
                "trace_id": turns[index].trace_id,
                "relevant": ok,
                "value": None if value is None else round(value, 4),
                "by": how,
                **({"error": error} if error else {}),
            }
            for index, (ok, value, error), how in zip(at, verdicts, by, strict=True)
        ]
        return self.score(
            relevant / len(counted),
            turns,
            explanation=f"{relevant} of {len(counted)} answers relevant to their question"
            + (
                f" ({by.count('window')} by the window of earlier questions)"
                if "window" in by
                else ""
            ),
            details={
                "judged": len(counted),
                "relevant": relevant,
                "window": self.window,
                "relevance": self.relevance.name,
                "turn_verdicts": rows[:DETAIL_ROWS],
                "not_judged": len(turns) - len(at),
            },
            model=model,
        )

    def _verdict(self, scores: Sequence[Score]) -> tuple[bool | None, float | None, str | None]:
        """``(relevant, value, error)`` of a turn from the relevance evaluator's Scores."""
        mine = next((s for s in scores if s.name == self.relevance.name), None)
        if mine is None and scores:
            mine = scores[0]
        if mine is None:
            return None, None, "no score"
        if mine.error or mine.passed is None:
            return None, mine.value, mine.error or "no pass/fail verdict"
        return mine.passed, mine.value, None

    def _windowed(self, turns: list[RagRecord], index: int) -> RagRecord:
        """Turn ``index`` asked with the user's last ``window`` questions, newest last (the
        record itself when there is no earlier question)."""
        record = turns[index]
        earlier = _history(record, "user") or [as_text(question_of(t)) for t in turns[:index]]
        asked = [q for q in earlier if q.strip()][-(self.window - 1) :]
        if not asked:
            return record
        return dataclasses.replace(record, query="\n".join([*asked, as_text(record.query)]))


class ConversationCompleteness(ConversationEvaluator):
    """Share of the user's turns that got an answer (not an error, empty or a refusal)."""

    name: ClassVar[str] = "conversation_completeness"
    threshold: float | None = 0.5

    def judge(self, turns: list[RagRecord]) -> Score | None:
        missed = []
        for index, turn in enumerate(turns):
            why = _unanswered(turn)
            if why is not None:
                missed.append({"turn": index, "trace_id": turn.trace_id, "reason": why})
        answered = len(turns) - len(missed)
        return self.score(
            answered / len(turns),
            turns,
            explanation=f"{answered} of {len(turns)} user turns answered"
            + (
                f"; first unanswered: turn {missed[0]['turn']}, {missed[0]['reason']}"
                if missed
                else ""
            ),
            details={"answered": answered, "unanswered": missed[:DETAIL_ROWS]},
        )


CONVERSATION_EVALUATORS: dict[str, type[ConversationEvaluator]] = {
    KnowledgeRetention.name: KnowledgeRetention,
    ConversationRelevancy.name: ConversationRelevancy,
    ConversationCompleteness.name: ConversationCompleteness,
}
"""The conversation evaluators by name."""


def conversation_evaluators(
    names: Iterable[str], relevance: Evaluator | None
) -> list[ConversationEvaluator]:
    """The conversation evaluators ``names`` (in that order), with default options.

    ``conversation_relevancy`` is built on ``relevance`` (the ``answer_relevance`` evaluator
    already loaded) and left out when there is none: it never loads a model of its own.

    Raises:
        ValueError: A name that is no conversation evaluator, naming the known ones.
    """
    chosen: list[ConversationEvaluator] = []
    for name in names:
        kind = CONVERSATION_EVALUATORS.get(name)
        if kind is None:
            known = ", ".join(CONVERSATION_EVALUATORS)
            raise ValueError(f"unknown conversation evaluator {name!r} (known: {known})")
        if kind is ConversationRelevancy:
            if relevance is not None:
                chosen.append(ConversationRelevancy(relevance=relevance))
        else:
            chosen.append(kind())
    return chosen


def run_conversation_evaluators(
    evaluators: Sequence[ConversationEvaluator], turns: Sequence[RagRecord]
) -> list[Evaluation]:
    """Each evaluator's run over one session's turns, timed; those with no Score left out."""
    evaluations = []
    for evaluator in evaluators:
        start = time.time_ns()
        scores = evaluator.evaluate(turns)
        if scores:
            evaluations.append(Evaluation(evaluator.name, tuple(scores), start, time.time_ns()))
    return evaluations


def _unanswered(record: RagRecord) -> str | None:
    """Why a turn got no answer, or None when it got one."""
    if record.status != "ok":
        return f"request {record.status}"
    if record.error:
        return f"error: {clip(as_text(record.error), 120)}"
    return non_answer(record.response)


def _answer(record: RagRecord) -> str:
    """The turn's answer text ("" for a failed request)."""
    return "" if record.status != "ok" or record.error else as_text(record.response)


def _history(record: RagRecord, role: str) -> list[str]:
    """The texts of ``record``'s earlier turns spoken by ``role``, oldest first."""
    conversation = record.conversation
    turns = conversation.history if conversation is not None else ()
    return [as_text(t.content) for t in turns or () if str(t.role).lower() == role]


def session_id_of(record: RagRecord) -> str | None:
    """The record's session id (``conversation.session_id``), None when it has none."""
    conversation = record.conversation
    session = conversation.session_id if conversation is not None else None
    return session if isinstance(session, str) and session else None


def _ordered(records: list[RagRecord]) -> list[RagRecord]:
    def key(record: RagRecord) -> tuple[bool, int, int]:
        turn = record.conversation.turn if record.conversation is not None else None
        if isinstance(turn, int) and not isinstance(turn, bool):
            return (False, turn, record.start_ns)
        return (True, 0, record.start_ns)

    return sorted(records, key=key)
