"""Bounded Prometheus label values: every label value ragtrace emits passes through here.

A label with unbounded values (user-supplied evaluator names, app names, free-text reasons)
would grow one time series per value. ``LabelCap`` keeps the first ``limit`` distinct values
of one label and maps every later one to ``other``, counting how many distinct values it folded
so (``folded``, and ``on_fold`` for a gauge); ``clean_label`` strips control characters and caps
the length::

    evaluators = LabelCap(50)
    histogram.labels(evaluators(score.name)).observe(value)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection

OTHER = "other"
UNKNOWN = "unknown"
MAX_LABEL_CHARS = 64
MAX_FOLDED_TRACKED = 100_000
"""Distinct folded values remembered to count them (past it, ``folded`` stops growing)."""
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
        on_fold: Called with ``folded`` each time a new distinct value is folded into
            ``other`` (under the cap's lock: keep it quick).
    """

    def __init__(
        self,
        limit: int,
        max_chars: int = MAX_LABEL_CHARS,
        on_fold: Callable[[int], None] | None = None,
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"LabelCap: limit must be a whole number >= 1, got {limit!r}")
        self.limit = limit
        self.max_chars = max_chars
        self.on_fold = on_fold
        self._kept: set[str] = set()
        self._folded: set[int] = set()  # hashes of the values folded into ``other``
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
                    self._fold(label)
                    label = OTHER
                else:
                    self._kept.add(label)
            if len(self._seen) < 4 * self.limit:
                self._seen[value] = label
        return label

    def _fold(self, label: str) -> None:
        key = hash(label)
        if key in self._folded or len(self._folded) >= MAX_FOLDED_TRACKED:
            return
        self._folded.add(key)
        if self.on_fold is not None:
            self.on_fold(len(self._folded))

    @property
    def folded(self) -> int:
        """Distinct values reported as ``other`` so far (at most ``MAX_FOLDED_TRACKED``)."""
        return len(self._folded)

    @property
    def values(self) -> frozenset[str]:
        """The values kept so far."""
        return frozenset(self._kept)
