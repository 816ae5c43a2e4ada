"""LLM-judge answer relevance: relevant statements (003/002) and reverse-generated questions (002).

Two readings of "is the answer relevant to the question", both from the seeds:

- ``judge_answer_relevancy`` (003 "Answer Relevancy - LLM Based", 002 "Response Relevancy (LLM
  based)")::

      relevant statements in the answer / statements in the answer

  The answer is cut into statements (sentences by default, or the judge's statements with
  ``statements="judge"``; see ``judge_statements``) and the judge decides for each, on its own,
  whether it is relevant to the question (prompt ``relevance_statement``, true/false). 002's
  example: Brasília, 1960, Florida -> 2/3. ``details["statements"]`` lists each statement with
  its verdict.

- ``judge_response_relevancy`` (002 "Response Relevancy (String based)", 003 "Answer Relevancy
  - Similarity Based", H2O/RAGAS "Answer Relevancy" in 004)::

      mean over i = 1..N of cos(E(generated question i), E(original question))

  The judge writes N questions that the answer answers (``questions``, default 3 as 002 and
  003 say; prompt ``relevance_question``, one question per call as 004 describes: "prompted to
  generate an appropriate question ... multiple times"). Calls differ by seed (0..N-1) and run
  at ``question_temperature`` 0.7, so the N questions may differ; the judge cache keys on the
  seed, so a re-run reproduces them. Questions and the query are embedded together with
  ``ragtrace._backends.embeddings.get_embedder`` (default: the packaged MiniLM; ``embedding_model=``
  takes any sentence-transformers id or folder). ``details`` lists every generated question with
  its cosine. Choices where the seeds are silent or leave a gap:

  * 002 and 004 note that a cosine may be negative; Scores lie in [0, 1], so the mean is
    clipped to [0, 1] (the per-question cosines in ``details`` are not).
  * A generated question without a word (blank, "...": the judge found nothing to ask) counts
    as cosine 0: an answer that suggests no question is not relevant to this one.
  * Neither 002 nor 003 defines RAGAS' "noncommittal" flag (an evasive answer scores 0), so it
    is not applied; an evasive answer scores whatever its reverse questions score.
  * Threshold 0.5, not 004's 0.75: 004's figure is for RAGAS with large API embeddings; MiniLM
    cosines run lower (the local ``answer_relevance`` evaluators make the same choice).

The question is the record's query, or a follow-up's standalone question when the app rewrote
it (``ragtrace.evaluators._question``).

Empty input: a blank query or answer is an error Score (``requires`` normally keeps such records
away). Every non-blank answer has at least one statement, so ``judge_answer_relevancy`` always
has a value. Cost per record: statements (+1 with ``statements="judge"``) calls for the first,
N calls plus one embedding batch for the second; every call is cached by the judge client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._judges.client import JudgeReply
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import positive_int
from ragtrace.evaluators._judge import steering
from ragtrace.evaluators._judge.base import object_schema
from ragtrace.evaluators._judge.statements import (
    StatementJudge,
    addressed_statements,
    relevant_share,
    with_addressed,
)
from ragtrace.evaluators._question import as_asked
from ragtrace.evaluators._statement_support import clip
from ragtrace.evaluators._text import words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

STATEMENT_PROMPT = "relevance_statement"
QUESTION_PROMPT = "relevance_question"
DEFAULT_QUESTIONS = 3
DEFAULT_QUESTION_TEMPERATURE = 0.7
QUESTION_MAX_TOKENS = 64
RESPONSE_RELEVANCY_THRESHOLD = 0.5

QUESTION_SCHEMA: dict[str, Any] = object_schema(question={"type": "string"})


def mean_similarity(similarities: Sequence[float]) -> float:
    """002/003's response relevancy: the mean cosine, clipped to [0, 1]; 0.0 for none."""
    if not similarities:
        return 0.0
    return min(1.0, max(0.0, sum(similarities) / len(similarities)))


