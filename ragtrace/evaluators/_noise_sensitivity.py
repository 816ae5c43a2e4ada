"""Noise sensitivity: how many of the answer's claims are wrong and came from retrieved noise.

After 002 ("Relevant / Irrelevant Noise Sensitivity") and Ejento 2.4. Needs ``response``,
``reference`` and ``chunks``; two Scores, both in [0, 1], lower is better:

- ``noise_sensitivity.relevant``: incorrect response claims entailed by a relevant chunk /
  response claims;
- ``noise_sensitivity.irrelevant``: incorrect response claims entailed by an irrelevant chunk /
  response claims.

Steps, as 002 writes them, with the local support detector in place of the LLM:

1. ground-truth claims: the statements of the reference;
2. a chunk is relevant when it supports at least one ground-truth claim, irrelevant otherwise;
3. response claims: the statements of the response;
4. a response claim is correct when the reference supports it, incorrect otherwise;
5. an incorrect claim is entailed by a chunk when that chunk alone supports it ("entailed by a
   relevant chunk": each chunk is checked on its own);
6. each ratio divides by all response claims.

Choices where 002 is silent: an incorrect claim entailed both by a relevant and by an irrelevant
chunk counts in both ratios (002 defines them independently; RAGAS makes them exclusive).
Claims are sentences (``splitter=`` replaces the splitter; 002's LLM splits "A, and B" into two
claims, a sentence splitter does not). No seed gives a threshold, so none is set (the scores are
informational); pass ``threshold=`` (applied to both) to gate on them.

``details`` lists every response claim (correct or not, support by the reference, the ranks of
the relevant and irrelevant chunks entailing it) and every chunk's relevance. Caps are those of
``statement_support.SupportEvaluator``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._statement_support import Plan, SupportEvaluator, clip

MODES = ("relevant", "irrelevant")


class NoiseSensitivity(SupportEvaluator):
    """Relevant and irrelevant noise sensitivity of the response (lower is better)."""

    name: ClassVar[str] = "noise_sensitivity"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference", "chunks"})
    direction = "lower_is_better"
    threshold: float | None = None

    def __init__(self, *, modes: tuple[str, ...] = MODES, **options: Any) -> None:
        """Build the evaluator.

        Args:
            modes: Which of ``relevant`` and ``irrelevant`` to report.
            **options: See ``SupportEvaluator`` and ``threshold`` (None), ``timeout_s``, ...
        """
        if isinstance(modes, str) or not modes or set(modes) - set(MODES):
            raise ValueError(f"noise_sensitivity: modes must be a non-empty list of {MODES}")
        self.modes = tuple(m for m in MODES if m in modes)
        self.score_names = tuple(f"noise_sensitivity.{m}" for m in self.modes)  # type: ignore[misc]
        super().__init__(**options)

    def _plan(self, record: RagRecord) -> Plan:
        response, cut_response = self.text(record, "response")
        reference, cut_reference = self.text(record, "reference")
        chunks, cut_chunks = self.chunk_texts(record)
        truths, more_truths = self.statements(reference)
        claims, more_claims = self.statements(response)
        truncated = cut_response or cut_reference or cut_chunks or more_truths or more_claims
        n_truths = len(truths)

        def finish(answers: list[list[float]]) -> list[Score]:
            correctness, *per_chunk = answers
            relevant = [any(self.supported(p) for p in ps[:n_truths]) for ps in per_chunk]
            claim_details = []
            counts = dict.fromkeys(MODES, 0)
            for i, (claim, p) in enumerate(zip(claims, correctness, strict=True)):
                entailing = [
                    k for k, ps in enumerate(per_chunk) if self.supported(ps[n_truths + i])
                ]
                by_mode = {
                    "relevant": [k + 1 for k in entailing if relevant[k]],
                    "irrelevant": [k + 1 for k in entailing if not relevant[k]],
                }
                correct = self.supported(p)
                if not correct:
                    for mode in MODES:
                        counts[mode] += bool(by_mode[mode])
                claim_details.append(
                    {
                        "claim": clip(claim),
                        "support_by_reference": round(p, 4),
                        "correct": correct,
                        "relevant_chunks": by_mode["relevant"],
                        "irrelevant_chunks": by_mode["irrelevant"],
                    }
                )
            details = {
                "claims": claim_details,
                "incorrect": sum(not c["correct"] for c in claim_details),
                "chunks": [{"rank": k + 1, "relevant": r} for k, r in enumerate(relevant)],
                "support_threshold": self.support_threshold,
                "truncated": truncated,
            }
            return [
                self.score(
                    counts[mode] / len(claims),
                    name=f"noise_sensitivity.{mode}",
                    explanation=(
                        f"{counts[mode]} of {len(claims)} response claims are incorrect and "
                        f"entailed by {mode} chunks"
                    ),
                    details=details,
                )
                for mode in self.modes
            ]

        # One item per chunk scores the ground-truth claims (relevance) and the response claims
        # (entailment) together; the first item checks the response claims against the reference.
        return Plan(
            items=[(claims, [reference])] + [(truths + claims, [chunk]) for chunk in chunks],
            finish=finish,
        )
