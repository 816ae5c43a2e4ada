"""``examples/ci``: the test project of docs/testing.md runs as the page says, and the page shows
its files as they are.

The example is run in a pytester session of its own (a copy of its files, the plugin loaded
from its entry point): one of its eight answers carries a made-up contact, which faithfulness
catches; the gates of its ini file hold. Its GitHub Actions job is parsed and its commands
checked against the plugin's options and the CLI.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.printed_figures import shown_in

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ci"
DOC = ROOT / "docs" / "testing.md"
FILES = ("pytest.ini", "rag_cases.jsonl", "test_rag_quality.py")

pytest_plugins = ["pytester"]


def test_the_example_runs_as_the_page_shows(pytester: pytest.Pytester):
    for name in FILES:
        shutil.copy(EXAMPLE / name, pytester.path / name)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--tb=short", "--ragtrace-scores", "scores.jsonl", timeout=600
    )
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ScoresAssertionError: ragtrace: 1 of 2 check(s) failed for case 'history' of "
            "system 'aurora-extractive-1' (How long is the history kept in the app? -> *",
            "*  - faithfulness = 0.* < threshold 0.7532 (higher is better): *claims unsupported "
            "by the retrieved context; first: 'My colleague can help: *",
            "*| faithfulness     |     8 |      0 |     87.5% | *| history = 0.* "
            "(*relevant?history?) *",
            "*| answer_relevance |     8 |      0 |    100.0% | *",
            "scores written to scores.jsonl (ragtrace report scores.jsonl)",
            "gate ok: faithfulness.pass_rate < 0.8: aurora-extractive-1: pass_rate = 0.875",
            "gate ok: answer_relevance.mean < 0.5: aurora-extractive-1: mean = 0.*",
        ]
    )
    # The page's printed output is this run's: its message, table and gate lines, each figure
    # to its last printed digit (tests/printed_figures.py).
    printed = list(result.stdout.lines)
    shown = next(
        b for b in re.findall(r"```text\n(.*?)```", DOC.read_text(), re.S) if "[history]" in b
    )
    for line in shown.splitlines():
        if line.startswith(("E ", "| ", "|-", "gate ", "scores written", "8 scored")):
            assert shown_in(line, printed), (
                f"docs/testing.md shows a line this run does not print: {line}"
            )
    report = subprocess.run(
        [sys.executable, "-m", "ragtrace", "report", "scores.jsonl", "--json", "-"],
        cwd=pytester.path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["systems"] == ["aurora-extractive-1"] and data["input"]["bad_lines"] == 0
    shown = {s["name"]: s["leaderboard"][0]["pass_rate"] for s in data["scores"]}
    assert shown == {"faithfulness": 0.875, "answer_relevance": 1.0}


def test_the_page_shows_the_example_files_as_they_are():
    page = DOC.read_text(encoding="utf-8")
    for name in (*FILES, "rag-quality.yml"):
        text = (EXAMPLE / name).read_text(encoding="utf-8").strip()
        assert text in page, f"docs/testing.md does not show examples/ci/{name} as it is"


def test_the_github_actions_job_runs_the_example_with_options_that_exist(
    pytester: pytest.Pytester,
):
    workflow = yaml.safe_load((EXAMPLE / "rag-quality.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["rag-quality"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    assert "pytest examples/ci" in runs and "ragtrace report scores.jsonl" in runs
    used = set(re.findall(r"--ragtrace-[a-z-]+", runs))
    assert used == {"--ragtrace-scores", "--ragtrace-judge-cache"}
    cached = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert [s["with"]["path"] for s in cached] == [".ragtrace-cache"]
    assert ".ragtrace-cache/judge_cache.sqlite" in runs  # the cached folder is the judge cache's
    helped = pytester.runpytest_subprocess("--help", timeout=120)
    for option in sorted(used):
        helped.stdout.fnmatch_lines([f"  {option}*"])
