"""Static sentence embeddings: WordLlama's token table, averaged, with no neural network to run.

A static embedder keeps one vector per token; a sentence's vector is the mean of its tokens'
vectors, so embedding costs a tokenizer call and a table lookup (a fraction of a
millisecond a sentence, against milliseconds for MiniLM). The weights come from the PyPI package
``wordllama`` (MIT; ``pip install wordllama==0.4.0.post1``, in the ``models`` extra): its wheel
carries ``l2_supercat_256.safetensors`` (32,000 tokens x 256 dimensions, float16, 16 MB) and the
matching ``tokenizer.json``. Only those two files are read, with ``safetensors`` and
``tokenizers``; wordllama's own code is never imported (it would pull pydantic, toml and a
download path). Both files are checked against the sha256 recorded here before first use.

Select it with ``model="wordllama"`` wherever an embedding model is accepted
(``get_embedder("wordllama")``, ``ContextRelevance(model="wordllama")``); it goes through the
same ``CachedEmbedder`` (LRU cache, the pool's shared cache) as MiniLM. Vectors are
L2-normalised float32 rows; a text with no token gets the zero vector (cosine 0 with anything).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtrace._backends._loading import MissingExtraError, import_extra
from ragtrace._backends.model_files import models, verified

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

EXTRA = "models"
MODEL_ID = "wordllama-l2-supercat-256"
PACKAGE = "wordllama"
PACKAGE_VERSION = "0.4.0.post1"
WEIGHTS_FILE = "weights/l2_supercat_256.safetensors"
TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"
TENSOR = "embedding.weight"
MODEL_FILES = "wordllama-l2-supercat"  # ragtrace._backends.model_files
PACKAGED_SHA256 = models()[MODEL_FILES].files
MAX_TOKENS = 2_048  # callers cut texts first (2,000 characters); this bounds anything else
INSTALL = f"pip install '{PACKAGE}=={PACKAGE_VERSION}' (or 'ragtrace[{EXTRA}]')"


def package_folder() -> Path:
    """The installed ``wordllama`` package's folder, found without importing it.

    Raises:
        MissingExtraError: The package is not installed.
    """
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise MissingExtraError(PACKAGE, EXTRA, LookupError("package not found"), hint=INSTALL)
    return Path(locations[0])


def load_static_encoder(folder: Path | None = None) -> StaticEncoder:
    """An encoder over the packaged WordLlama table (``folder``: the package's, by default).

    Raises:
        MissingExtraError: ``wordllama`` (or numpy, safetensors, tokenizers) is not installed.
        FileNotFoundError: The package lacks its weights or tokenizer file.
        RuntimeError: A file does not have the sha256 recorded here.
    """
    np = import_extra("numpy", EXTRA)
    safetensors_numpy = import_extra("safetensors.numpy", EXTRA)
    tokenizers = import_extra("tokenizers", EXTRA)
    base = verified(MODEL_FILES, package_folder() if folder is None else Path(folder))
    paths = {name: base / name for name in PACKAGED_SHA256}
    table = safetensors_numpy.load_file(str(paths[WEIGHTS_FILE]))[TENSOR].astype(np.float32)
    tokenizer = tokenizers.Tokenizer.from_file(str(paths[TOKENIZER_FILE]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return StaticEncoder(np, table, tokenizer)


class StaticEncoder:
    """Texts -> the L2-normalised mean of their tokens' rows in ``table``."""

    def __init__(self, np: Any, table: Any, tokenizer: Any) -> None:
        self._np = np
        self._table = table
        self._tokenizer = tokenizer

    def __call__(self, texts: list[str]) -> Vectors:
        np = self._np
        dim = self._table.shape[1]
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)  # type: ignore[no-any-return]
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        counts = np.array([len(e.ids) for e in encodings], dtype=np.int64)
        ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64)
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)
        sums = np.zeros((len(texts), dim), dtype=np.float32)
        filled = counts > 0
        if filled.any():
            starts = np.cumsum(counts) - counts
            sums[filled] = np.add.reduceat(self._table[ids], starts[filled], axis=0)
        means = sums / np.maximum(counts, 1)[:, None].astype(np.float32)
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        return means / np.clip(norms, 1e-12, None)  # type: ignore[no-any-return]
