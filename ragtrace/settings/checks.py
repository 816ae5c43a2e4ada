"""Checking one value of a settings mapping, failing with where it is and how to fix it.

Every section reader goes through one ``Checks``: each method returns the value when it fits
and otherwise raises ``SettingsError`` as ``<source>: <path>: <message>``, with close matches
for typos and hints for YAML's surprises (``1e-3`` and ``no`` are not what they look like)::

    checks = Checks("ragtrace.yaml")
    workers = checks.integer(pipeline.get("workers", 2), "pipeline.workers", 1)
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from ragtrace.settings.schema import SettingsError

_EXPONENT = re.compile(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+")


def suggest(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the option closest to ``word``, or ``""`` if none is close."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def kind(value: object) -> str:
    """``value``'s type and repr, for a message that says what was found instead."""
    return f"{type(value).__name__} {value!r}"


class Checks:
    """Type and range checks on the values of one settings source.

    Args:
        source: What the values came from (a file name, ``<dict>``): the start of every message.
    """

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        """Raise ``SettingsError`` for the key at ``path`` (``""``: the whole source)."""
        raise SettingsError(
            f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}"
        )

    def mapping(self, value: object, path: str, known: tuple[str, ...] | None) -> dict[str, Any]:
        """A copy of a mapping with string keys, all in ``known`` (None: any key)."""
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {kind(value)}")
        for key in value:
            at = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str):
                self.fail(at, f"keys must be strings, got {kind(key)}")
            if known is not None and key not in known:
                hint = suggest(key, known) or f"; expected one of: {', '.join(known)}"
                self.fail(at, f"unknown key{hint}")
        return dict(value)

    def items(self, value: object, path: str) -> list[Any]:
        """A copy of a list (or tuple)."""
        if not isinstance(value, list | tuple):
            self.fail(path, f"expected a list, got {kind(value)}")
        return list(value)

    def number(
        self, value: object, path: str, low: float | None = None, high: float | None = None
    ) -> float:
        """A finite number (not a bool) in ``[low, high]``, as a float."""
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            hint = ""
            if isinstance(value, str) and _EXPONENT.fullmatch(value):
                hint = " (YAML reads 1e-3 as a string: write 1.0e-3)"
            self.fail(path, f"expected a number, got {kind(value)}{hint}")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
            self.fail(path, f"must be {bounds}, got {value!r}")
        return float(value)

    def integer(self, value: object, path: str, low: int, high: int | None = None) -> int:
        """An integer (not a bool) in ``[low, high]``."""
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected an integer, got {kind(value)}")
        self.number(value, path, low, high)
        return value

    def boolean(self, value: object, path: str) -> bool:
        """``true`` or ``false``."""
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {kind(value)}")
        return value

    def string(self, value: object, path: str) -> str:
        """A non-empty string."""
        if not isinstance(value, str) or not value:
            hint = (
                " (quote it: YAML reads yes/no/on/off as booleans)"
                if isinstance(value, bool)
                else ""
            )
            self.fail(path, f"expected a non-empty string, got {kind(value)}{hint}")
        return value

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        """One non-empty string, or a list of them."""
        if isinstance(value, str):
            return (self.string(value, path),)
        return tuple(self.string(v, f"{path}[{i}]") for i, v in enumerate(self.items(value, path)))
