"""Synthetic changed facts for training the cross-encoder (benchmarks only; nothing ships).

The default detector and the opt-in cross-encoder both rank RAGTruth's *conflicts* (a fact of
the source changed) weakly: the cross-encoder learned from claims of which few overlap a
conflict (252 of the tuning part's 6,944 RAGTruth claims of three or more content words; git
show ff7d769:BENCHMARKS.md, "What the default misses"). This module writes more of them, the way
FactCC (Kryscinski et al., 2020, "Evaluating the Factual Consistency of Abstractive Text
Summarization") trained its classifier: a supported claim with one fact of its evidence changed,
labelled unsupported, paired with the evidence the claim was read against. One of six edits,
chosen at random among those that apply to the claim:

- ``number``: a number the evidence also holds becomes another number of the evidence (or, when
  it holds no other, the same number moved by a few units);
- ``name``: a name (capitalised words, not the claim's first) the evidence also holds becomes
  another name of the evidence;
- ``roles``: two names of the claim change places ("A beat B" for "B beat A");
- ``negation``: a "not" added after the first auxiliary verb, or one taken away (offered less
  often: it applies to most claims);
- ``pronoun``: he / she, his / her, him / her;
- ``opposite``: a word of a short list of opposites (rose / fell, before / after, won / lost...).

Only supported claims of the *training* folds are edited (``synthetic_pairs`` keeps each edit in
its source claim's fold, and ``_crossencoder_bundle`` never scores an edited claim), so an
out-of-fold logit is still fitted without its own document.

The screen, and its rule (written 2026-11-27 before any figure of it; tuning part only, the locked
part is not read). Two cross-encoders are trained out of fold on the same grouped folds
(``crossencoder_locked.py --train-bundle DIR --folds-only --config 4:128:1:2e-4``: one epoch, not
the shipped three, to fit this 2-core CPU), one from a bundle of the tuning claims as they are
(``--bundle DIR --lengths 128``), one with synthetic changed facts added (``--synthetic-conflicts
0.3``, seed 53000: 2,351 edited claims). Each set of logits is read by ``_faith_miss_types.py
--seed 53500 --crossencoder-logits FILE`` (the shipped recipe with the logit as an eleventh claim
feature, fold seed 53500, which no choice read) and by ``crossencoder_locked.py --logits FILE
--tuning-only --config 4:128:1:2e-4`` (the tuning CV of the three detectors). The synthetic
claims are worth the shipped configuration's training and one locked reading if, with the logit
as a claim feature, the AUROC of answers holding only evident conflicts against faithful answers
gains at least 0.03 in both QA and Summary, that of answers holding only evident baseless info
falls no more than 0.01 in either, and the pooled RAGTruth AUROC does not fall. Otherwise they
are recorded here and in BENCHMARKS.md, and dropped.

Stage 2, only if the screen passes (its rule written with the screen's, before any figure): the
shipped configuration ``4:128:3:2e-4`` trained with the same synthetic claims, out of fold and on
every tuning claim (``crossencoder_locked.py --train-bundle DIR --save-weights FILE``), then read
once by ``crossencoder_locked.py --logits FILE`` (tuning CV and the locked part). It replaces the
shipped ``detector="crossencoder"`` (``--write FILE``) if its ``default + crossencoder`` row,
against the shipped one's (BENCHMARKS.md, 2026-11-26), loses no more than 0.01 of RAGTruth's or
Summary's BA, 0.02 of QA's, 0.005 of the pooled RAGTruth AUROC, keeps HaluEval's BA at 0.93 or more,
on the tuning CV and on the locked part alike; and if, on the four helper-written sets of short
answers (``short_answers.py --variants crossencoder``), it catches more of the changed facts while
flagging at most 5% of the copied answers.

The screen's outcome: **failed**, so stage 2 was not run. With the logit as a claim feature
(fold seed 53500), answers holding only evident conflicts against faithful ones: QA 0.746 ->
0.698, Summary 0.637 -> 0.641; only evident baseless info: QA 0.835 -> 0.782, Summary 0.785 ->
0.779; pooled RAGTruth AUROC 0.794 -> 0.780 (tuning CV). The logit alone, per claim: conflict
claims against claims of no span QA 0.603 -> 0.536, Summary 0.509 -> 0.591, Data2txt 0.840 ->
0.700; every tuning claim 0.816 -> 0.725. The edits taught the cross-encoder something, a little
of Summary's conflicts, and cost it more of everything else.

A second screen, its rule written after those figures and before its own: two likely causes of
the loss are the negation edits (a third of the edited claims, often ungrammatical: "has not free
WiFi", a trait a model can learn instead of the fact) and the share (the edited claims doubled
the unsupported ones, halving the weight of the real ones in the class-balanced loss). The
variant: ``--synthetic-edits number,name,roles,pronoun,opposite --synthetic-conflicts 0.1
--synthetic-seed 54000``, the rest as in the first screen and against the same baseline logits
and fold seed; the same rule, and the same stage 2 if it passes.

Its outcome: **failed** too; stage 2 was not run, and nothing here ships. Conflicts only, QA
0.746 -> 0.747, Summary 0.637 -> 0.634; baseless info only, QA 0.835 -> 0.815, Summary 0.785 ->
0.777; pooled RAGTruth AUROC 0.794 -> 0.786. Per claim, conflicts against no span: QA 0.542,
Summary 0.510, Data2txt 0.794. Edits of this kind (FactCC's) do not teach this small
cross-encoder RAGTruth's changed facts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_AUXILIARY = re.compile(
    r"\b(is|was|are|were|has|have|had|will|can|could|would|should|did|does|do)\b(?! not)"
)
_NEGATED = re.compile(
    r"\b(is|was|are|were|has|have|had|will|can|could|would|should|did|does|do)"
    r" not\b"
)
_PRONOUNS = {"he": "she", "she": "he", "his": "her", "him": "her", "her": "his"}
_OPPOSITES = {
    "increased": "decreased",
    "increase": "decrease",
    "rose": "fell",
    "rise": "fall",
    "more": "fewer",
    "higher": "lower",
    "before": "after",
    "won": "lost",
    "first": "last",
    "largest": "smallest",
    "highest": "lowest",
    "guilty": "innocent",
    "accepted": "rejected",
    "approved": "rejected",
    "early": "late",
    "earlier": "later",
    "positive": "negative",
    "above": "below",
    "older": "younger",
    "opened": "closed",
    "open": "closed",
    "began": "ended",
    "started": "ended",
    "arrested": "released",
    "killed": "injured",
    "supports": "opposes",
    "supported": "opposed",
    "agreed": "refused",
    "allowed": "banned",
    "cheap": "expensive",
    "best": "worst",
    "good": "bad",
    "north": "south",
    "east": "west",
    "left": "right",
    "husband": "brother",
    "wife": "sister",
    "son": "nephew",
    "daughter": "niece",
}
_OPPOSITES.update({v: k for k, v in list(_OPPOSITES.items()) if v not in _OPPOSITES})
_OPPOSITE = re.compile(r"\b(" + "|".join(sorted(_OPPOSITES, key=len, reverse=True)) + r")\b")
_PRONOUN = re.compile(r"\b(he|she|his|him|her)\b", re.IGNORECASE)

NEGATION_OFFERED = 0.3
Edit = Callable[[str, str, np.random.Generator], "str | None"]


def _replace(text: str, span: tuple[int, int], new: str) -> str:
    return text[: span[0]] + new + text[span[1] :]


def _number(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    shared = [m for m in _NUMBER.finditer(claim) if m.group() in evidence]
    if not shared:
        return None
    match = shared[rng.integers(len(shared))]
    others = sorted({n for n in _NUMBER.findall(evidence) if n not in claim})
    if others:
        return _replace(claim, match.span(), others[rng.integers(len(others))])
    digits = match.group().replace(",", "")
    if "." in digits:
        return None
    value = int(digits)
    moved = value + int(rng.choice([-3, -2, -1, 1, 2, 3])) * max(1, value // 10)
    return _replace(claim, match.span(), str(max(0, moved))) if moved != value else None


def _names(claim: str) -> list[re.Match[str]]:
    return [m for m in _NAME.finditer(claim) if m.start() > 0]


def _name(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    shared = [m for m in _names(claim) if m.group() in evidence]
    others = sorted({m.group() for m in _NAME.finditer(evidence) if m.group() not in claim})
    if not shared or not others:
        return None
    match = shared[rng.integers(len(shared))]
    return _replace(claim, match.span(), others[rng.integers(len(others))])


def _roles(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    found = _names(claim)
    distinct = {m.group() for m in found}
    if len(distinct) < 2:
        return None
    first = found[0]
    second = next(m for m in found if m.group() != first.group())
    swapped = _replace(claim, second.span(), first.group())
    return _replace(swapped, first.span(), second.group())


def _negation(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    negated = _NEGATED.search(claim)
    if negated:
        return _replace(claim, negated.span(), negated.group(1))
    auxiliary = _AUXILIARY.search(claim)
    if not auxiliary:
        return None
    return _replace(claim, auxiliary.span(), auxiliary.group() + " not")


def _pronoun(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    match = _PRONOUN.search(claim)
    if not match:
        return None
    word = match.group()
    new = _PRONOUNS[word.lower()]
    return _replace(claim, match.span(), new.capitalize() if word[0].isupper() else new)


def _opposite(claim: str, evidence: str, rng: np.random.Generator) -> str | None:
    match = _OPPOSITE.search(claim)
    return _replace(claim, match.span(), _OPPOSITES[match.group()]) if match else None


EDITS: dict[str, Edit] = {
    "number": _number,
    "name": _name,
    "roles": _roles,
    "negation": _negation,
    "pronoun": _pronoun,
    "opposite": _opposite,
}


def changed_fact(
    claim: str, evidence: str, rng: np.random.Generator, edits: Sequence[str] = tuple(EDITS)
) -> tuple[str, str] | None:
    """One of ``edits`` of ``claim``, chosen at random among those that apply: (edit name, new
    claim). A negation applies to most claims, so it is offered with probability
    ``NEGATION_OFFERED`` only, or where no other edit applies."""
    unknown = set(edits) - set(EDITS)
    if unknown:
        raise ValueError(f"unknown edits {sorted(unknown)}; known: {', '.join(EDITS)}")
    applied = [(name, EDITS[name](claim, evidence, rng)) for name in edits]
    if rng.random() >= NEGATION_OFFERED and any(
        new and new != claim for name, new in applied if name != "negation"
    ):
        applied = [(name, new) for name, new in applied if name != "negation"]
    usable = [(name, new) for name, new in applied if new and new != claim]
    return usable[rng.integers(len(usable))] if usable else None


def synthetic_pairs(
    pairs: dict[str, Any],
    fold: np.ndarray,
    share: float,
    seed: int,
    edits: Sequence[str] = tuple(EDITS),
) -> dict[str, Any]:
    """Changed facts (``edits``) of supported tuning claims (``fold >= 0``), about ``share`` of
    the tuning claims' count: claim, evidence, label 1, the source claim's fold, the edit's
    name."""
    rng = np.random.default_rng(seed)
    y = np.asarray(pairs["y"])
    sources = np.flatnonzero((fold >= 0) & (y == 0))
    wanted = round(share * int((fold >= 0).sum()))
    out: dict[str, list[Any]] = {"claim": [], "evidence": [], "fold": [], "edit": []}
    for index in rng.permutation(sources):
        if len(out["claim"]) >= wanted:
            break
        edited = changed_fact(pairs["claim"][index], pairs["evidence"][index], rng, edits)
        if edited is None:
            continue
        out["claim"].append(edited[1])
        out["evidence"].append(pairs["evidence"][index])
        out["fold"].append(int(fold[index]))
        out["edit"].append(edited[0])
    return {**out, "y": np.ones(len(out["claim"]), dtype=int), "fold": np.asarray(out["fold"])}


def edit_counts(edits: Sequence[str]) -> dict[str, int]:
    """How many synthetic claims each edit wrote."""
    return {name: sum(1 for e in edits if e == name) for name in EDITS}
