"""The evaluator contract (base.py) and the registry of evaluators by name (registry.py)."""

from __future__ import annotations

import math
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import _base as base
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._base import Evaluator, FunctionEvaluator, evaluator
from ragtrace.evaluators._looping import LoopingDetection
from ragtrace.evaluators._tokens_presence import TokensPresence


def record(
    response: str | None = "an answer", chunks: tuple[Chunk, ...] = (Chunk("c"),)
) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32, span_id="0" * 16, query="q", chunks=chunks, response=response
    )


class Length(Evaluator):
    name: ClassVar[str] = "length"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "chunks"})
    threshold: float | None = 0.5

    def evaluate(self, record: RagRecord) -> list[Score]:
        return [self.score(min(1.0, len(record.response or "") / 10))]


class Lower(Length):
    direction = "lower_is_better"


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    before = dict(registry._registered)
    yield
    registry._registered.clear()
    registry._registered.update(before)


# base.py ------------------------------------------------------------------------------------


def test_score_higher_is_better() -> None:
    ev = Length()
    assert ev.score(0.5) == Score(
        name="length", value=0.5, label="pass", direction="higher_is_better", threshold=0.5,
        passed=True, evaluator_kind="lexical",
    )  # fmt: skip
    low = ev.score(0.49)
    assert (low.passed, low.label) == (False, "fail")


def test_score_lower_is_better() -> None:
    ev = Lower()
    assert (ev.score(0.5).passed, ev.score(0.5).label) == (True, "pass")
    assert (ev.score(0.51).passed, ev.score(0.51).label) == (False, "fail")
    # Per-call direction and threshold override the evaluator's.
    s = Length().score(0.7, direction="lower_is_better", threshold=0.8, name="other")
    assert (s.name, s.direction, s.threshold, s.passed) == ("other", "lower_is_better", 0.8, True)


def test_score_without_threshold_or_value_has_no_verdict() -> None:
    ev = Length()
    ev.threshold = None  # Length(threshold=None) keeps the class default
    s = ev.score(0.1)
    assert (s.passed, s.label, s.threshold) == (None, None, None)
    s = Length().score(None)
    assert (s.passed, s.label) == (None, None)
    s = Length().score(0.9, label="great", details={"k": 1}, explanation="why", model="m")
    assert (s.label, s.passed, dict(s.details), s.explanation, s.model) == (
        "great", True, {"k": 1}, "why", "m",
    )  # fmt: skip


def test_error_score_and_batch() -> None:
    ev = Length()
    err = ev.error_score("boom")
    assert (err.value, err.label, err.error, err.name, err.threshold) == (
        None, "error", "boom", "length", 0.5,
    )  # fmt: skip
    batch = ev.evaluate_batch([record("12345"), record("1234567890")])
    assert [[s.value for s in scores] for scores in batch] == [[0.5], [1.0]]
    assert "Length" in repr(ev) and "'length'" in repr(ev)


def test_missing_fields() -> None:
    ev = Length()
    assert ev.missing_fields(record()) == ()
    assert ev.missing_fields(record(None)) == ("response",)
    assert ev.missing_fields(record(" \n\t")) == ("response",)
    assert ev.missing_fields(record(None, ())) == ("chunks", "response")


def test_constructor_options_are_validated() -> None:
    ev = Length(threshold=1, inline=True, batch_size=4, timeout_s=2, cost_usd=0.01)
    assert (ev.threshold, ev.inline, ev.batch_size, ev.timeout_s, ev.cost_usd) == (
        1.0, True, 4, 2.0, 0.01,
    )  # fmt: skip
    assert Length().inline is False  # class defaults untouched
    for bad, match in [
        ({"threshold": math.nan}, "threshold must be a real number"),
        ({"threshold": True}, "threshold must be a real number"),
        ({"threshold": "0.5"}, "threshold must be a real number, got '0.5' \\(length has no"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"timeout_s": 0}, "timeout_s must be > 0"),
        ({"cost_usd": -1}, "cost_usd must be >= 0"),
    ]:
        with pytest.raises(ValueError, match=match):
            Length(**bad)  # type: ignore[arg-type]


def test_bad_required_field_and_missing_name_raise_type_error() -> None:
    class Bad(Length):
        requires: ClassVar[frozenset[str]] = frozenset({"response", "answer"})

    with pytest.raises(TypeError, match=r"unknown required field\(s\) \['answer'\]; known: "):
        Bad()

    class Nameless(Length):
        name: ClassVar[str] = ""

    with pytest.raises(TypeError, match="Nameless must set a non-empty `name`"):
        Nameless()
    with pytest.raises(TypeError, match="unknown required field"):
        FunctionEvaluator(lambda r: 1.0, name="f", requires={"context"})


def test_decorator_numbers_and_bools() -> None:
    @evaluator(requires={"response"}, threshold=0.5)
    def has_citation(record: RagRecord) -> float | bool | None:
        if record.response == "skip":
            return None
        return "[" in (record.response or "")

    assert isinstance(has_citation, FunctionEvaluator)
    assert (has_citation.name, has_citation.requires, has_citation.threshold) == (
        "has_citation", frozenset({"response"}), 0.5,
    )  # fmt: skip
    assert has_citation.evaluate(record("see [1]")) == [
        Score(name="has_citation", value=1.0, label="pass", threshold=0.5, passed=True)
    ]
    [fail] = has_citation.evaluate(record("no source"))
    assert (fail.value, fail.passed, fail.label) == (0.0, False, "fail")
    assert has_citation.evaluate(record("skip")) == []
    assert has_citation.missing_fields(record(None)) == ("response",)


