"""``--fail-if`` gates: the grammar, errors on what the report lacks, exit codes of the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtrace._report.build import ReportOptions, build_report
from ragtrace._report.gates import Gate, GateError, check_gate, parse_gate
from ragtrace._report.load import load_scores
from tests.report.lines import line, score, two_systems, write_lines

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def ragtrace_report(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragtrace", "report", *map(str, args)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,
    )


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "scores.jsonl", two_systems())


@pytest.fixture
def report(scores: Path) -> dict[str, Any]:
    return build_report(load_scores([scores]), ReportOptions(resamples=300))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("faithfulness.pass_rate < 0.9", Gate("", "faithfulness", "pass_rate", "<", 0.9)),
        (
            "faithfulness.mean[model=gpt-x]<0.8",
            Gate("", "faithfulness", "mean", "<", 0.8, system="gpt-x"),
        ),
        (
            " looping.unique_sentences.mean_low [system=a] >= 1e-1 ",
            Gate("", "looping.unique_sentences", "mean_low", ">=", 0.1, system="a"),
        ),
        (
            "faithfulness.diff_low[system=v2, vs=v1] < -0.02",
            Gate("", "faithfulness", "diff_low", "<", -0.02, system="v2", vs="v1"),
        ),
        ("bleu.4.errors != 0", Gate("", "bleu.4", "errors", "!=", 0.0)),
    ],
)
def test_the_grammar(text: str, expected: Gate) -> None:
    gate = parse_gate(text)
    assert gate == Gate(text, *[getattr(expected, f) for f in Gate.__dataclass_fields__][1:])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("faithfulness.average < 0.9", "unknown statistic 'average'"),
        ("faithfulness.pass_rat < 0.9", "did you mean 'pass_rate'"),
        ("faithfulness.mean 0.9", "cannot read gate"),
        ("faithfulness < 0.9", "cannot read gate"),
        ("faithfulness.mean < high", "is not a number"),
        ("faithfulness.mean < nan", "not a finite number"),
        ("faithfulness.mean[app=x] < 0.9", "bad filter 'app=x'"),
        ("faithfulness.mean[system=a,system=b] < 0.9", "given twice"),
        ("faithfulness.diff[system=a] > 0", "needs [system=A,vs=B]"),
        ("faithfulness.mean[system=a,vs=b] > 0", "vs= goes with diff"),
    ],
)
def test_bad_gates_say_why(text: str, message: str) -> None:
    with pytest.raises(GateError) as caught:
        parse_gate(text)
    assert message in str(caught.value)


def test_a_gate_fails_when_its_condition_holds_for_any_system(report: dict[str, Any]) -> None:
    # pass rates: model-a 0.25, model-b 0.75
    result = check_gate(parse_gate("faithfulness.pass_rate < 0.5"), report)
    assert result.failed
    assert [(c["system"], c["value"], c["failed"]) for c in result.checks] == [
        ("model-b", 0.75, False),
        ("model-a", 0.25, True),
    ]
    assert not check_gate(parse_gate("faithfulness.pass_rate < 0.2"), report).failed
    assert not check_gate(parse_gate("faithfulness.mean[model=model-b] < 0.8"), report).failed
    assert check_gate(parse_gate("faithfulness.flips[system=model-b] > 0"), report).failed


def test_a_difference_gate_reads_either_way_round(report: dict[str, Any]) -> None:
    (comparison,) = next(s for s in report["scores"] if s["name"] == "faithfulness")["comparisons"]
    forward = check_gate(parse_gate("faithfulness.diff_low[system=model-b,vs=model-a] < 0"), report)
    assert forward.checks[0]["value"] == comparison["low"] and not forward.failed
    backward = check_gate(
        parse_gate("faithfulness.diff_high[system=model-a,vs=model-b] > 0"), report
    )
    assert backward.checks[0]["value"] == -comparison["low"] and not backward.failed


def test_unknown_score_or_system_is_an_error(report: dict[str, Any]) -> None:
    with pytest.raises(GateError, match=r"no score 'faithfulnes'.*did you mean 'faithfulness'"):
        check_gate(parse_gate("faithfulnes.mean < 0.5"), report)
    with pytest.raises(GateError, match="no system 'model-c'"):
        check_gate(parse_gate("faithfulness.mean[system=model-c] < 0.5"), report)


def test_no_value_fails_the_gate(tmp_path: Path) -> None:
    rows = [
        line("a", "q1", [score("faithfulness", 0.9), score("bleu.1", 0.5)]),
        line("b", "q1", [score("faithfulness", None, error="timeout"), score("bleu.1", 0.6)]),
    ]
    report = build_report(load_scores([write_lines(tmp_path / "s.jsonl", rows)]))
    result = check_gate(parse_gate("faithfulness.mean[system=b] < 0.5"), report)
    assert result.failed and "no value" in result.messages()[0]


def test_exit_0_when_every_gate_holds(scores: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = ragtrace_report(
        scores, "--json", out, "--resamples", "200",
        "--fail-if", "faithfulness.pass_rate < 0.2",
        "--fail-if", "hallucination.mean[model=model-b] > 0.3",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "model-b is better than model-a on faithfulness" in done.stdout
    gates = json.loads(out.read_text())["gates"]
    assert [(g["expression"], g["failed"]) for g in gates] == [
        ("faithfulness.pass_rate < 0.2", False),
        ("hallucination.mean[model=model-b] > 0.3", False),
    ]


def test_exit_1_and_each_failing_gate_printed(scores: Path, tmp_path: Path) -> None:
    done = ragtrace_report(
        scores, "--json", tmp_path / "r.json",
        "--fail-if", "faithfulness.mean < 0.8",
        "--fail-if", "hallucination.pass_rate < 0.7",
        "--fail-if", "faithfulness.n < 1",
    )  # fmt: skip
    assert done.returncode == 1
    failed = [ln for ln in done.stderr.splitlines() if "gate failed" in ln]
    assert failed == [
        "ragtrace report: gate failed: faithfulness.mean < 0.8: model-a: mean = 0.675",
    ]
    gates = json.loads((tmp_path / "r.json").read_text())["gates"]
    assert [g["failed"] for g in gates] == [True, False, False]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fail-if", "faithfulness.average < 1"], "unknown statistic 'average'"),
        (["--fail-if", "nope.mean < 1"], "no score 'nope'"),
        (["--fail-if", "faithfulness.mean[system=zzz] < 1"], "no system 'zzz'"),
        (["--level", "1.5"], "--level"),
        (["--html", "/nonexistent-dir/r.html"], "cannot write /nonexistent-dir/r.html"),
    ],
)
def test_exit_2_on_usage_errors(scores: Path, args: list[str], message: str) -> None:
    done = ragtrace_report(scores, *args)
    assert done.returncode == 2
    assert message in done.stderr


def test_exit_2_on_a_missing_file_and_strict_bad_lines(tmp_path: Path, scores: Path) -> None:
    missing = ragtrace_report(tmp_path / "missing.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    broken = write_lines(tmp_path / "broken.jsonl", [*two_systems(), "{oops"])
    assert ragtrace_report(broken).returncode == 0  # reported, counted, not fatal
    strict = ragtrace_report(broken, "--strict")
    assert strict.returncode == 1 and f"{broken}:11: skipped: invalid JSON" in strict.stderr


def test_the_report_loads_no_heavy_library() -> None:
    code = (
        "import json, sys\n"
        "from ragtrace._cli import _parser\n"
        "import ragtrace._report.cli, ragtrace._report.build, ragtrace._report.html\n"
        "_parser()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        check=True,
    )
    heavy = ("numpy", "torch", "transformers", "litellm", "langchain_core", "llama_index")
    loaded = json.loads(done.stdout)
    assert "ragtrace._report.build" in loaded
    assert [m for m in loaded if m.split(".")[0] in heavy] == []


def test_unanswered_cases_gate_and_the_two_treatments(tmp_path: Path) -> None:
    """The real CLI: an unanswered case shows in the printed summary, the ``unanswered`` gate
    reads it, and ``--unanswered paired`` leaves it out of the pass rate instead."""
    from tests.report.lines import three_systems

    scores = write_lines(tmp_path / "scores.jsonl", three_systems())
    out = tmp_path / "report.json"
    gate = "faithfulness.unanswered > 0"
    failing = ragtrace_report(scores, "--json", out, "--fail-if", gate)
    assert failing.returncode == 1
    assert "model-c left 1 of 4 case(s) unanswered (counted as failures)" in failing.stdout
    assert f"gate failed: {gate}: model-c: unanswered = 1" in failing.stderr
    counted = {e["system"]: e for e in json.loads(out.read_text())["scores"][0]["leaderboard"]}
    paired = ragtrace_report(scores, "--json", out, "--unanswered", "paired")
    assert paired.returncode == 0 and "(counted apart)" in paired.stdout
    apart = {e["system"]: e for e in json.loads(out.read_text())["scores"][0]["leaderboard"]}
    # model-c answered q1, q2, q4 with 0.85, 0.75, 0.80 (all pass at 0.75); counted as a
    # failure its q3 makes it 3 of 4; left out, every system is compared on q1, q2, q4.
    assert (counted["model-c"]["pass_rate"], counted["model-c"]["n"]) == (0.75, 4)
    assert (apart["model-c"]["pass_rate"], apart["model-c"]["n"]) == (1.0, 3)
    assert apart["model-a"]["n"] == 3 and counted["model-a"]["n"] == 4
    bad = ragtrace_report(scores, "--unanswered", "ignore")
    assert bad.returncode == 2 and "invalid choice: 'ignore'" in bad.stderr
