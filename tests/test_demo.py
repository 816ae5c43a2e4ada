"""The embedded demo drives real LangChain traffic through ragtrace, scores it and serves it."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

import ragtrace
from ragtrace import _cli as cli
from ragtrace._config import ConfigError
from ragtrace.demo._corpus import ARTICLES, QUESTIONS
from ragtrace.demo._evaluators import DEMO_EVALUATORS
from ragtrace.demo._run import APP, DemoOptions, DemoResult, Progress, demo_config, run_demo
from ragtrace.evaluators._registry import ONLINE_SUITE
from tests.demo_thread import LEXICAL
from tests.otlp_receiver import OtlpReceiver

ARTICLE_IDS = {a.id for a in ARTICLES}
LOOPING = "looping.unique_sentences"


class Terminal(io.StringIO):
    """An output that says it is a terminal, so the demo draws its live view."""

    def isatty(self) -> bool:
        return True


def quick(config: dict[str, Any] | None = None, **changes: Any) -> DemoOptions:
    """A run as fast as the app answers, with no live view, the lexical evaluators and
    ``/metrics`` on a free port; ``config`` changes those or sets other options of its
    ``Config``, ``changes`` the demo's own options."""
    shared = {"metrics_port": 0, "evaluators": LEXICAL, **(config or {})}
    return DemoOptions(demo_config(**shared), **{"live": False, "rate": 0.0, **changes})


def test_demo_config_is_the_demos_own_and_reads_no_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/metrics`` on 9464 and the demo's suite, whatever ``RAGTRACE_*`` says (``init`` reads
    the variables for the options the demo does not set, as any application's does)."""
    for name, value in (("METRICS_PORT", "1234"), ("EVALUATORS", "looping"), ("APP", "shop")):
        monkeypatch.setenv(f"RAGTRACE_{name}", value)
    config = DemoOptions().config
    assert (config.app, config.metrics_port, config.metrics_addr) == (APP, 9464, "127.0.0.1")
    assert config.evaluators == tuple(DEMO_EVALUATORS) and config.queue_url is None
    assert demo_config(LEXICAL, metrics_port=0).evaluators == LEXICAL
    with pytest.raises(ConfigError, match="queue_url: must be a redis://"):
        demo_config(queue_url="http://127.0.0.1:6379/0")


