"""The fitted models of the local support detector, and how their weights files are read.

A claim model scores one claim's feature row (``features.FEATURES``); a response model
one answer's row of ``response.RESPONSE_FEATURES``. Both are ``SupportModel``s, logistic
models. ``load_task_models`` reads a file of one pair per calibration
(``data/support_tasks.json``); ``with_confident_claim`` is the rule by which one confident claim
flags its answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._backends.model_files import verified_file
from ragtrace.evaluators._faithfulness.features import FEATURES
from ragtrace.evaluators._faithfulness.response import RESPONSE_FEATURES

SHARED_CLAIM_WEIGHTS = Path(__file__).parent.parent / "data" / "support_model.json"
VERDICT_THRESHOLD = 0.5  # a response model's, where its weights file names none
# A claim this likely unsupported flags its answer on its own: the response model leans on the
# second most doubtful claim, and would otherwise pass one invented sentence among grounded ones.
CONFIDENT_UNSUPPORTED = 0.9


@dataclass(frozen=True)
class SupportModel:
    """A fitted logistic model: P(unsupported) = sigmoid(w . (x - mean) / scale + b).

    For the claim models "unsupported" is one claim's; for the response model
    (``RESPONSE_FEATURES``) it is "the answer holds at least one unsupported claim".
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    info: dict[str, Any]

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        features: tuple[str, ...] = FEATURES,
        *,
        subset: bool = False,
    ) -> SupportModel:
        """Read a weights file written by ``training/train_support.py`` (or, with
        ``features=STACKED_FEATURES``, by ``crossencoder_locked.py``; with
        ``features=RESPONSE_FEATURES, subset=True``, a response model, which may read any
        subset of those features)."""
        path = path if path is not None else SHARED_CLAIM_WEIGHTS
        data = json.loads(verified_file(path).read_text(encoding="utf-8"))
        return cls.from_dict(data, features, subset=subset, source=str(path))

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        features: tuple[str, ...] = FEATURES,
        *,
        subset: bool = False,
        source: str = "weights",
    ) -> SupportModel:
        """A model from the JSON object of a weights file (see ``load``)."""
        model = cls(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
            info=dict(data.get("info", {})),
        )
        known = set(model.features) <= set(features) if subset else model.features == features
        if not known or not model.features:
            raise ValueError(
                f"{source}: weights are for features {list(model.features)}, this ragtrace "
                f"computes {list(features)}; retrain with training/train_support.py"
            )
        return model

    @property
    def verdict_threshold(self) -> float:
        """A response model's verdict: the answer is flagged when its probability is above this
        (``info["verdict_threshold"]``; ``VERDICT_THRESHOLD`` for weights that do not say)."""
        value = self.info.get("verdict_threshold", VERDICT_THRESHOLD)
        if isinstance(value, int | float) and 0.0 < value < 1.0:
            return float(value)
        return VERDICT_THRESHOLD

    def unsupported_probability(self, row: Sequence[float]) -> float:
        """P(the claim is unsupported) for one feature row."""
        z = self.intercept + sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.coef, row, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def with_confident_claim(response_probability: float, largest_unsupported: float) -> float:
    """The response model's probability, or the answer's largest claim probability when that
    reaches ``CONFIDENT_UNSUPPORTED`` and is higher."""
    if largest_unsupported >= CONFIDENT_UNSUPPORTED:
        return max(response_probability, largest_unsupported)
    return response_probability


def load_task_models(
    path: str | Path, claim_features: tuple[str, ...] = FEATURES
) -> dict[str, tuple[SupportModel, SupportModel]]:
    """Task -> (claim model, response model) from a file written by ``train_support.py`` (or,
    with ``claim_features=STACKED_FEATURES``, ``crossencoder_locked.py``);
    empty when the file does not exist (every task then uses the shared models)."""
    if not Path(path).exists():
        return {}
    data = json.loads(verified_file(path).read_text(encoding="utf-8"))
    return {
        task: (
            SupportModel.from_dict(pair["claim"], claim_features, source=f"{path} [{task}]"),
            SupportModel.from_dict(
                pair["response"], RESPONSE_FEATURES, subset=True, source=f"{path} [{task}]"
            ),
        )
        for task, pair in data["tasks"].items()
    }
