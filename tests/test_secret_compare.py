"""Tokens, keys and cookies are compared in one place, in constant time: ``same_secret``
(``hmac.compare_digest``), and no module of ragtrace compares one with ``==`` or ``!=``."""

from __future__ import annotations

import ast
import hmac
import re
from pathlib import Path
from typing import Any

import pytest

from ragtrace._network import authorized, same_secret

PACKAGE = Path(__file__).resolve().parent.parent / "ragtrace"
SECRET_NAME = re.compile(
    r"^_?(?:\w+_)?(?:token|api_?key|secret|password|passwd|csrf|cookie)$", re.IGNORECASE
)


@pytest.mark.parametrize(
    ("given", "expected", "same"),
    [
        ("s3cret-token-0123", "s3cret-token-0123", True),
        ("s3cret-token-0123", "s3cret-token-0124", False),
        ("s3cret", "s3cret-token-0123", False),
        ("s3cret-token-0123-and-more", "s3cret-token-0123", False),
        ("", "s3cret-token-0123", False),
        ("tökén-🔑-0123", "tökén-🔑-0123", True),
        ("tökén-🔑-0123", "token-🔑-0123", False),
        ("token\udcff", "token\udcff", True),  # a lone surrogate (undecodable header bytes)
        ("token\udcff", "token", False),
    ],
)
def test_same_secret_compares_any_text(given: str, expected: str, same: bool) -> None:
    assert same_secret(given, expected) is same


def test_same_secret_goes_through_compare_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("ragtrace._network.hmac.compare_digest", spy)
    assert authorized("Bearer tökén", "tökén")
    assert not authorized("Bearer other", "tökén")
    assert not authorized("Basic tökén", "tökén")  # another scheme: never compared
    assert calls == [("tökén".encode(), "tökén".encode()), (b"other", "tökén".encode())]


def _secret_comparisons(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            continue
        for operand in (node.left, *node.comparators):
            name = operand.id if isinstance(operand, ast.Name) else None
            if isinstance(operand, ast.Attribute):
                name = operand.attr
            if name is not None and SECRET_NAME.match(name):
                found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_the_scan_finds_a_token_compared_with_equals(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def check(given, self):\n"
        "    return given == self.token or self.api_key != given or auth_token == given\n"
    )
    assert len(_secret_comparisons(bad)) == 3


def test_no_module_compares_a_token_with_equals() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _secret_comparisons(path)]
    assert found == [], "compare secrets with ragtrace._network.same_secret"
