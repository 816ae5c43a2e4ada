"""Token log-likelihoods under a causal language model, for perplexity and GPTScore.

``get_causal_lm(model)`` loads a causal LM with transformers and torch on the CPU, once per
process per (model, threads), and returns a ``CausalLM``::

    lm = get_causal_lm("/models/SmolLM2-135M-Instruct.Q4_1.gguf", name="smollm2-135m")
    [found] = lm.score([("Rewrite the text. Paris is in France. In other words,",
                         " Paris lies in France.")])
    found.mean_logprob, found.tokens, found.truncated      # -1.9, 6, False

``model`` is a ``.gguf`` file, a folder holding a Hugging Face causal model, or a Hugging Face
id already in the local cache; ``ragtrace.evaluators._perplexity.causal_lm`` adds the packaged
GGUF models (``smollm2-135m``, ``qwen2.5-coder-0.5b``) of ``ragtrace._judges.local``.
transformers de-quantises a GGUF file to float32 torch weights (needs the ``gguf`` and
``accelerate`` packages of the ``likelihood`` extra); that takes minutes on a busy CPU, so the
converted weights are kept on disk and later processes read them in seconds
(``likelihood_cache``: where, how keyed and invalidated, safe with several processes).

Why transformers and not the llama.cpp judge server: GPTScore and perplexity need the
log-probability of every token of a given text (the *prompt*), and llama.cpp's server returns
log-probabilities of generated tokens only (prompt log-probabilities are an open request
upstream in llama.cpp). Hosted litellm models are not
supported for the same reason (OpenAI dropped ``echo`` with log-probs from current models).

What is scored: the prefix is tokenised with the tokenizer's special tokens (a BOS token when
the model has one), the continuation without, and the two id lists are joined, so the scored
tokens are exactly the continuation's. ``next_tokens=(" Yes", " No")`` also gives, from the same
forward pass, the log-probability of each of those tokens coming right after the continuation
(``TokenLogProbs.next_logprobs``; a string that is several tokens counts by its first): what a
yes/no question asked of the model needs. With an empty prefix and no BOS token the first token has
no context and is not scored (as with ``model(ids, labels=ids)``). A sequence longer than the
context window is read in sliding windows: each later window keeps the ``context // 2`` tokens
before the ones it scores; ``windows`` says how many were used. Caps on huge input: the
continuation keeps its first ``max_tokens`` tokens (4,096 by default), each text is cut to 20
characters per token of its budget before tokenising (the prefix keeps its end), and
``truncated`` / ``dropped_tokens`` record any cut.

Mechanics: ``torch.set_num_threads(threads)`` is process-wide, as for the other torch backends
(default ``$RAGTRACE_MODEL_THREADS`` or 1); calls are serialised on the model; sequences are
batched with left padding (explicit position ids), at most ``batch_tokens`` padded tokens per
forward pass, and only the positions that predict scored tokens go through the output layer.
"""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._backends import likelihood_cache
from ragtrace._backends._loading import import_extra, names_a_local_path, shared, thread_count
from ragtrace._text import short_text, to_text

EXTRA = "likelihood"
DEFAULT_CONTEXT_TOKENS = 1024
DEFAULT_BATCH_TOKENS = 4096
DEFAULT_MAX_TOKENS = 4096
MIN_CONTEXT_TOKENS = 8
CHARS_PER_TOKEN_CAP = 20


@dataclass(frozen=True)
class TokenLogProbs:
    """Natural-log probabilities of the scored tokens of one continuation.

    Attributes:
        logprobs: One per scored token, in order.
        truncated: Part of the input was not read (a cap or the ``max_tokens`` limit).
        dropped_tokens: Continuation tokens cut by ``max_tokens`` (counted after the character
            cap, so a lower bound when that cap applied too).
        windows: Forward passes (sliding windows) the sequence took.
        model: The model that scored it.
        next_logprobs: Log-probabilities of the asked ``next_tokens`` right after the
            continuation, in their order (empty when none was asked).
    """

    logprobs: tuple[float, ...]
    truncated: bool
    dropped_tokens: int
    windows: int
    model: str
    next_logprobs: tuple[float, ...] = ()

    @property
    def tokens(self) -> int:
        """Number of scored tokens."""
        return len(self.logprobs)

    @property
    def mean_logprob(self) -> float:
        """Average log-probability per scored token (GPTScore's score; NaN with no token)."""
        return math.fsum(self.logprobs) / len(self.logprobs) if self.logprobs else math.nan

    @property
    def perplexity(self) -> float:
        """``exp(-mean_logprob)``; infinity when that overflows."""
        try:
            return math.exp(-self.mean_logprob)
        except OverflowError:
            return math.inf


