"""The lexical first stage: which passage sentences the embedding evaluators embed.

On a fixture set of hand-made records (several chunks of several sentences, answers that
restate some of them in other words, one that invents), the sentences the full model would have
used (each answer sentence's best and three best, the query's best in each chunk and its three
best overall) must be among those kept, and the embedding evaluators built with
``select_sentences`` must then give the scores they give when every sentence is embedded.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragtrace._backends.embeddings import get_embedder
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._sentence_selection import bm25, select_sentences
from ragtrace.evaluators._similarity import (
    TextBank,
    context_sentences,
    selected_context,
    sentences,
    whole,
)
from ragtrace.evaluators._suites import SELECTING, online_suite

PLANS = (
    "The Basic plan costs 10 dollars per month. The Pro plan costs 25 dollars per month. "
    "The Pro plan includes priority support by phone. Plans renew every month unless cancelled. "
    "Annual billing saves two months of fees."
)
REFUNDS = (
    "Refunds are available within 30 days of purchase. To request a refund, email the billing "
    "team. Refunds reach the card used for payment within a week. Gift cards cannot be refunded."
)
OFFICE = (
    "The company was founded in Oslo in 2011. Its office sits next to the harbour. "
    "Forty people work there, most of them engineers. The office dog is called Biscuit."
)
VOLCANO = (
    "Mount Etna is an active volcano on the east coast of Sicily. It is the tallest active "
    "volcano in Europe outside the Caucasus. Its eruptions have been recorded since 1500 BC. "
    "The volcano's soil is fertile and grows vineyards and orchards. A railway circles its base. "
    "Etna was named a World Heritage Site in 2013."
)
FIXTURES = (
    (
        "How much does the Pro plan cost and can I get my money back?",
        (PLANS, REFUNDS, OFFICE),
        "The Pro plan costs 25 dollars each month. You can get a refund within 30 days of "
        "buying it, and the money goes back to your card.",
    ),
    (
        "Where is the company's office?",
        (OFFICE, PLANS),
        "The office is next to the harbour in Oslo. About forty people work there.",
    ),
    (
        "Tell me about Mount Etna.",
        (VOLCANO,),
        "Mount Etna is an active volcano in Sicily. Its eruptions were first recorded in 1500 "
        "BC. The Etna railway was built by the Romans.",
    ),
)


def record(query: str, passages: tuple[str, ...], response: str) -> RagRecord:
    chunks = tuple(Chunk(p, id=f"c{i}") for i, p in enumerate(passages))
    return RagRecord("0" * 32, "0" * 16, query, chunks=chunks, response=response)


def test_bm25_ranks_shared_rare_words_first() -> None:
    scores = bm25("refund within 30 days", REFUNDS.split(". "))
    assert int(np.argmax(scores)) == 0
    assert bm25("nothing shared here", ["Gift cards cannot be refunded."]) == [0.0]


def test_keeps_the_best_of_each_group_and_small_groups_whole() -> None:
    texts = ["alpha beta", "gamma delta", "alpha gamma", "zeta", "zeta eta", "theta"]
    assert select_sentences(["alpha"], texts, 1) == [0]
    # Per group: (0, 3) keeps its best; (3, 4) has one sentence, kept whole; (4, 6) shares no
    # stem with the probe and keeps its lead.
    assert select_sentences(["gamma"], texts, 1, [(0, 3), (3, 4), (4, 6)]) == [1, 3, 4]
    assert select_sentences(["alpha", "zeta"], texts, 2) == [0, 2, 3, 4]
    with pytest.raises(ValueError, match="per_probe"):
        select_sentences(["alpha"], texts, 0)


def test_bank_embeds_only_kept_texts_and_zeros_the_rest() -> None:
    class Counting:
        model_id = "counting"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def encode(self, texts: list[str]) -> np.ndarray:
            self.seen += texts
            return np.ones((len(texts), 2), dtype=np.float32)

    bank, counting = TextBank(), Counting()
    rows = bank.add(["a", "b", "c"], keep=[1])
    again = bank.add(["c"])  # another plan of the batch wants "c" embedded
    vectors = bank.embed(counting)  # type: ignore[arg-type]
    assert counting.seen == ["b", "c"]
    # The first plan left "a" and "c" out: zeros for it, whatever the other plan embeds.
    assert vectors[rows[0]].tolist() == vectors[rows[2]].tolist() == [0.0, 0.0]
    assert vectors[rows[1]].tolist() == vectors[again[0]].tolist() == [1.0, 1.0]


def test_a_record_scores_the_same_alone_and_in_a_batch() -> None:
    first, second = record(*FIXTURES[0]), record(*FIXTURES[0][:2], "Gift cards cannot be refunded.")
    for evaluator in online_suite("select"):
        if evaluator.name in SELECTING:
            alone = [s.value for s in evaluator.evaluate(first)]
            batched = [s.value for s in evaluator.evaluate_batch([second, first])[1]]
            assert batched == pytest.approx(alone), evaluator.name


@pytest.mark.parametrize("fixture", FIXTURES, ids=["plans", "office", "etna"])
def test_keeps_the_sentences_the_full_model_uses(fixture: tuple[str, tuple[str, ...], str]) -> None:
    query_text, passages, response = fixture
    found = context_sentences(passages, 64, 256)
    query, answer = whole(query_text).texts, sentences(response, 64).texts
    kept = set(selected_context(query, answer, found, 3) or ())
    embedder = get_embedder()
    context = embedder.encode(list(found.texts))
    for sims in embedder.encode(list(answer)) @ context.T:
        assert set(np.argsort(-sims)[:3].tolist()) <= kept
    (near,) = embedder.encode(list(query)) @ context.T
    assert set(np.argsort(-near)[:3].tolist()) <= kept
    for span in found.spans:
        assert span is not None
        assert span[0] + int(np.argmax(near[span[0] : span[1]])) in kept
    assert len(kept) < len(found.texts)  # it leaves something out


@pytest.mark.parametrize("fixture", FIXTURES, ids=["plans", "office", "etna"])
def test_selected_scores_equal_the_full_models(fixture: tuple[str, tuple[str, ...], str]) -> None:
    rec = record(*fixture)
    full = [e for e in online_suite() if e.name in SELECTING]
    selected = [e for e in online_suite("select") if e.name in SELECTING]
    for every, some in zip(full, selected, strict=True):
        expected, got = every.evaluate(rec), some.evaluate(rec)
        assert [s.name for s in got] == [s.name for s in expected]
        assert [s.passed for s in got] == [s.passed for s in expected], every.name
        assert [s.value for s in got] == pytest.approx([s.value for s in expected]), every.name


def test_option_is_checked() -> None:
    with pytest.raises(ValueError, match="select_sentences"):
        online_suite(options={"groundedness": {"select_sentences": 0}})
    with pytest.raises(ValueError, match="select_sentences"):
        online_suite(options={"faithfulness": {"select_sentences": -1}})
