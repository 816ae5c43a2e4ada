"""Ragas: the harmonic mean over injected components, failures, and the real components."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ragtrace._config import SettingsError
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._base import Evaluator, evaluator
from ragtrace.evaluators._ragas import Ragas, harmonic_mean
from ragtrace.evaluators._retrieval_quality import ContextPrecision, ContextRecall
from tests.evaluators.test_reference import word_support

COMPONENTS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")


def record(reference: object = "Paris is the capital of France.") -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="What is the capital of France?",
        chunks=(Chunk("Bananas are yellow."), Chunk("Paris is the capital of France.")),
        response="Paris is the capital of France.",
        reference=reference,  # type: ignore[arg-type]
    )


def fixed(name: str, value: float, requires: Sequence[str] = ("response",)) -> Evaluator:
    """A real evaluator (the decorator's) that always gives ``value``."""
    return evaluator(name=name, requires=requires)(lambda record: value)


def ragas_of(*values: float) -> Ragas:
    return Ragas(**{key: fixed(key, v) for key, v in zip(COMPONENTS, values, strict=True)})


def by_name(scores: list[Score]) -> dict[str, Score]:
    return {s.name: s for s in scores}


def test_harmonic_mean() -> None:
    assert harmonic_mean([1.0, 0.5, 1.0, 0.5]) == pytest.approx(4 / 6)
    assert harmonic_mean([0.8, 0.8, 0.8, 0.8]) == pytest.approx(0.8)
    assert harmonic_mean([0.9, 0.0, 1.0, 1.0]) == 0.0
    assert harmonic_mean([]) == 0.0


def test_harmonic_mean_of_four_components() -> None:
    # 4 / (1/1 + 1/0.5 + 1/1 + 1/0.5) = 4/6
    ev = ragas_of(1.0, 0.5, 1.0, 0.5)
    got = ev.evaluate(record())
    assert [s.name for s in got] == ["ragas"] + [f"ragas.{k}" for k in COMPONENTS]
    head = got[0]
    assert head.value == pytest.approx(2 / 3) and head.passed is False
    assert head.details == {"components": dict(zip(COMPONENTS, (1.0, 0.5, 1.0, 0.5), strict=True))}
    assert "faithfulness 1.000, answer_relevancy 0.500" in (head.explanation or "")
    faithfulness = by_name(got)["ragas.faithfulness"]
    assert faithfulness.value == 1.0 and faithfulness.details["score"]["name"] == "faithfulness"


def test_any_zero_component_gives_zero() -> None:
    got = ragas_of(0.9, 0.0, 1.0, 1.0).evaluate(record())
    assert got[0].value == 0.0 and got[0].error is None


def test_a_failing_component_makes_ragas_an_error() -> None:
    def boom(record: RagRecord) -> float:
        raise RuntimeError("model exploded")

    broken = evaluator(name="faithfulness")(boom)
    errored = evaluator(name="answer_relevancy")(
        lambda record: Score(name="answer_relevancy", value=None, error="no query")
    )
    silent = evaluator(name="context_recall")(lambda record: None)
    ev = Ragas(
        faithfulness=broken,
        answer_relevancy=errored,
        context_precision=fixed("context_precision", 1.0),
        context_recall=silent,
    )
    got = by_name(ev.evaluate(record()))
    assert got["ragas"].value is None
    assert got["ragas"].error == (
        "faithfulness: RuntimeError: model exploded; answer_relevancy: no query; "
        "context_recall: no score"
    )
    assert got["ragas.context_precision"].value == 1.0
    assert got["ragas.faithfulness"].error == "faithfulness: RuntimeError: model exploded"


def test_requires_the_union_and_reports_missing_fields() -> None:
    ev = Ragas(
        faithfulness=fixed("faithfulness", 1.0, ("chunks", "response")),
        answer_relevancy=fixed("answer_relevancy", 1.0, ("query", "response")),
        context_precision=fixed("context_precision", 1.0, ("chunks", "reference")),
        context_recall=fixed("context_recall", 1.0, ("chunks", "reference")),
    )
    assert ev.requires == frozenset({"query", "chunks", "response", "reference"})
    assert ev.missing_fields(record(None)) == ("reference",)
    got = by_name(ev.evaluate(record(None)))
    assert got["ragas"].error and "context_precision: record lacks reference" in got["ragas"].error
    assert got["ragas.faithfulness"].value == 1.0


def test_bad_components_are_rejected() -> None:
    others = {
        "answer_relevancy": fixed("a", 1),
        "context_precision": fixed("b", 1),
        "context_recall": fixed("c", 1),
    }
    with pytest.raises(TypeError, match="faithfulness must be an Evaluator, got 42"):
        Ragas(faithfulness=42, **others)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"through ragtrace\.evaluators\.create"):
        Ragas(faithfulness="faithfulness", **others)
    with pytest.raises(ValueError, match="ragas: faithfulness: unknown evaluator 'yes'"):
        create("ragas", faithfulness="yes", **others)
    with pytest.raises(ValueError, match="ragas: faithfulness needs the evaluator's 'name'"):
        create("ragas", faithfulness={"scoring": "claims"}, **others)
    with pytest.raises(ValueError, match=r"ragas: faithfulness: .*unexpected keyword.*colour"):
        create("ragas", faithfulness={"name": "faithfulness", "colour": "red"}, **others)


