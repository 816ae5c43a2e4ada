"""The int8 copy of the packaged MiniLM, the default embedder: derived once, named by its source,
close to the float32 model, a sentence's vector the same alone or among others, and the fallbacks
when it cannot be kept or derived."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ragtrace._backends import dynamic_int8, embeddings
from ragtrace._backends._loading import MissingExtraError, forget
from ragtrace._backends.embeddings import (
    DISABLED_OPTIMIZERS,
    INT8_MODEL_ID,
    _load,
    _packaged_onnx,
    _packaged_tokenizer,
    configured_backend,
    get_embedder,
)
from ragtrace._backends.encoders import OnnxEncoder

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
        assert int8.model_id == INT8_MODEL_ID and int8.model_id != exact.model_id
        together = int8.encode(SENTENCES)
        alone = np.stack([int8.encode([s])[0] for s in SENTENCES])
        assert np.array_equal(together, alone)
        cosines = (together * exact.encode(SENTENCES)).sum(axis=1)
        assert cosines.min() > 0.97 and cosines.mean() > 0.985
        stats = int8.encoder_stats
        assert stats is not None and stats.passes == stats.texts  # one sentence a pass
    finally:
        forget("embedder")


def test_the_int8_session_runs_without_the_fusion_under_its_own_model_id(
    cache_dir: Path,
) -> None:
    assert _load(None, "auto", None, 1, 64)[0] == INT8_MODEL_ID  # the default
    model_id, encoder = _load(None, "onnx-int8", None, 1, 64)
    assert isinstance(encoder, OnnxEncoder)
    assert encoder.disabled_optimizers == DISABLED_OPTIMIZERS
    assert model_id == INT8_MODEL_ID and "unfused" in model_id
    # its vectors are not the fused session's, so they must not share a cache key with them
    fused = OnnxEncoder(dynamic_int8.int8_copy(_packaged_onnx()), _packaged_tokenizer(), 1, 1)
    cosines = (encoder(SENTENCES) * fused(SENTENCES)).sum(axis=1)
    assert cosines.min() > 0.99 and not np.allclose(cosines, 1.0, atol=1e-5)


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


def test_a_cache_folder_that_cannot_be_written_keeps_the_copy_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")  # fails for root too
    monkeypatch.setenv(dynamic_int8.CACHE_ENV, str(blocked))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with caplog.at_level(logging.WARNING, logger=dynamic_int8.__name__):
        copy = dynamic_int8.int8_copy(_packaged_onnx())
    assert copy.is_file() and copy.is_relative_to(tmp_path / "tmp")
    assert any("cannot keep the int8 copy" in r.getMessage() for r in caplog.records)
    with pytest.raises(OSError):  # a folder given explicitly is not replaced
        dynamic_int8.int8_copy(_packaged_onnx(), directory=blocked / "models")


def test_auto_falls_back_to_float32_with_a_warning_when_the_copy_cannot_be_derived(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # the quantizer's package is missing
    with caplog.at_level(logging.WARNING, logger=embeddings.__name__):
        model_id, encoder = _load(None, "auto", None, 1, 64)
    assert model_id == embeddings.FLOAT32_MODEL_ID and isinstance(encoder, OnnxEncoder)
    assert any("int8 embedder is unavailable" in r.getMessage() for r in caplog.records)
    with pytest.raises(MissingExtraError, match="onnx"):
        _load(None, "onnx-int8", None, 1, 64)


def test_a_model_fitted_on_float32_vectors_gets_the_float32_backend_whatever_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for configured in (None, "auto", "onnx-int8", "onnx"):
        if configured is None:
            monkeypatch.delenv(embeddings.BACKEND_ENV, raising=False)
        else:
            monkeypatch.setenv(embeddings.BACKEND_ENV, configured)
        assert embeddings.float32_backend() == "onnx"
    monkeypatch.setenv(embeddings.BACKEND_ENV, "sentence-transformers")
    assert embeddings.float32_backend() == "sentence-transformers"


def test_models_prepare_derives_the_copy_the_default_embedder_then_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, dynamic_int8.CACHE_ENV: str(tmp_path)}
    env.pop(embeddings.BACKEND_ENV, None)
    command = [sys.executable, "-m", "ragtrace", "models", "prepare"]
    first = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert first.returncode == 0, first.stderr
    printed = Path(first.stdout.strip().split(": ", 1)[1])
    assert first.stdout.startswith(f"ok    {INT8_MODEL_ID}: ")
    assert printed.is_file() and printed.parent == tmp_path / "models"
    made = printed.stat().st_mtime_ns
    again = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 0 and again.stdout == first.stdout
    assert printed.stat().st_mtime_ns == made  # found, not derived again
    # the default embedder, in this process, loads that very file
    monkeypatch.setenv(dynamic_int8.CACHE_ENV, str(tmp_path))
    assert embeddings.int8_model() == printed
    # without the quantizer's package (and no copy on disk yet): a one-line error, exit 1
    env[dynamic_int8.CACHE_ENV] = str(tmp_path / "empty")
    missing = "import sys; sys.modules['onnx'] = None; from ragtrace._cli import main; "
    missing += "sys.exit(main(['models', 'prepare']))"
    failed = subprocess.run(
        [sys.executable, "-c", missing],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith("ragtrace models prepare: ") and "onnx" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