def json_run(seed: int, requests: int = 40) -> tuple[list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    run_demo(quick(requests=requests, seed=seed, as_json=True), out, err)
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_demo_scores_requests_and_serves_metrics_while_running() -> None:
    scraped: list[str] = []

    def scrape(progress: Progress) -> None:
        if not scraped or "ragtrace_evaluation_score_bucket" not in scraped[-1]:
            with urllib.request.urlopen(progress.metrics_url, timeout=5) as response:
                scraped.append(response.read().decode())

    out, err = io.StringIO(), io.StringIO()
    config = demo_config(LEXICAL, metrics_port=0)
    options = DemoOptions(config, duration_s=2, rate=50, live=False)
    result = run_demo(options, out, err, on_progress=scrape)

    entries = result.entries
    assert len(entries) >= 40
    assert [e.n for e in entries] == list(range(1, len(entries) + 1))
    assert all(e.record.query in QUESTIONS for e in entries)
    ok = [e for e in entries if e.record.status == "ok"]
    assert all(e.record.chunks[0].id in ARTICLE_IDS for e in ok)
    assert all(isinstance(e.record.chunks[0].score, float) for e in ok)
    looping = [s for e in ok for s in e.scores or () if s.name == LOOPING]
    assert len(looping) == len(ok)
    assert any(s.passed is False for s in looping) and any(s.passed for s in looping)
    contact = [s for e in ok for s in e.scores or () if s.name == "tokens_presence.answer"]
    assert len(contact) == len(ok)

    buckets = {
        (sample.labels["evaluator"], sample.labels["app"])
        for family in text_string_to_metric_families(scraped[-1])
        for sample in family.samples
        if sample.name == "ragtrace_evaluation_score_bucket"
    }
    for name in (LOOPING, "looping.compression_ratio", "tokens_presence.answer"):
        assert (name, "aurora-help") in buckets

    summary = result.summary
    assert summary.counts.total_requests == len(entries)
    assert summary.counts.evaluations[LOOPING]["fail"] >= 1
    # the request's own spans: evaluation results go out as log events, not spans
    assert 2.5 < summary.spans_per_request <= 3
    text = out.getvalue()
    assert text.startswith("ragtrace demo: aurora-help")
    assert f"metrics          served at {summary.metrics_url}" in text
    assert "ragtrace demo summary" in text and LOOPING in text
    assert err.getvalue() == ""
    assert ragtrace.get_current() is None


def test_json_lines_hold_scores_and_the_summary_goes_to_stderr() -> None:
    lines, err = json_run(seed=3, requests=20)
    assert [line["n"] for line in lines] == list(range(1, 21))
    for line in lines:
        assert len(str(line["trace_id"])) == 32
        assert line["query"] in QUESTIONS
        if line["status"] == "ok":
            scores = {s["name"]: s for s in line["scores"]}  # type: ignore[attr-defined]
            assert set(scores) >= {LOOPING, "tokens_presence.answer"}
            assert all(0 <= s["value"] <= 1 for s in scores.values())
            assert line["chunks"][0]["id"] in ARTICLE_IDS  # type: ignore[index]
    assert "ragtrace demo summary" in err and "requests         20" in err


def test_the_seed_makes_runs_reproducible() -> None:
    first, _ = json_run(seed=11)
    again, _ = json_run(seed=11)
    other, _ = json_run(seed=12)

    def answers(lines: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return [(x["query"], x["status"], x["response"], x["chunks"]) for x in lines]

    assert answers(first) == answers(again)
    assert answers(first) != answers(other)
    assert len({x["response"] for x in first}) > 10


@pytest.mark.integration
def test_otlp_endpoint_gets_every_span_and_the_evaluation_results() -> None:
    with OtlpReceiver() as receiver:
        out, endpoint = io.StringIO(), receiver.endpoint
        result = run_demo(quick({"otlp_endpoint": endpoint}, requests=12), out)
        spans = receiver.wait_for_spans(result.summary.spans, timeout_s=10)
        logs = receiver.wait_for_logs(12, timeout_s=10)
    assert result.summary.otlp_exported == result.summary.spans == len(spans)
    assert result.summary.otlp_failed == 0
    assert {s.resource["service.name"] for s in spans} == {"aurora-help"}
    assert len({s.trace_id for s in spans}) == 12
    # a gen_ai.evaluation.result log event per score, on the request's own trace
    evaluated = {log.attributes.get("gen_ai.evaluation.name") for log in logs}
    assert {LOOPING, "tokens_presence.answer"} <= evaluated
    assert {log.trace_id for log in logs} <= {s.trace_id for s in spans}
    assert f"{len(spans)} exported with OTLP to {endpoint}" in out.getvalue()


def test_live_view_redraws_on_a_terminal() -> None:
    out = Terminal()
    result: DemoResult = run_demo(quick(requests=15, live=None), out, io.StringIO())
    text = out.getvalue()
    assert "\x1b[H" in text and "\x1b[?25h" in text  # redrawn in place, cursor restored
    assert "pass rate" in text and LOOPING in text and "queue" in text and "drops" in text
    assert text.rstrip().endswith(f"served at {result.summary.metrics_url} while the demo ran")


def test_busy_metrics_port_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["demo", "--metrics-port", str(port), "--duration", "1", "--no-live"]
        code = cli.main([*argv, "--evaluators", ",".join(LEXICAL)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.strip() == (
        f"ragtrace demo: cannot serve /metrics on 127.0.0.1:{port} (address already in use); "
        "pick another port with --metrics-port N (0 = any free port)"
    )
    assert ragtrace.get_current() is None


def _demo_command(duration_s: int) -> list[str]:
    """``python -m ragtrace demo`` on the lexical evaluators, 20 requests a second."""
    args = ["demo", "--duration", str(duration_s), "--rate", "20", "--metrics-port", "0"]
    args += ["--no-live", "--evaluators", ",".join(LEXICAL)]
    return [sys.executable, "-m", "ragtrace", *args]


@pytest.mark.integration
def test_cli_demo_runs_as_a_module() -> None:
    proc = subprocess.run(
        _demo_command(duration_s=1),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ragtrace demo summary" in proc.stdout
    assert "looping.unique_sentences" in proc.stdout and "metrics          served at" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.integration
def test_sigterm_stops_the_demo_as_ctrl_c_does_with_its_summary() -> None:
    proc = subprocess.Popen(
        _demo_command(duration_s=0),  # 0: until stopped
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # up to the first request's line: it is running
            if line.split()[:1] == ["1"]:
                break
        proc.terminate()  # SIGTERM, as a container runtime stops it
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert "ragtrace demo summary" in out
    assert "Traceback" not in err


def test_cli_rejects_bad_arguments() -> None:
    for args, message in (
        (["--requests", "0"], "--requests must be >= 1"),
        (["--rate", "-1"], "must be >= 0"),
        (["--metrics-port", "70000"], "must be a port number"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "ragtrace", "demo", *args],
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_cli_import_loads_no_framework() -> None:
    code = "import sys, ragtrace._cli; print(any(m.startswith('langchain') for m in sys.modules))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == "False"


def test_default_demo_runs_the_full_local_online_suite() -> None:
    out, err = io.StringIO(), io.StringIO()
    result = run_demo(quick({"evaluators": None}, requests=6), out, err)
    produced = {s.name.split(".")[0] for e in result.entries for s in e.scores or ()}
    assert set(ONLINE_SUITE) | {"tokens_presence"} <= produced
    errors = [s for e in result.entries for s in e.scores or () if s.error]
    assert errors == []
    assert "loading the evaluators' local models" in out.getvalue() + err.getvalue()


def test_faithfulness_tells_the_demo_models_behaviours_apart() -> None:
    """The demo's answers are grounded, invented or off-context by its schedule, so their
    verdicts are known: copied answers pass, invented and off-context ones are flagged. (Until
    the short-answer model's signs were bounded, 29 of these 36 copied answers were flagged.)"""
    import random

    from ragtrace._model import Chunk, RagRecord
    from ragtrace.demo._app import CorpusRetriever
    from ragtrace.demo._generator import compose_answer
    from ragtrace.evaluators._faithfulness import Faithfulness

    retriever = CorpusRetriever()
    records: dict[str, list[RagRecord]] = {"grounded": [], "invented": [], "off_context": []}
    for n, question in enumerate(QUESTIONS):
        docs = retriever.invoke(question)
        context = "\n\n".join(d.page_content for d in docs)
        chunks = tuple(Chunk(text=d.page_content, id=d.id) for d in docs)
        for behaviour, kept in records.items():
            answer = compose_answer(question, context, behaviour, random.Random(n))  # type: ignore[arg-type]
            kept.append(
                RagRecord(
                    trace_id=f"{n:032x}",
                    span_id="0" * 16,
                    query=question,
                    chunks=chunks,
                    response=answer,
                )
            )
    evaluator = Faithfulness()
    passed = {
        behaviour: [s[0].passed for s in evaluator.evaluate_batch(kept)]
        for behaviour, kept in records.items()
    }
    assert sum(passed["grounded"]) >= 0.9 * len(QUESTIONS)
    assert sum(passed["invented"]) <= 0.2 * len(QUESTIONS)
    assert not any(passed["off_context"])


def test_the_summary_shows_the_bad_answers_caught() -> None:
    out, err = io.StringIO(), io.StringIO()
    run_demo(quick(requests=80, seed=5), out, err)
    text = out.getvalue()
    assert "bad answers caught (by the scores that name them)" in text
    caught_block = text.split("bad answers caught", 1)[1]
    looping = next(line for line in caught_block.splitlines() if line.strip().startswith("looping"))
    caught, _, total = looping.split()[1:4]
    assert int(caught) == int(total) > 0  # every looping answer of the run
    assert "by looping" in looping
    assert "false alarms on" in text and "grounded answers" in text


def test_every_bad_behaviour_is_caught_by_what_names_it_and_grounded_answers_pass() -> None:
    """The demo's answers behave by its schedule, so what each alarm should say is known: the
    default suite (plus the demo's toxicity) catches at least 80% of each bad behaviour by the
    scores that name it, and fails at most 5% of grounded answers on any alarm."""
    import random

    from ragtrace._model import Chunk, RagRecord
    from ragtrace.demo._app import CorpusRetriever
    from ragtrace.demo._catches import CatchTally
    from ragtrace.demo._evaluators import demo_evaluators
    from ragtrace.demo._generator import compose_answer

    retriever = CorpusRetriever()
    evaluators = demo_evaluators()
    tally = CatchTally()
    behaviours = ("grounded", "off_context", "invented", "pii", "rude", "looping")
    for n, question in enumerate(QUESTIONS):
        docs = retriever.invoke(question)
        context = "\n\n".join(d.page_content for d in docs)
        chunks = tuple(Chunk(text=d.page_content, id=d.id) for d in docs)
        records = [
            RagRecord(
                trace_id=f"{n:030x}{i:02x}",
                span_id="0" * 16,
                query=question,
                chunks=chunks,
                response=compose_answer(question, context, b, random.Random(n)),  # type: ignore[arg-type]
            )
            for i, b in enumerate(behaviours)
        ]
        scores: list[list] = [[] for _ in records]
        for evaluator in evaluators:
            for kept, got in zip(scores, evaluator.evaluate_batch(records), strict=True):
                kept.extend(got)
        for behaviour, got in zip(behaviours, scores, strict=True):
            tally.add(behaviour, got)
    for behaviour in behaviours[1:]:
        assert tally.caught[behaviour] >= 0.8 * tally.answers[behaviour], (
            behaviour,
            tally.lines(),
        )
    alarms = {k: v for k, v in tally.false_alarms.items() if k != "faithfulness"}
    assert all(v <= 0.05 * tally.answers["grounded"] for v in alarms.values()), alarms
