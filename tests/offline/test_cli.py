"""``ragtrace eval`` end to end, as a subprocess (``python -m ragtrace._offline``) and in-process.

The lexical evaluators give values that are known by hand: ``looping.unique_sentences`` is
unique sentences / sentences, ``tokens_presence`` is 1.0 when the string is found, else 0.0.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragtrace._model import RagRecord, Score
from ragtrace._offline.cli import main
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._base import Evaluator
from tests.components import require_module

ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
KB = ["Refunds are accepted within 30 days."]
RECORDS: list[dict[str, Any]] = [
    # unique sentences 2/3 (fail at 0.75); "days" not in the answer, in the context
    {"id": "r1", "query": "q", "contexts": KB,
     "response": "The sky is blue today. The sky is blue today. Grass is green everywhere."},
    # 2/2 = 1.0; "days" in both
    {"id": "r2", "query": "q", "contexts": [{"text": KB[0], "id": "kb-1", "score": 0.9}],
     "response": "Refunds take thirty days. Shipping is free of charge."},
    # empty response: both evaluators skip it
    {"id": "r3", "query": "q", "contexts": KB, "response": ""},
    # 1/4 = 0.25; "days" nowhere
    {"id": "r4", "query": "q", "contexts": ["nothing relevant here"],
     "response": "Loop loop loop here. " * 3 + "Loop loop loop here."},
    # 1/1 = 1.0; no contexts: tokens_presence (needs chunks and response) skips it
    {"id": "r5", "query": "q", "response": "Our refund window is 30 days."},
]  # fmt: skip
LEXICAL = ["-e", "looping,tokens_presence", "--option", 'tokens_presence.constraints=["days"]']


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def ragtrace_eval(
    *args: str | Path, stdin: bytes | None = None, progress: bool = False
) -> subprocess.CompletedProcess[str]:
    extra = [] if progress else ["--no-progress"]
    proc = subprocess.run(
        [sys.executable, "-m", "ragtrace._offline", *map(str, args), *extra],
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=300,
        check=False,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The summary table's rows by score name, cells stripped."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| score "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


def test_scores_a_file_with_lexical_evaluators(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out, summary_path = tmp_path / "scores.jsonl", tmp_path / "summary.json"
    proc = ragtrace_eval("--input", src, "--output", out, "--summary-json", summary_path, *LEXICAL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = read_jsonl(out)
    assert [line["id"] for line in lines] == ["r1", "r2", "r3", "r4", "r5"]
    by_id = {line["id"]: {s["name"]: s for s in line["scores"]} for line in lines}
    unique = {i: s["looping.unique_sentences"]["value"] for i, s in by_id.items() if s}
    assert unique == {"r1": pytest.approx(2 / 3), "r2": 1.0, "r4": 0.25, "r5": 1.0}
    assert {i: s.get("tokens_presence.answer", {}).get("value") for i, s in by_id.items()} == {
        "r1": 0.0, "r2": 1.0, "r3": None, "r4": 0.0, "r5": None
    }  # fmt: skip
    assert lines[2]["scores"] == []
    assert lines[2]["skipped"] == [
        {"evaluator": "looping", "missing": ["response"]},
        {"evaluator": "tokens_presence", "missing": ["response"]},
    ]
    assert lines[4]["skipped"] == [{"evaluator": "tokens_presence", "missing": ["chunks"]}]
    # The shared schema's fields: one system (no model, no app: "default"), case = id; no
    # latency or usage is known for these records, and none of them carries an error.
    assert [set(line) for line in lines] == [
        {"id", "system", "case", "perturbation", "scores", "skipped", "record", "error"}
    ] * 5
    assert [x["error"] for x in lines] == [None] * 5
    assert [(x["system"], x["case"], x["perturbation"]) for x in lines] == [
        ("default", r["id"], None) for r in RECORDS
    ]
    assert [x["record"] for x in lines] == [
        {"query": "q", "response": r["response"], "reference": None} for r in RECORDS
    ]
    first = by_id["r1"]["looping.unique_sentences"]
    assert set(first) == {
        "name", "evaluator", "value", "label", "passed", "threshold", "direction",
        "explanation", "error", "kind", "model", "details",
    }  # fmt: skip
    assert (first["evaluator"], first["label"], first["passed"], first["threshold"]) == (
        "looping", "fail", False, 0.75
    )  # fmt: skip
    assert first["details"]["repeated"] == [{"sentence": "the sky is blue today.", "count": 2}]
    assert [s["name"] for s in lines[0]["scores"]] == [
        "looping.unique_sentences", "looping.longest_repeated_substring",
        "looping.compression_ratio", "tokens_presence.context", "tokens_presence.answer",
    ]  # fmt: skip

    summary = json.loads(summary_path.read_text())
    rows = {r["name"]: r for r in summary["scores"]}
    # By hand: unique sentences 2/3, 1, 0.25, 1 -> mean 0.7292 over the answers; pass (>= 0.75)
    # 2 of 4. r3 has no response: unanswered, counted as the report counts it, a failure
    # (value 0): mean over 5, 2 passes of 5.
    assert rows["looping.unique_sentences"] == {
        "system": "default", "name": "looping.unique_sentences", "evaluator": "looping", "count": 4,
        "unanswered": 1, "n": 5, "mean": pytest.approx((2 / 3 + 1 + 0.25 + 1) / 5),
        "answered_mean": pytest.approx((2 / 3 + 1 + 0.25 + 1) / 4), "passed": 2, "pass_rate": 0.4,
        "thresholds": [0.75], "errors": 0, "skipped": 0, "no_value": 0,
    }  # fmt: skip
    # Answer holds "days": r2 only of r1, r2, r4; context holds it for r1, r2; r3 unanswered
    # counts as a failure on both, r5 (no chunks) is skipped.
    answer = rows["tokens_presence.answer"]
    assert (answer["count"], answer["unanswered"], answer["mean"]) == (3, 1, pytest.approx(1 / 4))
    assert answer["answered_mean"] == pytest.approx(1 / 3)
    assert rows["tokens_presence.context"]["mean"] == pytest.approx(2 / 4)
    assert rows["tokens_presence.context"]["pass_rate"] == pytest.approx(2 / 4)
    assert answer["skipped"] == 1
    # The other means agree with the per-record values written out, r3 at the worst value.
    for name in ("looping.longest_repeated_substring", "looping.compression_ratio"):
        got = [s[name]["value"] for s in by_id.values() if name in s]
        worst = 1.0 if "longest" in name else 0.0  # lower is better
        assert rows[name]["answered_mean"] == pytest.approx(sum(got) / len(got))
        assert rows[name]["mean"] == pytest.approx((sum(got) + worst) / (len(got) + 1))
    assert summary["input"] == {
        "lines": 5, "records": 5, "bad_lines": 0, "duplicate_ids": 0, "blank_lines": 0
    }  # fmt: skip
    assert summary["evaluators"]["looping"]["calls"] == 4
    assert summary["records_per_s"] > 0

    table = table_rows(proc.stdout)
    assert table["looping.unique_sentences"] == [
        "looping", "5", "1", "0.583", "40.0%", "0.75", "0", "0"
    ]  # fmt: skip
    assert table["tokens_presence.answer"] == [
        "tokens_presence", "4", "1", "0.250", "25.0%", "0.5", "0", "1"
    ]  # fmt: skip
    assert "5 records from 5 lines; 0 bad lines (0 of them duplicate ids), 0 blank" in proc.stdout


def test_bad_lines_are_reported_counted_and_skipped(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        b'{"id": "ok1", "response": "Fine answer here."}\n'
        b"not json\n"
        b"[1, 2]\n"
        b'{"response": "no id"}\n'
        b'{"id": "ok1", "response": "again"}\n'
        b"\n"
        b'{"id": "latin1", "response": "caf\xe9"}\n'
        b'{"id": "typed", "response": ["a"]}\n'
        b'{"id": "noresp", "query": "q"}\n'
        b'{"id": "ok2", "response": "Second answer."}'  # no final newline
    )
    out, summary_path = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--summary-json", summary_path)
    assert proc.returncode == 0
    name = str(src)
    assert proc.stderr.splitlines() == [
        f"ragtrace eval: {name}:2: invalid JSON: Expecting value at column 1; line skipped",
        f"ragtrace eval: {name}:3: expected a JSON object, got an array; line skipped",
        f"ragtrace eval: {name}:4: missing 'id'; line skipped",
        f"ragtrace eval: {name}:5: duplicate id 'ok1' (first on line 1); line skipped",
        f"ragtrace eval: {name}:7: not valid UTF-8 (byte 34 of the line: invalid continuation "
        "byte); line skipped",
        f"ragtrace eval: {name}:8: 'response' must be a string or null, got an array; line skipped",
        f"ragtrace eval: {name}:9: missing 'response' (an evaluator that needs it was asked "
        "for); line skipped",
    ]
    assert [line["id"] for line in read_jsonl(out)] == ["ok1", "ok2"]
    assert json.loads(summary_path.read_text())["input"] == {
        "lines": 10, "records": 2, "bad_lines": 7, "duplicate_ids": 1, "blank_lines": 1
    }  # fmt: skip
    assert "2 records from 10 lines; 7 bad lines (1 of them duplicate ids), 1 blank" in proc.stdout
    strict = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--strict")
    assert strict.returncode == 1


def test_a_line_over_the_cap_is_refused(tmp_path: Path) -> None:
    huge = json.dumps({"id": "huge", "response": "x" * (10 * 1024 * 1024)})
    src = write_jsonl(tmp_path / "in.jsonl", [huge, {"id": "small", "response": "Small one."}])
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval("-i", src, "-o", out, "-e", "looping")
    assert proc.returncode == 0
    assert proc.stderr == (
        f"ragtrace eval: {src}:1: line longer than the limit of 10,485,760 bytes; line skipped\n"
    )
    assert [line["id"] for line in read_jsonl(out)] == ["small"]
    capped = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--max-line-bytes", "20")
    assert f"{src}:2: line longer than the limit of 20 bytes" in capped.stderr


def test_reads_stdin_and_writes_stdout(tmp_path: Path) -> None:
    data = "".join(json.dumps(r) + "\n" for r in RECORDS).encode()
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval("--input", "-", "--output", out, *LEXICAL, stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert [line["id"] for line in read_jsonl(out)] == ["r1", "r2", "r3", "r4", "r5"]
    piped = ragtrace_eval("-i", "-", "-o", "-", "-e", "looping", stdin=data)
    assert piped.returncode == 0
    assert [json.loads(line)["id"] for line in piped.stdout.splitlines()] == [
        "r1", "r2", "r3", "r4", "r5"
    ]  # fmt: skip
    assert "| looping.unique_sentences " in piped.stderr  # the table goes to stderr
    bad = ragtrace_eval("-i", "-", "-o", out, "-e", "looping", stdin=b"{oops\n")
    assert bad.stderr.startswith("ragtrace eval: <stdin>:1: invalid JSON")


def test_text_that_is_not_utf8_comes_back_as_a_json_escape(tmp_path: Path) -> None:
    rows = ['{"id": "s", "response": "Lone \\ud800 half. Lone \\ud800 half."}']
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    assert ragtrace_eval("-i", src, "-o", out, "-e", "looping").returncode == 0
    raw = out.read_bytes()
    assert b"\\ud800" in raw
    (line,) = read_jsonl(out)
    scores = {s["name"]: s for s in line["scores"]}
    assert scores["looping.unique_sentences"]["value"] == 0.5
    assert "\ud800" in scores["looping.longest_repeated_substring"]["details"]["substring"]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out = tmp_path / "o.jsonl"
    unknown = ragtrace_eval("-i", src, "-o", out, "-e", "looping,groundednes")
    assert unknown.returncode == 2
    assert "unknown evaluator 'groundednes' (did you mean 'groundedness'?); known: " in (
        unknown.stderr
    )
    assert not out.exists()
    missing = ragtrace_eval("-i", tmp_path / "nope.jsonl", "-o", out, "-e", "looping")
    assert missing.returncode == 2
    assert missing.stderr == (
        f"ragtrace eval: {tmp_path / 'nope.jsonl'}: No such file or directory\n"
    )
    cases = {
        ("-e", "looping", "--option", "threshold=0.5"): "--option 'threshold=0.5': expected "
        "EVALUATOR.KEY=VALUE, e.g. --option groundedness.threshold=0.6",
        ("-e", "looping", "--option", "bleu.threshold=0.5"): "--option for bleu, which is not "
        "among the evaluators to run (looping)",
        ("-e", "looping", "--option", "looping.treshold=0.5"): "unknown option for evaluator "
        "'looping' (did you mean 'threshold'?)",
        ("-e", "looping", "--option", "looping.min_sentence_chars=-1"): "looping: "
        "min_sentence_chars must be an integer >= 0, got -1",
        ("-e", "tokens_presence",): "tokens_presence: pass exactly one of `constraints` or "
        "`expression`",
        ("-e", "looping,looping"): "duplicate evaluator 'looping'",
        ("--workers", "0", "-e", "looping"): "argument --workers: must be >= 1, got 0",
        ("--processes", "0", "-e", "looping"): "argument --processes: must be >= 1, got 0",
        ("--shared-cache-mb", "-1", "-e", "looping"): "argument --shared-cache-mb: must be >= 0",
        ("--shared-cache-mb", "x", "-e", "looping"): "argument --shared-cache-mb: expected a "
        "number, got 'x'",
        ("--processes", "2", "--shared-cache-mb", "inf", "-e", "looping"): "argument "
        "--shared-cache-mb: expected a finite number, got 'inf'",
        (): "no evaluators to run (none given): pass --evaluators a,b or --config settings.yaml",
    }  # fmt: skip
    for args, message in cases.items():
        code, err = in_process(capsys, "-i", src, "-o", out, *args)
        assert code == 2, (args, err)
        assert message in err, (args, err)
    assert in_process(capsys, "-i", src, "-o", src, "-e", "looping") == (
        2, f"ragtrace eval: --output {src} is the input file\n"
    )  # fmt: skip
    assert in_process(capsys, "-i", tmp_path, "-o", out, "-e", "looping") == (
        2, f"ragtrace eval: {tmp_path}: is a directory\n"
    )  # fmt: skip
    assert in_process(capsys, "-i", src, "-o", tmp_path / "no" / "o.jsonl", "-e", "looping") == (
        2, f"ragtrace eval: {tmp_path / 'no' / 'o.jsonl'}: No such file or directory\n"
    )  # fmt: skip


def in_process(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``main(args)``'s exit status (argparse's too) and stderr."""
    try:
        code = main([*map(str, args), "--no-progress"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "how",
    [
        ("--workers", "2"),
        ("--processes", "2"),
        ("--processes", "3"),
        ("--processes", "2", "--shared-cache-mb", "0"),
    ],
)
def test_workers_and_processes_write_the_same_scores(tmp_path: Path, how: tuple[str, ...]) -> None:
    # 5 x 20 records: windows of 32, so several processes get work
    rows = [{**r, "id": f"{r['id']}-{n}"} for n in range(20) for r in RECORDS]
    src = write_jsonl(tmp_path / "in.jsonl", [*rows, {"id": "extra", "response": "Hi."}])
    outs = []
    for args in (("--workers", "1"), how):
        out = tmp_path / f"o{'-'.join(args)}.jsonl"
        proc = ragtrace_eval("-i", src, "-o", out, *LEXICAL, *args)
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_text())
        assert "101 records from 101 lines" in proc.stdout
    assert outs[0] == outs[1]
    assert len(outs[0].splitlines()) == 101


