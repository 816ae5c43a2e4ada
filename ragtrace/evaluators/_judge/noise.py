"""LLM-judge noise sensitivity: wrong claims of the answer that came from retrieved noise.

After 002 ("Relevant Noise Sensitivity", "Irrelevant Noise Sensitivity") and Ejento 2.4 (000).
Two Scores in [0, 1], lower is better::

    judge_noise_sensitivity.relevant   = incorrect claims entailed by a relevant chunk / claims
    judge_noise_sensitivity.irrelevant = incorrect claims entailed by an irrelevant chunk / claims

Steps, as 002 writes them, each decision one judge call (prompts ``claims_extract`` and
``claims_verdict``, shared with ``judge_claims``; ``claims="sentences"`` takes sentences as
claims instead of asking the judge to extract them):

1. ground-truth claims: the judge splits the reference into claims;
2. a chunk is relevant when it states at least one ground-truth claim (verdict ``yes`` for the
   pair (ground-truth claim, chunk)), irrelevant otherwise. A chunk's ground-truth claims are
   checked in order and the check stops at the first ``yes`` (the definition needs one);
3. response claims: the judge splits the response into claims;
4. a response claim is correct when the reference supports it (``yes``), incorrect otherwise:
   002's irrelevant example counts "Charlotte Brontë is famous for 'Jane Eyre'", which the
   ground truth does not mention, as incorrect, so ``idk`` is incorrect too;
5. each incorrect claim is checked against each chunk on its own ("entailed by a relevant
   chunk");
6. both ratios divide by all response claims.

Steps 3-4 run first: when every response claim is correct both ratios are 0 whatever the chunks
say, so steps 1, 2 and 5 are skipped (``details["chunks"]`` and ``ground_truth_claims`` are
then empty).

Choices where 002 is silent: an incorrect claim entailed both by a relevant and by an
irrelevant chunk counts in both ratios (002 defines them independently; the local
``noise_sensitivity`` evaluator reads it the same way). A response with no claim has no
incorrect claim: both scores are 0.0 (002's "perfect score"), labelled ``no_claims``. No seed
gives a threshold, so none is set; ``threshold=`` applies to both.

Cost per record: one extraction call + one call per response claim; when some claim is
incorrect, one more extraction call, at most (ground-truth claims x chunks) relevance calls and
(incorrect claims x chunks) entailment calls; caps ``max_claims`` (16) and ``max_chunks`` (8)
bound it, ``details["truncated"]`` says when one applied.
``details`` lists every response claim (verdict against the reference, ``p_yes``, ranks of the
relevant and irrelevant chunks entailing it), every chunk (relevant, the ground-truth claim that
made it so) and the ground-truth claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._judges.client import JudgeReply
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._judge.claims import ClaimJudge, Verdict
from ragtrace.evaluators._statement_support import clip

MODES = ("relevant", "irrelevant")


def chunk_relevance(states_truth: Sequence[Sequence[bool]]) -> list[bool]:
    """002 step 2: a chunk is relevant when it states at least one ground-truth claim.

    Args:
        states_truth: Per chunk, per ground-truth claim checked: does the chunk state it.
    """
    return [any(row) for row in states_truth]


def noise_sensitivity(
    correct: Sequence[bool], entailed: Sequence[Sequence[bool]], relevant: Sequence[bool]
) -> dict[str, float]:
    """002's two ratios from per-claim verdicts.

    Args:
        correct: Per response claim: does the ground truth support it.
        entailed: Per response claim, per chunk: does the chunk entail the claim (read only
            for incorrect claims).
        relevant: Per chunk: is it relevant.

    Returns:
        ``{"relevant": ..., "irrelevant": ...}``; both 0.0 when there is no response claim.
    """
    if len(entailed) != len(correct):
        raise ValueError("entailed needs one row per response claim")
    counts = dict.fromkeys(MODES, 0)
    for is_correct, row in zip(correct, entailed, strict=True):
        if is_correct:
            continue
        if len(row) != len(relevant):
            raise ValueError("each entailed row needs one value per chunk")
        counts["relevant"] += any(e and r for e, r in zip(row, relevant, strict=True))
        counts["irrelevant"] += any(e and not r for e, r in zip(row, relevant, strict=True))
    if not correct:
        return dict.fromkeys(MODES, 0.0)
    return {mode: counts[mode] / len(correct) for mode in MODES}


class JudgeNoiseSensitivity(ClaimJudge):
    """Relevant and irrelevant noise sensitivity of the response, judged (lower is better)."""

    name: ClassVar[str] = "judge_noise_sensitivity"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response", "reference", "chunks"})
    direction = "lower_is_better"
    threshold: float | None = None
    score_names: ClassVar[tuple[str, ...]] = tuple(f"judge_noise_sensitivity.{m}" for m in MODES)

    def judge_record(self, record: RagRecord) -> list[Score]:
        response = self.text(record, "response")
        reference = self.text(record, "reference")
        chunks, cut_chunks = self.chunk_texts(record)
        replies: list[JudgeReply] = []
        fallbacks: list[str] = []
        claims, truncated = self.find_claims(response, record.query, replies, fallbacks)
        against_reference = self.check_claims(claims, reference, replies)
        incorrect = [i for i, v in enumerate(against_reference) if not v.supported]
        truths: list[str] = []
        checks: list[tuple[list[Verdict], list[JudgeReply]]] = []
        entailed = [[False] * len(chunks) for _ in claims]
        if incorrect:  # otherwise both ratios are 0 whatever the chunks say
            truths, cut_truths = self.find_claims(reference, record.query, replies, fallbacks)
            checks = self.pooled(lambda chunk: self._relevance(truths, chunk), chunks)
            for _, chunk_replies in checks:
                replies.extend(chunk_replies)
            pairs = [(claims[i], chunk) for i in incorrect for chunk in chunks]
            entailing = iter(self.check_pairs(pairs, replies))
            for i in incorrect:
                entailed[i] = [next(entailing).supported for _ in chunks]
            truncated = truncated or cut_truths
        relevant = chunk_relevance([[v.supported for v in found] for found, _ in checks])
        values = noise_sensitivity(
            [v.supported for v in against_reference], entailed, relevant or [False] * len(chunks)
        )
        details = self._details(truths, against_reference, entailed, relevant, checks)
        details["truncated"] = cut_chunks or truncated
        details["claim_fallbacks"] = fallbacks
        return [
            self.score(
                values[mode],
                name=name,
                label=None if claims else "no_claims",
                explanation=(
                    f"{round(values[mode] * len(claims))} of {len(claims)} response claims are "
                    f"incorrect and entailed by {mode} chunks"
                    if claims
                    else "no claim found in the response"
                ),
                details=details,
                replies=replies,
            )
            for mode, name in zip(MODES, self.score_names, strict=True)
        ]

    def _relevance(
        self, truths: Sequence[str], chunk: str
    ) -> tuple[list[Verdict], list[JudgeReply]]:
        """Check the ground-truth claims against one chunk, stopping at the first it states."""
        found, replies = [], []
        for truth in truths:
            verdict, reply = self.verdict(truth, chunk)
            found.append(verdict)
            replies.append(reply)
            if verdict.supported:
                break
        return found, replies

    @staticmethod
    def _details(
        truths: Sequence[str],
        against_reference: Sequence[Verdict],
        entailed: Sequence[Sequence[bool]],
        relevant: Sequence[bool],
        checks: Sequence[tuple[list[Verdict], list[JudgeReply]]],
    ) -> dict[str, Any]:
        """Per-claim and per-chunk verdicts for a reviewer (chunks: [] when not checked)."""
        claims = []
        for verdict, row in zip(against_reference, entailed, strict=True):
            ranks = [k for k, e in enumerate(row, 1) if e]
            claims.append(
                verdict.detail(
                    correct=verdict.supported,
                    relevant_chunks=[k for k in ranks if relevant[k - 1]],
                    irrelevant_chunks=[k for k in ranks if not relevant[k - 1]],
                )
            )
        chunks = []
        for rank, (is_relevant, (found, _)) in enumerate(zip(relevant, checks, strict=True), 1):
            match = next((v for v in found if v.supported), None)
            chunks.append(
                {
                    "rank": rank,
                    "relevant": is_relevant,
                    "ground_truth_claim": clip(match.claim) if match else None,
                    "p_yes": (match or found[-1]).detail()["p_yes"] if found else None,
                }
            )
        return {
            "claims": claims,
            "incorrect": sum(not v.supported for v in against_reference),
            "chunks": chunks,
            "ground_truth_claims": [clip(t) for t in truths],
        }