def cosines(query: npt.ArrayLike, questions: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Cosine of each row of ``questions`` with ``query`` (vectors need not be normalised).

    A zero vector has cosine 0 with anything.
    """
    import numpy as np

    q = np.asarray(query, dtype=np.float64)
    m = np.atleast_2d(np.asarray(questions, dtype=np.float64))
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
    dots = m @ q
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)  # type: ignore[no-any-return]


class JudgeAnswerRelevancy(StatementJudge):
    """Share of the answer's statements that the judge finds relevant to the question."""

    name: ClassVar[str] = "judge_answer_relevancy"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})

    def judge_record(self, record: RagRecord) -> list[Score]:
        question, cut_question = self.field_text(as_asked(record), "query")
        answer, cut_answer = self.field_text(record, "response")
        answer, addressed = steering.take_addressed(answer, "response")
        replies: list[JudgeReply] = []
        statements, cut_statements = self.statements(answer, replies)
        verdicts = self.flags(
            STATEMENT_PROMPT,
            "relevant",
            [{"question": question, "statement": s} for s in statements],
            replies,
        )
        relevant = sum(verdicts)
        counted = len(verdicts) + len(addressed)  # each part addressed to the grader: not relevant
        details: dict[str, Any] = {
            "statements": [
                {"statement": clip(s), "relevant": v}
                for s, v in zip(statements, verdicts, strict=True)
            ]
            + addressed_statements(addressed),
            "relevant": relevant,
            "statement_source": self.statement_mode,
            "truncated": cut_question or cut_answer or cut_statements,
        }
        return [
            self.score(
                relevant_share([*verdicts, *(False for _ in addressed)]),
                explanation=f"{relevant} of {counted} answer statements relevant to the query",
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]


class JudgeResponseRelevancy(StatementJudge):
    """Mean cosine of the query with questions the judge writes back from the answer."""

    name: ClassVar[str] = "judge_response_relevancy"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold: float | None = RESPONSE_RELEVANCY_THRESHOLD

    def __init__(
        self,
        *,
        questions: int = DEFAULT_QUESTIONS,
        question_temperature: float = DEFAULT_QUESTION_TEMPERATURE,
        embedding_model: str | None = None,
        embedding_threads: int | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            questions: N, the questions generated per answer (002: default 3).
            question_temperature: Sampling temperature of the question calls.
            embedding_model: None for the packaged MiniLM, or a sentence-transformers id,
                folder or ``.onnx`` file (see ``get_embedder``).
            embedding_threads: Threads of the embedding model (default: the backend's).
            **options: See ``StatementJudge`` (``judge``, ``threshold`` (0.5), ``max_chars``...).
        """
        super().__init__(**options)
        self.questions = positive_int(self.name, "questions", questions)
        if isinstance(question_temperature, bool) or not isinstance(
            question_temperature, int | float
        ):
            raise ValueError(f"{self.name}: question_temperature must be a number")
        if not 0.0 <= float(question_temperature) <= 2.0:
            raise ValueError(f"{self.name}: question_temperature must lie in [0, 2]")
        self.question_temperature = float(question_temperature)
        self.embedding_model = embedding_model
        self.embedding_threads = embedding_threads

    def judge_record(self, record: RagRecord) -> list[Score]:
        question, cut_question = self.field_text(as_asked(record), "query")
        answer, cut_answer = self.field_text(record, "response")
        answer, addressed = steering.take_addressed(answer, "response")
        replies = self.map_calls(
            lambda seed: self.ask(
                QUESTION_PROMPT,
                QUESTION_SCHEMA,
                temperature=self.question_temperature,
                seed=seed,
                max_tokens=QUESTION_MAX_TOKENS,
                answer=answer,
            ),
            list(range(self.questions)) if answer else [],  # nothing left to ask about
        )
        generated = [str(r.data["question"]).strip() for r in replies]
        similarities = self.similarities(question, generated)
        value = mean_similarity(similarities)
        details: dict[str, Any] = {
            "questions": [
                {"question": clip(q), "similarity": round(s, 4)}
                for q, s in zip(generated, similarities, strict=True)
            ],
            "embedding_model": self.embedding_model or "default",
            "truncated": cut_question or cut_answer,
        }
        return [
            self.score(
                value,
                explanation=(
                    f"mean cosine {value:.3f} of the query with {len(generated)} questions "
                    "generated from the answer"
                    + ("" if answer else " (the answer only addressed its evaluation)")
                ),
                details=with_addressed(details, addressed),
                replies=replies,
            )
        ]

    def similarities(self, question: str, generated: Sequence[str]) -> list[float]:
        """Cosine of each generated question with ``question`` (0.0 for one without a word)."""
        from ragtrace._backends.embeddings import get_embedder

        real = [bool(words(g)) for g in generated]
        asked = [g for g, r in zip(generated, real, strict=True) if r]
        if not asked:
            return [0.0] * len(generated)
        embedder = get_embedder(self.embedding_model, threads=self.embedding_threads)
        vectors = embedder.encode([question, *asked])
        found = iter(cosines(vectors[0], vectors[1:]).tolist())
        return [float(next(found)) if r else 0.0 for r in real]
