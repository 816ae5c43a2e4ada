"""LLM-judge retrieval quality: contextual precision, recall and relevancy (003, 000, 004).

- ``judge_context_precision`` (003 "Contextual Precision", H2O "Context Precision" in 004)::

      1 / R * sum_k (relevant chunks in the top k / k) * r_k

  ``r_k`` is the judge's true/false verdict on chunk k (one call per chunk) and R the number of
  relevant chunks; the formula is ``retrieval_quality.rank_weighted_precision``, shared with the
  local ``context_precision``. 003's worked example gives 0.5833. Which relevance: 003 defines
  it against the input query ("chunks that are relevant to the given input query are ranked
  higher", and its example judges nodes against "What is AI?" with no expected output), so the
  default ``relevance_to="query"`` asks "does this passage help to answer the question?"
  (prompt ``context_chunk_relevance``) and needs no reference. ``relevance_to="reference"``
  asks whether the passage was useful for arriving at the expected answer (prompt
  ``context_chunk_usefulness``), the reading of 004 ("presence of the expected answer in the
  chunks") and of 000 2.3 ("useful for generating the correct response"); ``requires`` then
  includes ``reference``. 000's formula itself (supporting / all retrieved statements) has no
  rank weighting; it is not followed, but ``details["relevant"]`` and the per-chunk verdicts
  give its chunk-level share. No relevant chunk gives 0.0 (the formula divides by R = 0); a
  blank chunk keeps its rank and is not relevant (no call).

- ``judge_context_recall`` (003 "Contextual Recall", 000 2.1, 004 "Context Recall")::

      reference statements attributable to the retrieved context / reference statements

  Each statement of the reference (sentences, or the judge's with ``statements="judge"``) is
  put to the judge with all the numbered chunks (prompt ``context_attribution``: a true/false
  verdict and the number of the supporting passage). 003's example: 1 of 2 -> 0.5.
  ``details["statements"]`` gives each verdict and the chunk rank the judge named (None when it
  named none or a number that is not a chunk).

- ``judge_context_relevancy`` (003 "Contextual Relevancy", 004 "Context Relevancy")::

      statements of the retrieved context relevant to the query / statements of the context

  Every chunk is cut into statements (sentences by default; 004: "determined by a sentence
  tokenizer"), and each is judged against the query on its own (prompt ``relevance_statement``,
  shared with ``judge_answer_relevancy``). 003's example: 9 of 11 -> 0.8182. At most
  ``max_statements`` (32) statements are judged per record, taken chunk by chunk in rank order,
  so a long context is judged on its top chunks (``truncated``).

"The query" of precision and relevancy is a follow-up's standalone question when the app
rewrote it (``ragtrace.evaluators._question``).

Thresholds: 0.75 (004's default for all three). Caps and input handling: ``judge_statements``.
Cost per record: chunks calls (precision), reference statements calls (recall), context
statements calls (relevancy), plus one call per text with ``statements="judge"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._judges.client import JudgeReply
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge.statements import (
    StatementJudge,
    addressed_statements,
    flag_schema,
    relevant_share,
    with_addressed,
)
from ragtrace.evaluators._question import as_asked
from ragtrace.evaluators._retrieval_quality import rank_weighted_precision
from ragtrace.evaluators._statement_support import clip

RELEVANCE_TO = ("query", "reference")
CHUNK_PROMPTS = {  # relevance_to -> (prompt, verdict key)
    "query": ("context_chunk_relevance", "relevant"),
    "reference": ("context_chunk_usefulness", "useful"),
}
ATTRIBUTION_PROMPT = "context_attribution"
STATEMENT_PROMPT = "relevance_statement"
ATTRIBUTION_MAX_TOKENS = 24
CHUNK_DETAIL_CHARS = 160

ATTRIBUTION_SCHEMA: dict[str, Any] = flag_schema("attributable", passage={"type": "integer"})


def numbered_context(chunks: Sequence[str]) -> str:
    """Non-blank chunks as ``[rank] text`` lines; a blank chunk's rank is skipped, not reused."""
    return "\n".join(f"[{k}] {text}" for k, text in enumerate(chunks, start=1) if text)


