"""The evaluator contract: what every metric implements, and a decorator for plain functions.

An evaluator reads one finished ``RagRecord`` and returns ``Score`` values about it. It declares
the record fields it needs (``requires``); the pipeline skips (and counts) records that lack
them, so ``evaluate`` may assume they are present. Evaluators hold no per-call state: one
instance is shared by every worker thread.

Write one as a class::

    class AnswerLength(Evaluator):
        name = "answer_length"
        requires = frozenset({"response"})
        threshold = 0.2

        def evaluate(self, record):
            return [self.score(min(1.0, len(record.response) / 500))]

or turn a function into one::

    @evaluator(name="has_citation", requires={"response"}, threshold=0.5)
    def has_citation(record):
        return 1.0 if "[" in record.response else 0.0
"""

from __future__ import annotations

import importlib
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, SupportsIndex

from ragtrace._model import Direction, EvaluatorKind, RagRecord, Score

RECORD_FIELDS = frozenset({
    "query", "chunks", "response", "reference", "model", "error",
    "conversation", "tool_calls", "llm_calls",
})  # fmt: skip

FunctionResult = float | bool | Score | Iterable[Score] | None
"""What a function made an evaluator with ``evaluator`` may return: a number (the score), a
bool (pass or fail), one or several ``Score``s, or None (nothing to say about this record)."""


class InputError(ValueError):
    """A record lacks what an evaluator needs (turned into error Scores for that record)."""


