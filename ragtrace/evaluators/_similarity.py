"""Shared machinery of the sentence-embedding evaluators: relevance, context, groundedness.

Each evaluator turns a record into texts (the query whole, the sentences of the response, the
sentences of each chunk), registers them in a ``TextBank`` and keeps their row numbers in a
plan. ``SimilarityEvaluator.evaluate_batch`` does this for every record of a batch, embeds every
distinct text once with a single ``encode`` call, then lets the evaluator compute each record's
scores from the rows with numpy.

Similarity: ``S(x, y) = 1 - cosine distance = cosine(emb(x), emb(y))``, computed as a dot product
of L2-normalised vectors and clipped to [0, 1] element-wise, before any max, min or mean: a
negative cosine means "unrelated", like 0, and must not pull an average below what unrelated
sentences give (for max and min the clip commutes and changes nothing inside [0, 1]).

Caps, so a huge input costs bounded work (``details["truncated"]`` says when one applied):

- a text is cut to ``max_sentences * MAX_SENTENCE_CHARS`` characters before it is split, only
  its first ``max_sentences`` sentences (default 64) are kept, and each is cut to
  ``MAX_SENTENCE_CHARS`` (2,000) characters (the embedder reads 256 tokens, ~1,200 characters);
- the query is embedded whole, cut to ``MAX_SENTENCE_CHARS`` characters;
- the context of one record keeps at most ``max_context_sentences`` sentences (default 256),
  taken chunk by chunk in rank order: chunks past the budget are not analysed.

A record at every cap embeds about 320 texts of up to 256 tokens (tens of seconds on one busy
core), so these evaluators default to ``timeout_s=30`` per record; ordinary records (four
500-character chunks, a short answer) take tens of milliseconds.

Bad input never raises here: None becomes "", bytes are decoded as UTF-8 (invalid bytes
replaced), lone surrogates become U+FFFD, other objects go through ``str``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ragtrace._backends._loading import import_extra, thread_count
from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._model import RagRecord, Score
from ragtrace._text import short_text, to_text
from ragtrace.evaluators._base import BatchEvaluator, positive_int
from ragtrace.evaluators._text import split_sentences

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float64]

EXTRA = "models"
DEFAULT_THRESHOLD = 0.5
MAX_SENTENCE_CHARS = 2_000
DEFAULT_MAX_SENTENCES = 64
DEFAULT_MAX_CONTEXT_SENTENCES = 256
EXCERPT_CHARS = 200
DIGITS = 4

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Segments:
    """The sentences kept from one text and whether anything was cut."""

    texts: tuple[str, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class ContextSentences:
    """The sentences kept from a record's chunks, in rank order.

    Attributes:
        texts: Every kept sentence, chunk after chunk.
        spans: Per chunk, ``(start, end)`` into ``texts`` (empty for an empty chunk), or None
            for a chunk past the sentence budget (not analysed).
        truncated: A chunk was cut or left out.
    """

    texts: tuple[str, ...]
    spans: tuple[tuple[int, int] | None, ...]
    truncated: bool

    def locate(self, row: int) -> tuple[int, int]:
        """``(chunk index, sentence index within the chunk)`` of kept sentence ``row``."""
        for chunk, span in enumerate(self.spans):
            if span is not None and span[0] <= row < span[1]:
                return chunk, row - span[0]
        raise IndexError(row)


def whole(value: object) -> Segments:
    """A text as one segment (the query), cut to ``MAX_SENTENCE_CHARS``."""
    text = to_text(value) or ""
    kept = (short_text(text, MAX_SENTENCE_CHARS) or "").strip()
    return Segments((kept,) if kept else (), len(text) > MAX_SENTENCE_CHARS)


def sentences(value: object, max_sentences: int) -> Segments:
    """The first ``max_sentences`` sentences of a text, each cut to ``MAX_SENTENCE_CHARS``."""
    text = to_text(value) or ""
    limit = max_sentences * MAX_SENTENCE_CHARS
    truncated = len(text) > limit
    found = split_sentences(short_text(text, limit))
    if len(found) > max_sentences:
        found, truncated = found[:max_sentences], True
    if any(len(s) > MAX_SENTENCE_CHARS for s in found):
        found, truncated = [s[:MAX_SENTENCE_CHARS] for s in found], True
    return Segments(tuple(found), truncated)


def context_sentences(
    chunks: Sequence[object], max_sentences: int, max_total: int
) -> ContextSentences:
    """The sentences of each chunk, chunk by chunk, within a budget of ``max_total``."""
    texts: list[str] = []
    spans: list[tuple[int, int] | None] = []
    truncated = False
    for chunk in chunks:
        room = max_total - len(texts)
        if room <= 0:
            spans.append(None)
            truncated = True
            continue
        found = sentences(chunk_text(chunk), max_sentences)
        kept = found.texts[:room]
        truncated = truncated or found.truncated or len(kept) < len(found.texts)
        spans.append((len(texts), len(texts) + len(kept)))
        texts.extend(kept)
    return ContextSentences(tuple(texts), tuple(spans), truncated)


def chunk_text(chunk: object) -> object:
    """A chunk's text (a ``Chunk``, or a bare string or other object standing for one)."""
    return getattr(chunk, "text", chunk)


