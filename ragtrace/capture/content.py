"""Turning whatever a framework hands us into safe, bounded, redacted text.

Captured content is untrusted and unbounded: None, bytes, non-UTF-8, lone surrogates, megabytes,
objects whose ``__str__`` raises, metadata with cycles. Everything here returns something safe
to put on a span or in a record, and says when it had to cut.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtrace.redaction import Redaction

REDACTION_FAILED = "<redaction failed>"
"""What a text becomes when a redaction function raises or returns something else than text."""

# Extra characters kept before redaction so a secret straddling the cut is still seen whole.
_REDACT_MARGIN = 256
_MAX_DEPTH = 6
_MAX_ITEMS = 200
_SURROGATE = re.compile("[\ud800-\udfff]")
_SCALARS = (str, int, bool, type(None))
# One encoder for every dump: ``json.dumps`` with options builds a new one per call.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


def to_text(value: object) -> str | None:
    """Best-effort text of ``value``: str as is (a str subclass as a plain str), bytes
    decoded, other objects via ``str``."""
    if value is None:
        return None
    if type(value) is str:
        return value
    if isinstance(value, str):  # LangChain's TextAccessor, an enum member: keep the text only
        return str.__str__(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def _valid_utf8(text: str) -> str:
    """Replace lone surrogates, which cannot be encoded for the wire, with U+FFFD."""
    if text.isascii():  # no surrogate, and no copy made to find out
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def short_text(value: object, limit: int = 256) -> str | None:
    """Text of a short field (id, name, model, error message): cut to ``limit``, valid UTF-8."""
    text = to_text(value)
    if text is None:
        return None
    return _valid_utf8(text[:limit])


class TextPolicy:
    """Truncation and redaction applied to every captured text.

    Args:
        redaction: The policy every text goes through before it is kept
            (``ragtrace.redaction``; None: none); a function that raises turns the text into a
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
        return _valid_utf8(text), truncated

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


def jsonable(value: Any, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-safe copy of ``value``: cycles, deep nesting and odd objects become strings."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= _MAX_DEPTH:
        return "<too deep>"
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in seen:
            return "<cycle>"
        inner = seen | {id(value)}
        if isinstance(value, Mapping):
            items = list(value.items())[:_MAX_ITEMS]
            return {to_text(k) or "": jsonable(v, depth + 1, inner) for k, v in items}
        return [jsonable(v, depth + 1, inner) for v in list(value)[:_MAX_ITEMS]]
    return to_text(value)


def safe_metadata(value: object) -> dict[str, Any]:
    """A chunk's metadata as a JSON-safe dict (anything that is not a mapping gives {})."""
    if not isinstance(value, Mapping):
        return {}
    if type(value) is dict and _flat(value):
        return dict(value)
    try:
        result = jsonable(value)
    except Exception:
        return {"<error>": "metadata could not be read"}
    return result if isinstance(result, dict) else {}


def _flat(mapping: dict[Any, Any]) -> bool:
    """Whether ``mapping`` is already JSON-safe: string keys, scalar values, finite floats
    (the common metadata of a retrieved chunk, which then needs no deep copy)."""
    if len(mapping) > _MAX_ITEMS:
        return False
    for key, item in mapping.items():
        if type(key) is not str:
            return False
        if type(item) is float:
            if not math.isfinite(item):
                return False
        elif type(item) not in _SCALARS:
            return False
    return True


def dump_json(value: Any, limit: int) -> tuple[str, bool]:
    """Compact JSON of an already JSON-safe value, cut to ``limit`` characters."""
    text = _valid_utf8(_COMPACT_JSON.encode(value))
    if len(text) > limit:
        return text[:limit], True
    return text, False


def as_score(value: object) -> float | None:
    """A finite float from a retriever score field, or None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return score if math.isfinite(score) else None
