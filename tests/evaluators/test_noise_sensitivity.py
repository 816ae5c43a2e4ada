"""NoiseSensitivity: 002's two worked examples, hand-made cases, the real detector, bad input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._noise_sensitivity import NoiseSensitivity
from ragtrace.evaluators._statement_support import Splitter, SupportFn
from tests.evaluators.test_reference import word_support

RELEVANT = "noise_sensitivity.relevant"
IRRELEVANT = "noise_sensitivity.irrelevant"


def record(response: object, reference: object, chunks: Sequence[object]) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="q",
        chunks=tuple(Chunk(c) for c in chunks),  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def claims_of(claims: Mapping[str, list[str]]) -> Splitter:
    """A splitter giving the seed's claims for the seed's texts (an LLM split them there)."""
    return lambda text: claims[text]


def pair_table(supported: set[tuple[str, str]]) -> SupportFn:
    """Support 1.0 for the listed (claim, passage) pairs, 0.0 for every other."""

    def support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
        return [1.0 if (c, " ".join(passages)) in supported else 0.0 for c in claims]

    return support


def by_name(scores: list[Score]) -> dict[str, Score]:
    return {s.name: s for s in scores}


def test_declares_what_it_is() -> None:
    ev = create("noise_sensitivity")
    assert isinstance(ev, NoiseSensitivity)
    assert ev.requires == frozenset({"response", "reference", "chunks"})
    assert (ev.kind, ev.direction, ev.threshold) == ("model", "lower_is_better", None)
    assert NoiseSensitivity(modes=("irrelevant",)).score_names == (IRRELEVANT,)
    for bad in ((), ("relevant", "other"), "relevant"):
        with pytest.raises(ValueError, match="modes"):
            NoiseSensitivity(modes=bad)  # type: ignore[arg-type]


def test_002_relevant_noise_sensitivity_example() -> None:
    # 002: ground truth 2 claims; the one chunk is relevant (it says Leonardo painted the Mona
    # Lisa); response claim 2 ("15th century") is incorrect and entailed by that chunk:
    # RNS = 1 / 2 = 0.5. The verdicts follow from word_support (every content word present).
    reference = "Leonardo da Vinci painted the Mona Lisa in the 16th century."
    response = "Leonardo da Vinci painted the Mona Lisa, and it was painted in the 15th century."
    chunk = (
        "The Mona Lisa is a famous portrait painted by Leonardo da Vinci. It is believed to have "
        "been started in the early 1500s. Some art historians date its completion to around "
        "1519, placing it firmly in the 15th century according to certain periodizations."
    )
    splitter = claims_of(
        {
            reference: [
                "Leonardo da Vinci painted the Mona Lisa",
                "It was painted in the 16th century",
            ],
            response: [
                "Leonardo da Vinci painted the Mona Lisa",
                "It was painted in the 15th century",
            ],
        }
    )
    ev = NoiseSensitivity(support=word_support, splitter=splitter)
    got = by_name(ev.evaluate(record(response, reference, [chunk])))
    assert got[RELEVANT].value == 0.5
    assert got[IRRELEVANT].value == 0.0
    details = got[RELEVANT].details
    assert details["chunks"] == [{"rank": 1, "relevant": True}]
    assert [c["correct"] for c in details["claims"]] == [True, False]
    assert details["claims"][1] == {
        "claim": "It was painted in the 15th century",
        "support_by_reference": 0.0,
        "correct": False,
        "relevant_chunks": [1],
        "irrelevant_chunks": [],
    }
    assert details["incorrect"] == 1
    assert got[RELEVANT].direction == "lower_is_better"


def test_002_irrelevant_noise_sensitivity_example() -> None:
    # 002: M1 and M2 are incorrect; chunk 2 (about Charlotte Bronte) supports no ground-truth
    # claim, so it is irrelevant, and it entails M2 only: INS = 1 / 2 = 0.5. The entailment
    # verdicts are 002's (listed in the table).
    reference = "Jane Austen wrote 'Pride and Prejudice.'"
    response = "Charlotte Brontë wrote 'Pride and Prejudice,' and she is famous for 'Jane Eyre.'"
    gt1 = "Jane Austen wrote 'Pride and Prejudice.'"
    m1 = "Charlotte Brontë wrote 'Pride and Prejudice,'"
    m2 = "Charlotte Brontë is famous for 'Jane Eyre.'"
    c1 = "Jane Austen published 'Pride and Prejudice' in 1813, a classic romance novel."
    c2 = (
        "Charlotte Brontë, a renowned author, is best known for her novel 'Jane Eyre,' "
        "published in 1847."
    )
    ev = NoiseSensitivity(
        support=pair_table({(gt1, c1), (gt1, reference), (m2, c2)}),
        splitter=claims_of({reference: [gt1], response: [m1, m2]}),
    )
    got = by_name(ev.evaluate(record(response, reference, [c1, c2])))
    assert got[IRRELEVANT].value == 0.5
    assert got[RELEVANT].value == 0.0
    details = got[IRRELEVANT].details
    assert details["chunks"] == [{"rank": 1, "relevant": True}, {"rank": 2, "relevant": False}]
    assert [(c["correct"], c["irrelevant_chunks"]) for c in details["claims"]] == [
        (False, []),
        (False, [2]),
    ]


def test_correct_answers_and_own_errors_are_not_noise() -> None:
    ev = NoiseSensitivity(support=word_support)
    reference = "The sky is blue."
    chunks = ["The sky is blue.", "Grass is green."]
    correct = by_name(ev.evaluate(record("The sky is blue.", reference, chunks)))
    assert correct[RELEVANT].value == 0.0 and correct[IRRELEVANT].value == 0.0
    # a wrong claim no chunk states is the model's own error, not noise
    own = by_name(ev.evaluate(record("The sky is blue. Pigs can fly.", reference, chunks)))
    assert own[RELEVANT].value == 0.0 and own[IRRELEVANT].value == 0.0
    assert own[RELEVANT].details["incorrect"] == 1
    # a wrong claim taken from the irrelevant chunk: 1 of 2 claims
    noisy = by_name(ev.evaluate(record("The sky is blue. Grass is green.", reference, chunks)))
    assert noisy[IRRELEVANT].value == 0.5 and noisy[RELEVANT].value == 0.0


def test_a_claim_entailed_by_both_kinds_counts_in_both() -> None:
    ev = NoiseSensitivity(support=word_support)
    reference = "The sky is blue."
    chunks = ["The sky is blue. Grass is green.", "Grass is green."]
    got = by_name(ev.evaluate(record("Grass is green.", reference, chunks)))
    assert got[RELEVANT].value == 1.0 and got[IRRELEVANT].value == 1.0
    claim = got[RELEVANT].details["claims"][0]
    assert (claim["relevant_chunks"], claim["irrelevant_chunks"]) == ([1], [2])


def test_threshold_gates_lower_is_better() -> None:
    ev = NoiseSensitivity(support=word_support, threshold=0.25)
    got = by_name(ev.evaluate(record("Grass is green.", "The sky is blue.", ["Grass is green."])))
    assert got[IRRELEVANT].value == 1.0 and got[IRRELEVANT].passed is False
    assert got[RELEVANT].value == 0.0 and got[RELEVANT].passed is True


def test_bad_input() -> None:
    ev = NoiseSensitivity(support=word_support)
    missing = ev.evaluate(record("An answer.", None, ["a chunk"]))
    assert [s.name for s in missing] == [RELEVANT, IRRELEVANT]
    assert all(s.error == "noise_sensitivity needs a non-empty reference" for s in missing)
    assert all(s.error for s in ev.evaluate(record("An answer.", "A reference.", [])))
    got = by_name(
        ev.evaluate(
            record(b"Grass is green \xff.", "The sky \ud800 is blue.", [b"Grass is green."])
        )
    )
    assert got[IRRELEVANT].value == 1.0
    huge = by_name(
        ev.evaluate(record("Grass is green. " * 200_000, "The sky is blue.", ["Grass is green."]))
    )
    assert huge[IRRELEVANT].details["truncated"] is True
    assert len(huge[IRRELEVANT].details["claims"]) == 64


def test_002_relevant_example_with_the_real_detector() -> None:
    # 002's example written one claim per sentence, so the sentence splitter finds the claims.
    reference = "Leonardo da Vinci painted the Mona Lisa. It was painted in the 16th century."
    response = "Leonardo da Vinci painted the Mona Lisa. It was painted in the 15th century."
    chunk = (
        "The Mona Lisa is a famous portrait painted by Leonardo da Vinci. It is believed to have "
        "been started in the early 1500s. Some art historians date its completion to around "
        "1519, placing it firmly in the 15th century according to certain periodizations."
    )
    got = by_name(NoiseSensitivity().evaluate(record(response, reference, [chunk])))
    assert [c["correct"] for c in got[RELEVANT].details["claims"]] == [True, False]
    assert got[RELEVANT].value == 0.5
    assert got[IRRELEVANT].value == 0.0
