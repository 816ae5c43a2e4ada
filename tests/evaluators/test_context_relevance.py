"""Context relevance (H2O soft recall and precision) with the packaged MiniLM embedder.

Expected values are recomputed from the embedder's own vectors with the catalogue's formulas:
chunk relevancy = max over the chunk's sentences of S(query, sentence); recall = max over chunks;
precision = mean over chunks.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._context_relevance import ContextRelevance

QUERY = "When was the Eiffel Tower completed?"
EIFFEL = (
    "Paris is the capital of France.",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
)
BANANAS = ("Bananas are rich in potassium.", "They grow in tropical climates.")
FOOTBALL = ("The football final ended in a draw.",)


def record(chunks: tuple[object, ...], query: object = QUERY) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query=query,  # type: ignore[arg-type]
        chunks=tuple(c if isinstance(c, Chunk) else Chunk(c) for c in chunks),  # type: ignore[arg-type]
        response="unused",
    )


def chunk(sentences: tuple[str, ...], id: str | None = None) -> Chunk:
    return Chunk(" ".join(sentences), id=id)


def by_name(scores: list[Score]) -> dict[str, Score]:
    return {s.name: s for s in scores}


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return get_embedder()


def relevancy(embedder: CachedEmbedder, sentences: tuple[str, ...]) -> tuple[float, int]:
    """The catalogue's chunk relevancy and the index of the sentence that gives it."""
    vectors = embedder.encode([QUERY, *sentences]).astype(np.float64)
    sims = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)
    return float(sims.max()), int(sims.argmax())


def test_declares_what_it_is() -> None:
    ev = ContextRelevance()
    assert ev.name == "context_relevance"
    assert ev.requires == frozenset({"query", "chunks"})
    assert ev.kind == "model" and ev.bounded and ev.batch_size > 1
    assert ev.thresholds == {
        "context_relevance.recall": 0.35,
        "context_relevance.precision": 0.35,
    }
    assert isinstance(create("context_relevance"), ContextRelevance)
    split = ContextRelevance(recall_threshold=0.6, precision_threshold=0.3)
    assert split.thresholds == {
        "context_relevance.recall": 0.6,
        "context_relevance.precision": 0.3,
    }
    with pytest.raises(ValueError, match="recall_threshold"):
        ContextRelevance(recall_threshold=1.5)


def test_recall_and_precision_formulas_exactly(embedder: CachedEmbedder) -> None:
    chunks = (chunk(BANANAS, "d-bananas"), chunk(EIFFEL, "d-eiffel"), chunk(FOOTBALL))
    scores = ContextRelevance().evaluate(record(chunks))
    assert [s.name for s in scores] == ["context_relevance.recall", "context_relevance.precision"]
    got = by_name(scores)
    expected = [relevancy(embedder, s) for s in (BANANAS, EIFFEL, FOOTBALL)]
    values = [v for v, _ in expected]
    assert got["context_relevance.recall"].value == pytest.approx(max(values), abs=1e-9)
    assert got["context_relevance.precision"].value == pytest.approx(sum(values) / 3, abs=1e-9)
    details = got["context_relevance.recall"].details
    assert details == got["context_relevance.precision"].details
    assert details["chunks"] == [
        {
            "chunk": i,
            "id": cid,
            "relevancy": round(v, 4),
            "best_sentence": best,
            "sentences": n,
        }
        for i, (cid, (v, best), n) in enumerate(
            zip(("d-bananas", "d-eiffel", None), expected, (2, 2, 1), strict=True)
        )
    ]
    # The Eiffel chunk wins, through its second sentence.
    assert details["best_chunk"] == 1
    assert details["chunks"][1]["best_sentence"] == 1
    assert details["truncated"] is False


def test_relevant_context_beats_irrelevant() -> None:
    good = by_name(ContextRelevance().evaluate(record((chunk(EIFFEL),))))
    bad = by_name(ContextRelevance().evaluate(record((chunk(BANANAS), chunk(FOOTBALL)))))
    for name in ("context_relevance.recall", "context_relevance.precision"):
        assert good[name].value > bad[name].value + 0.3  # type: ignore[operator]
        assert good[name].passed is True and bad[name].passed is False


def test_precision_drops_with_irrelevant_chunks_but_recall_does_not() -> None:
    alone = by_name(ContextRelevance().evaluate(record((chunk(EIFFEL),))))
    padded = by_name(
        ContextRelevance().evaluate(record((chunk(EIFFEL), chunk(BANANAS), chunk(FOOTBALL))))
    )
    recall = "context_relevance.recall"
    precision = "context_relevance.precision"
    assert padded[recall].value == pytest.approx(alone[recall].value, abs=1e-9)
    assert padded[precision].value < alone[precision].value - 0.2  # type: ignore[operator]


