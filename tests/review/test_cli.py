"""``ragtrace review list | show | label | export | prune | serve`` for people in a terminal,
and the JSONL data set it exports (read back as records for ``ragtrace eval``)."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ragtrace._offline.cli import main as eval_main
from ragtrace._offline.records import RecordParser, read_lines
from ragtrace.review._cli import add_parser, run
from ragtrace.review._items import Label
from ragtrace.review._store import open_store
from tests.components import with_sigint_ignored
from tests.otlp_receiver import OtlpReceiver
from tests.review.conftest import make_item


def cli(db: Path, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ragtrace")
    add_parser(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    code = run(parser.parse_args(["review", argv[0], "--db", str(db), *argv[1:]]), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with three items: 1 (pii, priority 80), 2 and 3 (score_failed)."""
    path = tmp_path / "review.db"
    with open_store(str(path)) as store:
        store.enqueue(make_item(1, reasons=("pii",), priority=80, query="Where is my parcel?"))
        store.enqueue(make_item(2, query="Can I pay by card?"))
        store.enqueue(make_item(3, app="bank", query="What is my balance?"))
    return path


def test_list_shows_the_queue_in_order_and_filters_it(db: Path) -> None:
    code, out, err = cli(db, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "PRI", "VERDICT", "TIME", "(UTC)", "REASONS", "/", "QUESTION"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "3", "2"]
    assert "[pii] Where is my parcel?" in lines[1]
    assert err == "1-3 of 3 items\n"
    code, out, _ = cli(db, "list", "--app", "bank", "--json")
    assert [json.loads(line)["query"] for line in out.splitlines()] == ["What is my balance?"]
    assert cli(db, "list", "--reason", "secret")[2] == "0 of 0 items\n"
    code, _, err = cli(db, "list", "--since", "last tuesday")
    assert code == 2 and "since: not a time" in err


def test_show_prints_everything_a_reviewer_needs(db: Path) -> None:
    code, out, _ = cli(db, "show", "1")
    assert code == 0
    for expected in (
        "Item 1  app shop  model model-x",
        "reason pii: pii detail",
        "Where is my parcel?",
        "#1 doc-1 (retrieval 0.800): chunk text 1",
        "groundedness",
        "Not labelled yet.",
    ):
        assert expected in out
    code, out, _ = cli(db, "show", "2", "--json")
    data = json.loads(out)
    assert data["id"] == 2 and data["chunks"][0]["id"] == "doc-2"
    assert data["scores"][0]["name"] == "groundedness" and data["labels"] == []
    assert cli(db, "show", "99")[0] == 1


def test_label_stores_the_verdict_and_sends_the_human_span(db: Path) -> None:
    with OtlpReceiver() as receiver:
        code, out, _ = cli(
            db,
            "label",
            "2",
            "--verdict",
            "bad",
            "--failure-type",
            "missing_context",
            "--notes",
            "no refund policy in the chunks",
            "--reviewer",
            "ana",
            "--otlp-endpoint",
            receiver.endpoint,
        )
        assert code == 0 and out == "labelled item 2: bad\n"
        (span,) = receiver.wait_for_spans(1)
    assert span.name == "evaluate human"
    # a trace of its own, linked to the request's span (a late span would stretch the request)
    assert span.parent_span_id is None and span.trace_id != f"{2:032x}"
    assert [link[:2] for link in span.links] == [(f"{2:032x}", f"{2:016x}")]
    assert span.attributes["gen_ai.evaluation.name"] == "human"
    assert span.attributes["gen_ai.evaluation.score.label"] == "bad"
    assert span.resource["service.name"] == "ragtrace-review"
    with open_store(str(db)) as store:
        (stored,) = store.labels(2)
    assert stored.label == Label(
        "bad", "missing_context", "no refund policy in the chunks", reviewer="ana"
    )
    assert "bad missing_context ana: no refund policy" in cli(db, "show", "2")[1]
    assert cli(db, "label", "99", "--verdict", "good")[0] == 1
    with pytest.raises(SystemExit):
        cli(db, "label", "2", "--verdict", "fine")


