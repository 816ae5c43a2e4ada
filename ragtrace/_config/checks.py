"""Range and shape checks for configuration values, named for the docs table.

A check is a ``Check``: ``check(value)`` raises ``ValueError`` with what the value must be
(``must be >= 1``) and ``str(check)`` says the same for the table of options. Checks see values
their ``Kind`` already accepted (a finite number, a string, ...); None (an option that is off)
is never checked.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

_HOST = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class Check:
    """A named test of a value.

    Attributes:
        rule: What a good value is, as the message says it (``must be >= 1``).
        test: True when the value is good; may raise ``ValueError`` with its own message.
    """

    rule: str
    test: Callable[[object], bool]

    def __call__(self, value: object) -> None:
        if not self.test(value):
            raise ValueError(f"{self.rule}, got {value!r}")

    def __str__(self) -> str:
        return self.rule


def at_least(low: float) -> Check:
    """A number >= ``low``."""
    return Check(f"must be >= {low:g}", lambda v: v >= low)  # type: ignore[operator]


def above(low: float) -> Check:
    """A number > ``low``."""
    return Check(f"must be > {low:g}", lambda v: v > low)  # type: ignore[operator]


def between(low: float, high: float) -> Check:
    """A number in ``[low, high]``."""
    return Check(f"must be in [{low:g}, {high:g}]", lambda v: low <= v <= high)  # type: ignore[operator]


def one_of(*choices: str) -> Check:
    """One of ``choices``."""
    return Check(f"must be one of {', '.join(choices)}", lambda v: v in choices)


def _name(value: object) -> bool:
    text = str(value)
    return bool(text.strip()) and len(text) <= MAX_NAME_CHARS and not _CONTROL.search(text)


def _names(value: object) -> bool:
    return all(_name(v) for v in value)  # type: ignore[attr-defined]


_IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


def _import_paths(value: object) -> bool:
    return all(_IMPORT_PATH.match(str(v)) for v in value)  # type: ignore[attr-defined]


def _host(value: object) -> bool:
    text = str(value).strip("[]")
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return bool(_HOST.match(text))
    return True


def _url(schemes: tuple[str, ...]) -> Callable[[object], bool]:
    def test(value: object) -> bool:
        text = str(value)
        if not text or text != text.strip() or any(c.isspace() for c in text):
            return False
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        except ValueError:
            return False
        return parts.scheme.lower() in schemes and bool(parts.hostname) and _host(parts.hostname)

    return test


def _path(value: object) -> bool:
    text = str(value)
    return bool(text.strip()) and not _CONTROL.search(text)


PATH = Check("must be a non-empty path", _path)
NAME = Check(f"must be a non-empty name of at most {MAX_NAME_CHARS} printable characters", _name)
NAMES = Check("must hold non-empty names", _names)
IMPORT_PATHS = Check(
    "must hold `module:Class` import paths (`mypackage.sinks:AuditSink`)", _import_paths
)
PORT = Check("must be a port in 0..65535", lambda v: 0 <= v <= 65535)  # type: ignore[operator]
HOST = Check("must be an IP address or a host name", _host)


def _redis_url(value: object) -> bool:
    parts = urlsplit(str(value))
    if parts.scheme == "unix":
        return bool(parts.path)
    return _url(("redis", "rediss"))(value)


REDIS_URL = Check("must be a redis://host:port/db URL (or rediss://, unix:///path)", _redis_url)


def url(*schemes: str) -> Check:
    """A URL with one of ``schemes`` and a host (``http://collector:4318``)."""
    listed = " or ".join(f"{s}://" for s in schemes)
    return Check(f"must be a {listed} URL with a host", _url(schemes))
