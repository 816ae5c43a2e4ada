"""Text classifiers on CPU: the packaged lexical profanity model and any Hugging Face model.

Two kinds, one interface (``predict(texts) -> list[dict[label, probability]]``):

- ``get_profanity_classifier()``: ``alt-profanity-check==1.9.1``, a tf-idf + linear SVM
  (probabilities from its calibrated ``predict_proba``), about 25 µs a text. Its two joblib
  files are checked against the sha256 recorded here before they are unpickled, and loaded
  directly (importing ``profanity_check`` would unpickle them unchecked). One label:
  ``toxicity``. Word-based: it flags insults and swearing, misses implicit hate, and fires on
  "kill the process".
- ``get_text_classifier(model, label_map=...)``: any ``AutoModelForSequenceClassification``
  (a hub id, used offline from the local cache, or a folder). The model's ``id2label`` names
  are mapped through ``label_map`` (default ``DETOXIFY_LABELS``: the names of Detoxify and the
  Jigsaw checkpoints become ``toxicity``, ``severe_toxicity``, ``obscene``, ``threat``,
  ``insult``, ``identity_attack``); unmapped labels keep their own (lower-cased) names.
  ``activation="auto"`` applies a sigmoid per label when the model is multi-label
  (``problem_type == "multi_label_classification"``, or a single output) and a softmax
  otherwise. Texts are batched (``batch_size``), truncated at ``max_length`` tokens, and run
  under a lock with ``threads`` torch threads.

Both are loaded once per process (``shared``) and on first use, so importing this module
loads nothing heavy.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from ragtrace._backends._loading import import_extra, shared, thread_count
from ragtrace._backends.model_files import verified

EXTRA = "models"
Activation = Literal["auto", "sigmoid", "softmax"]
PROFANITY_MODEL = "alt-profanity-check==1.9.1"
PROFANITY_FILES = "profanity-check"  # ragtrace._backends.model_files
DETOXIFY_LABELS: Mapping[str, str] = {
    "toxic": "toxicity",
    "toxicity": "toxicity",
    "severe_toxic": "severe_toxicity",
    "severe_toxicity": "severe_toxicity",
    "obscene": "obscene",
    "threat": "threat",
    "insult": "insult",
    "identity_hate": "identity_attack",
    "identity_attack": "identity_attack",
    "sexual_explicit": "sexual_explicit",
}


class TextClassifier(Protocol):
    """What evaluators need from a classifier."""

    model_id: str
    labels: tuple[str, ...]

    def predict(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """One ``{label: probability}`` per text, in order."""
        ...


class ProfanityClassifier:
    """alt-profanity-check's tf-idf + SVM: P(offensive) as the ``toxicity`` label."""

    model_id: str = PROFANITY_MODEL
    labels: tuple[str, ...] = ("toxicity",)

    def __init__(self) -> None:
        joblib = import_extra("joblib", EXTRA)
        folder = _profanity_folder()
        verified(PROFANITY_FILES, folder.parent)
        with warnings.catch_warnings():  # pickled by an older scikit-learn; it loads fine
            warnings.simplefilter("ignore")
            self._vectorizer = joblib.load(folder / "vectorizer.joblib")
            self._model = joblib.load(folder / "model.joblib")

    def predict(self, texts: Sequence[str]) -> list[dict[str, float]]:
        if not texts:
            return []
        probs = self._model.predict_proba(self._vectorizer.transform(list(texts)))[:, 1]
        return [{"toxicity": float(p)} for p in probs]


class HFTextClassifier:
    """A Hugging Face sequence-classification model with mapped labels."""

    def __init__(
        self,
        model: str,
        *,
        label_map: Mapping[str, str] | None,
        activation: Activation,
        threads: int,
        batch_size: int,
        max_length: int,
    ) -> None:
        self._torch = import_extra("torch", EXTRA)
        transformers = import_extra("transformers", EXTRA)
        self._torch.set_num_threads(threads)
        self.model_id = model
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(model)
        self._model = transformers.AutoModelForSequenceClassification.from_pretrained(model)
        self._model.eval()
        config = self._model.config
        names = [str(config.id2label[i]) for i in range(config.num_labels)]
        mapping = {_norm(k): v for k, v in (label_map or DETOXIFY_LABELS).items()}
        self.labels = tuple(mapping.get(_norm(n), _norm(n)) for n in names)
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"{model}: labels {names} map to duplicate names {self.labels}")
        if activation == "auto":
            multi = config.problem_type == "multi_label_classification" or config.num_labels == 1
            activation = "sigmoid" if multi else "softmax"
        self.activation = activation
        self._batch_size = batch_size
        self._max_length = min(max_length, _model_max_length(self._tokenizer, config))
        self._lock = threading.Lock()

    def predict(self, texts: Sequence[str]) -> list[dict[str, float]]:
        torch = self._torch
        out: list[dict[str, float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            inputs = self._tokenizer(
                batch,
                padding=True,
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            )
            with self._lock, torch.inference_mode():
                logits = self._model(**inputs).logits.float()
            if self.activation == "sigmoid":
                probs = torch.sigmoid(logits)
            else:
                probs = torch.softmax(logits, dim=-1)
            for row in probs.tolist():
                out.append(dict(zip(self.labels, (float(p) for p in row), strict=True)))
        return out


def get_profanity_classifier() -> ProfanityClassifier:
    """The shared packaged lexical toxicity model."""
    return shared(("classifier", "profanity"), ProfanityClassifier)


def get_text_classifier(
    model: str,
    *,
    label_map: Mapping[str, str] | None = None,
    activation: Activation = "auto",
    threads: int | None = None,
    batch_size: int = 16,
    max_length: int = 512,
) -> HFTextClassifier:
    """The shared Hugging Face classifier for ``model`` (a hub id or a local folder).

    Args:
        model: Model id (offline: it must be in the local Hugging Face cache) or folder.
        label_map: Model label name -> ragtrace label (default ``DETOXIFY_LABELS``), compared
            case-insensitively with spaces and hyphens read as underscores.
        activation: ``auto``, ``sigmoid`` (independent labels) or ``softmax`` (exclusive).
        threads: torch threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
        batch_size: Texts per forward pass.
        max_length: Tokens kept of each text (capped by the model's own limit).
    """
    if activation not in ("auto", "sigmoid", "softmax"):
        raise ValueError(f"activation must be auto, sigmoid or softmax, got {activation!r}")
    if batch_size < 1 or max_length < 2:
        raise ValueError("batch_size must be >= 1 and max_length >= 2")
    n_threads = thread_count(threads)
    frozen_map = None if label_map is None else tuple(sorted(label_map.items()))
    key = ("classifier", model, frozen_map, activation, n_threads, batch_size, max_length)

    def build() -> HFTextClassifier:
        return HFTextClassifier(
            model,
            label_map=label_map,
            activation=activation,
            threads=n_threads,
            batch_size=batch_size,
            max_length=max_length,
        )

    return shared(key, build)


def _profanity_folder() -> Path:
    spec = importlib.util.find_spec("profanity_check")
    if spec is None or not spec.submodule_search_locations:
        import_extra("profanity_check", EXTRA)  # raises MissingExtraError naming the extra
        raise ImportError("profanity_check is not a package")  # pragma: no cover
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _model_max_length(tokenizer: Any, config: Any) -> int:
    limits = [getattr(config, "max_position_embeddings", None), tokenizer.model_max_length]
    usable = [int(x) for x in limits if isinstance(x, int) and 1 < x < 1_000_000]
    return min(usable) if usable else 512


def _norm(label: str) -> str:
    return label.strip().lower().replace("-", "_").replace(" ", "_")
