"""The packaged float32 MiniLM: a sentence's vector the same, bit for bit, alone or in any pass."""

from __future__ import annotations

import numpy as np
import pytest

from ragtrace._backends import encoders
from ragtrace._backends.embeddings import _packaged_onnx, _packaged_tokenizer
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