class Evaluator(ABC):
    """Base class of every evaluator.

    Class attributes (override them, or pass them to ``__init__``):
        name: The metric name; also the ``evaluator`` label of the Prometheus metrics.
        requires: Record fields that must be present and non-empty (see ``RECORD_FIELDS``).
        kind: ``lexical`` (regex, counting), ``model`` (local model), ``judge`` (an LLM).
        direction: Whether a higher value is better.
        threshold: Default pass/fail boundary; None means the score is informational.
        operating_points: Named thresholds (``"strict"``, ``"default"``, ``"lenient"``), by
            score name, that ``threshold=`` may name instead of a number
            (``ragtrace.evaluators._operating_points``); empty when the evaluator has none.
        threshold_per_record: Its Scores may carry a boundary of their own (a calibrated
            model's cut for the record's task); ``threshold`` is then the fallback.
        inline: Cheap enough to run on the request thread and write onto the RAG span.
        batch_size: Most records handed to ``evaluate_batch`` at once (model-backed ones > 1).
        timeout_s: A call taking longer yields an error Score (the worker moves on).
        cost_usd: Estimated spend of one evaluation, charged to the sampler's hourly budget.
        bounded: Values must lie in [0, 1]; anything else is turned into an error Score.
        score_names: Every Score name the evaluator emits, when it emits several (default:
            just ``name``); ``errors`` gives one error Score per name.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[frozenset[str]] = frozenset()
    kind: ClassVar[EvaluatorKind] = "lexical"
    direction: ClassVar[Direction] = "higher_is_better"
    threshold: float | None = None
    threshold_per_record: ClassVar[bool] = False
    operating_points: ClassVar[Mapping[str, Mapping[str, float | None]]] = {}
    operating_point: str | None = None
    inline: bool = False
    batch_size: int = 1
    timeout_s: float = 10.0
    cost_usd: float = 0.0
    bounded: ClassVar[bool] = True
    score_names: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        threshold: float | str | None = None,
        inline: bool | None = None,
        batch_size: int | None = None,
        timeout_s: float | None = None,
        cost_usd: float | None = None,
    ) -> None:
        self.point_thresholds: Mapping[str, float | None] = {}
        if isinstance(threshold, str):
            from ragtrace.evaluators._operating_points import choose

            self.point_thresholds = choose(self.name, self.operating_points, threshold)
            self.operating_point = threshold
            if self.name in self.point_thresholds:
                self.threshold = self.point_thresholds[self.name]
        elif threshold is not None:
            self.threshold = _real(threshold, "threshold")
        elif self.operating_points:
            from ragtrace.evaluators._operating_points import DEFAULT_POINT

            self.point_thresholds = self.operating_points.get(DEFAULT_POINT, {})
            self.operating_point = DEFAULT_POINT
        if inline is not None:
            self.inline = bool(inline)
        if batch_size is not None:
            if int(batch_size) < 1:
                raise ValueError(f"evaluator {self.name!r}: batch_size must be >= 1")
            self.batch_size = int(batch_size)
        if timeout_s is not None:
            if _real(timeout_s, "timeout_s") <= 0:
                raise ValueError(f"evaluator {self.name!r}: timeout_s must be > 0")
            self.timeout_s = float(timeout_s)
        if cost_usd is not None:
            if _real(cost_usd, "cost_usd") < 0:
                raise ValueError(f"evaluator {self.name!r}: cost_usd must be >= 0")
            self.cost_usd = float(cost_usd)
        if not self.name:
            raise TypeError(f"{type(self).__name__} must set a non-empty `name`")
        unknown = set(self.requires) - RECORD_FIELDS
        if unknown:
            raise TypeError(
                f"evaluator {self.name!r}: unknown required field(s) {sorted(unknown)}; "
                f"known: {sorted(RECORD_FIELDS)}"
            )

    @abstractmethod
    def evaluate(self, record: RagRecord) -> list[Score]:
        """Score one record. May raise: the pipeline turns an exception into an error Score."""

    def threshold_of(self, score_name: str) -> float | None:
        """The threshold of the score called ``score_name``: the chosen operating point's (the
        default one when ``threshold=`` was not given), else ``threshold``."""
        if score_name in self.point_thresholds:
            return self.point_thresholds[score_name]
        return self.threshold

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        """Score several records (model-backed evaluators override this to batch the model)."""
        return [self.evaluate(record) for record in records]

    def missing_fields(self, record: RagRecord) -> tuple[str, ...]:
        """The required fields that ``record`` lacks (None, an empty string or tuple, no
        chunks or tool calls, ``llm_calls`` 0)."""
        return tuple(sorted(f for f in self.requires if _is_missing(getattr(record, f))))

    def score(
        self,
        value: float | None,
        *,
        name: str | None = None,
        label: str | None = None,
        explanation: str | None = None,
        threshold: float | None = None,
        direction: Direction | None = None,
        model: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Score:
        """A Score of this evaluator, with ``passed`` and a default label from the threshold."""
        direction = direction or self.direction
        threshold = self.threshold if threshold is None else threshold
        passed = None
        if value is not None and threshold is not None:
            passed = value >= threshold if direction == "higher_is_better" else value <= threshold
        if label is None and passed is not None:
            label = "pass" if passed else "fail"
        return Score(
            name=name or self.name,
            value=value,
            label=label,
            explanation=explanation,
            direction=direction,
            threshold=threshold,
            passed=passed,
            evaluator_kind=self.kind,
            model=model,
            details=details if details is not None else {},
        )

    def error_score(self, error: str, *, name: str | None = None) -> Score:
        """A Score saying this evaluator failed on a record."""
        return Score(
            name=name or self.name,
            value=None,
            label="error",
            direction=self.direction,
            threshold=self.threshold,
            error=error,
            evaluator_kind=self.kind,
        )

    def errors(self, message: str) -> list[Score]:
        """One error Score per score this evaluator reports."""
        return [self.error_score(message, name=n) for n in self._names()]

    def _names(self) -> tuple[str, ...]:
        return self.score_names or (self.name,)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} kind={self.kind} threshold={self.threshold}>"


class BatchEvaluator(Evaluator):
    """An evaluator that scores records in batches (a model-backed one): ``evaluate`` scores a
    batch of one, so a subclass implements ``evaluate_batch`` only."""

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]

    @abstractmethod
    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        """Score several records, one list of Scores per record, in order."""


class FunctionEvaluator(Evaluator):
    """An evaluator around a plain function (made by the ``evaluator`` decorator)."""

    name: ClassVar[str] = "function"

    def __init__(
        self,
        fn: Callable[[RagRecord], FunctionResult],
        *,
        name: str,
        requires: Iterable[str] = (),
        kind: EvaluatorKind = "lexical",
        direction: Direction = "higher_is_better",
        **options: Any,
    ) -> None:
        # Per-instance values shadow the class-level defaults on purpose.
        self.name = name  # type: ignore[misc]
        self.requires = frozenset(requires)  # type: ignore[misc]
        self.kind = kind  # type: ignore[misc]
        self.direction = direction  # type: ignore[misc]
        self._fn = fn
        super().__init__(**options)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """Pickle an ``@evaluator``-decorated module-level function as a reference to it.

        The decorator replaces the function's module attribute with this evaluator, so the
        function cannot be pickled by name; the evaluator can (e.g. for worker processes).
        """
        module = sys.modules.get(getattr(self._fn, "__module__", None) or "")
        qualname = getattr(self._fn, "__qualname__", "")
        if module is not None and getattr(module, qualname, None) is self:
            return (_module_attribute, (module.__name__, qualname))
        return super().__reduce_ex__(protocol)

    def evaluate(self, record: RagRecord) -> list[Score]:
        result = self._fn(record)
        if result is None:
            return []
        if isinstance(result, Score):
            return [result]
        if isinstance(result, bool | int | float):
            return [self.score(float(result))]
        return list(result)


def refuse_options(name: str, options: Mapping[str, Any], refused: Mapping[str, str]) -> None:
    """Raise a clear ValueError when ``options`` holds an option that a base class takes but
    evaluator ``name`` has no use for (``refused`` maps each such option to the reason)."""
    for key in sorted(options.keys() & refused.keys()):
        raise ValueError(f"{name}: {key} does not apply: {refused[key]}")


def positive_int(name: str, option: str, value: int) -> int:
    """``value`` if it is a positive int, else a ValueError naming the evaluator and option."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {option} must be a positive integer, got {value!r}")
    return value


def unit_option(
    name: str, option: str, value: float | None, default: float | None = None
) -> float | None:
    """``default`` when ``value`` is None, else ``value`` as a float if it is a number in
    [0, 1], else a ValueError naming the evaluator and option."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name}: {option} must be a number in [0, 1], got {value!r}")
    return float(value)


def evaluator(
    name: str | None = None,
    *,
    requires: Iterable[str] = (),
    kind: EvaluatorKind = "lexical",
    direction: Direction = "higher_is_better",
    **options: Any,
) -> Callable[[Callable[[RagRecord], FunctionResult]], FunctionEvaluator]:
    """Turn ``fn(record) -> float | bool | Score | list[Score] | None`` into an Evaluator.

    A number becomes one Score named ``name`` (default: the function's name) with ``passed``
    from ``threshold``; None means nothing to say about this record.
    """

    def wrap(fn: Callable[[RagRecord], FunctionResult]) -> FunctionEvaluator:
        return FunctionEvaluator(
            fn,
            name=name or fn.__name__,
            requires=requires,
            kind=kind,
            direction=direction,
            **options,
        )

    return wrap


def _module_attribute(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def _is_missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, tuple | list):
        return len(value) == 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value == 0  # llm_calls: none counted
    return False


def _real(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"{what} must be a real number, got {value!r}")
    return float(value)
