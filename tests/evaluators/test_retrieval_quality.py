"""ContextRecall, ContextPrecision, ContextEntitiesRecall: 003's worked examples, hand-made cases.

Support verdicts come from deterministic stand-ins where a seed fixes them (the seed's judge
decided; the formula is what is tested), and from the real support detector end to end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._retrieval_quality import (
    ContextEntitiesRecall,
    ContextPrecision,
    ContextRecall,
    lexical_entities,
    normalise_entity,
    rank_weighted_precision,
    unranked_precision,
)
from ragtrace.evaluators._statement_support import SupportFn
from tests.evaluators.test_reference import word_support

# 003, "Contextual Precision" example: the five retrieved nodes for "What is AI?".
NODES_003 = (
    "Machine Learning is the study of algorithms which learn with more data.",
    "AI is known as Artificial Intelligence.",
    "Artificial intelligence refers to machines mimicking human intelligence, like "
    "problem-solving and learning. AI includes applications like virtual assistants, robotics, "
    "and autonomous vehicles. It's evolving rapidly with advancements in machine learning and "
    "deep learning.",
    "NLP is a branch of AI that enables computers to understand, interpret, and generate human "
    "language. Techniques include tokenization, stemming, and sentiment analysis. Applications "
    "range from chatbots to language translation services.",
    "Machine learning is a field of artificial intelligence focused on enabling systems to learn "
    "patterns from data. Algorithms analyze past data to make predictions or classify "
    "information. Popular applications include recommendation systems and image recognition.",
)


def record(
    chunks: Sequence[object], reference: object = None, response: object = "An answer."
) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="What is AI?",
        chunks=tuple(c if isinstance(c, Chunk) else Chunk(c) for c in chunks),  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def table(verdicts: Mapping[str, float]) -> SupportFn:
    """A support function answering from a fixed table of claim -> probability."""

    def support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        return [verdicts[c] for c in claims]

    return support


def only(scores: list[Score]) -> Score:
    assert len(scores) == 1, scores
    return scores[0]


def test_declare_what_they_are() -> None:
    for name, cls in (
        ("context_recall", ContextRecall),
        ("context_precision", ContextPrecision),
        ("context_entities_recall", ContextEntitiesRecall),
    ):
        ev = create(name)
        assert isinstance(ev, cls)
        assert ev.requires == frozenset({"chunks", "reference"})
        assert (ev.kind, ev.direction, ev.threshold) == ("model", "higher_is_better", 0.75)


# --- context precision ---------------------------------------------------------------------


def test_rank_weighted_precision_003_worked_example() -> None:
    # Node relevance 0, 1, 1, 0, 0: (1/2 + 2/3) / 2 = 1.1667 / 2 = 0.5833.
    assert rank_weighted_precision([False, True, True, False, False]) == pytest.approx(7 / 12)
    assert round(rank_weighted_precision([False, True, True, False, False]), 4) == 0.5833
    assert rank_weighted_precision([True, True, False]) == 1.0
    assert rank_weighted_precision([False, False, True]) == pytest.approx(1 / 3)
    assert rank_weighted_precision([False, False]) == 0.0
    assert rank_weighted_precision([]) == 0.0


def test_context_precision_003_example_end_to_end_with_word_support() -> None:
    # Reference statements: node 2 holds every content word of the first, node 3 of the second;
    # nodes 1, 4 and 5 hold neither: relevance 0, 1, 1, 0, 0 as in 003 -> 0.5833.
    reference = (
        "AI is known as Artificial Intelligence. "
        "Artificial intelligence refers to machines mimicking human intelligence."
    )
    got = only(ContextPrecision(support=word_support).evaluate(record(NODES_003, reference)))
    assert got.value == pytest.approx(7 / 12)
    assert got.passed is False
    assert [c["relevant"] for c in got.details["chunks"]] == [False, True, True, False, False]
    assert got.details["chunks"][1] == {
        "rank": 2,
        "relevant": True,
        "max_support": 1.0,
        "supports": [0],
    }
    assert got.details["chunks"][2]["supports"] == [1]
    assert got.details["relevance_to"] == "reference"
    assert "at ranks [2, 3]" in (got.explanation or "")


def test_context_precision_ranks_matter() -> None:
    ev = ContextPrecision(support=word_support)
    reference = "Paris is the capital of France."
    good, bad = "Paris is the capital of France.", "Bananas are yellow."
    assert only(ev.evaluate(record([good, bad, bad], reference))).value == 1.0
    assert only(ev.evaluate(record([bad, bad, good], reference))).value == pytest.approx(1 / 3)
    nothing = only(ev.evaluate(record([bad, bad], reference)))
    assert nothing.value == 0.0 and nothing.passed is False


def test_unranked_context_precision_is_the_share_of_relevant_chunks() -> None:
    """Ejento's form: relevant chunks / retrieved chunks, whatever their ranks. 003's nodes
    (relevance 0, 1, 1, 0, 0) give 2/5 where the rank-weighted form gives 0.5833; moving the
    relevant chunk last changes the ranked value, not this one."""
    reference = (
        "AI is known as Artificial Intelligence. "
        "Artificial intelligence refers to machines mimicking human intelligence."
    )
    ev = ContextPrecision(support=word_support, ranked=False)
    got = only(ev.evaluate(record(NODES_003, reference)))
    assert got.value == pytest.approx(2 / 5) and got.details["ranked"] is False
    good, bad = "Paris is the capital of France.", "Bananas are yellow."
    paris = "Paris is the capital of France."
    assert only(ev.evaluate(record([good, bad, bad], paris))).value == pytest.approx(1 / 3)
    assert only(ev.evaluate(record([bad, bad, good], paris))).value == pytest.approx(1 / 3)
    assert unranked_precision([]) == 0.0
    with pytest.raises(ValueError, match="ranked must be true or false"):
        ContextPrecision(ranked="no")  # type: ignore[arg-type]
    built = create("context_precision", ranked=False)
    assert isinstance(built, ContextPrecision) and built.ranked is False


def test_context_precision_against_the_response() -> None:
    ev = ContextPrecision(support=word_support, relevance_to="response")
    assert ev.requires == frozenset({"chunks", "response"})
    got = only(
        ev.evaluate(record(["Bananas are yellow.", "The sky is blue."], None, "The sky is blue."))
    )
    assert got.value == pytest.approx(1 / 2)
    assert got.details["relevance_to"] == "response"
    with pytest.raises(ValueError, match="relevance_to"):
        ContextPrecision(relevance_to="query")


def test_context_precision_caps_chunks() -> None:
    ev = ContextPrecision(support=word_support, max_chunks=3)
    chunks = ["Bananas are yellow."] * 3 + ["The sky is blue."]
    got = only(ev.evaluate(record(chunks, "The sky is blue.")))
    assert len(got.details["chunks"]) == 3 and got.details["truncated"] is True
    assert got.value == 0.0


# --- context recall ------------------------------------------------------------------------


def test_context_recall_003_worked_example() -> None:
    # 003: the expected output holds 2 statements; statement 1 is attributable to node 2,
    # statement 2 to no node: 1/2 = 0.5. The statements and verdicts are 003's.
    expected_output = (
        "AI, also known as Artificial Intelligence, is used to build complex systems for "
        "applications like virtual assistants, robotics, and autonomous vehicles."
    )
    statements = [
        "AI, also known as Artificial Intelligence",
        "is used to build complex systems for applications like virtual assistants, robotics, "
        "and autonomous vehicles.",
    ]
    ev = ContextRecall(
        support=table({statements[0]: 1.0, statements[1]: 0.0}),
        splitter=lambda text: statements if text == expected_output else [text],
    )
    chunks = ["NVIDIA makes chips for AI.", "AI is an acronym for Artificial Intelligence."]
    got = only(ev.evaluate(record(chunks, expected_output)))
    assert got.value == 0.5
    assert got.details["attributed"] == 1
    assert [s["attributed"] for s in got.details["statements"]] == [True, False]


def test_context_recall_hand_made_with_word_support() -> None:
    ev = ContextRecall(support=word_support)
    reference = (
        "Paris is the capital of France. The Eiffel Tower is in Paris. Berlin is in Germany."
    )
    chunks = ["Paris is the capital and largest city of France.", "The Eiffel Tower is in Paris."]
    got = only(ev.evaluate(record(chunks, reference)))
    assert got.value == pytest.approx(2 / 3)
    assert got.explanation == ("2 of 3 reference statements attributable to the retrieved context")


def test_context_recall_bad_input() -> None:
    ev = ContextRecall(support=word_support)
    assert only(ev.evaluate(record(["a chunk"], None))).error == (
        "context_recall needs a non-empty reference"
    )
    assert only(ev.evaluate(record([], "A reference."))).error == (
        "context_recall needs retrieved chunks with text"
    )
    assert only(ev.evaluate(record([Chunk(None)], "A reference."))).error  # type: ignore[arg-type]
    got = only(ev.evaluate(record([b"The sky is blue."], b"The sky is blue.")))
    assert got.value == 1.0
    huge = only(ev.evaluate(record(["The sky is blue. " * 300_000], "The sky is blue.")))
    assert huge.value == 1.0 and huge.details["truncated"] is True


# --- context entities recall ---------------------------------------------------------------


@pytest.fixture(scope="module")
def entities_recall() -> ContextEntitiesRecall:
    return ContextEntitiesRecall()


def test_entities_recall_with_spacy(entities_recall: ContextEntitiesRecall) -> None:
    assert entities_recall.extractor == "spacy"  # the packaged model is installed: never fall back
    reference = "Leonardo da Vinci painted the Mona Lisa in the 16th century."
    chunks = [
        "The Mona Lisa is a famous portrait painted by Leonardo da Vinci.",
        "Some date it to the 15th century.",
    ]
    got = only(entities_recall.evaluate(record(chunks, reference)))
    # entities: leonardo da vinci, mona lisa, 16th century -> 2 of 3 in the context
    assert got.details["entities"] == [
        {"entity": "leonardo da vinci", "found": True},
        {"entity": "mona lisa", "found": True},
        {"entity": "16th century", "found": False},
    ]
    assert got.value == pytest.approx(2 / 3)
    assert got.details["extractor"] == "spacy"


def test_entities_recall_matches_whole_words_case_insensitively(
    entities_recall: ContextEntitiesRecall,
) -> None:
    reference = "Jane Austen published Pride and Prejudice in 1813."
    found = only(entities_recall.evaluate(record(["JANE   AUSTEN wrote it in 1813."], reference)))
    entities = {e["entity"]: e["found"] for e in found.details["entities"]}
    assert entities["jane austen"] is True and entities["1813"] is True
    # "1813" is not found inside "18130"
    assert only(entities_recall.evaluate(record(["In 18130."], "It was 1813."))).value == 0.0


def test_entities_recall_no_entity_means_nothing_to_say(
    entities_recall: ContextEntitiesRecall,
) -> None:
    assert entities_recall.evaluate(record(["whatever"], "yes it is.")) == []


def test_entities_recall_lexical_fallback() -> None:
    ev = ContextEntitiesRecall(extractor="lexical")
    reference = "The painting hangs in the Louvre in Paris. It cost 1,300 dollars."
    assert lexical_entities(reference) == ["1,300", "Louvre", "Paris"]
    got = only(ev.evaluate(record(["The Louvre museum."], reference)))
    assert got.value == pytest.approx(1 / 3)
    assert got.details["extractor"] == "lexical"
    with pytest.raises(ValueError, match="extractor"):
        ContextEntitiesRecall(extractor="gliner")


def test_normalise_entity() -> None:
    assert normalise_entity("  The  Mona Lisa ") == "mona lisa"
    assert normalise_entity("Pride and Prejudice'") == "pride and prejudice"
    assert normalise_entity("“U.S.”") == "u.s"


def test_entities_recall_bad_input(entities_recall: ContextEntitiesRecall) -> None:
    assert only(entities_recall.evaluate(record(["x"], None))).error
    got = only(entities_recall.evaluate(record([b"Paris \xff"], "Paris \ud800 is big.")))
    assert got.value == 1.0
    huge = only(
        entities_recall.evaluate(record(["Paris " * 1_000_000], "Paris is in France. " * 5_000))
    )
    assert huge.details["truncated"] is True and huge.value == pytest.approx(1 / 2)


# --- end to end with the real support detector ---------------------------------------------


def test_context_recall_and_precision_real_detector() -> None:
    reference = "Paris is the capital of France. The Eiffel Tower is 330 metres tall."
    chunks = [
        "Bananas are a good source of potassium.",
        "Paris is the capital of France. It is also its largest city.",
    ]
    recall = only(ContextRecall().evaluate(record(chunks, reference)))
    assert [s["attributed"] for s in recall.details["statements"]] == [True, False]
    assert recall.value == 0.5
    precision = only(ContextPrecision().evaluate(record(chunks, reference)))
    assert [c["relevant"] for c in precision.details["chunks"]] == [False, True]
    assert precision.value == pytest.approx(1 / 2)