def test_export_writes_a_data_set_that_ragtrace_eval_reads(db: Path, tmp_path: Path) -> None:
    with open_store(str(db)) as store:
        store.add_label(1, Label("bad", "hallucination", corrected_answer="It is in Lyon."))
        store.add_label(2, Label("good", reviewer="ana"))
        store.add_label(3, Label("bad", notes="no fix given"))
    target = tmp_path / "labelled.jsonl"
    code, _, err = cli(db, "export", "--output", str(target))
    assert code == 0 and err == "exported 3 labelled items\n"
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    sources = [(r["id"], r["reference"], r["metadata"]["review"]["reference_source"]) for r in rows]
    assert sources == [
        ("review-1", "It is in Lyon.", "corrected"),
        ("review-2", "answer 2.", "approved"),
        ("review-3", None, None),
    ]
    review = rows[0]["metadata"]["review"]
    assert (review["verdict"], review["failure_type"]) == ("bad", "hallucination")
    assert review["scores"] == {"groundedness": 0.2} and review["reasons"] == ["pii"]
    assert rows[0]["metadata"]["trace_id"] == f"{1:032x}"
    assert rows[0]["contexts"][0] == {
        "text": "chunk text 1",
        "id": "doc-1",
        "score": 0.8,
        "metadata": {"n": 1},
        "source": None,
    }
    # ragtrace eval's own reader takes every line, knows every field, keeps the reference.
    warnings: list[str] = []
    parser = RecordParser(require_response=True, warn=warnings.append)
    with open(target, "rb") as handle:
        records = [parser.parse(line) for line in read_lines(handle)]
    assert warnings == []
    assert [r.id for r in records if r] == ["review-1", "review-2", "review-3"]
    first = records[0]
    assert first is not None
    assert first.record.query == "Where is my parcel?"
    assert first.record.reference == "It is in Lyon."
    assert first.record.chunks[0].id == "doc-1"
    assert first.record.attributes["review"]["verdict"] == "bad"
    scores = tmp_path / "scores.jsonl"
    argv = ["--input", str(target), "--output", str(scores), "--evaluators", "looping"]
    assert eval_main([*argv, "--strict", "--no-progress"]) == 0
    assert len(scores.read_text().splitlines()) == 3
    code, out, _ = cli(db, "export", "--only-with-reference", "--verdict", "bad")
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["review-1"]
    code, out, _ = cli(db, "export", "--app", "bank")
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["review-3"]


def test_prune_applies_the_retention_limits(db: Path) -> None:
    with open_store(str(db)) as store:
        store.add_label(1, Label("good"))
    assert cli(db, "prune", "--max-items", "1") == (0, "deleted 1 items\n", "")
    assert [
        json.loads(x)["id"] for x in cli(db, "list", "--labelled", "all", "--json")[1].splitlines()
    ] == [1, 3]
    code, out, _ = cli(db, "prune", "--max-items", "1", "--include-labelled")
    assert (code, out) == (0, "deleted 1 items\n")
    assert [
        json.loads(x)["id"] for x in cli(db, "list", "--labelled", "all", "--json")[1].splitlines()
    ] == [3]


def test_serve_on_a_port_in_use_says_so_and_exits_1(db: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli(db, "serve", "--host", "127.0.0.1", "--port", str(port))
    assert code == 1 and out == ""
    assert err.startswith(f"ragtrace review: cannot serve on 127.0.0.1:{port}: ")


@pytest.mark.parametrize(
    "stop",
    [signal.SIGINT, signal.SIGTERM],
    ids=["ctrl-c-though-inherited-as-ignored", "sigterm"],
)
def test_the_module_entry_point_lists_and_serves(db: Path, stop: signal.Signals) -> None:
    env = {**os.environ, "RAGTRACE_REVIEW_DB": str(db)}
    listed = subprocess.run(
        [sys.executable, "-m", "ragtrace.review", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 3
    refused = subprocess.run(
        [sys.executable, "-m", "ragtrace.review", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2 and "with no token" in refused.stderr
    serve = [sys.executable, "-m", "ragtrace.review", "serve", "--port", "0"]
    serve += ["--trace-url", "jaeger"]
    server = subprocess.Popen(
        with_sigint_ignored(serve),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith("ragtrace review: 3 items waiting in ")
        url = server.stdout.readline().split()[1]
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        assert "Where is my parcel?" in page
    finally:
        server.send_signal(stop)  # stops cleanly on either, whatever SIGINT it inherited
        assert server.wait(20) == 0
