"""Groundedness: the calibrated probability (default) and H2O's minimum similarity.

Expected values of the ``min`` method come from the packaged MiniLM embedder's own vectors; the
unsupported sentence of a hand-made answer must be the one the details name. The calibrated
method must pass what the minimum failed (short factual answers, long faithful summaries) and
fail an answer read against another record's passages.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create
from ragtrace.evaluators._groundedness import Groundedness

PRICING = (
    "The Basic plan costs 10 dollars per month.",
    "The Pro plan costs 25 dollars per month and includes priority support.",
)
REFUNDS = (
    "Refunds are available within 30 days of purchase.",
    "To request a refund, contact the billing team by email.",
)
SUPPORTED = (
    "The Pro plan is 25 dollars a month and comes with priority support.",
    "You can get a refund within 30 days of buying.",
)
UNSUPPORTED = "Our office dog is called Biscuit and loves long walks in the park."


def record(response: object, chunks: tuple[object, ...] | None = None) -> RagRecord:
    if chunks is None:
        chunks = (Chunk(" ".join(PRICING), id="pricing"), Chunk(" ".join(REFUNDS), id="refunds"))
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="What do the plans cost and can I get a refund?",
        chunks=chunks,  # type: ignore[arg-type]
        response=response,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return get_embedder()


def matrix(embedder: CachedEmbedder, answer: tuple[str, ...]) -> np.ndarray:
    """S[i, j] between answer sentences and the context sentences (pricing then refunds)."""
    context = (*PRICING, *REFUNDS)
    vectors = embedder.encode([*answer, *context]).astype(np.float64)
    return np.clip(vectors[: len(answer)] @ vectors[len(answer) :].T, 0.0, 1.0)


def test_declares_what_it_is() -> None:
    ev = Groundedness()
    assert ev.name == "groundedness"
    assert ev.requires == frozenset({"chunks", "response"})
    assert ev.kind == "model" and ev.bounded and ev.batch_size > 1
    assert (ev.threshold, ev.threshold_per_record, ev.operating_point) == (0.25, True, "default")
    assert isinstance(create("groundedness"), Groundedness)
    assert Groundedness(method="min").threshold == 0.5


def test_formula_exactly_and_unsupported_sentence_named(embedder: CachedEmbedder) -> None:
    answer = (SUPPORTED[0], UNSUPPORTED, SUPPORTED[1])
    (score,) = Groundedness(method="min").evaluate(record(" ".join(answer)))
    sims = matrix(embedder, answer)
    best = sims.max(axis=1)
    assert score.value == pytest.approx(float(best.min()), abs=1e-9)
    least = score.details["least_grounded"]
    assert least["sentence"] == 1
    assert least["text"] == UNSUPPORTED
    assert least["similarity"] == round(float(best[1]), 4)
    # Each supported sentence is matched to the context sentence it restates.
    rows = score.details["sentences"]
    assert [
        (r["sentence"], r["chunk"], r["chunk_sentence"]) for r in rows if r["sentence"] != 1
    ] == [
        (0, 0, 1),
        (2, 1, 0),
    ]
    for r in rows:
        j = int(sims[r["sentence"]].argmax())
        assert (r["chunk"], r["chunk_sentence"]) == divmod(j, 2)
        assert r["similarity"] == round(float(best[r["sentence"]]), 4)
    assert score.details["context_sentences"] == 4
    assert score.details["truncated"] is False
    assert score.passed is False and "sentence 1" in (score.explanation or "")


def test_grounded_answer_beats_ungrounded() -> None:
    for ev, bad_answer in (
        (Groundedness(method="min"), " ".join((*SUPPORTED, UNSUPPORTED))),
        (Groundedness(), UNSUPPORTED),  # the calibrated method: the answer as a whole
    ):
        (good,) = ev.evaluate(record(" ".join(SUPPORTED)))
        (bad,) = ev.evaluate(record(bad_answer))
        assert good.value is not None and bad.value is not None
        assert good.value > bad.value + 0.3
        assert good.passed is True and bad.passed is False


def test_context_without_sentences_grounds_nothing() -> None:
    empty = (Chunk(""), Chunk("   "))
    (calibrated,) = Groundedness().evaluate(record(SUPPORTED[0], chunks=empty))
    assert calibrated.passed is False and calibrated.details["signals"]["covered"] == 0.0
    (score,) = Groundedness(method="min").evaluate(record(SUPPORTED[0], chunks=empty))
    assert score.value == 0.0
    assert score.details["least_grounded"] == {
        "sentence": 0,
        "similarity": 0.0,
        "chunk": None,
        "chunk_sentence": None,
        "text": SUPPORTED[0],
    }
    assert score.details["context_sentences"] == 0


def test_batch_equals_one_by_one() -> None:
    records = [
        record(" ".join(SUPPORTED)),
        record(UNSUPPORTED),
        record(" ".join((SUPPORTED[1], UNSUPPORTED)), chunks=(Chunk(" ".join(REFUNDS)),)),
        record(" ".join(SUPPORTED)),
    ]
    ev = Groundedness()
    batched = ev.evaluate_batch(records)
    single = [ev.evaluate(r) for r in records]
    assert [ss[0].value for ss in batched] == pytest.approx(
        [ss[0].value for ss in single], abs=1e-9
    )
    assert [ss[0].details for ss in batched] == [ss[0].details for ss in single]


def test_threads_sharing_the_evaluator_agree() -> None:
    ev = Groundedness()
    records = [record(" ".join(SUPPORTED)), record(UNSUPPORTED)]
    expected = [ss[0].value for ss in ev.evaluate_batch(records)]
    seen: list[list[float | None]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                seen.append([ss[0].value for ss in ev.evaluate_batch(records)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(seen) == 12
    assert all(s == pytest.approx(expected, abs=1e-9) for s in seen)


def test_bad_input(embedder: CachedEmbedder) -> None:
    ev = Groundedness()
    (missing,) = ev.evaluate(record(None))
    assert missing.value is None and "record lacks response" in (missing.error or "")
    (odd,) = ev.evaluate(
        record(SUPPORTED[0].encode(), chunks=(Chunk(" ".join(PRICING).encode()),))  # type: ignore[arg-type]
    )
    (plain,) = ev.evaluate(record(SUPPORTED[0], chunks=(Chunk(" ".join(PRICING)),)))
    assert odd.value == pytest.approx(plain.value, abs=1e-9)
    (surrogate,) = ev.evaluate(record("Refunds \udfff within 30 days."))
    assert surrogate.value is not None and 0.0 <= surrogate.value <= 1.0
    # Bare strings standing in for chunks are read too.
    (bare,) = ev.evaluate(record(SUPPORTED[0], chunks=(" ".join(PRICING),)))
    assert bare.value == pytest.approx(plain.value, abs=1e-9)


def test_huge_inputs_are_capped() -> None:
    long_answer = "This is a statement about the plans. " * 2_000  # one distinct sentence
    (score,) = Groundedness().evaluate(record(long_answer, chunks=(Chunk("x " * 1_000_000),) * 5))
    assert score.value is not None
    assert score.details["truncated"] is True
    assert len(score.details["sentences"]) == 64
    (few,) = Groundedness(max_sentences=2, max_context_sentences=3).evaluate(
        record(" ".join((*SUPPORTED, UNSUPPORTED)))
    )
    assert len(few.details["sentences"]) == 2
    assert few.details["context_sentences"] == 3
    assert few.details["truncated"] is True


# --- the calibrated method ---------------------------------------------------------------------

ARTICLE = (
    "The city council approved a new budget on Tuesday after months of debate. Mayor Ellen Ross "
    "said the plan raises teacher salaries by four percent and sets aside 12 million dollars for "
    "bridge repairs on the east side. Opponents, led by councillor David Kim, argued that the "
    "budget relies on optimistic tax forecasts. The council voted seven to two. The budget takes "
    "effect in July, and the first bridge contracts are expected before the end of summer."
)
SUMMARY = (
    "After months of debate, the council passed a budget that gives teachers a four percent "
    "raise. It sets aside $12 million for bridges on the east side, Mayor Ellen Ross said. "
    "Councillor David Kim's side warned the tax forecasts were optimistic, but the vote was seven "
    "to two. The plan starts in July, with the first bridge contracts due before summer ends."
)
SUPER_BOWL = (
    "The first AFL-NFL World Championship Game was played on January 15, 1967, at the Los "
    "Angeles Memorial Coliseum. The Green Bay Packers defeated the Kansas City Chiefs 35-10."
)


def test_short_answers_and_long_summaries_pass_where_the_minimum_failed() -> None:
    cases = [
        record("1967", chunks=(Chunk(SUPER_BOWL),)),
        record("The Green Bay Packers.", chunks=(Chunk(SUPER_BOWL),)),
        record(SUMMARY, chunks=(Chunk(ARTICLE),)),
    ]
    calibrated = [s[0] for s in Groundedness().evaluate_batch(cases)]
    assert [s.passed for s in calibrated] == [True, True, True], [s.explanation for s in calibrated]
    minimum = [s[0] for s in Groundedness(method="min").evaluate_batch(cases)]
    assert minimum[0].passed is False  # "1967" is far from any whole context sentence
    summary = calibrated[2]
    assert summary.details["task"] == "qa" and summary.details["signal_model"] == "groundedness"
    assert set(summary.details["signals"]) == {"mean_similarity", "covered", "names_missing"}
    assert summary.details["signals"]["names_missing"] < 0.2  # the people it names are there


def test_an_answer_read_against_another_records_passages_fails() -> None:
    swapped = [
        record("1967", chunks=(Chunk(ARTICLE),)),
        record("The Green Bay Packers.", chunks=(Chunk(" ".join(PRICING)),)),
        record(SUMMARY, chunks=(Chunk(SUPER_BOWL),)),
    ]
    scores = [s[0] for s in Groundedness().evaluate_batch(swapped)]
    assert [s.passed for s in scores] == [False, False, False], [s.explanation for s in scores]


def test_the_threshold_is_the_records_tasks() -> None:
    data = '{"name": "Golden Dragon", "city": "Tampa", "stars": 4.5, "categories": "Chinese"}'
    rec = record("Golden Dragon is a Chinese restaurant in Tampa rated 4.5 stars.", (Chunk(data),))
    (score,) = Groundedness().evaluate(rec)
    assert (score.details["task"], score.threshold, score.passed) == ("data2txt", 0.36, True)
    (named,) = Groundedness(task="summary").evaluate(record(" ".join(SUPPORTED)))
    assert (named.details["task"], named.threshold) == ("summary", 0.18)
    (fixed,) = Groundedness(threshold=0.5).evaluate(rec)
    assert fixed.threshold == 0.5
    assert Groundedness(threshold="lenient").threshold_of("qa") == 0.03
    with pytest.raises(ValueError, match="task must be one of"):
        Groundedness(task="chat")