class JudgeContextPrecision(StatementJudge):
    """Rank-weighted precision of the chunks; relevance judged per chunk by the LLM."""

    name: ClassVar[str] = "judge_context_precision"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "chunks"})

    def __init__(self, *, relevance_to: str = "query", **options: Any) -> None:
        """Build the evaluator.

        Args:
            relevance_to: ``query`` (003, default) or ``reference`` (004/000: useful for the
                expected answer; the record then needs a reference).
            **options: See ``StatementJudge`` (``judge``, ``threshold``, ``max_chunks``...).
        """
        if relevance_to not in RELEVANCE_TO:
            raise ValueError(
                f"judge_context_precision: relevance_to must be one of {RELEVANCE_TO}, "
                f"got {relevance_to!r}"
            )
        self.relevance_to = relevance_to
        self.requires = frozenset({"query", "chunks", relevance_to})  # type: ignore[misc]
        super().__init__(**options)

    def judge_record(self, record: RagRecord) -> list[Score]:
        question, cut_question = self.field_text(as_asked(record), "query")
        chunks, cut_chunks, addressed = self.guarded_chunks(record)
        extra: dict[str, Any] = {}
        cut_reference = False
        if self.relevance_to == "reference":
            extra["reference"], cut_reference = self.field_text(record, "reference")
        asked = [k for k, text in enumerate(chunks) if text]
        replies: list[JudgeReply] = []
        prompt_name, key = CHUNK_PROMPTS[self.relevance_to]
        verdicts = self.flags(
            prompt_name,
            key,
            [{"question": question, "passage": chunks[k], **extra} for k in asked],
            replies,
        )
        relevant = [False] * len(chunks)
        for k, verdict in zip(asked, verdicts, strict=True):
            relevant[k] = verdict
        ranks = [k for k, r in enumerate(relevant, start=1) if r]
        details: dict[str, Any] = {
            "relevance_to": self.relevance_to,
            "chunks": [
                {"rank": k, "relevant": r, "text": clip(t, CHUNK_DETAIL_CHARS)}
                for k, (r, t) in enumerate(zip(relevant, chunks, strict=True), start=1)
            ],
            "relevant": len(ranks),
            "truncated": cut_question or cut_chunks or cut_reference,
        }
        return [
            self.score(
                rank_weighted_precision(relevant),
                explanation=(
                    f"{len(ranks)} of {len(chunks)} chunks relevant to the {self.relevance_to}"
                    + (f", at ranks {ranks}" if ranks else "")
                ),
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]


class JudgeContextRecall(StatementJudge):
    """Share of the reference's statements the judge attributes to the retrieved chunks."""

    name: ClassVar[str] = "judge_context_recall"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "reference"})

    def judge_record(self, record: RagRecord) -> list[Score]:
        reference, cut_reference = self.field_text(record, "reference")
        chunks, cut_chunks, addressed = self.guarded_chunks(record)
        context = numbered_context(chunks)
        replies: list[JudgeReply] = []
        statements, cut_statements = self.statements(reference, replies)
        found = self.map_calls(
            lambda statement: self.ask(
                ATTRIBUTION_PROMPT,
                ATTRIBUTION_SCHEMA,
                max_tokens=ATTRIBUTION_MAX_TOKENS,
                context=context,
                statement=statement,
            ),
            statements if context else [],  # no chunk text left: nothing is attributable
        )
        replies.extend(found)
        attributed = [r.data["attributable"] is True for r in found]
        named = [_rank(r.data["passage"], chunks) for r in found]
        if not context:
            attributed, named = [False] * len(statements), [None] * len(statements)
        entries = [
            {"statement": clip(s), "attributed": a, "chunk": c if a else None}
            for s, a, c in zip(statements, attributed, named, strict=True)
        ]
        hits = sum(attributed)
        details: dict[str, Any] = {
            "statements": entries,
            "attributed": hits,
            "statement_source": self.statement_mode,
            "truncated": cut_reference or cut_chunks or cut_statements,
        }
        return [
            self.score(
                relevant_share(attributed),
                explanation=(
                    f"{hits} of {len(statements)} reference statements attributable to the "
                    "retrieved context"
                ),
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]


class JudgeContextRelevancy(StatementJudge):
    """Share of the retrieved context's statements that the judge finds relevant to the query."""

    name: ClassVar[str] = "judge_context_relevancy"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "chunks"})

    def judge_record(self, record: RagRecord) -> list[Score]:
        question, cut_question = self.field_text(as_asked(record), "query")
        chunks, cut_chunks, addressed = self.guarded_chunks(record)
        replies: list[JudgeReply] = []
        per_chunk = self.map_calls(lambda text: self.statements(text, replies), chunks)
        budget = self.max_statements
        plan: list[tuple[int, str]] = []  # (rank, statement) in rank order, capped
        cut_statements = any(cut for _, cut in per_chunk)
        for rank, (found, _) in enumerate(per_chunk, start=1):
            taken = found[: max(0, budget - len(plan))]
            cut_statements = cut_statements or len(taken) < len(found)
            plan.extend((rank, s) for s in taken)
        verdicts = self.flags(
            STATEMENT_PROMPT,
            "relevant",
            [{"question": question, "statement": s} for _, s in plan],
            replies,
        )
        by_rank: dict[int, list[dict[str, Any]]] = {}
        for (rank, statement), verdict in zip(plan, verdicts, strict=True):
            by_rank.setdefault(rank, []).append({"statement": clip(statement), "relevant": verdict})
        for part in addressed:  # each part addressed to the grader: a statement not relevant
            rank = int(part["field"].rsplit(" ", 1)[1])
            by_rank.setdefault(rank, []).extend(addressed_statements([part]))
        relevant = sum(verdicts)
        counted = len(verdicts) + len(addressed)
        details: dict[str, Any] = {
            "chunks": [{"rank": k, "statements": v} for k, v in sorted(by_rank.items())],
            "relevant": relevant,
            "statements": counted,
            "statement_source": self.statement_mode,
            "truncated": cut_question or cut_chunks or cut_statements,
        }
        return [
            self.score(
                relevant_share([*verdicts, *(False for _ in addressed)]),
                explanation=(
                    f"{relevant} of {counted} statements of the retrieved context "
                    "relevant to the query"
                ),
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]


def _rank(passage: object, chunks: Sequence[str]) -> int | None:
    """The chunk rank the judge named, or None when it is not a non-blank chunk."""
    if isinstance(passage, bool) or not isinstance(passage, int):
        return None
    return passage if 1 <= passage <= len(chunks) and chunks[passage - 1] else None
