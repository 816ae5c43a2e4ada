"""Transformer sentence encoders behind ``ragtrace._backends.embeddings``, and what they cost.

``OnnxEncoder`` runs an ONNX export of a sentence-transformers model with onnxruntime (no torch
import); ``TorchEncoder`` runs any sentence-transformers model. Both take a list of texts and
return one L2-normalised float32 row per text (the mean of its token states), and both cut the
texts into forward passes of similar token counts (``ragtrace._backends.length_batches``), so
little compute goes to padding.

Each keeps ``stats`` (``EncoderStats``): calls, forward passes, texts, tokens, token positions
computed (tokens plus padding) and the CPU seconds of the calling thread inside it (all of the
encoder's CPU with one model thread, the default). ``benchmarks/cost_profile.py`` prints them
per record: the per-model-call view of where a record's CPU goes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtrace._backends._loading import import_extra
from ragtrace._backends.length_batches import length_groups

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

EXTRA = "models"
MAX_TOKENS = 256


@dataclass
class EncoderStats:
    """What an encoder has done so far (only growing).

    Attributes:
        calls: Calls (each a list of texts).
        passes: Forward passes through the model.
        texts: Texts encoded.
        tokens: Their tokens (after truncation).
        positions: Token positions computed: tokens plus the padding of each pass.
        cpu_s: CPU seconds of the calling threads inside the encoder.
    """

    calls: int = 0
    passes: int = 0
    texts: int = 0
    tokens: int = 0
    positions: int = 0
    cpu_s: float = 0.0


class _Counting:
    """Stats kept under a lock (an encoder may be called from several threads)."""

    def __init__(self) -> None:
        self.stats = EncoderStats()
        self._stats_lock = threading.Lock()

    def _count(self, texts: int, passes: int, tokens: int, positions: int, cpu_s: float) -> None:
        with self._stats_lock:
            s = self.stats
            s.calls += 1
            s.passes += passes
            s.texts += texts
            s.tokens += tokens
            s.positions += positions
            s.cpu_s += cpu_s


class OnnxEncoder(_Counting):
    """A sentence-transformers model exported to ONNX, with its ``tokenizer.json``.

    Args:
        path: The ``.onnx`` file (inputs ``input_ids``, ``attention_mask`` and optionally
            ``token_type_ids``; first output the token states).
        tokenizer_path: The model's ``tokenizer.json``.
        threads: onnxruntime intra-op threads.
        batch_size: Most texts per forward pass.
        disabled_optimizers: onnxruntime graph rewrites not to apply to the model, by name (a
            name this onnxruntime does not know is ignored); kept as ``disabled_optimizers``.
    """

    def __init__(
        self,
        path: Path,
        tokenizer_path: Path,
        threads: int,
        batch_size: int,
        disabled_optimizers: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._np = import_extra("numpy", EXTRA)
        ort = import_extra("onnxruntime", EXTRA)
        tokenizers = import_extra("tokenizers", EXTRA)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.disabled_optimizers = tuple(disabled_optimizers)
        self._session = ort.InferenceSession(
            str(path),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(self.disabled_optimizers),
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # each pass is padded to its own longest text
        self._batch_size = batch_size

    def canonical(self, text: str) -> str:
        """``text`` cut where the model stops reading it (after ``MAX_TOKENS`` tokens, special
        ones included): the same vector, under a key that every longer text with the same
        start shares. A text the model reads whole is returned as it is."""
        encoding = self._tokenizer.encode(text)
        if not encoding.overflowing:
            return text
        ends = [
            end
            for (_, end), special in zip(
                encoding.offsets, encoding.special_tokens_mask, strict=True
            )
            if not special
        ]
        return text[: ends[-1]] if ends else text

    def __call__(self, texts: list[str]) -> Vectors:
        np = self._np
        started = time.thread_time()
        rows = [e.ids for e in self._tokenizer.encode_batch(texts)]
        lengths = [len(r) for r in rows]
        pooled: list[Any] = [None] * len(texts)
        groups = length_groups(lengths, max_texts=self._batch_size)
        positions = 0
        for group in groups:
            width = lengths[group[0]]
            positions += width * len(group)
            ids = np.zeros((len(group), width), dtype=np.int64)
            mask = np.zeros((len(group), width), dtype=np.int64)
            for row, index in enumerate(group):
                ids[row, : lengths[index]] = rows[index]
                mask[row, : lengths[index]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            means = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            for row, index in enumerate(group):
                pooled[index] = means[row]
        vectors = normalised(np, np.stack(pooled))
        self._count(len(texts), len(groups), sum(lengths), positions, time.thread_time() - started)
        return vectors


class TorchEncoder(_Counting):
    """A sentence-transformers model run with torch.

    Args:
        model: A model id or folder.
        threads: torch intra-op threads (process-wide: torch has one setting).
        batch_size: Most texts per forward pass.
    """

    def __init__(self, model: str | Path, threads: int, batch_size: int) -> None:
        super().__init__()
        torch = import_extra("torch", EXTRA)
        st = import_extra("sentence_transformers", EXTRA)
        self._np = import_extra("numpy", EXTRA)
        torch.set_num_threads(threads)
        self._model = st.SentenceTransformer(str(model), device="cpu")
        self._batch_size = batch_size

    def __call__(self, texts: list[str]) -> Vectors:
        np = self._np
        started = time.thread_time()
        ids = self._model.tokenizer(texts, truncation=True, max_length=self._model.max_seq_length)
        lengths = [len(i) for i in ids["input_ids"]]
        vectors: list[Any] = [None] * len(texts)
        groups = length_groups(lengths, max_texts=self._batch_size)
        for group in groups:
            found = self._model.encode(
                [texts[i] for i in group],
                batch_size=len(group),
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for row, index in enumerate(group):
                vectors[index] = found[row]
        positions = sum(lengths[g[0]] * len(g) for g in groups)
        out = normalised(np, np.stack(vectors))
        self._count(len(texts), len(groups), sum(lengths), positions, time.thread_time() - started)
        return out


def normalised(np: Any, vectors: Any) -> Vectors:
    """``vectors`` as float32 rows of length 1 (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)  # type: ignore[no-any-return]
