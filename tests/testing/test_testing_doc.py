"""docs/testing.md's printed figures, produced by running its code as written: the metrics
summary of its first example and the assertion message of its pytest example. (Its CI example
is run by ``test_ci_example.py``, its seed tables by ``test_seed_cases.py``.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.printed_figures import same_figures

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"

pytestmark = pytest.mark.integration


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def run_python(code: str, tmp_path: Path) -> str:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def same_but_elided(printed: str, shown: str) -> None:
    """``printed`` is ``shown``, but for the seconds taken, the parts the page elides with a
    line ``  ...`` (the printed lines up to the page's next line), and each figure's last printed
    digit (tests/printed_figures.py)."""
    seconds = re.compile(r"\d+\.\d s\b")
    got = [seconds.sub("N s", line) for line in printed.rstrip("\n").split("\n")]
    want = [seconds.sub("N s", line) for line in shown.rstrip("\n").split("\n")]
    i = 0
    for n, line in enumerate(want):
        if line == "  ...":
            following = want[n + 1]
            while i < len(got) and not same_figures(got[i], following):
                i += 1
            continue
        assert i < len(got), f"the page shows more than is printed: {line!r}"
        assert same_figures(got[i], line), (got[i], line)
        i += 1
    assert i == len(got), f"printed but not shown: {got[i:]}"


def test_the_first_example_prints_the_summary_the_page_shows(tmp_path: Path) -> None:
    code = blocks("python")[0]
    assert "ragtrace.evaluate(cases" in code
    shown = blocks("text")[0]
    same_but_elided(run_python(code, tmp_path), shown)


def test_the_assertion_message_is_the_one_the_page_shows(tmp_path: Path) -> None:
    first, pytest_example = blocks("python")[:2]
    assert "def test_the_answer_is_grounded" in pytest_example
    code = (
        first.replace("result = ragtrace.evaluate(", "_ = (")  # only its `context`
        + "\n"
        + pytest_example
        + "\ntry:\n    test_the_answer_is_grounded()\nexcept AssertionError as exc:\n"
        + "    print(f'ragtrace.testing.{type(exc).__name__}: {exc}')\n"
    )
    shown = next(b for b in blocks("text") if b.startswith("E   ragtrace.testing."))
    expected = "\n".join(re.sub(r"^E   ", "", line) for line in shown.rstrip("\n").split("\n"))
    printed = run_python(code, tmp_path).rstrip("\n").split("\n")
    assert len(printed) == len(expected.split("\n"))
    assert all(map(same_figures, printed, expected.split("\n"))), (printed, expected)
