"""The regex suite of ``sensitive_data``: secrets, found by pattern and checked by rule.

``find_secrets(text, types=SECRET_TYPES)`` returns ``Finding`` values (type, offsets, detector
``regex``), overlaps resolved (the more specific type wins: a JWT after ``Bearer`` is a JWT).

What is found (``SECRET_TYPES``; pass ``types=`` to choose):

- ``PRIVATE_KEY``: a PEM ``-----BEGIN ... PRIVATE KEY-----`` block (RSA, EC, DSA, OpenSSH,
  encrypted, PGP), to its END line or, when cut off, to the end of its base64 body.
- ``PEM_CERTIFICATE``: a PEM ``CERTIFICATE`` block (the catalogue lists certificates).
- ``AWS_ACCESS_KEY_ID`` (``AKIA``/``ASIA``/... + 16) and ``AWS_SECRET_ACCESS_KEY`` (40 base64
  characters after a name such as ``aws_secret_access_key``).
- ``GITHUB_TOKEN`` (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``),
  ``SLACK_TOKEN`` (``xoxb-``, ...), ``SLACK_WEBHOOK``, ``STRIPE_KEY`` (secret and restricted
  keys, ``whsec_``; publishable ``pk_`` keys are public and not flagged), ``GOOGLE_API_KEY``
  (``AIza`` + 35), ``OPENAI_API_KEY`` (``sk-``, ``sk-proj-``, ...), ``ANTHROPIC_API_KEY``
  (``sk-ant-``).
- ``JWT``: three base64url parts whose first decodes to a JSON object with an ``alg`` member.
- ``BEARER_TOKEN`` (``Bearer <20+ token characters>``) and ``BASIC_AUTH``
  (``Authorization: Basic <base64>``).
- ``URL_PASSWORD``: ``scheme://user:password@host``.
- ``PASSWORD``: ``password: ...`` / ``pwd = ...`` with a value of 8+ characters mixing letters
  with digits or symbols (so "password: required" is not one).
- ``GENERIC_SECRET``: ``api_key``/``secret``/``token``/``access_key`` = a 20+ character value
  mixing letters and digits.
- ``WINDOWS_PRODUCT_KEY``: five groups of five characters from the product-key alphabet.

Obvious placeholders are not secrets: values in ``<...>``, ``{...}``, ``${...}``, runs of one
character such as ``****``, and words like ``password``, ``changeme``, ``your_password``, so
documentation that shows ``postgres://user:password@host`` passes. H2O.ai key formats are not
public and are not matched by name; they are caught by ``GENERIC_SECRET`` or ``BEARER_TOKEN``
when labelled as such.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator

from ragtrace.evaluators.leakage.findings import REGEX, Finding, resolve_overlaps

_PEM_SCAN = 20_000

# name -> (pattern, group holding the secret); order = priority on overlap.
_PATTERNS: dict[str, tuple[re.Pattern[str], int]] = {
    "AWS_ACCESS_KEY_ID": (
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        0,
    ),
    "AWS_SECRET_ACCESS_KEY": (
        re.compile(
            r"(?i)aws.{0,20}?(?:secret|private).{0,20}?[\s:=\"'>]\s*[\"']?"
            r"(?-i:([A-Za-z0-9/+]{40}))(?![A-Za-z0-9/+=])"
        ),
        1,
    ),
    "GITHUB_TOKEN": (
        re.compile(
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|"
            r"github_pat_[A-Za-z0-9_]{22,244})(?![A-Za-z0-9_])"
        ),
        0,
    ),
    "SLACK_WEBHOOK": (
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,}"),
        0,
    ),
    "SLACK_TOKEN": (re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,250}"), 0),
    "STRIPE_KEY": (
        re.compile(
            r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}|"
            r"whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9])"
        ),
        0,
    ),
    "GOOGLE_API_KEY": (re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), 0),
    "ANTHROPIC_API_KEY": (
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,250}(?![A-Za-z0-9_-])"),
        0,
    ),
    "OPENAI_API_KEY": (
        re.compile(
            r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?"
            r"[A-Za-z0-9_-]{20,250}(?![A-Za-z0-9_-])"
        ),
        0,
    ),
    "JWT": (
        re.compile(
            r"(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{6,})\.[A-Za-z0-9_-]{2,}"
            r"\.[A-Za-z0-9_-]*(?![A-Za-z0-9_.-])"
        ),
        0,
    ),
    "URL_PASSWORD": (
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/?#@\"'<>]{1,256}:"
            r"([^\s/?#@\"'<>]{1,256})@[A-Za-z0-9\[]"
        ),
        1,
    ),
    "BASIC_AUTH": (re.compile(r"(?i)authorization:?\s*basic\s+(?-i:([A-Za-z0-9+/]{8,}={0,2}))"), 1),
    "BEARER_TOKEN": (
        re.compile(r"(?i)\bbearer\s+(?-i:([A-Za-z0-9\-._~+/]{20,}=*))(?![A-Za-z0-9\-._~+/=])"),
        1,
    ),
    "PASSWORD": (
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd)\b[\"']?\s*(?:[:=]|is)\s*[\"']?"
            r"([^\s\"',;]{8,128})"
        ),
        1,
    ),
    "GENERIC_SECRET": (
        re.compile(
            r"(?i)\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?key|"
            r"auth[_-]?token|access[_-]?token|client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']?"
            r"([A-Za-z0-9_\-+/=.]{20,256})"
        ),
        1,
    ),
    "WINDOWS_PRODUCT_KEY": (
        re.compile(
            r"(?<![A-Za-z0-9-])(?:[BCDFGHJKMNPQRTVWXY2-9]{5}-){4}[BCDFGHJKMNPQRTVWXY2-9]{5}"
            r"(?![A-Za-z0-9-])"
        ),
        0,
    ),
}
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*(?:PRIVATE KEY(?: BLOCK)?|CERTIFICATE))-----")
# Whole lines of base64 (or "Header: value" lines of encrypted keys), nothing else.
_PEM_BODY = re.compile(
    r"(?:\s*+(?:[A-Za-z0-9+/=]{4,}+|[A-Za-z-]+: [^\n]*)(?=[ \t]*(?:\r?\n|\Z)))++"
)
SECRET_TYPES = ("PRIVATE_KEY", "PEM_CERTIFICATE", *_PATTERNS)
PRIORITY = {t: i for i, t in enumerate(SECRET_TYPES)}
_PLACEHOLDERS = frozenset(
    """password passwd pass pwd secret changeme change_me yourpassword your_password mypassword
    my_password example redacted hidden xxxxxx placeholder token apikey api_key your_api_key
    your-api-key yourapikey your_token""".split()
)
_PLACEHOLDER_SHAPE = re.compile(r"^(?:<.*>|\{.*\}|\[.*\]|\$\{?.*|%.*%|(.)\1*)$")


def find_secrets(text: str, types: Iterable[str] = SECRET_TYPES) -> list[Finding]:
    """The secrets in ``text`` of the given types, sorted by offset, overlaps resolved."""
    wanted = set(types)
    found: list[Finding] = []
    if wanted & {"PRIVATE_KEY", "PEM_CERTIFICATE"}:
        found.extend(f for f in _pem_blocks(text) if f.entity_type in wanted)
    for name, (pattern, group) in _PATTERNS.items():
        if name not in wanted:
            continue
        check = _VALIDATORS.get(name, _not_placeholder)
        for m in pattern.finditer(text):
            if check(m.group(group)):
                start, end = m.span(group)
                found.append(Finding(name, start, end, REGEX))
    return resolve_overlaps(found, lambda f: PRIORITY[f.entity_type])


def jwt_ok(token: str) -> bool:
    """Whether a token's first part is base64url JSON with an ``alg`` member (a JWT header)."""
    header = token.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
        decoded = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and "alg" in decoded