def test_components_chosen_by_name_and_options() -> None:
    """A registry name or a settings-style mapping picks a component: RAGAS's own answer
    relevancy (questions generated back by the judge) and Ejento's unranked precision."""
    ev = create(
        "ragas",
        answer_relevancy="judge_response_relevancy",
        context_precision={"name": "context_precision", "options": {"ranked": False}},
        context_recall={"name": "context_recall", "splitter": "clauses"},
    )
    kinds = {k: type(c).__name__ for k, c in ev.components.items()}
    assert kinds == {
        "faithfulness": "Faithfulness",
        "answer_relevancy": "JudgeResponseRelevancy",
        "context_precision": "ContextPrecision",
        "context_recall": "ContextRecall",
    }
    assert ev.components["context_precision"].ranked is False  # type: ignore[attr-defined]
    assert ev.components["faithfulness"].scoring == "claims"  # type: ignore[attr-defined]


def test_components_from_the_command_line_and_a_settings_file(tmp_path: Path) -> None:
    from ragtrace._offline.selection import build_evaluators, parse_options
    from ragtrace._runtime.evaluation_settings import load_settings

    (cli,) = build_evaluators(
        ["ragas"],
        parse_options(
            [
                'ragas.answer_relevancy="judge_response_relevancy"',
                'ragas.context_precision={"name": "context_precision", "ranked": false}',
            ]
        ),
    )
    assert isinstance(cli, Ragas)
    assert type(cli.components["answer_relevancy"]).__name__ == "JudgeResponseRelevancy"
    assert cli.components["context_precision"].ranked is False  # type: ignore[attr-defined]
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "evaluators:\n"
        "  - name: ragas\n"
        "    answer_relevancy: judge_response_relevancy\n"
        "    context_precision: {name: context_precision, ranked: false}\n"
    )
    (configured,) = load_settings(str(settings)).evaluators
    assert isinstance(configured, Ragas)
    assert type(configured.components["answer_relevancy"]).__name__ == "JudgeResponseRelevancy"
    bad = tmp_path / "bad.yaml"
    bad.write_text("evaluators:\n  - name: ragas\n    answer_relevancy: judge_relevancy\n")
    with pytest.raises(SettingsError, match="unknown evaluator 'judge_relevancy'"):
        load_settings(str(bad))


def test_batch_runs_each_component_once_over_the_batch() -> None:
    calls: list[int] = []

    class Counting(ContextRecall):
        def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
            calls.append(len(records))
            return super().evaluate_batch(records)

    ev = Ragas(
        faithfulness=fixed("faithfulness", 1.0),
        answer_relevancy=fixed("answer_relevancy", 1.0),
        context_precision=fixed("context_precision", 1.0),
        context_recall=Counting(support=word_support),
    )
    got = ev.evaluate_batch([record(), record("Berlin is in Germany."), record()])
    assert calls == [3]
    assert [r[0].value for r in got] == [1.0, 0.0, 1.0]


def test_with_the_real_retrieval_and_relevance_components() -> None:
    # The retrieval components with the word stand-in: the reference's one statement is in
    # chunk 2 -> context recall 1, context precision (rank 2 of 2) 1/2. Answer relevance is the
    # real embedding evaluator; faithfulness is injected (another module provides it).
    ev = Ragas(faithfulness=fixed("faithfulness", 1.0), support=word_support)
    assert isinstance(ev.components["context_precision"], ContextPrecision)
    assert type(ev.components["answer_relevancy"]).__name__ == "AnswerRelevance"
    got = by_name(ev.evaluate(record()))
    relevancy = got["ragas.answer_relevancy"].value
    assert relevancy is not None and 0.5 < relevancy <= 1.0
    assert got["ragas.context_recall"].value == 1.0
    assert got["ragas.context_precision"].value == 0.5
    assert got["ragas"].value == pytest.approx(4 / (1 + 1 / relevancy + 2 + 1))


def test_default_components_end_to_end() -> None:
    ev = create("ragas")
    assert isinstance(ev, Ragas)
    assert ev.requires == frozenset({"query", "chunks", "response", "reference"})
    got = by_name(ev.evaluate(record()))
    assert set(got) == {"ragas"} | {f"ragas.{k}" for k in COMPONENTS}
    assert all(s.error is None and s.value is not None for s in got.values())
    assert got["ragas.context_recall"].value == 1.0
    assert got["ragas.context_precision"].value == 0.5
