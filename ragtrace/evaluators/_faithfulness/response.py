"""The answer-level row of the response model, and which task and calibration an answer has.

``response_features`` builds one row of ``RESPONSE_FEATURES`` per answer:

- from the claim model: the two largest unsupported probabilities of the answer's claims, the
  number of claims (log), the claims' mean bigram support and mean best similarity;
- coverage of the whole answer (``response_coverage``), the signals the bag-of-words baseline
  ranks answers by: the share of its content words found in the passages, and the numbers and
  capitalised names it holds that the passages do not.

A weights file names the subset of ``RESPONSE_FEATURES`` it was fitted on; the detector computes
them all and reads that subset (``select``).

``record_task`` gives a record's task (``TASKS``): its ``ragtrace.task`` attribute, else the
evaluator's ``task=``, else its shape (``infer_task``): passages that are JSON objects or arrays
mean data-to-text; no question, or a question that asks for a summary, means summary; anything
else is question answering. ``calibration`` gives the pair that scores an answer: its task's,
except that a question answered in at most ``SHORT_ANSWER_WORDS`` words gets ``short_qa`` (on
the tuning data, HaluEval's answers: median 5 words, 99% at most 28; RAGTruth's QA answers: 95%
over 36). Verdict thresholds count each task's base rate at half weight (``PRIOR_WEIGHT`` of
``training/_faith_fit.py``; a summary's at a quarter, ``SHIPPED_PRIOR_WEIGHTS``), so each
task's verdict stays close to balanced.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import TypeVar

from ragtrace.evaluators._faithfulness.features import (
    FEATURES,
    PassageIndex,
    missing_name_share,
    numbers_in,
)
from ragtrace.evaluators._text import content_words

T = TypeVar("T")
TASKS = ("qa", "summary", "data2txt")
SHORT_ANSWER_WORDS = 30
# The model pairs of data/support_tasks.json, each with the task whose pair it falls back to.
CALIBRATIONS = {"qa": "qa", "short_qa": "qa", "summary": "summary", "data2txt": "data2txt"}
TASK_ATTRIBUTE = "ragtrace.task"
_ALIASES = {
    "qa": "qa",
    "question_answering": "qa",
    "question-answering": "qa",
    "summary": "summary",
    "summarization": "summary",
    "summarisation": "summary",
    "data2txt": "data2txt",
    "data-to-text": "data2txt",
    "data_to_text": "data2txt",
}
_WORD = re.compile(r"\S+")
_SUMMARY_QUERY = re.compile(r"\b(?:summar|tl;?dr|overview|recap)", re.IGNORECASE)

CLAIM_EVIDENCE = (
    "largest_unsupported",
    "second_unsupported",
    "log_claims",
    "mean_bigram_support",
    "mean_similarity",
)
COVERAGE = ("word_coverage", "missing_numbers", "missing_names")
RESPONSE_FEATURES = (*CLAIM_EVIDENCE, *COVERAGE)


def task_name(value: object) -> str | None:
    """``value`` as one of ``TASKS`` ("QA", "Summary", "data-to-text", ... are accepted), or
    None when it names no task."""
    if not isinstance(value, str):
        return None
    return _ALIASES.get(value.strip().lower().replace(" ", "_"))


def infer_task(query: str | None, passages: Sequence[str]) -> str:
    """The task a record's shape suggests: ``data2txt`` when a passage is a JSON object or
    array, ``summary`` without a question or when the question asks for a summary, else
    ``qa``."""
    for passage in passages:
        text = passage.strip()
        if text[:1] in "{[" and text[-1:] in "}]":
            try:
                if isinstance(json.loads(text), dict | list):
                    return "data2txt"
            except ValueError:
                pass
    if not (query or "").strip() or _SUMMARY_QUERY.search(query or ""):
        return "summary"
    return "qa"


def record_task(
    query: str | None,
    passages: Sequence[str],
    attributes: Mapping[str, object] | None = None,
    default: str | None = None,
) -> str:
    """The record's task: its ``ragtrace.task`` attribute, else ``default``, else inferred."""
    named = task_name((attributes or {}).get(TASK_ATTRIBUTE))
    return named or default or infer_task(query, passages)


def calibration(task: str, response: str | None) -> str:
    """The model pair (a key of ``CALIBRATIONS``) that scores an answer of ``task``:
    ``short_qa`` for a question answered in at most ``SHORT_ANSWER_WORDS`` words, else the
    task's own."""
    if task != "qa":
        return task
    words = islice(_WORD.finditer(response or ""), SHORT_ANSWER_WORDS + 1)  # bounded on MBs
    return "short_qa" if sum(1 for _ in words) <= SHORT_ANSWER_WORDS else task


def pick_pair(pairs: Mapping[str, T], key: str | None, default: T) -> T:
    """The pair of models for calibration ``key``: its own, else its task's (``CALIBRATIONS``),
    else ``default``."""
    name = key or ""
    found = pairs.get(name)
    return found if found is not None else pairs.get(CALIBRATIONS.get(name, name), default)


def response_coverage(response: str, index: PassageIndex) -> list[float]:
    """The ``COVERAGE`` values of a whole answer against one record's indexed passages."""
    cws = content_words(response)
    word_coverage = sum(w in index.words for w in cws) / len(cws) if cws else 1.0
    missing = [v for v in set(numbers_in(response)) if v not in index.numbers]
    return [word_coverage, math.log1p(len(missing)), missing_name_share(response, index)]


def response_features(
    unsupported: Sequence[float], rows: Sequence[Sequence[float]], coverage: Sequence[float]
) -> list[float]:
    """The ``RESPONSE_FEATURES`` vector of one answer.

    ``unsupported`` holds each claim's probability of being unsupported (the claim model's) and
    ``rows`` each claim's ``FEATURES`` row, in the same order; ``coverage`` is the answer's
    ``response_coverage``. An answer with no claim has no features
    to read: callers give it probability 0 instead of calling this.
    """
    if not unsupported or len(unsupported) != len(rows):
        raise ValueError("response_features needs one probability per claim row, at least one")
    if len(coverage) != len(COVERAGE):
        raise ValueError(f"response_features needs {len(COVERAGE)} coverage values")
    ranked = sorted(unsupported, reverse=True)
    n = len(ranked)

    def mean_of(name: str) -> float:
        at = FEATURES.index(name)
        return sum(row[at] for row in rows) / n

    return [
        ranked[0],
        ranked[1] if n > 1 else ranked[0],
        math.log1p(n),
        mean_of("bigram_support"),
        mean_of("max_similarity"),
        *coverage,
    ]


def select(row: Sequence[float], names: Sequence[str]) -> list[float]:
    """The values of ``names`` (a subset of ``RESPONSE_FEATURES``) from a full row."""
    return [row[RESPONSE_FEATURES.index(name)] for name in names]
