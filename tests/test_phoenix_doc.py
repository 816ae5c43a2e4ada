"""docs/phoenix.md's filters are the ones the live Phoenix check runs: read from the page, each
with the requests it must keep (``tests/test_phoenix_live.py`` runs them in a real Phoenix)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "phoenix.md"


def phoenix_helpers() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _phoenix
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return _phoenix


def test_every_filter_on_the_page_is_checked_against_phoenix() -> None:
    helpers = phoenix_helpers()
    rows = helpers.documented_filters()
    assert len(rows) >= 9
    checked = helpers.doc_filters([])  # KeyError: a row the live check has no expectation for
    assert len(checked) == len(rows)


def test_the_page_lists_every_annotation_label() -> None:
    text = DOC.read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| every score |")]
    assert re.findall(r"`(pass|fail|error|none)`", row) == ["pass", "fail", "error", "none"]


def test_request_filters_are_limited_to_the_root_span() -> None:
    """Latency and status belong to the request: a filter on them without ``parent_id is None``
    also keeps a slow or failed child span."""
    rows = dict(phoenix_helpers().documented_filters())
    for what in ("slow requests", "failed requests", "streamed answers the user abandoned"):
        assert rows[what].startswith("parent_id is None and "), what
