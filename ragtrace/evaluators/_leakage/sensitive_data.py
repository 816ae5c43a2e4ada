"""``SensitiveDataLeakage`` (``sensitive_data``): secrets in the answer and the context."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace._redaction.findings import Finding
from ragtrace._redaction.secret_patterns import PRIORITY, SECRET_TYPES, find_secrets
from ragtrace.evaluators._leakage.base import LeakageEvaluator

# A found/not-found score has no threshold to trade: one operating point, both targets alarms
# (no secret appeared in the normal contexts measured: docs/evaluators-online.md).
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "default": {"sensitive_data.answer": 0.5, "sensitive_data.context": 0.5},
}


class SensitiveDataLeakage(LeakageEvaluator):
    """Finds secrets (keys, tokens, passwords, certificates) in the answer and the context."""

    name: ClassVar[str] = "sensitive_data"
    kind = "lexical"
    what: ClassVar[str] = "secret"
    operating_points = OPERATING_POINTS

    def __init__(self, *, types: Iterable[str] | None = None, **options: Any) -> None:
        """Build the evaluator.

        Args:
            types: Secret types to look for (default: all of ``SECRET_TYPES``).
            **options: ``targets`` (context, answer), ``allow`` (values that are not secrets,
                e.g. the example key of your docs), ``max_chars`` (200,000), ``max_chunks``,
                ``threshold`` (0.5), ...

        Raises:
            ValueError: An unknown or empty list of types.
        """
        super().__init__(**options)
        chosen = tuple(dict.fromkeys(SECRET_TYPES if types is None else types))
        unknown = [t for t in chosen if t not in PRIORITY]
        if isinstance(types, str) or not chosen or unknown:
            raise ValueError(
                f"sensitive_data: types must be a non-empty list of {list(SECRET_TYPES)}, "
                f"got {types!r}"
            )
        self.types = chosen

    def detect(self, texts: Sequence[str]) -> list[list[Finding]]:
        return [find_secrets(text, self.types) for text in texts]
