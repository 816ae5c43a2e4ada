"""Summarization faithfulness and completeness, SummaC-style, on the CPU (004).

004's "Summarization (Completeness and Faithfulness) Evaluator" needs no reference summary: it
scores the summary (the record's ``response``) against the document it summarises (the text of
the record's retrieved chunks, in rank order) with "two faithfulness metrics based on SummaC
(Conv and ZS) and one completeness metric". Here they are two evaluators::

    faithful = create("summarization_faithfulness")    # SummaC-Conv (default) or -ZS
    complete = create("summarization_completeness")

Both cut the document and the summary into sentences and build the support matrix of
``ragtrace.evaluators._summac`` (source sentences x summary sentences; the local support
detector's summary model, or ``nli_model=``'s entailment), all records of a batch in one call.

- ``summarization_faithfulness``: 004's "how well the summary preserves the meaning and factual
  content of the original text". ``aggregation="conv"`` (default): SummaC-Conv, a learned filter
  over the histogram of each summary sentence's support, then the mean over sentences (weights
  ``data/summac_conv.json``, fitted on the tuning part of RAGTruth Summary by
  ``training/train_summac_conv.py``); ``aggregation="zs"``: SummaC-ZS, each summary sentence's
  best support over the source sentences, then the mean (``source_reduction``,
  ``summary_reduction`` change the two steps). Both values are in ``details`` whichever is the
  value, with each summary sentence's support and its closest source sentence.
- ``summarization_completeness``: 004's "distance of embeddings between the reference and faithful
  parts of the summary", read as: the faithful parts are the summary sentences whose best support
  reaches ``support_threshold``; each source sentence's coverage is its best embedding cosine
  (packaged MiniLM, negatives as 0) with a faithful summary sentence; the value is the mean
  coverage over the source sentences, each weighted by its salience (cosine with the document's
  mean embedding, so the document's key content counts most; ``salience=False`` weighs all
  alike). The reference of 004's wording is the source document: the evaluator "does not require
  a reference summary". A summary with no faithful sentence covers nothing: 0.0.

004's default threshold is 0.75 for all three metrics (higher is better). Caps on huge input:
each text is cut to ``max_chars`` characters, the document to its first ``max_source_sentences``
sentences and the summary to its first ``max_summary_sentences`` (``details["truncated"]``). Bad
input (no chunk text, an empty or missing summary) gives an error Score for that record only;
bytes are decoded as UTF-8 with bad bytes replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, InputError, positive_int
from ragtrace.evaluators._statement_support import as_text, clip
from ragtrace.evaluators._summac import (
    CONV_WEIGHTS,
    DETECTOR_MATRIX,
    SOURCE_REDUCTIONS,
    SUMMARY_REDUCTIONS,
    ConvAggregator,
    check_reduction,
    completeness,
    support_matrices,
    zero_shot,
)
from ragtrace.evaluators._text import split_sentences

if TYPE_CHECKING:
    from ragtrace.evaluators._summac import Matrix

AGGREGATIONS = ("conv", "zs")
DEFAULT_MAX_CHARS = 100_000
DEFAULT_MAX_SOURCE_SENTENCES = 200
DEFAULT_MAX_SUMMARY_SENTENCES = 40
DEFAULT_SUPPORT_THRESHOLD = 0.5
LEAST_COVERED = 3


@dataclass(frozen=True)
class _Texts:
    """One record's sentences, ready for the support matrix."""

    source: list[str]
    summary: list[str]
    truncated: bool


