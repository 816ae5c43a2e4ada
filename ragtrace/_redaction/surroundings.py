"""How the regex suites read what surrounds a value: word boundaries, and escaped text.

Two things let ``pii_patterns`` and ``secret_patterns`` find a value wherever it is written:

- ``WORD``, ``ALNUM``, ``LETTER``: the characters that continue a word, for the patterns'
  boundaries. They are ``\\w`` (and its letters and digits) less the scripts written without
  spaces between words (Chinese, Japanese, Korean, Thai, ...): "请联系jane@example.com谢谢"
  holds an e-mail address although no space sets it apart.
- ``scan(text, find, rank)``: the findings of ``find`` in ``text`` and in its decoded reading,
  where percent-escapes (``jane%40example.com``), spaces written ``+`` inside a query value
  (``card=4111+1111+...``) and JSON or backslash escapes (``\\n``, ``\\"``, ``\\/``,
  ``\\u0040``) stand for their characters; escapes are read twice, for a JSON document logged
  inside a JSON string. In a URL that percent-encodes, the ``/ ? # &`` written as such
  separate values and are read as spaces (``/users/Bearer%20abc.../edit`` ends at ``/edit``).
  Findings of the reading are moved back onto the text they came from. A finding of the raw
  text that starts or ends inside an escape (``njane@...`` in ``\\njane@...``) is a
  misreading and is dropped; where a raw finding and one of the reading overlap, ``rank``
  decides and, at equal rank, the reading's wins (``password:%20Summer2024!/edit`` is the
  password ``Summer2024!``); a raw finding the reading lacks is kept (``p%40ss`` in
  ``postgres://u:p%40ss@host``, a password percent-encoded as URLs write it).

Texts without ``%``, ``\\`` or ``+`` are scanned once, as they are.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace

from ragtrace._redaction.findings import Finding, resolve_overlaps

# Scripts written without spaces between words (their letters may touch a value).
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u1100-\u11ff"  # Hangul jamo
    "\u3040-\u31ff"  # kana, Bopomofo, Hangul compatibility jamo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff00-\uffef"  # full-width and half-width forms
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
WORD = f"[^\\W{NO_SPACE_SCRIPTS}]"
ALNUM = f"[^\\W_{NO_SPACE_SCRIPTS}]"
LETTER = f"[^\\W\\d_{NO_SPACE_SCRIPTS}]"

_ESCAPE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"
    r"|\\u[dD][89abAB][0-9A-Fa-f]{2}\\u[dD][c-fC-F][0-9A-Fa-f]{2}"
    r"|\\u[0-9A-Fa-f]{4}"
    r"|\\[\"'\\/nrt]"
)
_SIMPLE = {'"': '"', "'": "'", "\\": "\\", "/": "/", "n": "\n", "r": "\r", "t": "\t"}
# A form-encoded query value (``?key=value&``, only characters a form encoder leaves as they
# are): a ``+`` inside one, not leading it, is a space. "?email=j.smith+tag@example.com" is
# written by hand (a form encoder writes "@" as "%40"): its "+" stays.
_QUERY_VALUE = re.compile(r"[?&][^\s=&#?]{1,64}=([A-Za-z0-9_.\-~*%+]+)(?![^\s&#])")
# In a URL that percent-encodes, a "/", "?", "#" or "&" written as such separates values: it
# is read as a space, so that a decoded value does not run into the next path segment.
_ENCODING_URL = re.compile(r"(?<!\S)\S*?%[0-9A-Fa-f]{2}\S*+")  # linear: from token starts only
_DELIMITER = re.compile(r"[/?#&]")
_PASSES = 2
# Whether a text holds anything ``_decode`` reads (a quick test before it builds a reading).
_ANY = re.compile(r"%[0-9A-Fa-f]{2}|\\[\"'\\/nrtu]|[?&][^\s=&#?]{1,64}=[A-Za-z0-9_.\-~*%]*\+")

Span = tuple[int, int]


class _Pass:
    """One decoding pass: the decoded text and where each decoded escape came from."""

    __slots__ = ("_at", "_source", "text")

    def __init__(self, text: str, escapes: list[tuple[int, int, int]]) -> None:
        self.text = text
        self._at = [d for d, _, _ in escapes]  # decoded offset of each escape's character
        self._source = [(a, b) for _, a, b in escapes]  # its span in the pass's input

    def char(self, i: int) -> Span:
        """The span in this pass's input of decoded character ``i``."""
        k = bisect_right(self._at, i) - 1
        if k < 0:
            return i, i + 1
        if self._at[k] == i:
            return self._source[k]
        at = self._source[k][1] + (i - self._at[k] - 1)
        return at, at + 1

    def span(self, start: int, end: int) -> Span:
        return self.char(start)[0], self.char(end - 1)[1]

    def escapes(self) -> list[Span]:
        return list(self._source)


