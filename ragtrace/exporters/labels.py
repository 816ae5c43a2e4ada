"""Bounded Prometheus label values: every label value ragtrace emits passes through here.

A label with unbounded values (user-supplied evaluator names, app names, free-text reasons)
would grow one time series per value. ``LabelCap`` keeps the first ``limit`` distinct values
of one label and maps every later one to ``other``; ``clean_label`` strips control characters
and caps the length::

    evaluators = LabelCap(50)
    histogram.labels(evaluators(score.name)).observe(value)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection

OTHER = "other"
UNKNOWN = "unknown"
MAX_LABEL_CHARS = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def clean_label(value: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """``value`` as a label value: control characters become ``_``, at most ``max_chars`` long.

    An empty value becomes ``unknown``.
    """
    text = _CONTROL.sub("_", value if isinstance(value, str) else str(value)).strip()
    return text[:max_chars].rstrip() or UNKNOWN


def one_of(value: str, allowed: Collection[str]) -> str:
    """``value`` if it is one of ``allowed``, else ``other``."""
    return value if value in allowed else OTHER


class LabelCap:
    """The distinct values of one label, capped: past ``limit`` values, new ones read ``other``.

    Thread-safe; a value seen before costs one dict lookup.

    Args:
        limit: Most distinct values kept (``other`` does not count).
        max_chars: Longest value kept (longer ones are cut).
    """

    def __init__(self, limit: int, max_chars: int = MAX_LABEL_CHARS) -> None:
        if limit < 1:
            raise ValueError(f"LabelCap: limit must be >= 1, got {limit}")
        self.limit = limit
        self.max_chars = max_chars
        self._kept: set[str] = set()
        self._seen: dict[str, str] = {}  # raw value -> label value, bounded below
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        known = self._seen.get(value)
        if known is not None:
            return known
        label = clean_label(value, self.max_chars)
        with self._lock:
            if label != OTHER and label not in self._kept:
                if len(self._kept) >= self.limit:
                    label = OTHER
                else:
                    self._kept.add(label)
            if len(self._seen) < 4 * self.limit:
                self._seen[value] = label
        return label

    @property
    def values(self) -> frozenset[str]:
        """The values kept so far."""
        return frozenset(self._kept)