class _SummaryEvaluator(BatchEvaluator):
    """Shared machinery: read and cap the texts, build every record's matrix in one batch."""

    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})
    kind = "model"
    threshold: float | None = 0.75
    batch_size = 8
    timeout_s = 60.0

    def __init__(
        self,
        *,
        support_threshold: float = DEFAULT_SUPPORT_THRESHOLD,
        nli_model: str | None = None,
        nli_label_map: dict[str, int] | None = None,
        embedding_model: str | None = None,
        threads: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_source_sentences: int = DEFAULT_MAX_SOURCE_SENTENCES,
        max_summary_sentences: int = DEFAULT_MAX_SUMMARY_SENTENCES,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            support_threshold: A summary sentence is supported (faithful) when its best support
                over the source sentences is at least this.
            nli_model: Fill the matrix with this Hugging Face NLI model's entailment
                probability instead of the support detector.
            nli_label_map: Label name -> index for ``nli_model`` when its config lacks names.
            embedding_model: Embedding model of the detector (and of completeness).
            threads: Threads of the model backends.
            max_chars: Characters read from the summary and from each chunk.
            max_source_sentences: Document sentences read, from the top.
            max_summary_sentences: Summary sentences read, from the top.
            **options: ``threshold``, ``batch_size``, ``timeout_s``, ...
        """
        super().__init__(**options)
        threshold = support_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError(f"{self.name}: support_threshold must be a number in [0, 1]")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"{self.name}: support_threshold must be in [0, 1], got {threshold}")
        if nli_model is not None and (not isinstance(nli_model, str) or not nli_model):
            raise ValueError(f"{self.name}: nli_model must be a model id or folder")
        self.support_threshold = float(threshold)
        self.nli_model = nli_model
        self.nli_label_map = nli_label_map
        self.embedding_model = embedding_model
        self.threads = threads
        self.max_chars = positive_int(self.name, "max_chars", max_chars)
        self.max_source_sentences = positive_int(
            self.name, "max_source_sentences", max_source_sentences
        )
        self.max_summary_sentences = positive_int(
            self.name, "max_summary_sentences", max_summary_sentences
        )
        self._detector: Any = None
        if nli_model is None:
            from ragtrace.evaluators._faithfulness.detector import SupportDetector

            self._detector = SupportDetector(embedding_model=embedding_model, threads=threads)

    @property
    def matrix_name(self) -> str:
        """What fills the support matrix (``details["matrix"]``)."""
        return self.nli_model or DETECTOR_MATRIX

    def texts(self, record: RagRecord) -> _Texts:
        """The record's document and summary sentences (capped); InputError on bad input."""
        summary_text = as_text(record.response)
        if not summary_text.strip():
            raise InputError(f"{self.name} needs a non-empty response (the summary)")
        chunks = record.chunks or ()
        if isinstance(chunks, str | bytes):
            chunks = (chunks,)
        try:
            chunk_list = list(chunks)
        except TypeError:
            raise InputError(f"{self.name}: chunks must be a sequence of Chunk") from None
        documents = [as_text(getattr(c, "text", c)) for c in chunk_list]
        truncated = len(summary_text) > self.max_chars or any(
            len(t) > self.max_chars for t in documents
        )
        source = [s for t in documents for s in _sentences(t[: self.max_chars])]
        summary = _sentences(summary_text[: self.max_chars])
        if not source:
            raise InputError(f"{self.name} needs retrieved chunks with text (the document)")
        truncated = truncated or len(source) > self.max_source_sentences
        truncated = truncated or len(summary) > self.max_summary_sentences
        return _Texts(
            source[: self.max_source_sentences], summary[: self.max_summary_sentences], truncated
        )

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        prepared = self.matrices(records)
        ready = [p for p in prepared if not isinstance(p, Score)]
        results = iter(self.finish_batch([t for t, _ in ready], [m for _, m in ready]))
        return [[p] if isinstance(p, Score) else [next(results)] for p in prepared]

    def matrices(self, records: Sequence[RagRecord]) -> list[tuple[_Texts, Matrix] | Score]:
        """Per record, its sentences and support matrix, or the error Score of bad input;
        every matrix of the batch from one model call."""
        prepared: list[_Texts | Score] = []
        for record in records:
            try:
                prepared.append(self.texts(record))
            except InputError as exc:
                prepared.append(self.error_score(str(exc)))
        ready = [p for p in prepared if isinstance(p, _Texts)]
        found = iter(
            support_matrices(
                [(p.source, p.summary) for p in ready],
                nli_model=self.nli_model,
                nli_label_map=self.nli_label_map,
                threads=self.threads,
                detector=self._detector,
            )
        )
        return [p if isinstance(p, Score) else (p, next(found)) for p in prepared]

    def finish_batch(self, texts: Sequence[_Texts], matrices: Sequence[Matrix]) -> list[Score]:
        """One Score per record from its sentences and support matrix."""
        raise NotImplementedError


def _sentences(text: str) -> list[str]:
    found = [s for s in split_sentences(text) if s.strip()]
    if not found and text.strip():
        found = [text.strip()]
    return found


class SummarizationFaithfulness(_SummaryEvaluator):
    """SummaC faithfulness of the summary to the document: Conv (default) or ZS."""

    name: ClassVar[str] = "summarization_faithfulness"
    direction = "higher_is_better"

    def __init__(
        self,
        *,
        aggregation: str = "conv",
        source_reduction: str = "max",
        summary_reduction: str = "mean",
        conv_weights: str | Path | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            aggregation: ``conv`` (SummaC-Conv, learned) or ``zs`` (SummaC-ZS, zero-shot).
            source_reduction: ZS, per summary sentence over the source sentences: ``max`` or
                ``mean``.
            summary_reduction: ZS, over the summary sentences: ``mean`` or ``min``.
            conv_weights: Another SummaC-Conv weights file (needed for Conv with ``nli_model``,
                since the shipped one was fitted on the support detector's matrices).
            **options: See ``_SummaryEvaluator`` (``support_threshold``, ``nli_model``, ...).
        """
        super().__init__(**options)
        self.aggregation = check_reduction("aggregation", aggregation, AGGREGATIONS)
        self.source_reduction = check_reduction(
            "source_reduction", source_reduction, SOURCE_REDUCTIONS
        )
        self.summary_reduction = check_reduction(
            "summary_reduction", summary_reduction, SUMMARY_REDUCTIONS
        )
        self.conv: ConvAggregator | None = None
        if conv_weights is not None:
            self.conv = ConvAggregator.load(conv_weights)
        elif self.nli_model is None and (self.aggregation == "conv" or CONV_WEIGHTS.exists()):
            self.conv = _shipped_conv()
        if self.conv is not None and self.conv.matrix != self.matrix_name:
            raise ValueError(
                f"{self.name}: the SummaC-Conv weights were fitted on {self.conv.matrix!r} "
                f"matrices, this evaluator builds {self.matrix_name!r} ones; fit weights "
                "for it (training/train_summac_conv.py) or use aggregation='zs'"
            )
        if self.aggregation == "conv" and self.conv is None:
            raise ValueError(
                f"{self.name}: aggregation='conv' with nli_model needs conv_weights fitted on "
                "that model's matrices (training/train_summac_conv.py); or aggregation='zs'"
            )

    def finish_batch(self, texts: Sequence[_Texts], matrices: Sequence[Matrix]) -> list[Score]:
        return [self._score(t, m) for t, m in zip(texts, matrices, strict=True)]

    def _score(self, texts: _Texts, matrix: Matrix) -> Score:
        zs, support = zero_shot(matrix, self.source_reduction, self.summary_reduction)
        conv, conv_scores = self.conv.score(matrix) if self.conv else (None, [None] * len(support))
        closest = matrix.argmax(axis=0).tolist()
        sentences = [
            {
                "sentence": clip(sentence),
                "support": round(s, 4),
                "supported": s >= self.support_threshold,
                "conv": None if c is None else round(c, 4),
                "closest_source_sentence": int(best),
            }
            for sentence, s, c, best in zip(
                texts.summary, support, conv_scores, closest, strict=True
            )
        ]
        value = conv if self.aggregation == "conv" and conv is not None else zs
        unsupported = [
            t for t, s in zip(texts.summary, support, strict=True) if s < self.support_threshold
        ]
        explanation = (
            f"SummaC-{self.aggregation.upper()} {value:.3f}; {len(unsupported)} of "
            f"{len(sentences)} summary sentences unsupported by the document"
            + (f"; first: {unsupported[0][:120]!r}" if unsupported else "")
        )
        details = {
            "summac_zs": round(zs, 4),
            "summac_conv": None if conv is None else round(conv, 4),
            "aggregation": self.aggregation,
            "source_reduction": self.source_reduction,
            "summary_reduction": self.summary_reduction,
            "sentences": sentences,
            "unsupported": len(unsupported),
            "source_sentences": len(texts.source),
            "matrix": self.matrix_name,
            "truncated": texts.truncated,
        }
        return self.score(value, explanation=explanation, details=details)


class SummarizationCompleteness(_SummaryEvaluator):
    """How much of the document's (salient) content the faithful summary sentences cover."""

    name: ClassVar[str] = "summarization_completeness"
    direction = "higher_is_better"

    def __init__(self, *, salience: bool = True, **options: Any) -> None:
        """Build the evaluator.

        Args:
            salience: Weigh each source sentence by its cosine with the document's mean
                embedding (False: all alike).
            **options: See ``_SummaryEvaluator`` (``support_threshold``, ``nli_model``, ...).
        """
        super().__init__(**options)
        self.salience = bool(salience)

    def finish_batch(self, texts: Sequence[_Texts], matrices: Sequence[Matrix]) -> list[Score]:
        if not texts:
            return []
        from ragtrace._backends.embeddings import get_embedder

        order = list(dict.fromkeys(s for t in texts for s in (*t.source, *t.summary)))
        embedder = get_embedder(self.embedding_model, threads=self.threads)
        vectors = embedder.encode(order)
        row = {s: i for i, s in enumerate(order)}
        return [
            self._score(
                t, m, vectors[[row[s] for s in t.source]], vectors[[row[s] for s in t.summary]]
            )
            for t, m in zip(texts, matrices, strict=True)
        ]

    def _score(self, texts: _Texts, matrix: Matrix, source: Any, summary: Any) -> Score:
        import numpy as np

        _, support = zero_shot(matrix)
        faithful = [s >= self.support_threshold for s in support]
        similarity = np.clip(source @ summary.T, 0.0, 1.0)
        weights = _salience(source) if self.salience else None
        value, covered = completeness(similarity, faithful, weights)
        order = sorted(range(len(covered)), key=lambda i: (covered[i], i))[:LEAST_COVERED]
        details = {
            "faithful_sentences": sum(faithful),
            "summary_sentences": len(faithful),
            "unfaithful": [
                clip(s) for s, ok in zip(texts.summary, faithful, strict=True) if not ok
            ],
            "source_sentences": len(texts.source),
            "least_covered": [
                {"sentence": clip(texts.source[i]), "coverage": round(covered[i], 4)} for i in order
            ],
            "salience": self.salience,
            "matrix": self.matrix_name,
            "truncated": texts.truncated,
        }
        explanation = (
            f"{value:.3f} of the document's content covered by {sum(faithful)} faithful of "
            f"{len(faithful)} summary sentences"
        )
        return self.score(value, explanation=explanation, details=details)


def _salience(vectors: Any) -> Any:
    """Each sentence's cosine with the mean of the (L2-normalised) sentence vectors, as >= 0."""
    import numpy as np

    centre = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centre))
    if norm == 0.0:
        return np.ones(len(vectors))
    return np.clip(vectors @ (centre / norm), 0.0, 1.0)


_conv: ConvAggregator | None = None


def _shipped_conv() -> ConvAggregator:
    """The packaged SummaC-Conv weights, read once."""
    global _conv
    if _conv is None:
        _conv = ConvAggregator.load()
    return _conv
