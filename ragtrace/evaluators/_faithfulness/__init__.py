"""Faithfulness and hallucination: is the answer supported by the retrieved chunks?

This docstring is the one place that explains the family; each module's own says only what it
does. Accuracy, costs and alarm rates: docs/evaluators-online.md (``faithfulness``); weights,
training data and licences: the model card ``ragtrace/evaluators/data/SUPPORT_MODEL.md``.

**What it measures.** ``faithfulness`` (``evaluator.Faithfulness``) is the probability that the
answer holds no unsupported claim, ``1 - details["hallucination_probability"]``, from the support
detector's response-level model; ``hallucination`` (``evaluator.Hallucination``) is the same
probability the other way round (lower is better; ``convention="h2o"`` gives H2O's consistency
score instead). The probability is calibrated (each task's base rate counted in full), so its
mean over many answers estimates the share that hold a hallucination; it is what Prometheus
observes, what the alert rules read and, through its verdict, what the review queue routes on.
The seeds' claim ratio (002, 003) stays visible beside it::

    details["claim_ratio"] = claims supported by the retrieved context / claims in the answer

with each claim's text, support probability, verdict and closest passage sentence in
``details["claims"]``; ``scoring="claims"`` makes the ratio the value again (``ragas`` uses it).
Faithfulness asks of single sentences what context recall, answer correctness, noise
sensitivity and SummaC also ask; those evaluators call the same detector (``claim_support``).

**The support detector** (``detector.SupportDetector``). Without an LLM, each claim gets a
probability of being supported from a small logistic model (``models.SupportModel``) over cheap
features (``features``: word, stem, bigram, number and name coverage of the passages, whether
the claim talks about the passages rather than the world, and the cosines of its sentence
embedding with the closest passage sentences, from the packaged MiniLM or, in the static
profile, WordLlama). A second logistic model, the response model, reads one row per answer
(``response.RESPONSE_FEATURES``: the two largest unsupported probabilities of its claims, how
many claims, their mean bigram support and similarity, and the share of the answer's content
words, numbers and names found in the passages) and gives the probability that the answer holds
at least one unsupported claim. A claim the claim model puts at 0.9 or more unsupported flags
its answer by itself (``models.with_confident_claim``). A claim is supported when its
probability is at least ``support_threshold`` (0.5). The weights
(``data/support_tasks.json``, the shared pair in ``data/support_model.json`` and
``data/support_response_model.json``, one set per embedder) were fitted by
``training/train_support.py`` on the tuning part of RAGTruth and HaluEval; every file's sha256 is
checked before it is read.

**Tasks and calibrations** (``response``). Question answering, summary and data-to-text answers
calibrate differently (a summary reuses fewer of its source's words, a data-to-text answer is
written from JSON fields, and how often answers hallucinate differs), so each task has its own
pair of claim and response models. The task is the record's ``ragtrace.task`` attribute, else
``task=``, else inferred from the record's shape (``response.infer_task``); a question answered
in at most 30 words gets a pair of its own (``details["calibration"] == "short_qa"``). Each
response model's value counts its task's base rate in full, so one value ranks answers of
different tasks on one scale.

**Operating points.** ``passed`` is the verdict of the record's calibration: the answer fails
when its hallucination probability is above that calibration's threshold
(``SupportDetector.verdict_threshold``, recorded with the weights), which counts the base rate
at half weight, so tasks that hallucinate less often are flagged earlier. ``threshold=
"lenient"`` picks thresholds chosen to fail at most 3% of faithful answers;
``thresholds={"summary": 0.4}`` replaces the threshold of the calibrations it names
(``ragtrace review calibrate`` fits them on reviewers' labels: ``ragtrace.review._calibration``).

**Claims and splitters** (``claims``). Claims are the answer's sentences by default (what the
response models were fitted on); the seeds have an LLM extract claims, which a local splitter
approximates: ``splitter="clauses"`` also cuts at joined clauses, ``"claims"`` (the default
with ``scoring="claims"``) also at appositives and last adjuncts of place or time. At most
``max_claims`` (40) are checked (``details["truncated"]``); an answer with no sentence has
nothing to check (faithfulness 1.0).

**Announcements and markup** (``markup``). A line that only announces what follows ("Here is a
summary of the article in 82 words:") is no claim and is always read past, but on the
cross-encoder path (whose model was fitted on answers as written); read as one, a word count the
article lacks taught the summary models that a missing number is common in faithful summaries.
With ``read_past_markup=True`` claims are also read past presentation marks that state nothing
(citation markers such as ``[1]``, source lines, bold, headings, an "Answer:" label, "Based on
the passages,"); it is off by default because a sentence read past its marks is new text to
embed (about 20% of the warm online suite's time on answers that carry them). What was read past
is listed in ``details["markup_ignored"]``
(docs/decisions/faithfulness-detector-experiments.md).

**Other detectors.** ``detector="crossencoder"`` also sends every claim through a MiniLM
cross-encoder fine-tuned on the tuning part of the labelled data
(``ragtrace._backends.support_crossencoder``), its logit one more claim feature of each task's
pair (``data/support_tasks_ce.json``): the most accurate detector measured, about 37 ms a claim
on one CPU thread, so opt-in. With
``nli_model=``, a Hugging Face NLI model's entailment of each claim by its closest passage
sentences decides support (``nli``), and the hallucination probability is the largest claim
probability of being unsupported.

Modules: ``evaluator`` (the two evaluators: records in, Scores out), ``detector`` (claims and
passages in, probabilities out), ``features`` (a claim's feature row), ``models`` (the logistic
models and their weights files), ``response`` (the answer-level row, tasks and calibrations),
``claims`` (splitters), ``markup`` (what is read past), ``nli`` (support from an NLI model).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace.evaluators._faithfulness.detector import (
        ClaimCheck,
        SupportDetector,
        claim_support,
        default_detector,
    )
    from ragtrace.evaluators._faithfulness.evaluator import Faithfulness, Hallucination

# Each public name and its module, imported on first use so that a module of the family (the
# features that groundedness reads, the claim splitters) loads without the rest of it.
_HOMES = {
    "Faithfulness": "evaluator",
    "Hallucination": "evaluator",
    "SupportDetector": "detector",
    "ClaimCheck": "detector",
    "claim_support": "detector",
    "default_detector": "detector",
}
__all__ = [
    "ClaimCheck",
    "Faithfulness",
    "Hallucination",
    "SupportDetector",
    "claim_support",
    "default_detector",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