def chunk_id(chunk: object) -> str | None:
    """A chunk's id as short safe text, when it has one."""
    return short_text(getattr(chunk, "id", None))


def excerpt(text: str) -> str:
    """The start of a sentence, for details a reviewer reads."""
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."


class TextBank:
    """Distinct texts of a batch, each embedded once.

    A text added outside ``keep`` (a passage sentence the first stage left out:
    ``ragtrace.evaluators._sentence_selection``) gets the row of zeros, so its similarity to
    anything is 0 for that plan, whatever the other plans of the batch embed: a record scores
    the same alone and in a batch."""

    def __init__(self) -> None:
        self._rows: dict[str, int] = {}
        self._zero: int | None = None

    def add(self, texts: Sequence[str], keep: Sequence[int] | None = None) -> list[int]:
        """Row numbers of ``texts`` (registering the new ones); with ``keep``, only the texts
        at those indices are embedded, the others get the row of zeros."""
        if keep is None:
            return [self._row(t) for t in texts]
        kept = set(keep)
        return [self._row(t) if i in kept else self._zero_row() for i, t in enumerate(texts)]

    def _row(self, text: str) -> int:
        row = self._rows.get(text)
        if row is None:
            row = self._rows[text] = self._size()
        return row

    def _zero_row(self) -> int:
        if self._zero is None:
            self._zero = self._size()
        return self._zero

    def _size(self) -> int:
        return len(self._rows) + (self._zero is not None)

    def embed(self, embedder: CachedEmbedder) -> Matrix:
        """Every registered text's vector, in row order, from one ``encode`` call (and the
        row of zeros, when a plan left texts out)."""
        np = import_extra("numpy", EXTRA)
        if not self._rows:
            width = 0 if self._zero is None else 1
            return np.zeros((self._size(), width), dtype=np.float64)  # type: ignore[no-any-return]
        found = np.asarray(embedder.encode(list(self._rows)), dtype=np.float64)
        if self._zero is None:
            return found  # type: ignore[no-any-return]
        out = np.zeros((self._size(), found.shape[1]), dtype=np.float64)
        out[list(self._rows.values())] = found
        return out  # type: ignore[no-any-return]


def selected_context(
    query: Sequence[str], answer: Sequence[str], found: ContextSentences, per_probe: int | None
) -> list[int] | None:
    """The context sentences to embed (``ragtrace.evaluators._sentence_selection``): for the
    query the ``per_probe`` best of each chunk, for each answer sentence the ``per_probe`` best
    of all; None (all of them) when ``per_probe`` is None. Every embedding evaluator asks with
    the same query and answer, so they embed the same sentences."""
    if per_probe is None:
        return None
    from ragtrace.evaluators._sentence_selection import select_sentences

    spans = [s for s in found.spans if s is not None and s[0] < s[1]]
    kept = set(select_sentences(query, found.texts, per_probe, spans))
    kept.update(select_sentences(answer, found.texts, per_probe))
    return sorted(kept)


