"""Judge evaluators inside a running ragtrace: metrics, spend, failures that never block."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._judges import JudgeClient
from ragtrace._model import Chunk, Evaluation, RagRecord, Score
from ragtrace._pipeline.sampling import Sampler
from ragtrace.evaluators._judge.base import JudgeEvaluator
from tests.judges.test_client import SCHEMA


class SupportVerdict(JudgeEvaluator):
    """A minimal judge evaluator: one verdict on the whole answer."""

    name = "judge_support_test"
    requires = frozenset({"response", "chunks"})
    threshold = 0.5

    def judge_record(self, record: RagRecord) -> list[Score]:
        reply = self.judge.complete(
            [{"role": "user", "content": f"{record.response} / {self.contexts_text(record)}"}],
            schema=SCHEMA,
            evaluator=self.name,
            prompt_id="support_test@v1",
        )
        value = 1.0 if reply.data["verdict"] == "yes" else 0.0
        return [self.score(value, details={"reason": reply.data["reason"]}, replies=[reply])]


class Collect:
    """A score sink that keeps every Score."""

    def __init__(self) -> None:
        self.scores: list[Score] = []

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        self.scores.extend(s for e in evaluations for s in e.scores)

    def shutdown(self) -> None:
        pass


def record(i: int) -> RagRecord:
    return RagRecord(
        trace_id=f"{i + 1:032x}",
        span_id=f"{i + 1:016x}",
        query=f"q{i}",
        response=f"answer {i}",
        chunks=(Chunk(text=f"context {i}"),),
        app="judged",
    )


def run(evaluator: JudgeEvaluator, n: int, sampler: Sampler | None = None):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = CollectorRegistry()
    collected = Collect()
    rt = ragtrace.init(
        app="judged",
        tracer_provider=provider,
        registry=registry,
        evaluators=[evaluator],
        sampler=sampler,
        score_sinks=[collected],
    )
    scores = collected.scores
    try:
        for i in range(n):
            rt.pipeline.submit(record(i))
        assert rt.flush(30)
        samples = {
            (m.name, tuple(sorted(m.labels.items()))): m.value
            for family in registry.collect()
            for m in family.samples
        }
    finally:
        rt.shutdown()  # unregisters the metrics: read them before
    return samples, scores, exporter


def sample(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_judge_scores_calls_and_tokens_reach_prometheus(server, tmp_path):
    judge = JudgeClient("openai/ok", api_base=server.api_base, cache=tmp_path / "c.sqlite")
    registry, scores, _ = run(SupportVerdict(judge=judge), 3)
    labels = {"evaluator": "judge_support_test", "model": "openai/ok"}
    assert sample(registry, "ragtrace_judge_calls_total", **labels, outcome="ok") == 3
    assert sample(registry, "ragtrace_judge_tokens_total", **labels, direction="output") == 36
    assert (
        sample(
            registry,
            "ragtrace_evaluations_total",
            evaluator="judge_support_test",
            app="judged",
            outcome="pass",
        )
        == 3
    )
    assert {s.model for s in scores} == {"openai/ok"}
    assert scores[0].details["prompts"] == ["support_test@v1"]
    assert scores[0].details["judge_calls"] == 1 and scores[0].evaluator_kind == "judge"


def test_a_failing_judge_gives_error_scores_labelled_by_outcome(server, tmp_path):
    judge = JudgeClient(
        "openai/error500", api_base=server.api_base, cache=False, max_retries=1, backoff_s=0.01
    )
    registry, scores, _ = run(SupportVerdict(judge=judge), 2)
    assert [s.label for s in scores] == ["server_error", "server_error"]
    assert all(s.value is None and s.error and "server_error" in s.error for s in scores)
    assert (
        sample(
            registry,
            "ragtrace_evaluations_total",
            evaluator="judge_support_test",
            app="judged",
            outcome="error",
        )
        == 2
    )
    assert (
        sample(
            registry,
            "ragtrace_judge_calls_total",
            evaluator="judge_support_test",
            model="openai/error500",
            outcome="server_error",
        )
        == 2
    )


def test_judge_calls_leave_no_spans_in_the_users_trace(server, tmp_path):
    judge = JudgeClient("openai/ok", api_base=server.api_base, cache=False)
    _, _, exporter = run(SupportVerdict(judge=judge), 1)
    names = {s.name for s in exporter.get_finished_spans()}
    # none: the judge's calls make no span, and results go out as log events by default
    assert names == set()


def test_the_judge_option_takes_a_client_a_model_string_or_client_options():
    by_string = SupportVerdict(judge="openai/some-model")
    assert by_string.judge.model_name == "openai/some-model"
    assert SupportVerdict(judge="openai/some-model").judge is by_string.judge  # shared
    by_options = SupportVerdict(
        judge={"model": "openai/other", "api_base": "http://127.0.0.1:1/v1", "timeout_s": 7}
    )
    assert by_options.judge.model_name == "openai/other" and by_options.judge.timeout_s == 7
    with pytest.raises(TypeError, match="bad judge option"):
        SupportVerdict(judge={"model": "m", "timeout": 3})
    with pytest.raises(TypeError, match="judge must be"):
        SupportVerdict(judge=42)  # type: ignore[arg-type]


def test_an_evaluator_without_a_judge_uses_the_configured_default(monkeypatch):
    from ragtrace.evaluators._judge import base as judge_base

    monkeypatch.setenv("RAGTRACE_JUDGE_MODEL", "openai/from-env")
    monkeypatch.setattr(judge_base, "_default_client", None)
    assert SupportVerdict().judge.model_name == "openai/from-env"
    mine = JudgeClient("openai/mine", cache=False)
    judge_base.set_default_judge(mine)
    try:
        assert SupportVerdict().judge is mine
    finally:
        judge_base.set_default_judge(None)


def test_ragtrace_eval_reports_what_the_judge_calls_cost(server, tmp_path, capsys):
    import json

    from ragtrace._cli import main
    from ragtrace.evaluators import _registry as registry

    judge = JudgeClient("openai/ok", api_base=server.api_base, cache=False)
    registry.register("judge_support_test", lambda **o: SupportVerdict(judge=judge, **o))
    data = tmp_path / "in.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": str(i), "query": "q", "contexts": ["c"], "response": f"a{i}"}) + "\n"
            for i in range(2)
        )
    )
    try:
        status = main(
            [
                "eval",
                "--input",
                str(data),
                "--evaluators",
                "judge_support_test",
                "--output",
                str(tmp_path / "out.jsonl"),
                "--summary-json",
                str(tmp_path / "s.json"),
                "--no-progress",
            ]
        )
    finally:
        registry.unregister("judge_support_test")
    assert status == 0
    assert "judge: 2 calls (ok 2); tokens 80 in, 24 out; $0.0000" in capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["judge"]["calls"] == 2 and summary["judge"]["outcomes"] == {"ok": 2}
