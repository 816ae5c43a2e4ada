"""LLM-judge answer correctness: factual F1 of judged statements, blended with similarity.

After 004 ("Answer Correctness Evaluator", RAGAS) and Ejento 1.1 (000)::

    judge_answer_correctness = 0.75 * factual F1 + 0.25 * answer similarity
    factual F1               = |TP| / (|TP| + 0.5 * (|FP| + |FN|))

with, as 004 lists them,

- TP: statements present in both the answer and the reference,
- FP: statements present in the answer only,
- FN: statements present in the reference only.

Reading chosen: the judge splits the answer and the reference into statements (prompt
``claims_extract``, as for faithfulness); each answer statement is checked against the reference
(prompt ``claims_verdict``): ``yes`` makes it a TP, ``no``/``idk`` an FP; each reference
statement is checked against the answer: anything but ``yes`` makes it an FN. (A reference
statement the answer does state is the same fact as a TP, so it is not counted again; this is
the reading of the local ``answer_correctness`` too.) F1 is 0.0 when TP, FP and FN are all 0
(no statement on either side), as RAGAS' ``fbeta_score`` gives; ``details["no_statements"]``
marks that case.

Answer similarity is ``ragtrace.evaluators._reference.AnswerSimilarity``'s measure (the cosine
of the two embeddings from ``get_embedder``, negative cosines as 0, texts cut to 20,000
characters), computed by the same function (``reference.similarities``). ``weights=`` changes
(factuality, similarity); they are divided by their sum.
Threshold 0.75 (004's default). ``details`` lists every statement with its verdict and ``p_yes``,
and the TP / FP / FN statements by name.

Cost per record: 2 extraction calls + one verdict call per statement (at most ``max_claims`` per
side); one embedding call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._judges.client import JudgeReply
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge.claims import ClaimJudge, Verdict
from ragtrace.evaluators._reference import similarities
from ragtrace.evaluators._statement_support import DEFAULT_MAX_CHARS as MAX_SIMILARITY_CHARS
from ragtrace.evaluators._statement_support import clip

DEFAULT_WEIGHTS = (0.75, 0.25)


def factual_f1(tp: int, fp: int, fn: int) -> float:
    """004's ``|TP| / (|TP| + 0.5 * (|FP| + |FN|))``; 0.0 when all three are 0."""
    denominator = tp + 0.5 * (fp + fn)
    return tp / denominator if denominator else 0.0


def statement_counts(
    answer_in_reference: Sequence[bool], reference_in_answer: Sequence[bool]
) -> tuple[int, int, int]:
    """``(TP, FP, FN)`` from per-statement verdicts (True = the other text states it)."""
    tp = sum(bool(s) for s in answer_in_reference)
    fp = len(answer_in_reference) - tp
    fn = sum(not s for s in reference_in_answer)
    return tp, fp, fn


def correctness(
    f1: float, similarity: float, weights: tuple[float, float] = DEFAULT_WEIGHTS
) -> float:
    """Weighted average of factual F1 and similarity (weights divided by their sum), in [0, 1]."""
    factual, semantic = weights
    value = (factual * f1 + semantic * similarity) / (factual + semantic)
    return min(1.0, max(0.0, value))


class JudgeAnswerCorrectness(ClaimJudge):
    """Factual F1 of judged statements vs the reference, blended with answer similarity."""

    name: ClassVar[str] = "judge_answer_correctness"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    threshold: float | None = 0.75

    def __init__(
        self,
        *,
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        embedding_model: str | None = None,
        threads: int | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            weights: ``(factuality, similarity)``, non-negative, not both 0.
            embedding_model: Embedding model of the similarity (default: the packaged MiniLM).
            threads: Threads of the embedding model.
            **options: See ``ClaimJudge`` (``judge``, ``max_claims``) and ``threshold``, ...
        """
        super().__init__(**options)
        try:
            factual, semantic = (float(w) for w in weights)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name}: weights must be two numbers, got {weights!r}") from None
        if not (factual >= 0 and semantic >= 0 and factual + semantic > 0):
            raise ValueError(f"{self.name}: weights must be >= 0 and not both 0, got {weights!r}")
        total = factual + semantic
        self.weights = (factual / total, semantic / total)
        self.embedding_model = embedding_model
        self.threads = threads

    def judge_record(self, record: RagRecord) -> list[Score]:
        answer = self.text(record, "response")
        reference = self.text(record, "reference")
        replies: list[JudgeReply] = []
        fallbacks: list[str] = []
        answer_claims, cut_answer = self.find_claims(answer, record.query, replies, fallbacks)
        reference_claims, cut_reference = self.find_claims(
            reference, record.query, replies, fallbacks
        )
        pairs = [(c, reference) for c in answer_claims] + [(c, answer) for c in reference_claims]
        verdicts = self.check_pairs(pairs, replies)
        in_reference = verdicts[: len(answer_claims)]
        in_answer = verdicts[len(answer_claims) :]
        tp, fp, fn = statement_counts(
            [v.supported for v in in_reference], [v.supported for v in in_answer]
        )
        f1 = factual_f1(tp, fp, fn)
        similarity, embedder = 0.0, None
        if self.weights[1] > 0:
            similarity, embedder = similarities(
                [(answer[:MAX_SIMILARITY_CHARS], reference[:MAX_SIMILARITY_CHARS], False)],
                self.embedding_model,
                self.threads,
            )[0]
        value = correctness(f1, similarity, self.weights)
        return [
            self.score(
                value,
                explanation=(
                    f"factual F1 {f1:.3f} (TP {tp}, FP {fp}, FN {fn}), similarity {similarity:.3f}"
                ),
                details={
                    "factual_f1": f1,
                    "similarity": similarity if embedder is not None else None,
                    "embedding_model": embedder,
                    "weights": {"factuality": self.weights[0], "similarity": self.weights[1]},
                    "tp": tp,
                    "fp": fp,
                    "fn": fn,
                    "no_statements": not (tp or fp or fn),
                    "answer_statements": [v.detail(in_reference=v.supported) for v in in_reference],
                    "reference_statements": [v.detail(in_answer=v.supported) for v in in_answer],
                    "tp_statements": _claims(in_reference, True),
                    "fp_statements": _claims(in_reference, False),
                    "fn_statements": _claims(in_answer, False),
                    "truncated": cut_answer or cut_reference,
                    "claim_fallbacks": fallbacks,
                },
                replies=replies,
            )
        ]


def _claims(verdicts: Sequence[Verdict], supported: bool) -> list[str]:
    return [clip(v.claim) for v in verdicts if v.supported is supported]
