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
- ``PASSWORD``: ``password: ...`` / ``pwd = ...`` / ``the password is ...`` with a value of
  8+ characters mixing letters with digits or symbols (so "password: required" is not one).
  The value ends before a quote, backtick, comma, semicolon, JSON escape, next query
  parameter (``&lang=``) or Markdown link target; trailing punctuation and closing brackets
  it did not open are the sentence's (``(password: Summer2024!).`` is ``Summer2024!``).
- ``GENERIC_SECRET``: ``api_key``/``secret``/``token``/``access_key`` = a 20+ character value
  mixing letters and digits (a trailing full stop is the sentence's).
- ``WINDOWS_PRODUCT_KEY``: five groups of five characters from the product-key alphabet.

Labels are read in the forms they take in prose, JSON (``"password": "..."``, escaped
``\\"password\\": \\"...\\"``), query strings, ``key:value`` and environment variables
(``DB_PASSWORD=...``, ``APP_AUTHORIZATION=Basic ...``). Values are found in the surroundings
that ``pii_patterns`` lists (``surroundings``: escapes decoded, CJK text touching them).

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

from ragtrace._redaction.findings import REGEX, Finding, resolve_overlaps
from ragtrace._redaction.surroundings import scan

_PEM_SCAN = 20_000
# Between a label and its value: a closing quote (JSON, escaped JSON), a colon or an equals
# sign, an opening quote, backtick, parenthesis or Markdown bold.
_LABEL_END = r"(?:\\*[\"'])?\s*"
_VALUE_START = r"\s*(?:\\*[\"'`(]|\*\*)?"
# A password's characters: printable ASCII and Latin letters, less quotes, backticks, commas
# and semicolons; it stops before a JSON escape (``\\"``, ``\\n``, ...), a next query
# parameter (``&key=``) and a Markdown link's target (``](``). Trailing punctuation and
# unopened closing brackets are trimmed after (``_trim``).
_PASSWORD_CHAR = r"(?:(?!\\[\"'\\/nrtu]|&\w+=|\]\()[!#-&(-+\--:<-_a-~\u00c0-\u024f])"

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
        re.compile(
            r"https://hooks\.slack\.com/(?:services/[A-Za-z0-9_]+/[A-Za-z0-9_]+|"
            r"workflows/[A-Za-z0-9_]+/[A-Za-z0-9_]+/\d+)/[A-Za-z0-9_]{8,}(?![A-Za-z0-9_])"
        ),
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
            r"\.[A-Za-z0-9_-]*(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])"
        ),
        0,
    ),
    "URL_PASSWORD": (
        re.compile(
            r"(?=[A-Za-z])(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://"
            r"[^\s:/?#@\"'<>]{1,256}:"
            r"([^\s/?#@\"'<>]{1,256})@[A-Za-z0-9\[]"
        ),
        1,
    ),
    "BASIC_AUTH": (
        re.compile(
            rf"(?i)authorization(?<![a-z0-9]authorization){_LABEL_END}[:=]?{_VALUE_START}"
            r"\s*basic\s+"
            r"(?-i:([A-Za-z0-9+/]{8,}={0,2}))"
        ),
        1,
    ),
    "BEARER_TOKEN": (
        # A dot inside a token, not after it (a sentence's full stop).
        re.compile(
            r"(?i)bearer(?<![a-z0-9]bearer)\s+"
            r"(?-i:((?:[A-Za-z0-9\-_~+/]|\.(?=[A-Za-z0-9\-_~+/])){20,}=*))"
            r"(?![A-Za-z0-9\-_~+/=]|\.[A-Za-z0-9\-_~+/])"
        ),
        1,
    ),
    "PASSWORD": (
        re.compile(
            r"(?i)(?=p)(?<![a-z0-9])(?:password|passwd|passphrase|pwd)\b"
            rf"{_LABEL_END}(?:[:=]|is){_VALUE_START}({_PASSWORD_CHAR}{{8,128}})"
        ),
        1,
    ),
    "GENERIC_SECRET": (
        re.compile(
            r"(?i)(?=[asc])(?<![a-z0-9])(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?key|"
            rf"auth[_-]?token|access[_-]?token|client[_-]?secret)\b{_LABEL_END}[:=]{_VALUE_START}"
            r"([A-Za-z0-9_\-+/=.]{19,255}[A-Za-z0-9_\-+/=])"
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

    def find(text: str) -> list[Finding]:
        found: list[Finding] = []
        if wanted & {"PRIVATE_KEY", "PEM_CERTIFICATE"}:
            found.extend(f for f in _pem_blocks(text) if f.entity_type in wanted)
        for name, (pattern, group) in _PATTERNS.items():
            if name not in wanted:
                continue
            check = _VALIDATORS.get(name, _not_placeholder)
            for m in pattern.finditer(text):
                start, end = m.span(group)
                if name == "PASSWORD":
                    end = start + _trim(m.group(group))
                if check(text[start:end]):
                    found.append(Finding(name, start, end, REGEX))
        return resolve_overlaps(found, _rank)

    return scan(text, find, _rank)


def _rank(finding: Finding) -> int:
    return PRIORITY[finding.entity_type]


_TRAILING = frozenset(".,:;?*|\\")
_CLOSING = {")": "(", "]": "[", "}": "{", ">": "<"}


def _trim(value: str) -> int:
    """How much of a matched password is the password: trailing punctuation and closing
    brackets that the password did not open are the surroundings' (``"pw: Abc12345!)."``)."""
    end = len(value)
    while end > 1:
        last = value[end - 1]
        opener = _CLOSING.get(last)
        if last in _TRAILING or (
            opener is not None and value.count(opener, 0, end) < value.count(last, 0, end)
        ):
            end -= 1
        else:
            break
    return end


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
