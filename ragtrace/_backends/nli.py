"""Pair classifiers: NLI models and cross-encoders that read (premise, hypothesis) together.

``get_nli(model)`` loads any Hugging Face sequence-classification model (a hub id already in
the local cache, or a folder) with transformers and torch on the CPU, and returns a
``PairClassifier``::

    nli = get_nli("/models/nli-deberta-v3-small")
    nli.predict([("The cat sat on the mat.", "A cat is sitting.")])
    # [{"entailment": 0.97, "neutral": 0.02, "contradiction": 0.01}]
    nli.entailment([("The cat sat on the mat.", "A cat is sitting.")])   # [0.97]

Labels: a model with several outputs gets a softmax over its logits, one probability per label
name. The names come from ``label_map`` (``{"entailment": 0, "neutral": 1, "contradiction": 2}``:
every output index named exactly once) or, when none is given, from the model's
``config.id2label`` provided those names are standard NLI labels (``entailment``, ``neutral``,
``contradiction``, ``not_entailment``; any case). A model with a single output is a
cross-encoder: its logit goes through a sigmoid and is returned under the one name of
``label_map`` (default ``score``); ``entailment()`` returns that value.

No NLI model ships in a registry package here, so nothing is loaded by default: pass a model.

Mechanics: the tokenizer and weights are loaded once per (model, threads) through
``ragtrace._backends._loading.shared`` when ``get_nli`` is first called for them (a wrong
``label_map`` therefore raises there, not at the first prediction); the model is put in eval
mode and run under ``torch.no_grad()`` in batches of ``batch_size`` pairs, each pair truncated
(longest side first) to the model's maximum length (the smaller of the tokenizer's
``model_max_length`` and the position embeddings, or ``max_length`` if lower). Each text is first
cut to ``20 * max_length`` characters so that a multi-megabyte input is never tokenised whole.
Texts are made safe first: None becomes "", bytes are decoded, lone surrogates become U+FFFD.
Calls from several threads are serialised on the model (a fast tokenizer must not be used by two
threads at once); ``torch.set_num_threads(threads)`` is process-wide, as for the embedder.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrace._backends._loading import import_extra, names_a_local_path, shared, thread_count
from ragtrace._text import short_text

EXTRA = "models"
STANDARD_LABELS = frozenset({"entailment", "neutral", "contradiction", "not_entailment"})
SINGLE_LOGIT_LABEL = "score"
ENTAILMENT = "entailment"
DEFAULT_MAX_LENGTH = 512
CHARS_PER_TOKEN_CAP = 20
_POSITION_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer"})
_GENERIC_LABEL = re.compile(r"label_\d+")


class _Loaded:
    """Tokenizer and model of one (model, threads), shared by every PairClassifier over them."""

    def __init__(self, model_id: str, tokenizer: Any, network: Any, torch: Any) -> None:
        self.model_id = model_id
        self.tokenizer = tokenizer
        self.network = network
        self.torch = torch
        self.lock = threading.Lock()
        config = network.config
        self.num_labels = int(config.num_labels)
        self.id2label = {int(k): str(v) for k, v in dict(config.id2label or {}).items()}
        self.max_length = _model_max_length(tokenizer, config)


class PairClassifier:
    """Scores (premise, hypothesis) pairs with one loaded model and a fixed label map.

    Attributes:
        model_id: The model as given to ``get_nli``.
        labels: Label name -> output index.
        single_logit: True for a one-output cross-encoder (sigmoid), False for softmax.
        batch_size: Pairs per forward pass.
        max_length: Tokens per pair after truncation.
    """

    def __init__(
        self,
        loaded: _Loaded,
        labels: Mapping[str, int],
        *,
        batch_size: int,
        max_length: int,
    ) -> None:
        self._loaded = loaded
        self.model_id = loaded.model_id
        self.labels = dict(labels)
        self.single_logit = loaded.num_labels == 1
        self.batch_size = batch_size
        self.max_length = max_length

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
        """One ``{label: probability}`` per pair, in order (softmax, or sigmoid for one logit)."""
        texts = [self._pair(i, pair) for i, pair in enumerate(pairs)]
        results: list[dict[str, float]] = []
        for start in range(0, len(texts), self.batch_size):
            logits = self._logits(texts[start : start + self.batch_size])
            results.extend(self._probabilities(row) for row in logits)
        return results

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probability that each premise entails its hypothesis (a cross-encoder's score).

        Raises:
            ValueError: The label map has no ``entailment`` label and the model has more
                than one output.
        """
        if ENTAILMENT in self.labels:
            name = ENTAILMENT
        elif self.single_logit:
            name = next(iter(self.labels))
        else:
            raise ValueError(
                f"NLI model {self.model_id!r} has no {ENTAILMENT!r} label (labels: "
                f"{sorted(self.labels)}); pass label_map naming the entailment output"
            )
        return [p[name] for p in self.predict(pairs)]

    def _pair(self, index: int, pair: object) -> tuple[str, str]:
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(
                f"pair {index} must be a (premise, hypothesis) tuple, got {pair!r:.80}"
            )
        limit = CHARS_PER_TOKEN_CAP * self.max_length
        return short_text(pair[0], limit) or "", short_text(pair[1], limit) or ""

    def _logits(self, batch: list[tuple[str, str]]) -> list[list[float]]:
        loaded = self._loaded
        torch = loaded.torch
        with loaded.lock:
            encoded = loaded.tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.no_grad():
                logits = loaded.network(**encoded).logits
        return logits.to(torch.float64).tolist()  # type: ignore[no-any-return]

    def _probabilities(self, logits: list[float]) -> dict[str, float]:
        if self.single_logit:
            value = _sigmoid(logits[0])
            return {name: value for name in self.labels}
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        return {name: exps[i] / total for name, i in self.labels.items()}

    def __repr__(self) -> str:
        return f"<PairClassifier {self.model_id!r} labels={self.labels}>"


