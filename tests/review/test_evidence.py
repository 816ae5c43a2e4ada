"""The record page finds the unsupported sentences and per-chunk relevance evaluators report."""

from __future__ import annotations

from ragtrace._model import Chunk, Score
from ragtrace.review._evidence import Flag, chunk_relevance, merged_ranges, unsupported
from ragtrace.review._items import StoredScore

ANSWER = "The tower is 300 m tall.  It opened in 1999.\nTickets cost 20 euros."


def stored(name: str, details: dict[str, object]) -> StoredScore:
    return StoredScore(name, Score(name, 0.3, details=details))


def test_every_recognised_shape_is_located_in_the_answer() -> None:
    scores = [
        stored("groundedness", {"unsupported": ["It opened in 1999."]}),
        stored(
            "faithfulness",
            {
                "claims": [
                    {"claim": "The tower is 300 m tall.", "verdict": "yes"},
                    {"claim": "tickets   COST 20 euros.", "verdict": "No"},
                ]
            },
        ),
        stored("hallucination", {"spans": [{"start": 0, "end": 9}, [100, 200], "junk"]}),
        stored("judge", {"sentences": [{"text": "The moon is cheese.", "supported": False}]}),
        stored("looping.unique_sentences", {"sentences": 3, "repeated": [{"sentence": "x"}]}),
    ]
    flags = unsupported(ANSWER, scores)
    assert flags == [
        Flag("hallucination", 0, 9, "The tower"),
        Flag("groundedness", 26, 44, "It opened in 1999."),
        Flag("faithfulness", 45, 67, "tickets   COST 20 euros."),
        Flag("judge", None, None, "The moon is cheese."),
    ]
    assert ANSWER[45:67] == "Tickets cost 20 euros."
    assert merged_ranges(flags) == [
        (0, 9, ("hallucination",)),
        (26, 44, ("groundedness",)),
        (45, 67, ("faithfulness",)),
    ]


def test_the_shapes_ragtraces_own_evaluators_write_are_understood() -> None:
    # faithfulness: claims with a supported flag; groundedness: the weakest sentence when failed
    faithfulness = StoredScore(
        "faithfulness",
        Score(
            "faithfulness",
            0.5,
            passed=False,
            details={
                "claims": [{"claim": "It opened in 1999.", "support": 0.1, "supported": False}],
                "unsupported": 1,
            },
        ),
    )
    grounded = {
        "sentences": [{"sentence": 0, "similarity": 0.2}],
        "least_grounded": {"sentence": 2, "text": "Tickets cost 20 euros."},
    }
    failed = StoredScore("groundedness", Score("groundedness", 0.2, passed=False, details=grounded))
    passed = StoredScore("groundedness", Score("groundedness", 0.9, passed=True, details=grounded))
    assert [(f.evaluator, f.start) for f in unsupported(ANSWER, [faithfulness, failed])] == [
        ("faithfulness", 26),
        ("groundedness", 45),
    ]
    assert unsupported(ANSWER, [passed]) == []
    # context_relevance: rows with the chunk's 0-based index and its relevancy
    rows = [{"chunk": 1, "id": None, "relevancy": 0.4}, {"chunk": 0, "id": None, "relevancy": 0.8}]
    relevance = stored("context_relevance", {"chunks": rows, "best_chunk": 0})
    assert chunk_relevance([relevance], (Chunk("a"), Chunk("b"))) == [
        ("context_relevance", [0.8, 0.4])
    ]


def test_overlapping_flags_merge_into_one_highlight() -> None:
    flags = [
        Flag("a", 0, 10, ""),
        Flag("b", 5, 20, ""),
        Flag("a", 8, 12, ""),
        Flag("c", 30, 35, ""),
    ]
    assert merged_ranges(flags) == [(0, 20, ("a", "b")), (30, 35, ("c",))]


def test_nothing_to_highlight_in_an_empty_or_missing_answer() -> None:
    scores = [stored("g", {"unsupported": ["x"], "spans": [[0, 1]]})]
    assert unsupported(None, scores) == [Flag("g", None, None, "x")]
    assert unsupported("", []) == []


def test_chunk_relevance_aligns_by_position_index_rank_or_id() -> None:
    chunks = (Chunk("a", id="d1"), Chunk("b", id="d2"), Chunk("c", id="d3"))
    scores = [
        stored("by_position", {"chunks": [0.9, 0.1]}),
        stored("by_index", {"per_chunk": [{"index": 2, "score": 0.7}]}),
        stored("by_rank", {"relevance": [{"rank": 1, "relevance": 0.5}]}),
        stored("by_id", {"chunk_scores": [{"id": "d2", "value": 0.3}, {"id": "nope", "value": 1}]}),
        stored("no_numbers", {"contexts": ["text only"]}),
        stored("bool_is_no_number", {"chunks": [True, False]}),
    ]
    assert chunk_relevance(scores, chunks) == [
        ("by_position", [0.9, 0.1, None]),
        ("by_index", [None, None, 0.7]),
        ("by_rank", [0.5, None, None]),
        ("by_id", [None, 0.3, None]),
    ]