def test_empty_chunk_counts_as_irrelevant(embedder: CachedEmbedder) -> None:
    got = by_name(ContextRelevance().evaluate(record((chunk(EIFFEL), Chunk("  "), Chunk(None)))))  # type: ignore[arg-type]
    value, _ = relevancy(embedder, EIFFEL)
    assert got["context_relevance.precision"].value == pytest.approx(value / 3, abs=1e-9)
    rows = got["context_relevance.recall"].details["chunks"]
    assert rows[1] == {
        "chunk": 1,
        "id": None,
        "relevancy": 0.0,
        "best_sentence": None,
        "sentences": 0,
    }
    assert rows[2]["relevancy"] == 0.0


def test_sentence_budget_leaves_later_chunks_out(embedder: CachedEmbedder) -> None:
    chunks = (chunk(BANANAS), chunk(EIFFEL), chunk(FOOTBALL))
    got = by_name(ContextRelevance(max_context_sentences=3).evaluate(record(chunks)))
    # Budget 3: both banana sentences, the first Eiffel sentence, nothing of the football chunk.
    bananas, _ = relevancy(embedder, BANANAS)
    first_eiffel, _ = relevancy(embedder, EIFFEL[:1])
    assert got["context_relevance.recall"].value == pytest.approx(
        max(bananas, first_eiffel), abs=1e-9
    )
    assert got["context_relevance.precision"].value == pytest.approx(
        (bananas + first_eiffel) / 2, abs=1e-9
    )
    details = got["context_relevance.precision"].details
    assert details["truncated"] is True
    assert [c["sentences"] for c in details["chunks"]] == [2, 1, 0]
    assert details["chunks"][2]["relevancy"] is None
    per_chunk = by_name(ContextRelevance(max_sentences=1).evaluate(record(chunks)))
    assert [c["sentences"] for c in per_chunk["context_relevance.recall"].details["chunks"]] == [
        1,
        1,
        1,
    ]


def test_batch_equals_one_by_one() -> None:
    records = [
        record((chunk(EIFFEL, "a"), chunk(BANANAS, "b"))),
        record((chunk(FOOTBALL),), query="Who won the football final?"),
        record((chunk(BANANAS), chunk(EIFFEL))),
    ]
    ev = ContextRelevance()
    batched = ev.evaluate_batch(records)
    single = [ev.evaluate(r) for r in records]
    assert [[(s.name, s.value, s.details) for s in ss] for ss in batched] == [
        [(s.name, pytest.approx(s.value, abs=1e-9), s.details) for s in ss] for ss in single
    ]


def test_bad_input() -> None:
    ev = ContextRelevance()
    missing = ev.evaluate(record((), query=QUERY))
    assert [(s.name, s.value) for s in missing] == [
        ("context_relevance.recall", None),
        ("context_relevance.precision", None),
    ]
    assert all(s.error and "record lacks chunks" in s.error for s in missing)
    odd = by_name(
        ev.evaluate(
            record((Chunk(b"The Eiffel Tower was completed in 1889."), Chunk("lone \udc80 x")))  # type: ignore[arg-type]
        )
    )
    assert odd["context_relevance.recall"].value > 0.5  # type: ignore[operator]
    huge = by_name(ev.evaluate(record((Chunk("The tower is tall. " * 100_000),) * 30)))
    details = huge["context_relevance.recall"].details
    assert details["truncated"] is True
    assert sum(c["sentences"] for c in details["chunks"]) == 256
    assert [c["sentences"] for c in details["chunks"][:5]] == [64, 64, 64, 64, 0]


# --- the default operating point on passages like HaluEval's and another record's --------------

KISS_AND_TELL = (
    "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as "
    "Corliss Archer. In the film, two teenage girls cause their respective parents much concern "
    "when they start to become interested in boys."
)
MAGAZINES = (
    "Arthur's Magazine (1844-1846) was an American literary periodical published in "
    "Philadelphia in the 19th century. First for Women is a woman's magazine published by Bauer "
    "Media Group in the USA."
)
SUPER_BOWL = (
    "The Green Bay Packers defeated the Kansas City Chiefs 35-10 in the AFL-NFL World "
    "Championship Game at the Los Angeles Memorial Coliseum on January 15, 1967."
)
QUESTIONS = {
    KISS_AND_TELL: "What government position was held by the woman who portrayed Corliss Archer "
    "in the film Kiss and Tell?",
    MAGAZINES: "Which magazine was started first, Arthur's Magazine or First for Women?",
    SUPER_BOWL: "When was the first Super Bowl played?",
}


def test_multi_hop_passages_pass_and_another_records_passage_fails() -> None:
    def scored(query: str, passage: str) -> bool | None:
        rec = RagRecord(
            trace_id="0" * 32, span_id="0" * 16, query=query, chunks=(Chunk(passage),), response="x"
        )
        return ContextRelevance().evaluate(rec)[0].passed

    # A passage about the question's subject that answers one hop of it passes ...
    assert [scored(q, p) for p, q in QUESTIONS.items()] == [True, True, True]
    # ... and each question with another record's passage fails.
    passages = list(QUESTIONS)
    swapped = [scored(QUESTIONS[p], passages[(i + 1) % 3]) for i, p in enumerate(passages)]
    assert swapped == [False, False, False]
    assert ContextRelevance(threshold="strict").thresholds[
        "context_relevance.recall"
    ] == pytest.approx(0.45)
