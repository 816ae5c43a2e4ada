"""The verdicts file: what a line says, how a Score is written, and ``ragtrace eval
--verdicts`` writing one that ``ragtrace alerts backtest`` reads."""

from __future__ import annotations

import io
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ragtrace._alerts.verdicts import (
    Verdict,
    VerdictError,
    answer_time,
    read_verdicts,
    verdict_lines,
)
from ragtrace._model import RagRecord, Score
from ragtrace._offline.cli import main as eval_main


def test_outcomes_count_as_the_exporter_counts_scores() -> None:
    assert Verdict(0, "a", "e", 0.9, True).outcome == "pass"
    assert Verdict(0, "a", "e", 0.1, False).outcome == "fail"
    assert Verdict(0, "a", "e", None, False).outcome == "fail"
    assert Verdict(0, "a", "e", 0.5, None).outcome == "pass"  # no threshold
    assert Verdict(0, "a", "e", None, None).outcome == "error"


def test_a_file_reads_in_order_with_blank_lines_and_a_byte_order_mark() -> None:
    lines = [
        '\ufeff{"time": 5, "app": "a", "evaluator": "e", "value": 1, "passed": true, "x": 1}',
        "",
        '{"time": 1.5, "app": "ü", "evaluator": "e.f", "value": null, "passed": null}',
    ]
    read = read_verdicts(io.BytesIO("\n".join(lines).encode()), "f.jsonl")
    assert read == [Verdict(5.0, "a", "e", 1.0, True), Verdict(1.5, "ü", "e.f", None, None)]
    with pytest.raises(VerdictError, match=r"^<stdin>:2: not UTF-8$"):
        read_verdicts(io.BytesIO(b"\n\xff\n"))


def test_scores_are_written_as_verdicts() -> None:
    scores = [
        Score("looping.unique_sentences", 0.5, passed=False, threshold=0.75),
        Score("judge", None, error="timed out"),
        Score("informational", 0.3),
        Score("broken", 0.9, passed=True, error="half done"),
    ]
    lines = list(verdict_lines(1700000000.5, "shop", scores))
    assert [json.loads(line) for line in lines] == [
        {"time": 1700000000.5, "app": "shop", "evaluator": "looping.unique_sentences",
         "value": 0.5, "passed": False},
        {"time": 1700000000.5, "app": "shop", "evaluator": "judge", "value": None,
         "passed": None},
        {"time": 1700000000.5, "app": "shop", "evaluator": "informational", "value": 0.3,
         "passed": None},
        {"time": 1700000000.5, "app": "shop", "evaluator": "broken", "value": None,
         "passed": None},
    ]  # fmt: skip
    read = read_verdicts(io.BytesIO("".join(lines).encode()))
    assert [v.outcome for v in read] == ["fail", "error", "pass", "error"]


def test_an_answer_time_is_its_start_else_its_time_attribute_else_now() -> None:
    base = RagRecord(trace_id="0" * 32, span_id="0" * 16, query="q", chunks=(), response="r")
    started = replace(base, start_ns=1_700_000_000_500_000_000)
    assert answer_time(started) == 1_700_000_000.5
    assert answer_time(replace(base, attributes={"time": 1_600_000_000})) == 1_600_000_000.0
    before = time.time()
    assert before <= answer_time(replace(base, attributes={"time": "yesterday"})) <= time.time()


def test_eval_writes_a_verdicts_file_the_backtest_reads(tmp_path: Path) -> None:
    records = [
        {"id": "r1", "query": "q", "contexts": ["c"], "metadata": {"time": 1_700_000_000},
         "response": "The sky is blue. The sky is blue. Grass is green."},
        {"id": "r2", "query": "q", "contexts": ["c"], "app": "shop",
         "metadata": {"time": 1_700_000_060}, "response": "Refunds take 30 days."},
        {"id": "r3", "query": "q", "contexts": ["c"], "response": ""},  # skipped: no verdict
    ]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    verdicts = tmp_path / "verdicts.jsonl"
    status = eval_main(["-i", str(source), "-o", str(tmp_path / "scores.jsonl"), "-e", "looping",
                        "--verdicts", str(verdicts), "--no-progress"])  # fmt: skip
    assert status == 0
    read = read_verdicts(verdicts.open("rb"), str(verdicts))
    unique = [v for v in read if v.evaluator == "looping.unique_sentences"]
    assert unique == [
        Verdict(1_700_000_000.0, "default", "looping.unique_sentences", 2 / 3, False),
        Verdict(1_700_000_060.0, "shop", "looping.unique_sentences", 1.0, True),
    ]
    assert len(read) == 6  # three looping scores per answered record
    assert {v.evaluator for v in read} == {
        "looping.unique_sentences", "looping.longest_repeated_substring",
        "looping.compression_ratio",
    }  # fmt: skip


def test_eval_refuses_a_verdicts_file_that_is_the_input_or_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "r1", "response": "a"}\n')
    out = tmp_path / "scores.jsonl"
    for verdicts, said in [(source, "is the input file"), ("-", "a file of its own")]:
        status = eval_main(["-i", str(source), "-o", str(out), "-e", "looping", "--verdicts",
                            str(verdicts), "--no-progress"])  # fmt: skip
        assert status == 2
        assert said in capsys.readouterr().err