def _decode(text: str, plus: bool) -> _Pass | None:
    """``text`` with its escapes decoded (``+`` in query values too when ``plus``)."""
    spaces: set[int] = set()  # offsets of "+" and delimiters read as spaces
    if plus and "+" in text:
        for m in _QUERY_VALUE.finditer(text):
            spaces.update(i for i in range(m.start(1) + 1, m.end(1)) if text[i] == "+")
    if plus and "%" in text:
        for url in _ENCODING_URL.finditer(text):
            spaces.update(m.start() for m in _DELIMITER.finditer(text, url.start(), url.end()))
    events = [(m.start(), m.group()) for m in _ESCAPE.finditer(text)]
    events.extend((i, text[i]) for i in spaces)
    events.sort()
    parts: list[str] = []
    escapes: list[tuple[int, int, int]] = []  # (decoded offset, start, end)
    size = 0  # characters decoded so far
    at = 0
    for offset, raw in events:
        if offset < at:
            continue  # the "/" of an escaped "\\/", already read
        decoded = _read(raw, offset)
        if not decoded:
            continue
        parts.append(text[at:offset])
        size += offset - at
        at = offset
        for ch, start, end in decoded:
            if start > at:  # an undecodable part of a percent run stays as it is
                parts.append(text[at:start])
                size += start - at
            parts.append(ch)
            escapes.append((size, start, end))
            size += 1
            at = end
        if offset + len(raw) > at:
            parts.append(text[at : offset + len(raw)])
            size += offset + len(raw) - at
            at = offset + len(raw)
    if not escapes:
        return None
    parts.append(text[at:])
    return _Pass("".join(parts), escapes)


def _read(raw: str, offset: int) -> list[tuple[str, int, int]]:
    """The characters an escape stands for, each with its span in the text."""
    if len(raw) == 1:  # "+" or a URL delimiter, read as a space
        return [(" ", offset, offset + 1)]
    if raw[0] == "%":
        return _percent(raw, offset)
    if raw[1] == "u":
        first = int(raw[2:6], 16)
        if len(raw) == 12:
            second = int(raw[8:12], 16)
            code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return [(chr(code), offset, offset + 12)]
        if 0xD800 <= first <= 0xDFFF:
            return []  # a lone surrogate stands for no character
        return [(chr(first), offset, offset + 6)]
    return [(_SIMPLE[raw[1]], offset, offset + 2)]


def _percent(raw: str, offset: int) -> list[tuple[str, int, int]]:
    """A run of ``%XX`` read as UTF-8; bytes that are no printable character stay."""
    data = bytes(int(raw[i + 1 : i + 3], 16) for i in range(0, len(raw), 3))
    out = []
    i = 0
    while i < len(data):
        byte = data[i]
        size = 1 if byte < 0x80 else 2 if byte >> 5 == 6 else 3 if byte >> 4 == 14 else 4
        try:
            ch = data[i : i + size].decode("utf-8")
        except UnicodeDecodeError:
            ch = ""
        if len(ch) == 1 and (ch.isprintable() or ch in "\t\n\r"):
            out.append((ch, offset + 3 * i, offset + 3 * (i + size)))
            i += size
        else:
            i += 1
    return out


class Reading:
    """The decoded reading of a text, and the way back to the text's offsets."""

    __slots__ = ("_passes", "inside", "text")

    def __init__(self, passes: list[_Pass]) -> None:
        self._passes = passes
        self.text = passes[-1].text
        # Offsets that fall strictly inside an escape of the original text.
        self.inside: set[int] = set()
        for depth, p in enumerate(passes):
            for start, end in p.escapes():
                a, b = self._back(start, end, depth)
                self.inside.update(range(a + 1, b))

    def _back(self, start: int, end: int, depth: int) -> Span:
        for p in reversed(self._passes[:depth]):
            start, end = p.span(start, end)
        return start, end

    def span(self, start: int, end: int) -> Span:
        """The span of the text that ``text[start:end]`` of the reading was read from."""
        return self._back(start, end, len(self._passes))


def reading(text: str) -> Reading | None:
    """``text``'s decoded reading, or None when it holds no escape."""
    if "%" not in text and "\\" not in text and "+" not in text:
        return None
    if not _ANY.search(text):
        return None
    passes: list[_Pass] = []
    current = text
    for depth in range(_PASSES):
        decoded = _decode(current, plus=depth == 0)
        if decoded is None:
            break
        passes.append(decoded)
        current = decoded.text
    return Reading(passes) if passes else None


def scan(
    text: str, find: Callable[[str], list[Finding]], rank: Callable[[Finding], int]
) -> list[Finding]:
    """``find``'s findings in ``text`` and in its decoded reading, on ``text``'s offsets."""
    found = find(text)
    read = reading(text)
    if read is None:
        return found
    decoded = [
        replace(f, start=a, end=b) for f in find(read.text) for a, b in [read.span(f.start, f.end)]
    ]
    kept = [f for f in found if f.start not in read.inside and f.end not in read.inside]
    first = {id(f) for f in decoded}
    return resolve_overlaps(decoded + kept, lambda f: 2 * rank(f) + (id(f) not in first))
