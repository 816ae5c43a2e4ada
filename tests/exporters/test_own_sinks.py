"""A user's own score sink, given by import path (``Config.sinks``): built with no arguments,
handed every evaluated record beside the built-in sinks, shut down with them; a path that does
not give a ``ScoreSink`` stops ``init`` and every command with one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._cli import main
from ragtrace._config import Config, ConfigError
from ragtrace._model import RagRecord
from tests.exporters.own_sinks import SINK_FILE_ENV, read_lines

OWN = "tests.exporters.own_sinks:JsonLinesSink"
QUEUE = "redis://127.0.0.1:1/0"  # nothing listens: a sink is refused before the queue is read


@pytest.fixture
def sink_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "sink.jsonl"
    monkeypatch.setenv(SINK_FILE_ENV, str(path))
    return path


def _record(i: int, response: str) -> RagRecord:
    return RagRecord(
        f"{i + 1:032x}", f"{i + 1:016x}", f"question {i}", response=response, app="shop"
    )


def test_a_sink_given_by_path_receives_every_evaluated_record_in_process(
    sink_file: Path,
) -> None:
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="shop",
        registry=registry,
        evaluators=["looping"],
        export_evaluation_spans=False,
        sinks=[OWN],
    )
    looping = "the same words " * 8
    try:
        assert rt.config.sources["sinks"] == "explicit"
        for i, response in enumerate(["a plain answer", looping]):
            assert rt.submit_record(_record(i, response))
        assert rt.flush(10)
        assert read_lines(sink_file) and "shutdown" not in read_lines(sink_file)[-1]
        counted = _counted_evaluations(registry)  # read before shutdown unregisters them
    finally:
        rt.shutdown()
    lines = read_lines(sink_file)
    assert lines[-1] == {"shutdown": True}  # shut down with the pipeline's sinks
    got = {str(line["trace_id"]): line for line in lines[:-1]}
    assert sorted(got) == [f"{1:032x}", f"{2:032x}"]
    scores = {tid: line["evaluators"] for tid, line in got.items()}
    assert all(set(s) == {"looping"} for s in scores.values())  # type: ignore[arg-type]
    assert scores[f"{1:032x}"] != scores[f"{2:032x}"]  # the sink got each record's own scores
    # Prometheus counted the same scores: the user's sink is one more sink, not instead
    assert counted == dict.fromkeys(scores[f"{1:032x}"]["looping"], 2.0)  # type: ignore[index]


def _counted_evaluations(registry: CollectorRegistry) -> dict[str, float]:
    """``ragtrace_evaluations_total`` by evaluator (the score's name), all outcomes."""
    counted: dict[str, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == "ragtrace_evaluations_total":
                name = sample.labels["evaluator"]
                counted[name] = counted.get(name, 0.0) + sample.value
    return counted


def test_the_variable_and_the_settings_file_name_sinks_too(tmp_path: Path) -> None:
    from_env = Config.resolve(env={"RAGTRACE_SINKS": f"{OWN}, a.b:C"})
    assert from_env.sinks == (OWN, "a.b:C")
    assert from_env.sources["sinks"] == "RAGTRACE_SINKS"
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text(f"sinks:\n  custom: [{OWN}]\n")
    assert Config.resolve(env={}, config_file=str(settings)).sinks == (OWN,)


@pytest.mark.parametrize("text", ["no_colon", "a.b:", ":Class", "a b:C", "a.b:C:D"])
def test_a_path_not_shaped_module_colon_class_is_refused_as_it_is_read(text: str) -> None:
    with pytest.raises(ConfigError, match="module:Class"):
        Config.resolve(env={"RAGTRACE_SINKS": text})


REFUSED = [
    ("tests.exporters.no_such_module:Sink", "does not import (ModuleNotFoundError"),
    (
        "tests.exporters.own_sinks:Missing",
        "names nothing (module 'tests.exporters.own_sinks' has no 'Missing')",
    ),
    ("tests.exporters.own_sinks:not_a_class", "is a function, not a class"),
    ("tests.exporters.own_sinks:NeedsAPath", "cannot be built with no arguments (TypeError"),
    ("tests.exporters.own_sinks:ExportsOnly", "not a ragtrace.ScoreSink: it has no shutdown()"),
]


@pytest.mark.parametrize(("path", "why"), REFUSED, ids=[p.split(":")[1] for p, _ in REFUSED])
def test_init_refuses_a_path_that_gives_no_score_sink(path: str, why: str) -> None:
    with pytest.raises(ConfigError) as refused:
        ragtrace.init(
            app="shop", registry=CollectorRegistry(), evaluators=["looping"], sinks=[path]
        )
    assert f"sinks: {path} " in str(refused.value) and why in str(refused.value)


@pytest.mark.parametrize(
    "command",
    [["worker", "--queue", QUEUE], ["ingest", "--listen", "127.0.0.1:0"]],
    ids=["worker", "ingest"],
)
@pytest.mark.parametrize(("path", "why"), REFUSED, ids=[p.split(":")[1] for p, _ in REFUSED])
def test_every_command_refuses_it_with_one_line_and_exit_2(
    command: list[str],
    path: str,
    why: str,
    sink_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = [*command, "--evaluators", "looping", "--sink", OWN, "--sink", path]
    assert main(given) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1, said
    assert said.startswith(f"ragtrace {command[0]}: sinks: {path} ") and why in said
    assert read_lines(sink_file) == [{"shutdown": True}]  # the sink built before it: closed


@pytest.mark.parametrize("command", [["worker", "--queue", QUEUE], ["ingest"]])
def test_a_flag_not_shaped_module_colon_class_stops_the_command_as_it_is_read(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--sink", "no_colon"])
    assert stopped.value.code == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1, said
    assert "argument --sink" in said and "module:Class" in said