class _Loaded:
    """Tokenizer and weights of one (model, threads), shared by every CausalLM over them."""

    def __init__(
        self,
        model_id: str,
        tokenizer: Any,
        network: Any,
        torch: Any,
        threads: int,
        source: str = "folder",
    ) -> None:
        self.model_id = model_id
        self.source = source
        self.tokenizer = tokenizer
        self.network = network
        self.torch = torch
        self.threads = threads
        self.lock = threading.Lock()
        self.max_context = _model_context(tokenizer, network.config)
        self.keeps_logits = "logits_to_keep" in inspect.signature(network.forward).parameters
        pad = getattr(tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(tokenizer, "eos_token_id", None)
        self.pad_id = int(pad) if isinstance(pad, int) else 0


@dataclass
class _Window:
    """One forward pass: token ids and the positions ``[first, len(ids))`` it scores."""

    request: int
    ids: list[int]
    first: int


class CausalLM:
    """One loaded causal LM: scores continuations given prefixes.

    Attributes:
        model_id: The model as resolved (a packaged name, a file or folder, a hub id).
        context_tokens: Tokens per forward pass (a longer sequence slides).
        threads: torch intra-op threads.
        tokenizer, network: The transformers tokenizer and model (read-only use).
        source: Where the weights came from: ``folder`` (a model folder or hub id), or for a
            GGUF file ``disk`` (its converted copy, ``likelihood_cache``), ``converted``
            (converted now and kept) or ``uncached`` (converted now, not kept).
    """

    def __init__(self, loaded: _Loaded, *, context_tokens: int) -> None:
        self._loaded = loaded
        self.model_id = loaded.model_id
        self.tokenizer = loaded.tokenizer
        self.network = loaded.network
        self.threads = loaded.threads
        self.source = loaded.source
        self.context_tokens = context_tokens

    def score(
        self,
        pairs: Sequence[tuple[object, object]],
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        next_tokens: Sequence[str] = (),
    ) -> list[TokenLogProbs]:
        """Log-probabilities of each continuation's tokens given its prefix.

        Args:
            pairs: ``(prefix, continuation)`` texts; None is empty, bytes are decoded as UTF-8
                (bad bytes replaced), lone surrogates replaced, other objects read with ``str``.
            max_tokens: Continuation tokens scored at most (the rest is dropped, recorded);
                the continuation is also cut to ``20 * max_tokens`` characters first.
            batch_tokens: Padded tokens per forward pass at most.
            next_tokens: Tokens whose log-probability right after each continuation is
                wanted too (``TokenLogProbs.next_logprobs``); each string counts by its first
                token.

        A continuation with no token to score (empty, or one token with no prefix and no BOS
        token) gets no log-probabilities (``tokens`` 0, ``mean_logprob`` NaN).

        Raises:
            ValueError: A bad ``max_tokens`` or ``batch_tokens``.
        """
        for option, value in (("max_tokens", max_tokens), ("batch_tokens", batch_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{option} must be a positive integer, got {value!r}")
        with self._loaded.lock:
            asked = [self._first_token(t) for t in next_tokens]
            prepared = [self._prepare(p, c, max_tokens) for p, c in pairs]
            windows = [
                w
                for index, (ids, first, _, _) in enumerate(prepared)
                for w in _windows(index, ids, first, self.context_tokens)
            ]
            found = self._run(windows, batch_tokens, asked)
        results = []
        for index, (_, _, truncated, dropped) in enumerate(prepared):
            mine = [found[id(w)] for w in windows if w.request == index]
            logprobs = tuple(x for part, _ in mine for x in part)
            after = mine[-1][1] if mine else ()
            results.append(
                TokenLogProbs(logprobs, truncated, dropped, len(mine), self.model_id, after)
            )
        return results

    def _first_token(self, text: str) -> int:
        ids = self._encode(to_text(text) or "", special=False)
        if not ids:
            raise ValueError(f"next token {text!r} has no token")
        return ids[0]

    def _prepare(
        self, prefix: object, continuation: object, budget: int
    ) -> tuple[list[int], int, bool, int]:
        """``(ids, first scored position, truncated, dropped continuation tokens)``."""
        head = to_text(prefix) or ""
        body = to_text(continuation) or ""
        head_cap = CHARS_PER_TOKEN_CAP * self.context_tokens
        body_cap = CHARS_PER_TOKEN_CAP * budget
        truncated = len(head) > head_cap or len(body) > body_cap
        head = short_text(head[-head_cap:], head_cap) or ""
        body = short_text(body, body_cap) or ""
        prefix_ids = self._encode(head, special=True)
        body_ids = self._encode(body, special=False)
        dropped = max(0, len(body_ids) - budget)
        if dropped:
            body_ids, truncated = body_ids[:budget], True
        ids = prefix_ids + body_ids
        return ids, max(1, len(prefix_ids)), truncated, dropped

    def _encode(self, text: str, *, special: bool) -> list[int]:
        if not text:
            if not special:
                return []
            bos = getattr(self.tokenizer, "bos_token_id", None)
            adds_bos = bool(getattr(self.tokenizer, "add_bos_token", False))
            return [int(bos)] if adds_bos and isinstance(bos, int) else []
        ids = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        return [int(t) for t in ids]

    def _run(
        self, windows: list[_Window], batch_tokens: int, asked: Sequence[int] = ()
    ) -> dict[int, tuple[list[float], tuple[float, ...]]]:
        """Scored log-probs of every window and those of the ``asked`` next tokens after it,
        keyed by ``id(window)``; longest first, batched."""
        found: dict[int, tuple[list[float], tuple[float, ...]]] = {}
        ordered = sorted(windows, key=lambda w: len(w.ids), reverse=True)
        start = 0
        while start < len(ordered):
            width = len(ordered[start].ids)
            count = max(1, batch_tokens // width)
            batch = ordered[start : start + count]
            for window, logprobs in zip(batch, self._forward(batch, asked), strict=True):
                found[id(window)] = logprobs
            start += count
        return found

    def _forward(
        self, batch: list[_Window], asked: Sequence[int] = ()
    ) -> list[tuple[list[float], tuple[float, ...]]]:
        """Scored log-probs of each window, and of the ``asked`` tokens after its last one:
        one left-padded forward pass.

        Left padding puts every scored token at the end of its row, so only the last
        ``keep`` positions go through the output layer (``logits_to_keep``, when the model
        takes it): a GPTScore prompt scores a few tokens of a long prompt, and the output
        layer over a 150k-token vocabulary costs as much as the rest of a small model.
        """
        torch = self._loaded.torch
        width = max(len(w.ids) for w in batch)
        ids = torch.full((len(batch), width), self._loaded.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, window in enumerate(batch):
            ids[row, width - len(window.ids) :] = torch.tensor(window.ids, dtype=torch.long)
            mask[row, width - len(window.ids) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        keep = max(len(w.ids) - w.first for w in batch) + 1
        extra: dict[str, Any] = {"logits_to_keep": keep} if self._loaded.keeps_logits else {}
        with torch.no_grad():
            logits = self.network(
                input_ids=ids, attention_mask=mask, position_ids=positions, **extra
            ).logits
        kept = logits.shape[1]
        logp = torch.log_softmax(logits.to(torch.float32), dim=-1)
        results = []
        for row, window in enumerate(batch):
            scored = len(window.ids) - window.first
            targets = ids[row, width - scored :].unsqueeze(-1)
            picked = logp[row, kept - 1 - scored : kept - 1].gather(-1, targets).squeeze(-1)
            after = tuple(float(logp[row, kept - 1, t]) for t in asked)
            results.append(([float(x) for x in picked.to(torch.float64).tolist()], after))
        return results

    def __repr__(self) -> str:
        return f"<CausalLM {self.model_id!r} context={self.context_tokens}>"


def _windows(request: int, ids: list[int], first: int, size: int) -> list[_Window]:
    """Forward passes of at most ``size`` tokens over ``ids`` scoring positions ``first..`` once.

    The first window takes as much context before ``first`` as fits; each later one keeps the
    ``size // 2`` tokens before the ones it scores.
    """
    keep = size // 2
    found = []
    n, pos = len(ids), first
    while pos < n:
        before = max(keep, size - (n - pos)) if pos == first else keep
        start = max(0, pos - before)
        end = min(n, start + size)
        found.append(_Window(request, ids[start:end], pos - start))
        pos = end
    return found


def get_causal_lm(
    model: str | Path,
    *,
    threads: int | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    name: str | None = None,
) -> CausalLM:
    """A causal LM over ``model``, loaded once per process per (model, threads).

    Args:
        model: A ``.gguf`` file, a model folder, or a Hugging Face id in the local cache
            (``ragtrace.evaluators._perplexity.causal_lm`` also takes the packaged models).
        threads: torch intra-op threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
        context_tokens: Tokens per forward pass, at most the model's own limit (longer
            sequences are read in sliding windows). Larger is slower on a CPU.
        name: What to call the model in results (default: ``model`` as given).

    Raises:
        FileNotFoundError: ``model`` looks like a path and nothing (or no .gguf) is there.
        OSError: The model could not be loaded (not cached, not a causal LM, ...).
        ValueError: Bad ``threads`` or ``context_tokens``.
        MissingExtraError: torch, transformers, gguf or accelerate (the ``likelihood`` extra)
            is not installed.
    """
    if (
        isinstance(context_tokens, bool)
        or not isinstance(context_tokens, int)
        or context_tokens < MIN_CONTEXT_TOKENS
    ):
        raise ValueError(
            f"context_tokens must be an integer >= {MIN_CONTEXT_TOKENS}, got {context_tokens!r}"
        )
    n_threads = thread_count(threads)
    folder, gguf_file, model_id = _location(model)
    model_id = name or model_id
    key = ("likelihood", model_id, n_threads)
    loaded = shared(key, lambda: _load(folder, gguf_file, model_id, n_threads))
    if context_tokens > loaded.max_context:
        raise ValueError(
            f"context_tokens {context_tokens} exceeds what {model_id!r} reads "
            f"({loaded.max_context})"
        )
    return CausalLM(loaded, context_tokens=context_tokens)


def _location(model: str | Path) -> tuple[str, str | None, str]:
    """``(folder or hub id, GGUF file name or None, model id)``."""
    if not isinstance(model, str | Path) or not str(model).strip():
        raise ValueError(f"model must be a .gguf file, a folder or a hub id, got {model!r}")
    text = str(model).strip()
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise FileNotFoundError(
                f"causal model {text!r} is a file but not a .gguf one; give a .gguf file or the "
                "folder holding config.json, the weights and the tokenizer"
            )
        return str(path.parent), path.name, str(path)
    if path.is_dir():
        return str(path), None, str(path)
    if names_a_local_path(model, (".gguf",)):
        raise FileNotFoundError(
            f"causal model {text!r} not found: give a .gguf file, a model folder or a Hugging "
            "Face id in the local cache"
        )
    return text, None, text


def _load(folder: str, gguf_file: str | None, model_id: str, threads: int) -> _Loaded:
    torch = import_extra("torch", EXTRA)
    transformers = import_extra("transformers", EXTRA)
    if gguf_file is not None:
        import_extra("gguf", EXTRA)
        import_extra("accelerate", EXTRA)
    torch.set_num_threads(threads)

    def read(where: str | Path, **extra: Any) -> tuple[Any, Any]:
        tokenizer = transformers.AutoTokenizer.from_pretrained(where, **extra)
        network = transformers.AutoModelForCausalLM.from_pretrained(
            where, dtype=torch.float32, **extra
        )
        return tokenizer, network

    try:
        if gguf_file is None:
            tokenizer, network = read(folder)
            source = "folder"
        else:
            (tokenizer, network), source = likelihood_cache.load_converted(
                Path(folder) / gguf_file, lambda: read(folder, gguf_file=gguf_file), read
            )
    except (OSError, ValueError, KeyError) as exc:
        raise OSError(
            f"cannot load causal model {model_id!r}: {exc} (ragtrace runs offline: give a "
            "packaged model, a .gguf file, a folder, or a model already in the Hugging Face "
            "cache; hosted litellm models are not supported, they return no prompt "
            "log-probabilities)"
        ) from exc
    network.eval()
    return _Loaded(model_id, tokenizer, network, torch, threads, source)


def _model_context(tokenizer: Any, config: Any) -> int:
    """Tokens the model reads: position embeddings and the tokenizer's limit, the smaller."""
    limits = [1_000_000]
    for value in (
        getattr(config, "max_position_embeddings", None),
        getattr(config, "n_positions", None),
        getattr(tokenizer, "model_max_length", None),
    ):
        if isinstance(value, int) and 0 < value < 1_000_000:
            limits.append(value)
    return min(limits)
