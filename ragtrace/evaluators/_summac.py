"""SummaC-style scoring of a summary: a sentence-level support matrix and two ways to reduce it.

After Laban et al., "SummaC: Re-Visiting NLI-based Models for Inconsistency Detection in
Summarization" (TACL 2022), the method 004's summarization evaluator names. The document and the
summary are cut into sentences; cell ``[i, j]`` of the support matrix is how well source
sentence ``i`` supports summary sentence ``j`` (a probability in [0, 1])::

    matrices = support_matrices([(source_sentences, summary_sentences)])
    value, per_sentence = zero_shot(matrices[0])               # SummaC-ZS
    value, per_sentence = ConvAggregator.load().score(matrices[0])   # SummaC-Conv

- ``support_matrices`` fills the matrix with the local support detector
  (``ragtrace.evaluators._faithfulness``; its summary-task claim model, each source sentence as
  the only passage), or with a Hugging Face NLI model's entailment probability (``nli_model=``).
  Every pair of every record goes through the model in one batch.
- ``zero_shot``: each summary sentence takes the best support over the source sentences
  (``source_reduction``: ``max``, or ``mean``), then the summary takes the mean over its
  sentences (``summary_reduction``: ``mean``, or ``min``, which flags one bad sentence).
- ``ConvAggregator``: each summary sentence's column becomes a histogram over ``bins`` equal
  bins of [0, 1] (the share of the source sentences in each bin, their count, or whether any
  falls in it: the weights file says which); one learned linear filter spanning all
  bins (SummaC-Conv's 1-D convolution whose kernel covers the whole histogram) and a sigmoid give
  that sentence's score; the summary's value is the ``summary_reduction`` of those scores. The
  weights are a small JSON file (``data/summac_conv.json``, written by
  ``training/train_summac_conv.py``); ``load`` validates it and says what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtrace._backends.model_files import verified_file

Matrix = npt.NDArray[np.float64]

CONV_WEIGHTS = Path(__file__).with_name("data") / "summac_conv.json"
FORMAT = "ragtrace-summac-conv-1"
SOURCE_REDUCTIONS = ("max", "mean")
SUMMARY_REDUCTIONS = ("mean", "min")
HISTOGRAMS = ("share", "count", "presence")
DETECTOR_MATRIX = "ragtrace-support-lr/summary"
MAX_BINS = 200


def support_matrices(
    items: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    nli_model: str | None = None,
    nli_label_map: dict[str, int] | None = None,
    threads: int | None = None,
    detector: Any = None,
) -> list[Matrix]:
    """One ``(len(source), len(summary))`` support matrix per ``(source, summary)`` item.

    Sentences must be non-empty. ``detector`` is a ``faithfulness.SupportDetector`` (default: the
    shared one); ``nli_model`` replaces it with a Hugging Face NLI model's entailment.
    """
    for source, summary in items:
        if any(not s or not s.strip() for s in (*source, *summary)):
            raise ValueError("support_matrices: sentences must be non-empty")
    if nli_model is not None:
        flat = _nli_support(items, nli_model, nli_label_map, threads)
    else:
        flat = _detector_support(items, detector)
    matrices = []
    position = 0
    for source, summary in items:
        size = len(source) * len(summary)
        cells = np.asarray(flat[position : position + size], dtype=np.float64)
        matrices.append(np.clip(cells.reshape(len(source), len(summary)), 0.0, 1.0))
        position += size
    return matrices


def _detector_support(
    items: Sequence[tuple[Sequence[str], Sequence[str]]], detector: Any
) -> list[float]:
    if detector is None:
        from ragtrace.evaluators._faithfulness.detector import default_detector

        detector = default_detector()
    pairs = [(list(summary), [sentence]) for source, summary in items for sentence in source]
    if not pairs:
        return []
    checks = detector.check_batch(pairs, ["summary"] * len(pairs))
    flat: list[float] = []
    for (claims, _), found in zip(pairs, checks, strict=True):
        if len(found) != len(claims):
            raise RuntimeError("support detector returned a verdict count unlike the claims")
        flat.extend(c.support for c in found)
    return flat


def _nli_support(
    items: Sequence[tuple[Sequence[str], Sequence[str]]],
    model: str,
    label_map: dict[str, int] | None,
    threads: int | None,
) -> list[float]:
    from ragtrace._backends.nli import get_nli

    pairs = [
        (premise, claim) for source, summary in items for premise in source for claim in summary
    ]
    if not pairs:
        return []
    return [
        float(p) for p in get_nli(model, label_map=label_map, threads=threads).entailment(pairs)
    ]


def check_reduction(option: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed``, else a ValueError naming the option."""
    if value not in allowed:
        raise ValueError(f"{option} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _reduce(values: Matrix, how: str, axis: int) -> Matrix:
    reducer = {"max": np.max, "min": np.min}.get(how, np.mean)
    return np.asarray(reducer(values, axis=axis), dtype=np.float64)


def sentence_support(matrix: Matrix, source_reduction: str = "max") -> Matrix:
    """Each summary sentence's support over the source sentences (one value per column)."""
    check_reduction("source_reduction", source_reduction, SOURCE_REDUCTIONS)
    return _reduce(_checked(matrix), source_reduction, axis=0)


def zero_shot(
    matrix: Matrix, source_reduction: str = "max", summary_reduction: str = "mean"
) -> tuple[float, list[float]]:
    """SummaC-ZS: (the summary's value, each summary sentence's support)."""
    check_reduction("summary_reduction", summary_reduction, SUMMARY_REDUCTIONS)
    per_sentence = sentence_support(matrix, source_reduction)
    value = float(_reduce(per_sentence, summary_reduction, axis=0))
    return value, [float(v) for v in per_sentence]


def histograms(matrix: Matrix, bins: int, mode: str = "share") -> Matrix:
    """``(summary sentences, bins)``: per column, what falls in each of ``bins`` equal bins of
    [0, 1] (the last includes 1.0): the ``share`` of the source sentences, their ``count``, or
    the ``presence`` of any (1.0 or 0.0; the highest present bin is the column's maximum)."""
    check_reduction("histogram", mode, HISTOGRAMS)
    matrix = _checked(matrix)
    index = np.minimum((matrix * bins).astype(int), bins - 1)
    counts = np.zeros((matrix.shape[1], bins), dtype=np.float64)
    for j in range(matrix.shape[1]):
        counts[j] = np.bincount(index[:, j], minlength=bins)
    if mode == "count":
        return counts
    if mode == "presence":
        return np.minimum(counts, 1.0)
    return np.asarray(counts / matrix.shape[0], dtype=np.float64)


def _checked(matrix: Matrix) -> Matrix:
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise ValueError(f"a support matrix needs at least one row and column, got {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("a support matrix must hold finite values")
    return np.clip(matrix, 0.0, 1.0)


def sigmoid(z: Matrix) -> Matrix:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))


