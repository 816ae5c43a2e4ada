"""Support decided by an NLI model: entailment of a claim by its closest passage sentences.

The premise for a claim is the passage sentence the support detector found closest to it, with
its neighbours on each side (claims often paraphrase two adjacent sentences); the claim's
support is the model's entailment probability (any Hugging Face sequence-classification NLI
model, e.g. a DeBERTa MNLI checkpoint in a local folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragtrace.evaluators._faithfulness.detector import MAX_PASSAGE_SENTENCES, ClaimCheck
from ragtrace.evaluators._text import split_sentences

NEIGHBOURS = 1


def nli_checks(
    items: Sequence[tuple[Sequence[str], Sequence[str]]],
    checks: list[list[ClaimCheck]],
    model: str,
    *,
    label_map: dict[str, int] | None = None,
    threads: int | None = None,
) -> list[list[ClaimCheck]]:
    """``checks`` with each claim's support replaced by the NLI model's entailment probability."""
    from ragtrace._backends.nli import get_nli

    pairs: list[tuple[str, str]] = []
    for (_, passages), record_checks in zip(items, checks, strict=True):
        sentences = [s for p in passages for s in split_sentences(p)][:MAX_PASSAGE_SENTENCES]
        for check in record_checks:
            pairs.append((_premise(sentences, check.best_sentence), check.claim))
    if not pairs:
        return checks
    entailment = get_nli(model, label_map=label_map, threads=threads).entailment(pairs)
    out: list[list[ClaimCheck]] = []
    position = 0
    for record_checks in checks:
        updated = []
        for check in record_checks:
            updated.append(replace(check, support=float(entailment[position])))
            position += 1
        out.append(updated)
    return out


def _premise(sentences: Sequence[str], best: int | None) -> str:
    if best is None or not sentences:
        return ""
    start = max(0, best - NEIGHBOURS)
    return " ".join(sentences[start : best + NEIGHBOURS + 1])
