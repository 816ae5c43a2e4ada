"""Turning whatever a framework or a peer hands us into safe, bounded text.

Captured content is untrusted and unbounded: None, bytes, non-UTF-8, lone surrogates, megabytes,
objects whose ``__str__`` raises, metadata with cycles. Everything here returns something safe
to put on a span or in a record. Capture (``ragtrace._capture.content``), ingest's mappers, the
evaluators and the review store share these helpers; redaction is applied on top of them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 6
MAX_ITEMS = 200
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


def valid_utf8(text: str) -> str:
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
    return valid_utf8(text[:limit])


def jsonable(value: Any, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-safe copy of ``value``: cycles, deep nesting and odd objects become strings."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= MAX_DEPTH:
        return "<too deep>"
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if id(value) in seen:
            return "<cycle>"
        inner = seen | {id(value)}
        if isinstance(value, Mapping):
            items = list(value.items())[:MAX_ITEMS]
            return {to_text(k) or "": jsonable(v, depth + 1, inner) for k, v in items}
        return [jsonable(v, depth + 1, inner) for v in list(value)[:MAX_ITEMS]]
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
    if len(mapping) > MAX_ITEMS:
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
    text = valid_utf8(_COMPACT_JSON.encode(value))
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
