"""BENCHMARKS.md holds the current figures only: it stays short, and what it points to exists.

Superseded figures and what the experiments taught live in ``docs/decisions/``; BENCHMARKS.md
names those records by path, so a renamed or missing record would leave a reader at a dead end.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
MAX_LINES = 400

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:")  # http:, https:, mailto:, ...
# Repository paths the text names in prose or code spans: decision records, benchmark and
# training scripts, packaged data, rule tests.
_NAMED_PATH = re.compile(
    r"(?<![\w./-])(?:docs|benchmarks|training|ragtrace|grafana)/[\w./-]*\w\.(?:md|py|json|yml)\b"
)


def _text() -> str:
    return BENCHMARKS_MD.read_text(encoding="utf-8")


def test_benchmarks_md_holds_at_most_400_lines() -> None:
    lines = _text().splitlines()
    assert len(lines) <= MAX_LINES, (
        f"BENCHMARKS.md has {len(lines)} lines (at most {MAX_LINES}): keep current figures there "
        "and move what an experiment taught, or a superseded figure, to docs/decisions/"
    )


def test_every_relative_link_in_benchmarks_md_resolves() -> None:
    targets = [t.split("#", 1)[0] for t in _LINK.findall(_text()) if not _EXTERNAL.match(t)]
    targets = [t for t in targets if t]
    assert targets, "the parser found no local link (the docs' index is linked)"
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_every_docs_page_and_script_benchmarks_md_names_exists() -> None:
    named = sorted(set(_NAMED_PATH.findall(_text())))
    assert any(p.startswith("docs/decisions/") for p in named), named  # the pattern finds them
    assert [p for p in named if not (ROOT / p).exists()] == []


def test_the_path_pattern_finds_what_it_should() -> None:
    text = (
        "see docs/decisions/int8-by-default.md), `benchmarks/alarms.py --traffic` and "
        "grafana/prometheus/tests/quality_traffic.test.yml; not ../docs/x.md or a/docs/y.md"
    )
    assert _NAMED_PATH.findall(text) == [
        "docs/decisions/int8-by-default.md",
        "benchmarks/alarms.py",
        "grafana/prometheus/tests/quality_traffic.test.yml",
    ]
