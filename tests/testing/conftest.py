"""Fixtures for the testing tests: the real local judges of tests/judges, and case files."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.judges.conftest import qwen_server, smol_server

__all__ = ["qwen_server", "smol_server", "write_cases"]


def write_cases(path: Path, cases: Iterable[Mapping[str, Any]]) -> Path:
    """``cases`` as a JSON Lines file at ``path``."""
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path
