"""The packaged static embedder (WordLlama's token table) through the real weights.

The weights come from the pinned ``wordllama`` wheel; without it the tests skip locally and
FAIL under ``CI=true`` (the ``models`` extra installs it).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragtrace._backends import static_embeddings
from ragtrace._backends._loading import MissingExtraError
from ragtrace._backends.embeddings import STATIC_MODEL, CachedEmbedder, get_embedder
from ragtrace._backends.static_embeddings import (
    MODEL_ID,
    PACKAGED_SHA256,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    load_static_encoder,
    package_folder,
)
from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._context_relevance import PRECISION, RECALL, ContextRelevance
from tests.components import missing_component


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    if importlib.util.find_spec("wordllama") is None:
        missing_component("wordllama is not installed; pip install 'wordllama==0.4.0.post1'")
    return get_embedder(STATIC_MODEL)


def test_real_weights_give_normalised_vectors_that_rank_meaning(embedder: CachedEmbedder) -> None:
    assert embedder.model_id == MODEL_ID
    texts = [
        "How do I get a refund for my order?",
        "Refunds for orders are issued within five business days.",
        "The football final ended in a draw.",
    ]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    # The same text alone or in a batch gets the same vector (no padding in the mean).
    alone = get_embedder(STATIC_MODEL, cache_size=0).encode([texts[1]])[0]
    assert np.allclose(alone, vectors[1], atol=1e-6)


def test_vector_is_the_mean_of_the_token_rows() -> None:
    if importlib.util.find_spec("wordllama") is None:
        missing_component("wordllama is not installed; pip install 'wordllama==0.4.0.post1'")
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    folder = package_folder()
    table = load_file(str(folder / WEIGHTS_FILE))["embedding.weight"].astype(np.float32)
    ids = (
        Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        .encode("Parcels ship from Berlin.", add_special_tokens=False)
        .ids
    )
    mean = table[ids].mean(axis=0)
    expected = mean / np.linalg.norm(mean)
    got = load_static_encoder()(["Parcels ship from Berlin."])[0]
    assert np.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize(
    "value",
    ["", "   ", "x" * 1_000_000, "caf\udce9 au lait", b"\xff\xfe not utf-8 \xc3", None, 42],
)
def test_odd_text_gives_a_finite_row(embedder: CachedEmbedder, value: object) -> None:
    vectors = embedder.encode([value, "A normal sentence."])  # type: ignore[list-item]
    assert vectors.shape == (2, 256)
    assert np.isfinite(vectors).all()
    norm = float(np.linalg.norm(vectors[0]))
    assert norm == pytest.approx(1.0, abs=1e-5) or norm == 0.0


def test_empty_text_is_the_zero_vector(embedder: CachedEmbedder) -> None:
    vectors = embedder.encode(["", "Refunds take five days."])
    assert not vectors[0].any()
    assert float(vectors[0] @ vectors[1]) == 0.0


def test_missing_package_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static_embeddings, "PACKAGE", "ragtrace_no_such_wordllama_xyz")
    with pytest.raises(MissingExtraError, match=r"pip install 'wordllama==0\.4\.0\.post1'") as info:
        load_static_encoder()
    assert info.value.extra == "models"
    assert "ragtrace[models]" in str(info.value)


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    if importlib.util.find_spec("wordllama") is None:
        missing_component("wordllama is not installed; pip install 'wordllama==0.4.0.post1'")
    for name in PACKAGED_SHA256:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_folder() / name, tmp_path / name)
    return tmp_path


def test_a_copy_with_the_recorded_sha256_loads(package_copy: Path) -> None:
    vectors = load_static_encoder(package_copy)(["Refunds take five days."])
    assert vectors.shape == (1, 256)


@pytest.mark.parametrize("name", sorted(PACKAGED_SHA256))
def test_sha256_mismatch_is_refused(package_copy: Path, name: str) -> None:
    path = package_copy / name
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="sha256"):
        load_static_encoder(package_copy)


def test_missing_file_says_how_to_reinstall(package_copy: Path) -> None:
    (package_copy / WEIGHTS_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=r"wordllama==0\.4\.0\.post1"):
        load_static_encoder(package_copy)


def test_context_relevance_with_the_static_embedder(embedder: CachedEmbedder) -> None:
    record = RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="How long do refunds take?",
        chunks=(
            Chunk("The football final ended in a draw. Fans left early."),
            Chunk("Refunds take five business days. They go to the original card."),
        ),
        response="unused",
    )
    scores = {s.name: s for s in ContextRelevance(model=STATIC_MODEL).evaluate(record)}
    recall, precision = scores[RECALL], scores[PRECISION]
    assert recall.error is None and recall.model == MODEL_ID
    chunks = recall.details["chunks"]
    assert recall.details["best_chunk"] == 1
    assert chunks[1]["relevancy"] > chunks[0]["relevancy"]
    vectors = embedder.encode([record.query, "Refunds take five business days."])
    assert recall.value == pytest.approx(float(np.clip(vectors[0] @ vectors[1], 0, 1)), abs=1e-4)
    assert precision.value == pytest.approx(
        (chunks[0]["relevancy"] + chunks[1]["relevancy"]) / 2, abs=1e-4
    )