def _pem_blocks(text: str) -> Iterator[Finding]:
    for m in _PEM_BEGIN.finditer(text):
        label = m.group(1)
        kind = "PEM_CERTIFICATE" if label.endswith("CERTIFICATE") else "PRIVATE_KEY"
        end_marker = f"-----END {label}-----"
        stop = text.find(end_marker, m.end(), m.end() + _PEM_SCAN)
        if stop >= 0:
            end = stop + len(end_marker)
        else:  # cut off: the base64 body that follows the header
            body = _PEM_BODY.match(text, m.end(), min(len(text), m.end() + _PEM_SCAN))
            end = body.end() if body else m.end()
        yield Finding(kind, m.start(), end, REGEX)


def _not_placeholder(value: str) -> bool:
    stripped = value.strip("\"'`.,;)")
    if not stripped or stripped.lower() in _PLACEHOLDERS:
        return False
    return _PLACEHOLDER_SHAPE.match(stripped) is None


def _password_ok(value: str) -> bool:
    if not _not_placeholder(value):
        return False
    has_letter = any(ch.isalpha() for ch in value)
    has_other = any(not ch.isalpha() for ch in value)
    return has_letter and has_other


def _mixed_ok(value: str) -> bool:
    return (
        _not_placeholder(value)
        and any(ch.isalpha() for ch in value)
        and any(ch.isdigit() for ch in value)
    )


def _product_key_ok(value: str) -> bool:
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "JWT": jwt_ok,
    "PASSWORD": _password_ok,
    "GENERIC_SECRET": _mixed_ok,
    "AWS_SECRET_ACCESS_KEY": _mixed_ok,
    "WINDOWS_PRODUCT_KEY": _product_key_ok,
    "OPENAI_API_KEY": _mixed_ok,
    "ANTHROPIC_API_KEY": _mixed_ok,
}
