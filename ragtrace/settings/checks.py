"""Checking the values of a settings mapping, collecting every mistake with where it is.

Every reader goes through one ``Checks``. ``fail(path, message)`` abandons the value being
read (it raises); ``attempt(...)`` around each independent part of the file records that
failure and goes on with the next part, so one ``SettingsError`` at the end lists every
mistake, each as ``<source>: <path>: <message>`` with close matches for typos and hints for
YAML's surprises (``1e-3`` and ``no`` are not what they look like)::

    checks = Checks("ragtrace.yaml")
    with checks.attempt():
        workers = checks.integer(pipeline.get("workers", 2), "pipeline.workers", 1)
    checks.raise_errors()

Unknown keys of a section are warnings (``warn``), logged with the closest known key, and the
rest of the file applies; inside an entry of a list (a rule, a cascade, an evaluator) they are
errors, because the entry would otherwise mean something else.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
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


class _Abandoned(SettingsError):
    """One value failed; ``attempt`` records it and reading goes on."""


class Checks:
    """Type and range checks on the values of one settings source, and what they found.

    Args:
        source: What the values came from (a file name, ``<dict>``): the start of every message.

    Attributes:
        errors: Every mistake found so far, as full messages.
        warnings: Every key ignored so far, as full messages.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def message(self, path: str, text: str) -> str:
        """``<source>: <path>: <text>``."""
        return f"{self.source}: {path}: {text}" if path else f"{self.source}: {text}"

    def fail(self, path: str, message: str) -> NoReturn:
        """Abandon the value at ``path`` (``""``: the whole source) with ``message``."""
        raise _Abandoned(self.message(path, message))

    def warn(self, path: str, message: str) -> None:
        """Note something ignored at ``path``."""
        self.warnings.append(self.message(path, message))

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Record a failure inside the block and go on after it."""
        try:
            yield
        except _Abandoned as exc:
            self.errors.append(str(exc))

    def raise_errors(self) -> None:
        """Raise one ``SettingsError`` listing every mistake found, if there was any."""
        if self.errors:
            raise SettingsError(self.errors)

    def mapping(
        self, value: object, path: str, known: tuple[str, ...] | None, *, strict: bool = True
    ) -> dict[str, Any]:
        """A copy of a mapping with string keys, all in ``known`` (None: any key). An unknown
        key fails the value (``strict``) or is dropped with a warning."""
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {kind(value)}")
        kept: dict[str, Any] = {}
        for key, item in value.items():
            at = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str):
                self.fail(at, f"keys must be strings, got {kind(key)}")
            if known is not None and key not in known:
                hint = suggest(key, known) or f"; expected one of: {', '.join(known)}"
                if strict:
                    self.fail(at, f"unknown key{hint}")
                self.warn(at, f"unknown key, ignored{hint}")
                continue
            kept[key] = item
        return kept

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
