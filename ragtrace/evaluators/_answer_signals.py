"""Cheap lexical signals about an answer, and the small calibrated models that combine them.

``answer_relevance`` and ``groundedness`` read these beside their embedding similarities. A mean
or minimum cosine alone cannot tell a short factual answer ("1967", "Arthur's Magazine") from an
unrelated one: both sit far from the question and from whole passage sentences. What tells them
apart is whether the answer's words come from the retrieved passages, and whether its form
answers the question's form:

- ``covered_share``: share of the answer's content words found in the passages; numbers are
  compared as values ("1,300" = "1300", "twenty" = "20"), and a bare "yes" / "no" is not a
  word to find (an answer with no content word is fully covered);
- ``answers_form``: a yes/no question ("Are both ...?", "Did ...?") answered by "yes" or "no",
  or a question for a number ("How many ...", "In what year ...", "When ...") answered with a
  number;
- ``missing_name_share`` (``faithfulness.features``): capitalised words of the answer that appear
  nowhere in the passages (names, places);

``SignalModel`` turns a record's signals into a probability with a logistic model whose weights
(``data/signal_models.json``) ``training/train_signals.py`` fits on the tuning part of the
labelled data, normal answers against bad ones built the way each evaluator names its failure
(another question's answer, another record's passages). Each evaluator puts its signals in
``details["signals"]``, which is also what the training script reads, so the model is fitted on
exactly what the evaluator computes.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtrace.evaluators._faithfulness.features import PassageIndex, numbers_in
from ragtrace.evaluators._text import content_words

MODELS_FILE = Path(__file__).with_name("data") / "signal_models.json"
_YES_NO = frozenset({"yes", "no"})
_YES_NO_QUESTION = re.compile(
    r"^\W*(?:are|is|was|were|am|did|does|do|can|could|has|have|had|will|would|should|shall|"
    r"may|might|must)\b",
    re.IGNORECASE,
)
_YES_NO_ANSWER = re.compile(r"^\W*(?:yes|no)\b", re.IGNORECASE)
_NUMBER_QUESTION = re.compile(
    r"\b(?:how (?:many|much|long|old|far|tall|big|high|large|often)|"
    r"what (?:year|percentage|percent|number|age|date)|(?:which|in what) year|when)\b",
    re.IGNORECASE,
)

_lock = threading.Lock()
_models: dict[str, SignalModel] = {}


def covered_share(text: str, index: PassageIndex) -> float:
    """Share of ``text``'s content words found in the passages (numbers compared as values;
    "yes" and "no" left out); 1.0 when it has none."""
    found = [w for w in content_words(text) if w not in _YES_NO]
    if not found:
        return 1.0
    hits = 0
    for word in found:
        if word in index.words:
            hits += 1
            continue
        values = numbers_in(word)
        if values and all(v in index.numbers for v in values):
            hits += 1
    return hits / len(found)


def answers_form(query: str | None, answer: str | None) -> bool:
    """Whether the answer has the form the question asks for: "yes"/"no" to a yes/no question,
    a number to a question for a number."""
    if not query or not answer:
        return False
    if _YES_NO_QUESTION.search(query) and _YES_NO_ANSWER.search(answer):
        return True
    return bool(_NUMBER_QUESTION.search(query) and numbers_in(answer[:2_000]))


class SignalModel:
    """A logistic model over named signals, read from ``data/signal_models.json``.

    Attributes:
        name: Its key in the file (``answer_relevance``, ``groundedness``, ...).
        features: Signal names, in the order of ``coef``.
        info: What the file says about its fitting (data, command, figures).
    """

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        self.name = name
        self.features: tuple[str, ...] = tuple(spec["features"])
        self.coef: tuple[float, ...] = tuple(float(c) for c in spec["coef"])
        self.intercept = float(spec["intercept"])
        self.info: dict[str, Any] = dict(spec.get("info", {}))
        if len(self.coef) != len(self.features):
            raise ValueError(
                f"signal model {name!r}: {len(self.coef)} weights for {len(self.features)} features"
            )

    def probability(self, signals: Mapping[str, float]) -> float:
        """P(the answer is fine) for these signals (a missing signal raises KeyError)."""
        z = self.intercept + sum(
            c * float(signals[f]) for c, f in zip(self.coef, self.features, strict=True)
        )
        z = max(-60.0, min(60.0, z))
        return 1.0 / (1.0 + math.exp(-z))


def signal_model(name: str, path: Path | None = None) -> SignalModel:
    """The shipped model called ``name`` (loaded once), or one from another weights file.

    Raises:
        KeyError: The file has no model of that name.
        OSError, ValueError: The file cannot be read.
    """
    if path is not None:
        return SignalModel(name, json.loads(Path(path).read_text(encoding="utf-8"))[name])
    with _lock:
        found = _models.get(name)
        if found is None:
            specs = json.loads(MODELS_FILE.read_text(encoding="utf-8"))
            found = _models[name] = SignalModel(name, specs[name])
        return found


def settle_method(
    evaluator: Any, method: str, formula: str, formula_threshold: float, threshold: object
) -> None:
    """Check ``method`` (``"calibrated"`` or the evaluator's ``formula``) after the evaluator's
    base ``__init__``: the named operating points are the calibrated method's, so the formula
    takes a number (default ``formula_threshold``) and no point.

    Raises:
        ValueError: An unknown method, or a point's name with the formula.
    """
    methods = ("calibrated", formula)
    if method not in methods:
        raise ValueError(f"{evaluator.name}: method must be one of {methods}, got {method!r}")
    if method != formula:
        return
    if isinstance(threshold, str):
        raise ValueError(
            f"{evaluator.name}: the named operating points are the calibrated method's; "
            f"pass a number with method={formula!r}"
        )
    evaluator.operating_point, evaluator.point_thresholds = None, {}
    if threshold is None:
        evaluator.threshold = formula_threshold


def rounded(signals: Mapping[str, float]) -> dict[str, float]:
    """Signals as short floats for details."""
    return {k: round(float(v), 4) for k, v in signals.items()}


def top_indices(values: Sequence[float], k: int) -> list[int]:
    """Indices of the ``k`` largest values, largest first."""
    return sorted(range(len(values)), key=lambda i: -values[i])[:k]