@dataclass(frozen=True)
class ConvAggregator:
    """SummaC-Conv: histogram of each summary sentence's column -> linear filter -> sigmoid ->
    ``summary_reduction`` over the sentences.

    Attributes:
        kernel: One weight per bin.
        bias: Added before the sigmoid.
        histogram: What a bin holds (``histograms``' ``mode``).
        summary_reduction: ``mean`` or ``min`` of the sentence scores.
        matrix: What filled the matrices it was fitted on (``ragtrace-support-lr/summary``: the
            support detector; else an NLI model's name).
        info: How the weights were made (script, seed, data digest, cross-validation).
    """

    kernel: tuple[float, ...]
    bias: float
    histogram: str = "share"
    summary_reduction: str = "mean"
    matrix: str = DETECTOR_MATRIX
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def bins(self) -> int:
        return len(self.kernel)

    @classmethod
    def load(cls, path: str | Path = CONV_WEIGHTS) -> ConvAggregator:
        """Read and validate a weights file; ValueError saying what is wrong with it."""
        try:
            text = verified_file(path).read_bytes().decode("utf-8")
            data = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(
                f"SummaC-Conv weights {path}: cannot read them ({exc}); "
                "write them with training/train_summac_conv.py --write"
            ) from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: object, source: str = "weights") -> ConvAggregator:
        """An aggregator from the JSON object of a weights file (see ``load``)."""

        def bad(why: str) -> ValueError:
            return ValueError(f"SummaC-Conv weights {source}: {why}")

        if not isinstance(data, dict):
            raise bad("expected a JSON object")
        if data.get("format") != FORMAT:
            raise bad(f"format must be {FORMAT!r}, got {data.get('format')!r}")
        kernel = data.get("kernel")
        if not isinstance(kernel, list) or not 2 <= len(kernel) <= MAX_BINS:
            raise bad(f"kernel must be a list of 2 to {MAX_BINS} numbers")
        numbers = [*kernel, data.get("bias")]
        if not all(_finite(v) for v in numbers):
            raise bad("kernel and bias must be finite numbers")
        if data.get("bins", len(kernel)) != len(kernel):
            raise bad(f"bins is {data.get('bins')!r} but the kernel has {len(kernel)} weights")
        reduction = data.get("summary_reduction", "mean")
        if reduction not in SUMMARY_REDUCTIONS:
            raise bad(f"summary_reduction must be one of {', '.join(SUMMARY_REDUCTIONS)}")
        histogram = data.get("histogram", "share")
        if histogram not in HISTOGRAMS:
            raise bad(f"histogram must be one of {', '.join(HISTOGRAMS)}")
        matrix = data.get("matrix", DETECTOR_MATRIX)
        info = data.get("info", {})
        if not isinstance(matrix, str) or not isinstance(info, dict):
            raise bad("matrix must be a string and info an object")
        return cls(
            kernel=tuple(float(v) for v in kernel),
            bias=float(data["bias"]),
            histogram=histogram,
            summary_reduction=reduction,
            matrix=matrix,
            info=info,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``from_dict`` reads."""
        return {
            "format": FORMAT,
            "bins": self.bins,
            "kernel": [round(w, 6) for w in self.kernel],
            "bias": round(self.bias, 6),
            "histogram": self.histogram,
            "summary_reduction": self.summary_reduction,
            "matrix": self.matrix,
            "info": self.info,
        }

    def sentence_scores(self, matrix: Matrix) -> Matrix:
        """Each summary sentence's score in (0, 1)."""
        hist = histograms(matrix, self.bins, self.histogram)
        return sigmoid(hist @ np.asarray(self.kernel) + self.bias)

    def score(self, matrix: Matrix) -> tuple[float, list[float]]:
        """(the summary's value, each summary sentence's score)."""
        per_sentence = self.sentence_scores(matrix)
        value = float(_reduce(per_sentence, self.summary_reduction, axis=0))
        return value, [float(v) for v in per_sentence]


def completeness(
    similarity: Matrix, faithful: Sequence[bool], salience: Sequence[float] | None = None
) -> tuple[float, list[float]]:
    """Coverage of the source by the faithful summary sentences.

    ``similarity[i, j]`` is the closeness of source sentence ``i`` and summary sentence ``j``
    (cosine of their embeddings; negatives count as 0). Each source sentence's coverage is its
    best similarity with a faithful summary sentence (0.0 when none is faithful); the value is
    the mean coverage weighted by ``salience`` (default: every source sentence alike).
    Returns (value, each source sentence's coverage).
    """
    similarity = _checked(similarity)
    mask = np.asarray(faithful, dtype=bool)
    if mask.shape != (similarity.shape[1],):
        raise ValueError("completeness: one faithful flag per summary sentence")
    covered = similarity[:, mask].max(axis=1) if mask.any() else np.zeros(similarity.shape[0])
    weights = np.ones(similarity.shape[0]) if salience is None else np.asarray(salience, float)
    if weights.shape != covered.shape or not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("completeness: one finite, non-negative salience per source sentence")
    total = float(weights.sum())
    value = float(covered @ weights / total) if total > 0 else float(covered.mean())
    return value, [float(v) for v in covered]


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