def test_decorator_scores_kind_direction_and_name() -> None:
    fixed = Score(name="x", value=0.3)

    @evaluator(name="judge_like", kind="judge", direction="lower_is_better", threshold=0.2)
    def several(record: RagRecord) -> list[Score]:
        return [fixed, fixed]

    @evaluator(name="single")
    def single(record: RagRecord) -> Score:
        return fixed

    assert (several.name, several.kind, several.direction) == (
        "judge_like",
        "judge",
        "lower_is_better",
    )
    assert several.evaluate(record()) == [fixed, fixed]
    assert single.evaluate(record()) == [fixed]
    assert several.score(0.1).passed is True
    assert several.score(0.1).evaluator_kind == "judge"
    # Instance attributes do not leak into the class.
    assert FunctionEvaluator.name == "function"
    assert FunctionEvaluator.requires == frozenset()


def test_decorator_passes_base_options() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        evaluator(name="slow", timeout_s=-1)(lambda r: 1.0)
    ev = evaluator(name="quick", inline=True, cost_usd=0.5)(lambda r: 1.0)
    assert (ev.inline, ev.cost_usd) == (True, 0.5)


def test_record_fields_cover_the_record() -> None:
    fields = set(RagRecord.__dataclass_fields__)
    assert fields >= base.RECORD_FIELDS


# registry.py --------------------------------------------------------------------------------


def test_builtins_are_listed_and_created() -> None:
    assert {"looping", "tokens_presence"} <= set(registry.names())
    assert registry.names() == sorted(registry.names())
    looping = registry.create("looping", threshold=0.6)
    assert isinstance(looping, LoopingDetection) and looping.threshold == 0.6
    tokens = registry.create("tokens_presence", constraints=["a"], targets=["answer"])
    assert isinstance(tokens, TokensPresence)


def test_bad_options_come_from_the_constructor() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        registry.create("tokens_presence")
    with pytest.raises(TypeError):
        registry.create("looping", nonsense=1)


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(
        KeyError, match=r"unknown evaluator 'nope'; known: .*looping.*tokens_presence"
    ):
        registry.create("nope")


def test_register_callable_and_string_and_unregister() -> None:
    registry.register("length", Length)
    registry.register("lower", "tests.evaluators.test_base:Lower")
    assert {"length", "lower"} <= set(registry.names())
    assert isinstance(registry.create("length", threshold=0.1), Length)
    assert type(registry.create("lower")) is Lower
    with pytest.raises(ValueError, match="already registered"):
        registry.register("length", Lower)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("looping", Lower)
    registry.register("length", Lower, replace=True)
    assert type(registry.create("length")) is Lower
    registry.unregister("length")
    registry.unregister("length")  # forgetting twice is fine
    assert "length" not in registry.names()
    registry.unregister("looping")  # built-ins stay
    assert "looping" in registry.names()


def test_register_rejects_bad_names_and_factories() -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        registry.register("", Length)
    registry.register("not_an_evaluator", lambda **kw: object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="returned object"):
        registry.create("not_an_evaluator")
    registry.register("not_callable", "tests.evaluators.test_base:PLUGIN_SOURCE")
    with pytest.raises(TypeError, match="is not callable"):
        registry.create("not_callable")


PLUGIN_SOURCE = """
from typing import ClassVar
from ragtrace.evaluators._base import Evaluator

class FakeMetric(Evaluator):
    name: ClassVar[str] = "fake_metric"

    def __init__(self, factor=1.0, **options):
        super().__init__(**options)
        self.factor = factor

    def evaluate(self, record):
        return [self.score(0.5 * self.factor)]
"""


def test_entry_point_of_an_installed_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "ragtrace_fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ragtrace-fake-plugin\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        textwrap.dedent("""
            [ragtrace.evaluators]
            fake_metric = ragtrace_fake_plugin:FakeMetric
            looping = ragtrace_fake_plugin:FakeMetric
        """)
    )
    (tmp_path / "ragtrace_fake_plugin.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ragtrace_fake_plugin", raising=False)

    assert "fake_metric" in registry.names()
    built = registry.create("fake_metric", factor=2.0, threshold=0.9)
    assert type(built).__name__ == "FakeMetric"
    [s] = built.evaluate(record())
    assert (s.name, s.value, s.passed) == ("fake_metric", 1.0, True)
    # A plugin cannot shadow a built-in; code registration overrides a plugin.
    assert isinstance(registry.create("looping"), LoopingDetection)
    registry.register("fake_metric", Length, replace=True)
    assert isinstance(registry.create("fake_metric"), Length)
    sys.modules.pop("ragtrace_fake_plugin", None)


@pytest.mark.parametrize(
    "name, option",
    [
        ("context_entities_recall", "support"),
        ("context_entities_recall", "support_threshold"),
        ("answer_correctness", "max_chunks"),
        ("answer_relevance_similarity", "max_context_sentences"),
    ],
)
def test_an_inherited_option_the_evaluator_has_no_use_for_is_refused_by_name(
    name: str, option: str
) -> None:
    with pytest.raises(ValueError, match=f"{name}: {option} does not apply"):
        registry.create(name, **{option: 4})
