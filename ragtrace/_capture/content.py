"""Truncation and redaction of every text capture keeps (``TextPolicy``).

The text helpers underneath (``to_text``, ``short_text``, ``safe_metadata``) are in
``ragtrace._text``; the redaction policy is ``ragtrace._redaction``.
"""

from __future__ import annotations

from typing import Any

from ragtrace._redaction import REDACTION_FAILED, Redaction
from ragtrace._text import safe_metadata, short_text, to_text, valid_utf8

# Extra characters kept before redaction so a secret straddling the cut is still seen whole.
_REDACT_MARGIN = 256


class TextPolicy:
    """Truncation and redaction applied to every captured text.

    Args:
        redaction: The policy every text goes through before it is kept
            (``ragtrace._redaction``; None: none); a function that raises turns the text into a
            marker (never leaked unredacted).
    """

    REDACTION_FAILED = REDACTION_FAILED

    __slots__ = ("redaction", "redacts")

    def __init__(self, redaction: Redaction | None = None) -> None:
        self.redaction = redaction
        self.redacts = redaction is not None and redaction.active
        """Whether texts are rewritten (a policy other than ``none``)."""

    def clean(self, value: object, limit: int) -> tuple[str | None, bool]:
        """Safe text of at most ``limit`` characters and whether it was cut."""
        text, cut = self.cut(value, limit)
        if text is None or not self.redacts:
            return text, cut
        return self.redact(text, limit, cut)

    def take(
        self, value: object, limit: int, keep_raw: bool
    ) -> tuple[str | None, bool, str | None]:
        """``clean``'s text and whether it was cut, and with ``keep_raw`` the text before
        redaction as the raw-text evaluators get it (``raw``; else None)."""
        text, cut = self.cut(value, limit)
        if text is None or not self.redacts:
            return text, cut, None
        raw = self.raw(text, limit) if keep_raw else None
        text, cut = self.redact(text, limit, cut)
        return text, cut, raw

    def cut(self, value: object, limit: int) -> tuple[str | None, bool]:
        """The text before redaction: valid UTF-8, cut to ``limit`` characters (plus a margin
        when a policy is on, so a secret straddling the cut is still seen whole)."""
        text = to_text(value)
        if text is None:
            return None, False
        truncated = len(text) > limit
        if truncated:
            text = text[: limit + _REDACT_MARGIN] if self.redacts else text[:limit]
        return valid_utf8(text), truncated

    def redact(self, text: str, limit: int, cut: bool) -> tuple[str, bool]:
        """``text`` (from ``cut``) redacted and cut to ``limit``."""
        if self.redaction is not None:
            text = self.redaction.text(text)
        if len(text) > limit:
            return text[:limit], True
        return text, cut

    def raw(self, text: str | None, limit: int) -> str | None:
        """``text`` (from ``cut``) as the raw-text evaluators get it: cut to ``limit``."""
        return text if text is None or len(text) <= limit else text[:limit]

    def short(self, value: object, limit: int = 256) -> str | None:
        """``short_text`` of ``value`` (an id, an error message), redacted."""
        text = short_text(value, limit)
        return text if text is None or self.redaction is None else self.redaction.text(text)

    def identity(self, value: object, limit: int = 256) -> str | None:
        """``short_text`` of ``value`` (a chunk id, a user id) redacted as an identity: each
        placeholder keeps a keyed hash of what it replaced, so distinct ids stay distinct."""
        text = short_text(value, limit)
        return text if text is None or self.redaction is None else self.redaction.identity(text)

    def metadata(self, value: object) -> dict[str, Any]:
        """``safe_metadata`` of ``value`` with every key and string value redacted, at any
        depth."""
        kept = safe_metadata(value)
        if not kept or self.redaction is None or not self.redaction.active:
            return kept
        redacted: dict[str, Any] = self.redaction.value(kept)
        return redacted