def similarity(vectors: Matrix, left: Sequence[int], right: Sequence[int]) -> Matrix:
    """``S[i, j]`` = cosine of texts ``left[i]`` and ``right[j]``, clipped to [0, 1]."""
    np = import_extra("numpy", EXTRA)
    if not left or not right:
        return np.zeros((len(left), len(right)), dtype=np.float64)  # type: ignore[no-any-return]
    a = vectors[list(left)]
    b = vectors[list(right)]
    return np.clip(a @ b.T, 0.0, 1.0)  # type: ignore[no-any-return]


class SimilarityEvaluator(BatchEvaluator, Generic[P]):
    """Base of the embedding evaluators: options, the batched embedding, per-record errors.

    Subclasses set ``score_names`` and implement ``plan`` (texts of one record into the bank)
    and ``compute`` (that record's Scores from the embedded rows).
    """

    kind = "model"
    batch_size = 16
    timeout_s = 30.0  # per record; a record at every cap embeds ~320 texts of 256 tokens
    threshold: float | None = DEFAULT_THRESHOLD

    def __init__(
        self,
        *,
        model: str | None = None,
        threads: int | None = None,
        max_sentences: int = DEFAULT_MAX_SENTENCES,
        max_context_sentences: int = DEFAULT_MAX_CONTEXT_SENTENCES,
        select_sentences: int | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            model: A sentence-transformers model id or folder, or an ``.onnx`` file (default:
                the packaged all-MiniLM-L6-v2).
            threads: Embedding threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
            max_sentences: Sentences kept per text (response, one chunk).
            max_context_sentences: Sentences kept over all chunks of a record.
            select_sentences: Embed only the context sentences a lexical first stage keeps
                (this many per query and chunk, and per answer sentence:
                ``selected_context``); None (default) embeds them all.
            **options: ``threshold``, ``batch_size``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"{self.name}: model must be a model id, folder or .onnx file")
        self.model = model
        self.threads = None if threads is None else thread_count(threads)
        self.max_sentences = positive_int(self.name, "max_sentences", max_sentences)
        self.max_context_sentences = positive_int(
            self.name, "max_context_sentences", max_context_sentences
        )
        self.select_sentences = (
            None
            if select_sentences is None
            else positive_int(self.name, "select_sentences", select_sentences)
        )

    def embedder(self) -> CachedEmbedder:
        """The shared embedder (loaded on first use)."""
        return get_embedder(self.model, threads=self.threads)

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        """Plan every record, embed all their distinct texts in one call, then score each."""
        bank = TextBank()
        plans: list[P | str] = []
        for record in records:
            missing = self.missing_fields(record)
            if missing:
                plans.append(f"record lacks {', '.join(missing)}")
                continue
            try:
                plans.append(self.plan(record, bank))
            except Exception as exc:  # one odd record must not sink the batch
                plans.append(f"{type(exc).__name__}: {exc}")
        if all(isinstance(plan, str) for plan in plans):
            return [self.errors(str(plan)) for plan in plans]
        embedder = self.embedder()
        vectors = bank.embed(embedder)
        results: list[list[Score]] = []
        for plan in plans:
            if isinstance(plan, str):
                results.append(self.errors(plan))
                continue
            try:
                results.append(self.compute(plan, vectors, embedder.model_id))
            except Exception as exc:
                results.append(self.errors(f"{type(exc).__name__}: {exc}"))
        return results

    @abstractmethod
    def plan(self, record: RagRecord, bank: TextBank) -> P:
        """Register the record's texts in ``bank``; what ``compute`` needs to score it."""

    @abstractmethod
    def compute(self, plan: P, vectors: Matrix, model_id: str) -> list[Score]:
        """The record's Scores from its plan and the embedded rows."""


def rounded(values: Any) -> list[float]:
    """Similarities as short floats for details."""
    return [round(float(v), DIGITS) for v in values]
