"""docs/api.md lists the public surface as its docstrings say today."""

from __future__ import annotations

import subprocess
import sys

from tests.api_reference import PAGE, ROOT, SURFACE, render


def test_the_api_page_is_current() -> None:
    """Rendered in a fresh interpreter (no test has imported or patched anything there)."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.api_reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout == PAGE.read_text(encoding="utf-8"), (
        "run: .venv/bin/python -m tests.api_reference --write"
    )


def test_every_public_name_is_on_the_page_with_its_docstring() -> None:
    page = render()
    for module in SURFACE:
        assert f"## `{module}`" in page
    assert "- `init(" in page and "- `create(" in page and "- `assert_scores(" in page
    assert "`RECORD_FIELDS`: `['chunks'," in page  # sets in a stable order
