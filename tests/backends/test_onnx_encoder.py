"""The packaged float32 MiniLM: a sentence's vector the same, bit for bit, alone or in any pass;
its session without onnxruntime's SkipLayerNormalization fusion, its vectors those of the fused
session but for float rounding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]  # no type hints
import pytest

from ragtrace._backends import encoders
from ragtrace._backends.embeddings import (
    DISABLED_OPTIMIZERS,
    _load,
    _packaged_onnx,
    _packaged_tokenizer,
)
from ragtrace._backends.encoders import OnnxEncoder
from ragtrace._backends.length_batches import length_groups

SENTENCES = [
    "How do I reset my router?",
    "Hold the reset button on the back of the router for ten seconds.",
    "The status light blinks green while the router restarts, then turns solid white.",
    "Invoices are issued on the first business day of each month.",
    "Refunds reach the card used for the purchase within five to ten business days, "
    "and a receipt is sent to the address on the account once the refund is issued.",
    "Yes.",
]


def test_a_vector_is_the_same_alone_and_in_any_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = OnnxEncoder(_packaged_onnx(), _packaged_tokenizer(), 1, 64)
    alone = np.stack([encoder([s])[0] for s in SENTENCES])
    for pass_cost in (0, 24, 10_000):  # a pass each, the default cut, one pass for all

        def grouped(
            lengths: list[int], *, max_texts: int, cost: int = pass_cost
        ) -> list[list[int]]:
            return length_groups(lengths, max_texts=max_texts, pass_cost=cost)

        monkeypatch.setattr(encoders, "length_groups", grouped)
        passes = encoder.stats.passes
        together = encoder(SENTENCES)
        assert np.array_equal(together, alone)
        assert (encoder.stats.passes - passes == len(SENTENCES)) == (pass_cost == 0)


def test_the_float32_session_runs_without_the_fusion_and_keeps_its_vectors(
    tmp_path: Path,
) -> None:
    _, default = _load(None, "onnx", None, 1, 64)
    assert isinstance(default, OnnxEncoder)
    assert default.disabled_optimizers == DISABLED_OPTIMIZERS
    # onnxruntime ignores a name it does not know: the names must remove the fused node.
    for disabled, expect_fused in ((DISABLED_OPTIMIZERS, False), ((), True)):
        options = ort.SessionOptions()
        written = tmp_path / f"optimized-{len(disabled)}.onnx"
        options.optimized_model_filepath = str(written)
        ort.InferenceSession(
            str(_packaged_onnx()),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(disabled),
        )
        op_types = {node.op_type for node in onnx.load(str(written)).graph.node}
        assert ("SkipLayerNormalization" in op_types) == expect_fused
    fused = OnnxEncoder(_packaged_onnx(), _packaged_tokenizer(), 1, 64)
    unfused, with_fusion = default(SENTENCES), fused(SENTENCES)
    cosines = (unfused * with_fusion).sum(axis=1)
    assert np.all(np.abs(cosines - 1.0) <= 1e-4)
    # the rounding differs, so the session really is another one
    assert not np.array_equal(unfused, with_fusion)
