"""RAGAS score: the harmonic mean of faithfulness, answer relevancy, context precision and recall.

After H2O Eval Studio's "RAGAS Evaluator": one number for the retrieval and the generation
together. It runs four evaluators and reports five Scores (higher is better, threshold 0.75):

- ``ragas``: ``4 / (1/F + 1/AR + 1/CP + 1/CR)``, 0 when any component is 0;
- ``ragas.faithfulness`` (``faithfulness:Faithfulness``, ``scoring="claims"``: the share of
  supported claims), ``ragas.answer_relevancy`` (``answer_relevance:AnswerRelevance``),
  ``ragas.context_precision`` and ``ragas.context_recall`` (``retrieval_quality``): each
  component's value, with that evaluator's own Score in ``details["score"]``.

A component that fails (raises, or returns an error Score or no Score) makes ``ragas`` an error
Score naming it; the other components are still reported. A component's value is its Score
named like the evaluator (else its first Score), clipped to [0, 1] (cosine-based relevance can
dip below 0). Components are built when ``Ragas`` is (imported then, not at module import);
``support=`` goes to the two retrieval components built here. The record needs the union of
their required fields: query, chunks, response and reference.

Any component can be chosen (``faithfulness=``, ``answer_relevancy=``, ``context_precision=``,
``context_recall=``), as an ``Evaluator``, as a registry name (``"judge_response_relevancy"``:
RAGAS's own answer relevancy, questions generated back from the answer by the LLM judge and
compared with the user's by embeddings), or as a mapping shaped like a settings file's
``evaluators`` entry (``{"name": "context_precision", "ranked": false}``). Names and mappings
are built by the registry (``ragtrace.evaluators.create``), so the command line and a settings
file choose them too::

    ragtrace eval ... -e ragas --option 'ragas.answer_relevancy="judge_response_relevancy"'

    evaluators:
      - name: ragas
        answer_relevancy: {name: judge_response_relevancy, model: openai/my-judge}
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, Evaluator

Component = Evaluator | str | Mapping[str, Any] | None
DEFAULT_THRESHOLD = 0.75
COMPONENTS = {
    "faithfulness": "ragtrace.evaluators._faithfulness:Faithfulness",
    "answer_relevancy": "ragtrace.evaluators._answer_relevance:AnswerRelevance",
    "context_precision": "ragtrace.evaluators._retrieval_quality:ContextPrecision",
    "context_recall": "ragtrace.evaluators._retrieval_quality:ContextRecall",
}
_TAKES_SUPPORT = ("context_precision", "context_recall")


def harmonic_mean(values: Sequence[float]) -> float:
    """The harmonic mean of values in [0, 1]; 0 when any of them is 0 (or none is given)."""
    if not values or any(v <= 0 for v in values):
        return 0.0
    return len(values) / sum(1.0 / v for v in values)


class Ragas(BatchEvaluator):
    """Harmonic mean of faithfulness, answer relevancy, context precision and recall."""

    name: ClassVar[str] = "ragas"
    kind = "model"
    threshold: float | None = DEFAULT_THRESHOLD
    batch_size = 16
    timeout_s = 120.0
    components_by_name: ClassVar[tuple[str, ...]] = (
        "faithfulness",
        "answer_relevancy",
        "context_precision",
        "context_recall",
    )
    """The arguments the registry builds from a name or a mapping before calling the class."""

    def __init__(
        self,
        *,
        faithfulness: Component = None,
        answer_relevancy: Component = None,
        context_precision: Component = None,
        context_recall: Component = None,
        support: Any = None,
        **options: Any,
    ) -> None:
        """Build the evaluator and its components.

        Each component is an ``Evaluator``; None builds the default. A registry name or a
        ``{"name": ..., option: ...}`` mapping is read by the registry
        (``ragtrace.evaluators.create("ragas", answer_relevancy="judge_response_relevancy")``,
        a settings file, ``--option``: ``components_by_name``).

        Args:
            faithfulness: Default ``Faithfulness(scoring="claims")``.
            answer_relevancy: Default ``AnswerRelevance()`` (the local, Ejento-style mean
                cosine); ``"judge_response_relevancy"`` is RAGAS's reverse-question form.
            context_precision: Default ``ContextPrecision(support=support)``.
            context_recall: Default ``ContextRecall(support=support)``.
            support: Support function for the retrieval components built here.
            **options: ``threshold`` (0.75), ``timeout_s``, ``batch_size``, ...

        Raises:
            TypeError: A component that is not an Evaluator.
        """
        given = {
            "faithfulness": faithfulness,
            "answer_relevancy": answer_relevancy,
            "context_precision": context_precision,
            "context_recall": context_recall,
        }
        self.components: dict[str, Evaluator] = {}
        for key, component in given.items():
            if component is None:
                kwargs = (
                    {"support": support} if support is not None and key in _TAKES_SUPPORT else {}
                )
                if key == "faithfulness":  # RAGAS defines it as the share of supported claims
                    kwargs = {"scoring": "claims"}
                self.components[key] = _build(COMPONENTS[key], kwargs)
            elif isinstance(component, Evaluator):
                self.components[key] = component
            else:
                raise TypeError(
                    f"ragas: {key} must be an Evaluator, got {component!r}; by name or "
                    f"{{name: ..., option: ...}} mapping through ragtrace.evaluators.create"
                )
        self.requires = frozenset().union(  # type: ignore[misc]
            *(c.requires for c in self.components.values())
        )
        super().__init__(**options)

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        found: dict[str, list[Score | str]] = {}
        for key, component in self.components.items():
            found[key] = self._component(key, component, records)
        results = []
        for i in range(len(records)):
            per_record = {key: found[key][i] for key in self.components}
            results.append(self._combine(per_record))
        return results

    def _component(
        self, key: str, component: Evaluator, records: Sequence[RagRecord]
    ) -> list[Score | str]:
        """Each record's primary Score of one component, or why there is none."""
        todo = [i for i, r in enumerate(records) if not component.missing_fields(r)]
        out: list[Score | str] = [
            f"{key}: record lacks {', '.join(component.missing_fields(r))}" for r in records
        ]
        if not todo:
            return out
        try:
            outputs = component.evaluate_batch([records[i] for i in todo])
        except Exception as exc:
            message = f"{key}: {type(exc).__name__}: {exc}"
            for i in todo:
                out[i] = message
            return out
        for i, scores in zip(todo, outputs, strict=True):
            out[i] = _primary(key, component.name, scores)
        return out

    def _combine(self, per_record: dict[str, Score | str]) -> list[Score]:
        values: dict[str, float] = {}
        problems: list[str] = []
        scores: list[Score] = []
        for key, found in per_record.items():
            name = f"ragas.{key}"
            if isinstance(found, str):
                problems.append(found)
                scores.append(self.error_score(found, name=name))
                continue
            value = min(1.0, max(0.0, float(found.value)))  # type: ignore[arg-type]
            values[key] = value
            scores.append(
                self.score(
                    value,
                    name=name,
                    explanation=found.explanation,
                    model=found.model,
                    details={"score": _as_dict(found)},
                )
            )
        if problems:
            head = self.error_score("; ".join(problems)[:500])
        else:
            mean = harmonic_mean(list(values.values()))
            head = self.score(
                mean,
                explanation="harmonic mean of "
                + ", ".join(f"{k} {v:.3f}" for k, v in values.items()),
                details={"components": values},
            )
        return [head, *scores]


def _primary(key: str, name: str, scores: object) -> Score | str:
    """The component Score that counts (named like the evaluator, else the first), or an error."""
    if not isinstance(scores, list | tuple) or not scores:
        return f"{key}: no score"
    primary = next((s for s in scores if isinstance(s, Score) and s.name == name), scores[0])
    if not isinstance(primary, Score):
        return f"{key}: returned {type(primary).__name__}, not a Score"
    if primary.error is not None or primary.value is None:
        return f"{key}: {primary.error or 'no value'}"
    return primary


def _as_dict(score: Score) -> dict[str, Any]:
    return {
        "name": score.name,
        "value": score.value,
        "label": score.label,
        "threshold": score.threshold,
        "passed": score.passed,
    }


def _build(target: str, kwargs: dict[str, Any]) -> Evaluator:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"ragas needs {target} ({exc}); pass the component evaluator explicitly"
        ) from exc
    built = getattr(module, attr)(**kwargs)
    if not isinstance(built, Evaluator):
        raise TypeError(f"ragas: {target} built {type(built).__name__}, not an Evaluator")
    return built
