"""``AllowList``: the application's own public values, which are not leaks (``allow=``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragtrace._redaction.findings import comparable

REGEXP_PREFIX = "REGEXP:"
_ARTICLE = re.compile(r"(?i)^(?:the|an?)\s+")


class AllowList:
    """Values that are not leaks (see the package doc): exact (normalised) and ``REGEXP:``."""

    def __init__(self, entries: Iterable[str] | None, owner: str) -> None:
        if isinstance(entries, str):
            raise ValueError(f"{owner}: allow must be a list of values, got a string {entries!r}")
        self.values: set[str] = set()
        self.patterns: list[re.Pattern[str]] = []
        for entry in entries or ():
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError(f"{owner}: allow entries must be non-empty strings, got {entry!r}")
            if entry.startswith(REGEXP_PREFIX):
                try:
                    self.patterns.append(re.compile(entry[len(REGEXP_PREFIX) :], re.IGNORECASE))
                except re.error as exc:
                    raise ValueError(f"{owner}: bad allow pattern {entry!r}: {exc}") from None
            elif normal := _normalised(entry):
                self.values.add(normal)

    def __bool__(self) -> bool:
        return bool(self.values or self.patterns)

    def allows(self, value: str) -> bool:
        """Whether the finding text ``value`` is an allowed value."""
        if _normalised(value) in self.values:
            return True
        stripped = value.strip()
        bare = _ARTICLE.sub("", stripped)
        return any(p.fullmatch(stripped) or p.fullmatch(bare) for p in self.patterns)


def _normalised(value: str) -> str:
    return comparable(_ARTICLE.sub("", value.strip()))