def get_nli(
    model: str | Path,
    *,
    label_map: Mapping[str, int] | None = None,
    threads: int | None = None,
    batch_size: int = 16,
    max_length: int | None = None,
) -> PairClassifier:
    """A pair classifier over ``model`` (loaded once per process per model and thread count).

    Args:
        model: A Hugging Face model id (already in the local cache: ragtrace runs offline) or
            a folder holding a sequence-classification model and its tokenizer.
        label_map: Label name -> output index, naming every output once; None reads standard
            NLI names from the model's config (a one-output model is called ``score``).
        threads: torch intra-op threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
        batch_size: Pairs per forward pass.
        max_length: Tokens per pair; at most the model's own maximum (the default).

    Raises:
        FileNotFoundError: ``model`` looks like a path and nothing is there.
        OSError: The model could not be loaded (not cached, incomplete folder, ...).
        ValueError: Bad ``label_map``, ``batch_size`` or ``max_length``.
        MissingExtraError: torch or transformers is not installed.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    n_threads = thread_count(threads)
    model_id = _model_location(model)
    loaded = shared(("nli", model_id, n_threads), lambda: _load(model_id, n_threads))
    labels = _labels(loaded, label_map)
    if max_length is None:
        length = loaded.max_length
    elif isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8:
        raise ValueError(f"max_length must be an integer >= 8, got {max_length!r}")
    elif max_length > loaded.max_length:
        raise ValueError(
            f"max_length {max_length} exceeds what {model_id!r} accepts ({loaded.max_length})"
        )
    else:
        length = max_length
    return PairClassifier(loaded, labels, batch_size=batch_size, max_length=length)


def _model_location(model: str | Path) -> str:
    """The model as a string; a path that does not exist fails here with a clear message."""
    if not isinstance(model, str | Path) or not str(model).strip():
        raise ValueError(f"model must be a Hugging Face id or a folder, got {model!r}")
    text = str(model)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise FileNotFoundError(
                f"NLI model {text!r} is a file; give the folder holding config.json, the "
                "weights and the tokenizer"
            )
        return str(path)
    if names_a_local_path(model):
        raise FileNotFoundError(f"NLI model folder not found: {text}")
    return text


def _load(model_id: str, threads: int) -> _Loaded:
    torch = import_extra("torch", EXTRA)
    transformers = import_extra("transformers", EXTRA)
    torch.set_num_threads(threads)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_id)
        network = transformers.AutoModelForSequenceClassification.from_pretrained(model_id)
    except (OSError, ValueError) as exc:
        raise OSError(
            f"cannot load NLI model {model_id!r}: {exc} (ragtrace runs offline: give a local "
            "folder or a model already in the Hugging Face cache)"
        ) from exc
    network.eval()
    return _Loaded(model_id, tokenizer, network, torch)


def _labels(loaded: _Loaded, label_map: Mapping[str, int] | None) -> dict[str, int]:
    """Label name -> output index, checked against the model's number of outputs."""
    n = loaded.num_labels
    if label_map is None:
        if n == 1:
            return {SINGLE_LOGIT_LABEL: 0}
        names = {i: loaded.id2label.get(i, "").lower() for i in range(n)}
        if all(name in STANDARD_LABELS for name in names.values()) and len(
            set(names.values())
        ) == len(names):
            return {name: i for i, name in names.items()}
        shown = {i: loaded.id2label.get(i) for i in range(n)}
        hint = (
            " (generic names)" if any(_GENERIC_LABEL.fullmatch(v) for v in names.values()) else ""
        )
        raise ValueError(
            f"NLI model {loaded.model_id!r} labels its {n} outputs {shown}{hint}; pass "
            "label_map={'entailment': i, 'neutral': j, 'contradiction': k} naming each output"
        )
    if not isinstance(label_map, Mapping):
        raise ValueError(f"label_map must map label names to output indices, got {label_map!r}")
    labels: dict[str, int] = {}
    for name, index in label_map.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"label_map names must be non-empty strings, got {name!r}")
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"label_map[{name!r}] must be an integer index, got {index!r}")
        labels[name.strip().lower()] = index
    if sorted(labels.values()) != list(range(n)) or len(labels) != len(label_map):
        raise ValueError(
            f"label_map {dict(label_map)} must name each of the {n} outputs of "
            f"{loaded.model_id!r} exactly once (indices 0..{n - 1})"
        )
    return labels


def _model_max_length(tokenizer: Any, config: Any) -> int:
    """Tokens the model reads: tokenizer limit and position embeddings, the smaller one."""
    limits: list[int] = []
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1_000_000:
        limits.append(declared)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        offset = 2 if getattr(config, "model_type", "") in _POSITION_OFFSET_TYPES else 0
        limits.append(positions - offset)
    return min(limits) if limits else DEFAULT_MAX_LENGTH


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