def test_settings_file_supplies_evaluators(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out = tmp_path / "o.jsonl"
    config = tmp_path / "ragtrace.yaml"
    config.write_text(
        "evaluators:\n"
        "  - name: looping\n"
        "    unique_sentences_threshold: 0.6\n"
        "  - name: tokens_presence\n"
        "    options: {expression: 'sky OR Loop', targets: [answer]}\n"
        "sampling: {rate: 0.01}\n"
    )
    proc = ragtrace_eval("-i", src, "-o", out, "--config", config)
    assert proc.returncode == 0, proc.stderr
    table = table_rows(proc.stdout)
    # 2/3 passes at 0.6 now: 3 of 4 answers, and r3 (no response) counts as a failure: 3 of 5;
    # every record is evaluated whatever the sampling says.
    assert table["looping.unique_sentences"][1:5] == ["5", "1", "0.583", "60.0%"]
    # r2 and r5 of r1, r2, r4, r5, and r3 unanswered: 2 of 5.
    assert table["tokens_presence.answer"][1:4] == ["5", "1", "0.400"]
    assert "tokens_presence.context" not in table
    only = ragtrace_eval("-i", src, "-o", out, "--config", config, "-e", "tokens_presence,words")
    assert only.returncode == 2 and "unknown evaluator 'words'" in only.stderr
    subset = ragtrace_eval("-i", src, "-o", out, "--config", config, "-e", "tokens_presence")
    assert list(table_rows(subset.stdout)) == ["tokens_presence.answer"]
    clash = ragtrace_eval(
        "-i", src, "-o", out, "--config", config, "--option", "looping.threshold=0.1"
    )
    assert clash.returncode == 2
    assert f"--option for looping: configured in {config}; set the option in the file" in (
        clash.stderr
    )
    config.write_text("evaluators:\n  - name: loopin\n")
    typo = ragtrace_eval("-i", src, "-o", out, "--config", config)
    assert typo.returncode == 2
    assert "evaluators[0].name: unknown evaluator 'loopin' (did you mean 'looping'?)" in (
        typo.stderr
    )


def test_progress_lines_when_not_a_terminal(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval(
        "-i", src, "-o", out, "-e", "looping", "--progress-every", "0", progress=True
    )
    lines = proc.stderr.splitlines()
    assert lines, proc.stderr
    assert all(line.startswith("ragtrace eval: ") and "/5 lines" in line for line in lines)
    assert lines[-1].startswith("ragtrace eval: 5/5 lines, 5 records, ")


def test_an_evaluator_failing_on_one_record(
    registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": f"n{i}", "response": "poison" if i in (3, 7) else "x" * i} for i in range(10)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out, summary_path = tmp_path / "o.jsonl", tmp_path / "s.json"
    args = ["-i", str(src), "-o", str(out), "-e", "length,looping", "--no-progress"]
    code = main([*args, "--option", "length.batch_size=4", "--summary-json", str(summary_path)])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "ragtrace eval: length failed on id 'n3': ValueError: poisoned record (further failures "
        "of length are counted in the summary, not shown)\n"
    )
    lines = read_jsonl(out)
    failed = [line["id"] for line in lines if any(s["error"] for s in line["scores"])]
    assert failed == ["n3", "n7"]
    assert [s["value"] for s in lines[4]["scores"] if s["name"] == "length"] == [0.04]
    summary = json.loads(summary_path.read_text())
    row = next(r for r in summary["scores"] if r["name"] == "length")
    # n0 has no response: unanswered, not skipped
    assert (row["count"], row["errors"], row["unanswered"], row["skipped"]) == (7, 2, 1, 0)
    assert summary["evaluators"]["length"]["fallbacks"] == 2
    assert main([*args, "--strict"]) == 1


def test_list_shows_the_suite_and_each_points_measured_rates() -> None:
    listed = ragtrace_eval("--list")
    assert listed.returncode == 0, listed.stderr
    text = listed.stdout
    assert "  * groundedness" in text and "  * looping" in text
    assert text.index("Online (") < text.index("Offline (") < text.index("LLM judges (")
    assert "    toxicity  (not in the default suite" in text
    assert "  bleu\n" in text  # listed, with no measured point
    assert "default: looping.unique_sentences=0.75" in text
    assert "locked: fails" in text and "tuning: fails" in text
    assert "measured by: python benchmarks/alarms.py --part locked --record" in text
    one = ragtrace_eval("--list", "-e", "pii_leakage,nope")
    assert one.returncode == 0
    assert "pii_leakage.context=off" in one.stdout and "no alarm;" in one.stdout
    assert "? nope: no such evaluator" in one.stdout and "  * looping" not in one.stdout
    missing = ragtrace_eval("-e", "looping")
    assert missing.returncode == 2
    assert "the following arguments are required: --input, --output" in missing.stderr


def test_classification_report_per_system(tmp_path: Path) -> None:
    """``-e classification`` prints each system's per-class report and confusion matrix, and
    writes them to --summary-json; the figures are scikit-learn's on the same pairs (an
    unanswered question is a wrong prediction: given to scikit-learn as one answer of each
    other class, weighted 1 / (classes - 1))."""
    metrics = require_module("sklearn.metrics", "pip install scikit-learn")
    labels = ["billing", "shipping", "returns"]
    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    pairs: dict[str, list[tuple[str, str | None]]] = {"a": [], "b": []}
    for i in range(40):
        expected = rng.choice(labels)
        for system in ("a", "b"):
            if system == "b" and i % 9 == 0:
                rows.append({"id": f"q{i}", "model": system, "query": "?", "response": None,
                             "reference": expected, "error": "TimeoutError"})  # fmt: skip
                pairs[system].append((expected, None))
                continue
            right = rng.random() < (0.8 if system == "a" else 0.6)
            predicted = expected if right else rng.choice(labels)
            rows.append({"id": f"q{i}", "model": system, "query": "?",
                         "response": f"{predicted.title()}.", "reference": expected})  # fmt: skip
            pairs[system].append((expected, predicted))
    summary_path = tmp_path / "summary.json"
    proc = ragtrace_eval(
        "-i", write_jsonl(tmp_path / "in.jsonl", rows), "-o", tmp_path / "out.jsonl",
        "-e", "classification", "--option", f"classification.labels={json.dumps(labels)}",
        "--summary-json", summary_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reports = json.loads(summary_path.read_text())["classification"]["classification"]
    for system, found in pairs.items():
        expected, predicted, weights = [], [], []
        for truth, guess in found:
            guesses = [guess] if guess is not None else [x for x in labels if x != truth]
            for each in guesses:
                expected.append(truth)
                predicted.append(each)
                weights.append(1.0 / len(guesses))
        theirs = metrics.classification_report(
            expected, predicted, labels=labels, output_dict=True, zero_division=0,
            sample_weight=weights,
        )  # fmt: skip
        ours = reports[system]
        assert ours["accuracy"] == pytest.approx(
            metrics.accuracy_score(expected, predicted, sample_weight=weights)
        )
        for label in labels:
            for key in ("precision", "recall"):
                assert ours["per_class"][label][key] == pytest.approx(theirs[label][key])
            assert ours["per_class"][label]["f1"] == pytest.approx(theirs[label]["f1-score"])
            assert ours["per_class"][label]["support"] == pytest.approx(theirs[label]["support"])
        assert ours["macro"]["precision"] == pytest.approx(theirs["macro avg"]["precision"])
        assert ours["macro"]["f1"] == pytest.approx(theirs["macro avg"]["f1-score"])
        assert ours["weighted"]["recall"] == pytest.approx(theirs["weighted avg"]["recall"])
        answered = [(e, p) for e, p in found if p is not None]
        matrix = metrics.confusion_matrix(
            [e for e, _ in answered], [p for _, p in answered], labels=labels
        ).tolist()
        assert ours["confusion_matrix"] == matrix
        # The printed table carries the same figures.
        head = f"classification report (classification), system {system}: 40 answers"
        assert head in proc.stdout
        assert f"accuracy {ours['accuracy']:.3f}" in proc.stdout
        macro = ours["macro"]
        assert (
            f"| macro avg    |     {macro['precision']:.3f} |  {macro['recall']:.3f} | "
            f"{macro['f1']:.3f} |      40 |"
        ) in proc.stdout
    assert reports["b"]["unanswered"] == 5 and "40 answers, 5 unanswered" in proc.stdout
    assert "| expected \\ predicted | billing | shipping | returns | no answer |" in proc.stdout


def test_docs_eval_classification_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    """docs/eval.md's classification example, run as written."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "eval.md").read_text(encoding="utf-8")
    section = doc.split("## Classifiers", 1)[1]
    records = re.search(r"```json\n(.*?)```", section, re.S)
    printed = re.search(r"```text\n(.*?)```", section, re.S)
    assert records is not None and printed is not None
    source = tmp_path / "intents.jsonl"
    source.write_text(records.group(1), encoding="utf-8")
    proc = ragtrace_eval(
        "-i", source, "-e", "classification", "-o", tmp_path / "scores.jsonl",
        "--option", 'classification.labels=["billing","shipping","returns"]',
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert printed.group(1) in proc.stdout


class Echo(Evaluator):
    """Quotes what it reads: the answer in its explanation, the query in its details; raises
    with the answer in its message on an answer holding "raise"."""

    name: ClassVar[str] = "echo"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})

    def evaluate(self, record: RagRecord) -> list[Score]:
        if "raise" in (record.response or ""):
            raise ValueError(f"cannot read {record.response}")
        return [self.score(1.0, explanation=record.response, details={"q": record.query})]


MAIL, SSN, KEY = "canary.owner@corp.example", "536-22-8741", "sk-canaryABCDEF1234567890abcdef"


@pytest.mark.parametrize("processes", ["1", "2"])
def test_redact_keeps_the_text_out_of_scores_summary_and_messages_while_leak_detectors_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: str
) -> None:
    registry.register("echo", Echo, replace=True)
    try:
        rows = [
            {"id": MAIL, "query": f"mine is {SSN}", "response": f"write to {MAIL}, key {KEY}",
             "contexts": [{"text": f"owner {MAIL}", "metadata": {"a": {"b": [MAIL]}}}]},
            {"id": "r2", "query": "q", "response": f"raise {MAIL}"},
            {"id": f"2{MAIL}", "query": "q", "response": "fine"},
        ]  # fmt: skip
        src = write_jsonl(tmp_path / "in.jsonl", rows)
        out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
        args = ["-i", src, "-o", out, "--summary-json", summary, "--no-progress"]
        evaluators = ["-e", "echo,pii_leakage,sensitive_data", "--processes", processes]
        assert main([*map(str, args), *evaluators, "--redact", "pii"]) == 0
        captured = capsys.readouterr()
        written = out.read_text() + summary.read_text() + captured.out + captured.err
        for canary in (MAIL, SSN, KEY):
            assert canary not in written
        lines = read_jsonl(out)
        scores = {s["name"]: s for s in lines[0]["scores"]}
        # the leak detectors read the answer as written: they found the mail and the key
        assert scores["pii_leakage.answer"]["passed"] is False
        assert scores["sensitive_data.answer"]["passed"] is False
        assert scores["echo"]["explanation"] == "write to <EMAIL_ADDRESS>, key <OPENAI_API_KEY>"
        assert scores["echo"]["details"] == {"q": "mine is <US_SSN>"}
        assert re.fullmatch(r"<EMAIL_ADDRESS:[0-9a-f]{8}>", lines[0]["id"])
        assert len({line["id"] for line in lines}) == len(lines)  # ids stay distinct
        order = list(dict.fromkeys(s["evaluator"] for s in lines[0]["scores"]))
        assert order == ["echo", "pii_leakage", "sensitive_data"]  # as asked, merged
        assert "echo failed on id 'r2': ValueError: cannot read raise <EMAIL_ADDRESS>" in (
            captured.err
        )
        assert json.loads(summary.read_text())["evaluators"].keys() == {
            "echo", "pii_leakage", "sensitive_data"
        }  # fmt: skip
        # without a policy the text is written as read
        assert main([*map(str, args), *evaluators]) == 0
        assert MAIL in out.read_text()
    finally:
        registry.unregister("echo")
