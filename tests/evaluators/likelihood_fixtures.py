"""The real SmolLM2-135M causal LM for the perplexity and GPTScore tests, loaded once.

A missing model package or extra skips locally and FAILS under ``CI=true``. ``reference_logprobs``
computes token log-probabilities directly with the model, independently of the backend's
batching, padding and windows, for the tests to compare against. ``uniform_model`` is a tiny
model folder whose answers are known exactly (every token has probability 1/V).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends._loading import MissingExtraError
from ragtrace._backends.likelihood import CausalLM
from ragtrace.evaluators._perplexity import causal_lm
from tests.components import missing_component

SMOL = "smollm2-135m"
UNIFORM_VOCAB = 49152
UNIFORM_CONTEXT = 64


@pytest.fixture(scope="session")
def smol_lm() -> CausalLM:
    try:
        return causal_lm(SMOL, threads=None, context_tokens=1024)
    except MissingExtraError as exc:
        missing_component(f"the likelihood backend needs {exc}")


@pytest.fixture(scope="session")
def uniform_model(smol_lm: CausalLM, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama folder whose output layer is all zeros: every token has probability 1/V.

    So the right answers are known exactly: perplexity V and an average NLL of ln V per token,
    whatever the text. It reads 64 positions at most, and uses SmolLM2's tokenizer (V 49,152).
    """
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=UNIFORM_VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=UNIFORM_CONTEXT,
        tie_word_embeddings=False,
    )
    network = transformers.LlamaForCausalLM(config)
    network.lm_head.weight.data.zero_()
    folder = tmp_path_factory.mktemp("uniform-llama")
    network.save_pretrained(folder)
    smol_lm.tokenizer.save_pretrained(folder)
    assert len(smol_lm.tokenizer) <= UNIFORM_VOCAB
    return folder


def reference_logprobs(lm: CausalLM, prefix: str, target: str) -> list[float]:
    """log p(target token | everything before it), by one unpadded forward pass."""
    import torch

    head: list[int] = lm.tokenizer(prefix)["input_ids"] if prefix else []
    ids = head + lm.tokenizer(target, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits: Any = lm.network(torch.tensor([ids])).logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1)
    first = max(1, len(head))
    return [float(logp[i - 1, ids[i]]) for i in range(first, len(ids))]
