"""The built-in sinks come from one catalogue: each is built when its option asks for it, and
only then; the review store is one of them, an option like the others (``review_db``: code, the
environment or the settings file), filled in-process by ``ragtrace.init``."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._config import ConfigError
from ragtrace._model import Conversation, RagRecord, Turn
from ragtrace._redaction.current import current_policy
from ragtrace.evaluators import FunctionEvaluator
from ragtrace.review import open_store
from tests.components import wait_until
from tests.exporters.own_sinks import SINK_FILE_ENV, JsonLinesSink, read_lines

ROOT = Path(__file__).resolve().parents[2]
OWN = "tests.exporters.own_sinks:JsonLinesSink"
UNREACHABLE_PHOENIX = "http://127.0.0.1:9"  # nothing is posted: no record is evaluated
LOOPING = "the same words " * 8
MAIL = "write to alice@corp.example"

RESULTS_SINKS = {
    "logs": ["OtelEvaluationLogSink"],
    "spans": ["OtelEvaluationSink"],
    "both": ["OtelEvaluationLogSink", "OtelEvaluationSink"],
    "none": [],
}


@pytest.fixture(autouse=True)
def no_sink_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in ("RAGTRACE_REVIEW_DB", "RAGTRACE_PHOENIX_ENDPOINT", "RAGTRACE_SINKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(SINK_FILE_ENV, str(tmp_path / "own.jsonl"))
    yield


@pytest.mark.parametrize(
    ("results", "phoenix", "review", "own"),
    list(itertools.product(RESULTS_SINKS, (False, True), (False, True), (False, True))),
)
def test_the_catalogue_builds_exactly_the_sinks_whose_option_is_set(
    tmp_path: Path, results: str, phoenix: bool, review: bool, own: bool
) -> None:
    options: dict[str, object] = {"evaluation_results": results}
    if phoenix:
        options["phoenix_endpoint"] = UNREACHABLE_PHOENIX
    if review:
        options["review_db"] = str(tmp_path / "review.db")
    if own:
        options["sinks"] = [OWN]
    rt = ragtrace.init(app="shop", registry=CollectorRegistry(), evaluators=[], **options)
    try:
        built = [type(sink).__name__ for sink in rt.score_sinks]
    finally:
        rt.shutdown()
    expected = ["PrometheusSink", *RESULTS_SINKS[results]]
    expected += ["PhoenixAnnotationSink"] * phoenix + ["ReviewSink"] * review
    expected += ["JsonLinesSink"] * own
    assert built == expected
    assert (tmp_path / "review.db").exists() is review


def test_a_sink_whose_option_is_unset_is_not_even_imported() -> None:
    """The catalogue loads a sink's module only when its option asks for the sink."""
    code = (
        "import sys, ragtrace\n"
        "from prometheus_client import CollectorRegistry\n"
        "rt = ragtrace.init(app='shop', registry=CollectorRegistry(), evaluators=[])\n"
        "rt.shutdown()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ragtrace.review', "
        "'ragtrace._exporters.phoenix'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRACE_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _records() -> list[RagRecord]:
    """Two plain answers and two looping ones (which the rules queue), each a turn of a
    conversation whose earlier message holds an e-mail address."""
    conversation = Conversation(session_id="s-1", history=(Turn("user", MAIL),))
    return [
        RagRecord(
            f"{i + 1:032x}",
            f"{i + 1:016x}",
            f"question {i} from bob@corp.example",
            response=LOOPING if i % 2 else f"a plain answer {i}",
            app="shop",
            conversation=conversation,
        )
        for i in range(4)
    ]


@pytest.mark.parametrize("source", ["env", "file"])
def test_a_review_store_named_by_its_option_queues_records_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    db = tmp_path / "review.db"
    if source == "env":
        monkeypatch.setenv("RAGTRACE_REVIEW_DB", str(db))
        given: dict[str, object] = {}
        source_named = "RAGTRACE_REVIEW_DB"
    else:
        settings = tmp_path / "ragtrace.yaml"
        settings.write_text(yaml.safe_dump({"sinks": {"review": str(db)}}))
        given = {"config_file": str(settings)}
        source_named = str(settings)
    rt = ragtrace.init(
        app="shop",
        registry=CollectorRegistry(),
        evaluators=["looping"],
        redact="pii",
        export_evaluation_spans=False,
        **given,
    )
    try:
        assert rt.config.review_db == str(db)
        assert rt.config.sources["review_db"] == source_named
        assert current_policy() is rt.redaction
        for record in _records():
            assert rt.submit_record(record)
        assert rt.flush(10)
    finally:
        rt.shutdown()
    assert current_policy().active is False  # no instance is current any more
    with open_store(str(db)) as store:
        items = store.page(limit=10).items
    assert sorted(item.trace_id for item in items) == [f"{2:032x}", f"{4:032x}"]
    for item in items:
        assert "bob@corp.example" not in (item.query or "")
        assert item.conversation is not None
        assert [turn.content for turn in item.conversation.history] != [MAIL]
        assert "alice@corp.example" not in item.conversation.history[0].content


def _phoenix_threads() -> int:
    return sum(t.name == "ragtrace-phoenix" and t.is_alive() for t in threading.enumerate())


def test_a_review_store_that_cannot_be_opened_stops_init_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    where = str(tmp_path / "a-file" / "review.db")
    before = _phoenix_threads()
    with pytest.raises(ConfigError) as refused:
        ragtrace.init(
            app="shop",
            registry=CollectorRegistry(),
            evaluators=[],
            phoenix_endpoint=UNREACHABLE_PHOENIX,  # built before the review sink
            review_db=where,
        )
    (line,) = refused.value.problems
    assert line.startswith(f"review_db: cannot open {where!r} (")
    # the Phoenix sink built first was shut down: its posting thread ends
    wait_until("the Phoenix thread to end", lambda: _phoenix_threads() == before, timeout_s=10)
    rt = ragtrace.init(app="shop", registry=CollectorRegistry(), evaluators=[])
    rt.shutdown()  # nothing was left behind: the next init works


def test_the_sinks_built_are_shut_down_when_init_fails_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline owns the sinks once it exists; before that (here it refuses two evaluators of
    one name), init shuts down those it built, and leaves those given in code to their owner."""
    lines = tmp_path / "own.jsonl"
    monkeypatch.setenv(SINK_FILE_ENV, str(lines))
    given = JsonLinesSink()
    monkeypatch.setenv(SINK_FILE_ENV, str(tmp_path / "given.jsonl"))
    before = _phoenix_threads()
    twins = [
        FunctionEvaluator(lambda r: 1.0, name="same"),
        FunctionEvaluator(lambda r: 0.0, name="same"),
    ]
    with pytest.raises(ValueError, match="evaluators must have distinct names"):
        ragtrace.init(
            app="shop",
            registry=CollectorRegistry(),
            evaluators=twins,
            phoenix_endpoint=UNREACHABLE_PHOENIX,
            sinks=["tests.exporters.own_sinks:JsonLinesSink"],
            score_sinks=[given],
        )
    assert read_lines(tmp_path / "given.jsonl") == [{"shutdown": True}]  # built by the option
    wait_until("the Phoenix thread to end", lambda: _phoenix_threads() == before, timeout_s=10)
    assert read_lines(lines) == []  # the sink given in code is left open for its owner
    given.shutdown()
    assert read_lines(lines) == [{"shutdown": True}]
