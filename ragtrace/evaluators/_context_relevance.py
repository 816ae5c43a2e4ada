"""Context relevance: did retrieval bring back text about the question? Soft recall and precision.

After H2O Eval Studio's "Context Relevancy Evaluator (Soft Recall and Precision)" (seed 004)::

    chunk context relevancy(ch) = max({S(emb(q), emb(s)) for s in ch})
    recall relevancy    = max({chunk context relevancy(ch) for ch in rc})
    precision relevancy = avg({chunk context relevancy(ch) for ch in rc})

where ``s`` are the sentences of a chunk, ``q`` the query (embedded whole; a follow-up's
standalone question when the app rewrote it: ``ragtrace.evaluators._question``) and
``S = 1 - cosine distance = cosine``, clipped to [0, 1] (see ``ragtrace.evaluators._similarity``).
It gives two Scores, both higher-is-better:

- ``context_relevance.recall``: the best chunk's relevancy (something relevant was retrieved);
- ``context_relevance.precision``: the mean chunk relevancy (little irrelevant was retrieved),
  over the chunks the answer's model call saw when capture knows them
  (``ragtrace.evaluators._answer_context``: a document a corrective RAG's grader dropped is
  not held against it; the explanation says so and ``judged_chunks`` lists them); recall reads
  every chunk retrieved.

Choices where the catalogue is silent:

- A chunk with no text (no sentence) has relevancy 0: it cannot help answer, and it counts in
  the precision mean like any retrieved chunk.
- Caps (``truncated`` in details): 64 sentences per chunk, 256 context sentences per record
  taken chunk by chunk in rank order; chunks past that budget are left out of both metrics
  (listed with ``relevancy`` None). Sentences are cut to 2,000 characters.
- Operating points (``threshold=`` a name; docs/evaluators-online.md gives the measured rates):
  ``"strict"`` 0.45, ``"default"`` 0.35 (``CONTEXT_THRESHOLD``), ``"lenient"`` 0.30 for both,
  chosen on the tuning part of public data (``benchmarks/alarms.py``) for at most 3% of the
  normal retrievals of every data set failed: at the earlier 0.4, 6% of HaluEval's knowledge
  passages (a Wikipedia paragraph about the question's subject, one sentence of which answers
  a multi-hop question) failed. A number sets both, ``recall_threshold`` and
  ``precision_threshold`` one each. H2O's 0.75 is for BAAI/bge-small-en, whose cosines sit
  higher than MiniLM's; pass ``threshold=0.75`` with a bge model.

- ``model="wordllama"`` embeds with the packaged static embedder
  (``ragtrace._backends.static_embeddings``): far cheaper than MiniLM, a little less accurate on
  ARES (balanced accuracy 0.970 at 0.4 against 0.991; ``docs/decisions/cold-record-options.md``),
  so opt-in. It makes the default online suite no cheaper on its own: ``groundedness`` then
  embeds the chunk sentences with MiniLM.

``details`` (the same on both Scores): ``chunks``, a list with per chunk its ``chunk`` index,
``id``, ``relevancy`` (4 decimals), ``best_sentence`` (index within the chunk, None when the
chunk is empty or not analysed) and ``sentences`` (count analysed); ``best_chunk``; and
``truncated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._answer_context import AnswerContext, answer_context
from ragtrace.evaluators._base import unit_option
from ragtrace.evaluators._question import question_of
from ragtrace.evaluators._similarity import (
    DIGITS,
    ContextSentences,
    SimilarityEvaluator,
    TextBank,
    chunk_id,
    context_sentences,
    selected_context,
    sentences,
    similarity,
    whole,
)

if TYPE_CHECKING:
    from ragtrace.evaluators._similarity import Matrix

CONTEXT_THRESHOLD = 0.35
RECALL = "context_relevance.recall"
PRECISION = "context_relevance.precision"
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "strict": {RECALL: 0.45, PRECISION: 0.45},
    "default": {RECALL: CONTEXT_THRESHOLD, PRECISION: CONTEXT_THRESHOLD},
    "lenient": {RECALL: 0.30, PRECISION: 0.30},
}


@dataclass(frozen=True, slots=True)
class _Plan:
    query: list[int]
    context: list[int]
    sentences: ContextSentences
    ids: tuple[str | None, ...]
    truncated: bool
    judged: AnswerContext | None = None


class ContextRelevance(SimilarityEvaluator[_Plan]):
    """Soft recall (best chunk) and precision (mean chunk) of the context's relevance."""

    name: ClassVar[str] = "context_relevance"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "chunks"})
    score_names: ClassVar[tuple[str, ...]] = (RECALL, PRECISION)
    threshold: float | None = CONTEXT_THRESHOLD
    operating_points = OPERATING_POINTS

    def __init__(
        self,
        *,
        recall_threshold: float | None = None,
        precision_threshold: float | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            recall_threshold: Pass when recall is at least this (default: ``threshold``).
            precision_threshold: Pass when precision is at least this (default: ``threshold``).
            **options: ``model``, ``threads``, ``threshold`` (0.4), ``max_sentences``,
                ``max_context_sentences``, ``batch_size``, ``timeout_s``, ...
        """
        super().__init__(**options)
        self.thresholds = {
            RECALL: unit_option(
                "context_relevance",
                "recall_threshold",
                recall_threshold,
                self.threshold_of(RECALL),
            ),
            PRECISION: unit_option(
                "context_relevance",
                "precision_threshold",
                precision_threshold,
                self.threshold_of(PRECISION),
            ),
        }

    def plan(self, record: RagRecord, bank: TextBank) -> _Plan:
        query = whole(question_of(record))
        chunks = tuple(record.chunks or ())
        found = context_sentences(chunks, self.max_sentences, self.max_context_sentences)
        keep = None
        if self.select_sentences is not None:
            answer = sentences(record.response, self.max_sentences).texts
            keep = selected_context(query.texts, answer, found, self.select_sentences)
        return _Plan(
            bank.add(query.texts),
            bank.add(found.texts, keep),
            found,
            tuple(chunk_id(c) for c in chunks),
            query.truncated or found.truncated,
            answer_context(record),
        )

    def compute(self, plan: _Plan, vectors: Matrix, model_id: str) -> list[Score]:
        if not plan.query:
            return self.errors("the query has no text to embed")
        sims = similarity(vectors, plan.query, plan.context)[0]
        rows: list[dict[str, Any]] = []
        relevancies: list[float] = []
        judged = plan.judged
        places = set(judged.places) if judged is not None else None
        precise: list[float] = []  # the relevancies of the chunks the answer rests on
        for index, span in enumerate(plan.sentences.spans):
            row: dict[str, Any] = {"chunk": index, "id": plan.ids[index]}
            if span is None:
                row.update(relevancy=None, best_sentence=None, sentences=0)
            elif span[0] == span[1]:
                relevancies.append(0.0)
                row.update(relevancy=0.0, best_sentence=None, sentences=0)
            else:
                best = int(sims[span[0] : span[1]].argmax())
                relevancies.append(float(sims[span[0] + best]))
                row.update(
                    relevancy=round(relevancies[-1], DIGITS),
                    best_sentence=best,
                    sentences=span[1] - span[0],
                )
            if span is not None and (places is None or index in places):
                precise.append(relevancies[-1])
            rows.append(row)
        recall = max(relevancies)
        narrowed = judged is not None and judged.narrowed and bool(precise)
        if not narrowed:
            precise = relevancies
        precision = sum(precise) / len(precise)
        best_chunk = relevancies.index(recall)
        details = {"chunks": rows, "best_chunk": best_chunk, "truncated": plan.truncated}
        if narrowed and judged is not None:
            details.update(judged.details())
        note = judged.note() if narrowed and judged is not None else ""
        n = len(relevancies)
        return [
            self.score(
                recall,
                name=RECALL,
                threshold=self.thresholds[RECALL],
                explanation=f"best of {n} chunk(s): chunk {best_chunk}, relevancy {recall:.2f}",
                model=model_id,
                details=details,
            ),
            self.score(
                precision,
                name=PRECISION,
                threshold=self.thresholds[PRECISION],
                explanation=f"mean relevancy {precision:.2f} over {len(precise)} chunk(s)" + note,
                model=model_id,
                details=details,
            ),
        ]
