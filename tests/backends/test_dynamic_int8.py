"""The int8 copy of the packaged MiniLM: derived once, named by its source, close to the float32
model, and a sentence's vector the same alone or among others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtrace._backends import dynamic_int8
from ragtrace._backends._loading import forget
from ragtrace._backends.embeddings import _packaged_onnx, configured_backend, get_embedder

SENTENCES = [
    "How do I reset my router?",
    "Hold the reset button on the back of the router for ten seconds.",
    "The status light blinks green while the router restarts, then turns solid white.",
    "Invoices are issued on the first business day of each month.",
]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(dynamic_int8.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_the_copy_is_derived_once_and_named_by_its_source_and_recipe(cache_dir: Path) -> None:
    source = _packaged_onnx()
    copy = dynamic_int8.int8_copy(source)
    assert copy.parent == cache_dir / "models"
    assert dynamic_int8.RECIPE in copy.name and copy.name.startswith(source.stem)
    made = copy.stat().st_mtime_ns
    assert dynamic_int8.int8_copy(source) == copy
    assert copy.stat().st_mtime_ns == made  # found, not derived again
    assert not list(copy.parent.glob(".derive-*"))  # no half-written file left behind


def test_int8_vectors_are_close_to_float32_and_independent_of_their_batch(
    cache_dir: Path,
) -> None:
    forget("embedder")
    try:
        int8 = get_embedder(backend="onnx-int8", cache_size=0)
        exact = get_embedder(backend="onnx", cache_size=0)
        assert int8.model_id.endswith("onnx-dynamic-int8") and int8.model_id != exact.model_id
        together = int8.encode(SENTENCES)
        alone = np.stack([int8.encode([s])[0] for s in SENTENCES])
        assert np.array_equal(together, alone)
        cosines = (together * exact.encode(SENTENCES)).sum(axis=1)
        assert cosines.min() > 0.97 and cosines.mean() > 0.985
        stats = int8.encoder_stats
        assert stats is not None and stats.passes == stats.texts  # one sentence a pass
    finally:
        forget("embedder")


def test_the_backend_comes_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAGTRACE_EMBEDDING_BACKEND", raising=False)
    assert configured_backend() == "auto"
    monkeypatch.setenv("RAGTRACE_EMBEDDING_BACKEND", "onnx-int8")
    assert configured_backend() == "onnx-int8"
    assert configured_backend("onnx") == "onnx"
    monkeypatch.setenv("RAGTRACE_EMBEDDING_BACKEND", "fp8")
    with pytest.raises(ValueError, match=r"RAGTRACE_EMBEDDING_BACKEND.*onnx-int8.*fp8"):
        configured_backend()
    with pytest.raises(ValueError, match="must be one of"):
        configured_backend("tensorrt")
