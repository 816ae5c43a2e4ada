"""The model cards shipped beside the packaged weights stay readable and match those weights."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragtrace.evaluators._faithfulness.detector import (
    CROSSENCODER_RESPONSE_WEIGHTS,
    CROSSENCODER_WEIGHTS,
    DATA,
    STACKED_WEIGHTS,
    TASK_WEIGHTS,
    ShippedWeights,
)

CARDS = sorted(DATA.glob("*.md"))


def test_both_cards_are_shipped() -> None:
    assert [c.name for c in CARDS] == ["SUPPORT_MODEL.md", "TOXICITY_MODEL.md"]


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.name)
def test_card_is_small_with_no_repeated_paragraph(card: Path) -> None:
    text = card.read_text(encoding="utf-8")
    assert len(text) < 32_000, f"{card.name} is {len(text):,} characters"
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    repeated = {p[:60] for p in paragraphs if paragraphs.count(p) > 1}
    assert not repeated
    assert text.startswith("# Model card")
    assert "**Licence.**" in text


def test_support_card_names_the_shipped_weights_and_their_figures() -> None:
    text = (DATA / "SUPPORT_MODEL.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(CROSSENCODER_WEIGHTS.read_bytes()).hexdigest()
    assert digest in text
    assert f"{CROSSENCODER_WEIGHTS.stat().st_size:,} bytes" in text
    shipped = (
        (TASK_WEIGHTS, None),
        (ShippedWeights.for_embedder("wordllama").tasks, None),
        (STACKED_WEIGHTS, None),
        (CROSSENCODER_RESPONSE_WEIGHTS, None),
    )
    for weights, key in shipped:
        cv = json.loads(weights.read_text(encoding="utf-8"))["info"]["cv_response_level"]
        for slice_ in ("ragtruth/QA", "ragtruth/Summary"):
            figures = cv[slice_][key] if key else cv[slice_]
            assert f"{figures['balanced_accuracy']:.3f}" in text, (weights.name, slice_)
