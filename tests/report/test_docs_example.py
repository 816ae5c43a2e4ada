"""docs/report.md's end-to-end example, run as written: its three commands, in a fresh folder,
print exactly the output the page shows (and the report fails its gate, as the page says)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.test_gates import ENV

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "report.md"

pytestmark = pytest.mark.integration


def example_blocks() -> tuple[list[str], str]:
    """The section's shell commands (continuations joined) and its printed output."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## End to end", 1)[1].split("\n## ", 1)[0]
    shell = re.search(r"```sh\n(.*?)```", section, re.S)
    printed = re.search(r"```text\n(.*?)```", section, re.S)
    assert shell is not None and printed is not None
    commands = shell.group(1).replace("\\\n", " ").strip().splitlines()
    return commands, printed.group(1)


def test_the_end_to_end_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    commands, printed = example_blocks()
    assert len(commands) == 3
    python = f"{sys.executable} {ROOT / 'examples' / 'compare_generators.py'}"
    results = []
    for written in commands:
        command = written.replace(".venv/bin/python examples/compare_generators.py", python)
        command = re.sub(r"^ragtrace ", f"{sys.executable} -m ragtrace ", command)
        results.append(
            subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env={**ENV, "PYTHONPATH": str(ROOT)},
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        )
    (generate, evaluate, report) = results
    assert generate.returncode == 0 and evaluate.returncode == 0, evaluate.stderr
    assert report.returncode == 1  # the gate fails, as the page says
    assert report.stdout + report.stderr == printed
    assert (tmp_path / "report.html").stat().st_size > 10_000
