"""The default suite embeds each distinct sentence once per record, in one model call a batch."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._suites import online_suite
from ragtrace.evaluators._text import split_sentences


@pytest.fixture
def model_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every call the process-wide embedder makes to its model, with the texts it sends."""
    embedder = get_embedder()
    calls: list[list[str]] = []
    model = embedder._encoder

    class Counting:
        canonical = model.canonical

        def __call__(self, texts: list[str]) -> Any:
            calls.append(list(texts))
            return model(texts)

    monkeypatch.setattr(embedder, "_encoder", Counting())
    yield calls


def _record(i: int, chunks: list[str], query: str, answer: str) -> RagRecord:
    return RagRecord(
        f"{i:032x}",
        f"{i:016x}",
        query,
        chunks=tuple(Chunk(text, id=f"c{n}") for n, text in enumerate(chunks)),
        response=answer,
    )


def _new_text() -> str:
    """A word no earlier test embedded, so nothing comes from a cache."""
    return f"Zq{uuid.uuid4().hex[:10]}"


def test_each_distinct_sentence_is_embedded_once_for_the_whole_suite(
    model_calls: list[list[str]],
) -> None:
    tag = _new_text()
    shared = f"The {tag} router restarts when its reset button is held for ten seconds."
    chunks = [
        f"{shared} Its status light then blinks green. The {tag} keeps its firmware.",
        f"Settings of the {tag} return to the factory defaults after a reset. {shared}",
    ]
    answer = f"Hold the {tag} reset button for ten seconds. Its status light then blinks green."
    record = _record(1, chunks, f"How do I reset the {tag} router?", answer)
    suite = online_suite()
    for evaluator in suite:
        scores = evaluator.evaluate(record)
        assert all(s.error is None for s in scores), (evaluator.name, scores)
    embedded = [t for call in model_calls for t in call]
    expected = {record.query} | set(split_sentences(answer))
    expected |= {s for c in chunks for s in split_sentences(c)}
    assert set(embedded) == expected
    assert Counter(embedded).most_common(1)[0][1] == 1  # none twice, though four evaluators embed
    assert len(model_calls) == 1  # the first embedding evaluator's call; the others reuse it


def test_a_batch_of_records_shares_one_model_call_and_its_common_chunks(
    model_calls: list[list[str]],
) -> None:
    tag = _new_text()
    common = f"The {tag} warranty covers two years of repairs."
    records = [
        _record(i, [common, f"Record {i} of the {tag} has its own passage."], f"Q {i} {tag}?", "A.")
        for i in range(8)
    ]
    for evaluator in online_suite():
        evaluator.evaluate_batch(records)
    embedded = [t for call in model_calls for t in call]
    assert Counter(embedded)[common] == 1
    assert max(Counter(embedded).values()) == 1
    assert len(model_calls) == 1


def test_vectors_do_not_depend_on_what_shares_a_forward_pass() -> None:
    embedder = get_embedder(cache_size=0)
    texts = [
        "Short one.",
        "A somewhat longer sentence about routers, resets and blinking status lights.",
        " ".join(["A very long sentence that keeps going"] * 40) + ".",
        "Another short one.",
    ]
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    stats = embedder.encoder_stats
    assert stats is not None and stats.positions >= stats.tokens > 0


def test_encoder_stats_count_calls_passes_and_padding() -> None:
    embedder = CachedEmbedder(
        "minilm-counted", get_embedder(cache_size=0)._encoder, batch_size=8, cache_size=10
    )
    stats = embedder.encoder_stats
    assert stats is not None
    before = (stats.calls, stats.passes, stats.texts)
    embedder.encode(["one short sentence", "one short sentence", " ".join(["long"] * 120)])
    after = (stats.calls, stats.passes, stats.texts)
    # One call, two passes (lengths far apart are not padded together), two distinct texts.
    assert tuple(a - b for a, b in zip(after, before, strict=True)) == (1, 2, 2)


def test_texts_that_differ_past_what_the_model_reads_share_one_vector(
    model_calls: list[list[str]],
) -> None:
    tag = _new_text()
    whole = " ".join(f'"{tag}_{i}": "value {i}",' for i in range(400))  # ~2,000 tokens, no stop
    cut = whole[:2_000]  # what the similarity evaluators keep of one sentence
    embedder = get_embedder()
    first, second = embedder.encode([whole]), embedder.encode([cut, whole + "\ud800"])
    assert len(model_calls) == 1 and len(model_calls[0]) == 1  # read once: 256 tokens of each
    assert len(model_calls[0][0]) < len(cut)
    assert np.allclose(first[0], second[0]) and np.allclose(first[0], second[1])
