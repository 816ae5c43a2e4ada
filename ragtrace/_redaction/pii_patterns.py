"""The regex suite of the PII evaluator: formatted PII, found by pattern and checked by rule.

``find_pii(text, entities=STRUCTURED_ENTITIES)`` returns ``Finding`` values (type, offsets,
detector ``regex``), overlaps resolved (the more specific, validated type wins: an SSN is not
also a phone number; ``rank`` orders findings on overlap, NER's after every regex type). Each
pattern finds candidates; a validator then rejects what only looks like PII:

- ``EMAIL_ADDRESS``: local part, ``@``, dotted domain with an alphabetic top-level label;
  not the ``password@host`` of a URL's ``user:password@host`` (``secret_patterns`` finds the
  password, and the host is no address).
- ``CREDIT_CARD``: 13-19 digits (optionally in groups of 3-6 split by one kind of space or
  dash) passing the Luhn check and matching a card network's prefix and length (Visa,
  Mastercard incl. 2221-2720, Amex, Discover, Diners, JCB (any ``35`` prefix, and the 15-digit
  1800/2131 range), UnionPay, Maestro); 12-digit Maestro numbers only within 40 characters
  after the word "card". Runs of one repeated digit are not cards.
- ``US_SSN``: ``AAA-GG-SSSS`` or with spaces; a bare 9-digit number only after "SSN" or
  "social security". Invalid numbers are rejected as the SSA never issues them: area 000, 666
  or 900-999, group 00, serial 0000, and the two famous specimens 078-05-1120 and 219-09-9999.
- ``IBAN_CODE``: country code, check digits and BBAN (spaces allowed every 4 characters, any
  case), the length the country's IBAN has (``IBAN_LENGTHS``) and ISO 13616's mod-97 == 1.
- ``IP_ADDRESS``: dotted-quad IPv4 (each part <= 255, no leading zeros; not right after
  "version" or "v") and IPv6 that ``ipaddress`` accepts, with at least three groups.
- ``PHONE_NUMBER``: digit groups (split by a space, dot or dash, the area code possibly in
  parentheses, an optional ``x``/``ext`` extension), 7-15 digits in all (E.164's maximum).
  Accepted outright when the form is unmistakable: a ``+`` or ``00`` international prefix, an
  area code in parentheses, the North American ``NXX-NXX-XXXX`` shape (optionally after
  ``1``), an extension, or three or more groups after a trunk ``0``. Other digit groups count
  only next to a phone word: one of "phone", "call", "tel", "mobile", "fax", "number",
  "message", "answering", ... in the 40 characters before, or a label such as "office",
  "fax", "mobile" right after. Rejected: numbers right after an identifier's name ("license
  number is", "order no", "SSN", ...; not when another number stands between, as in "ticket
  #48213 | +44 ..."), dates (``2024-05-17``, ``17.05.2024``), anything shaped
  like an IPv4 address or a four-part version, numbers after a currency sign or before ``%``
  or ``:digit``, runs of years, and single-digit groups other than a country code, ``(0)``, a
  one-digit area code after a country code (``+33 1 ...``) or a leading trunk ``1``.

Surroundings (``surroundings``; tested in ``tests/evaluators/test_detector_surroundings.py``):
a value is found and its span is exactly the value wherever it is written: at a sentence's
end, in brackets or quotes of any kind, in Markdown (bold, code, links, tables, lists), in JSON
(escaped JSON too), in a URL (raw, percent- or form-encoded, in a path), after a label with no
space (``SSN:460-89-9847,``, ``tel:+44 ...``, ``ip:2001:db8::1``), on its own line or between
tabs, beside numbers, dates and other identifiers, and touching Chinese, Japanese, Korean or
Thai text.

Unicode digits other than ASCII are not matched. Patterns run in linear time on any input.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator

from ragtrace._redaction.findings import REGEX, Finding, resolve_overlaps
from ragtrace._redaction.surroundings import ALNUM, LETTER, WORD, scan

STRUCTURED_ENTITIES = (
    "EMAIL_ADDRESS",
    "CREDIT_CARD",
    "US_SSN",
    "IBAN_CODE",
    "IP_ADDRESS",
    "PHONE_NUMBER",
)
# Specific, validated types first: they win an overlap.
PRIORITY = {t: i for i, t in enumerate(STRUCTURED_ENTITIES)}
_UNRANKED = len(PRIORITY)  # NER findings, after every regex type

IBAN_LENGTHS = {
    **dict.fromkeys(["NO"], 15),
    **dict.fromkeys(["BE"], 16),
    **dict.fromkeys(["DK", "FI", "FO", "GL", "NL"], 18),
    **dict.fromkeys(["MK", "SI"], 19),
    **dict.fromkeys(["AT", "BA", "EE", "KZ", "LT", "LU", "XK"], 20),
    **dict.fromkeys(["CH", "CR", "HR", "LI", "LV"], 21),
    **dict.fromkeys(["BG", "BH", "DE", "GB", "GE", "IE", "ME", "RS", "VA"], 22),
    **dict.fromkeys(["AE", "GI", "IL", "TL"], 23),
    **dict.fromkeys(["AD", "CZ", "ES", "MD", "PK", "RO", "SA", "SE", "SK", "TN", "VG"], 24),
    **dict.fromkeys(["PT", "ST"], 25),
    **dict.fromkeys(["IS", "TR"], 26),
    **dict.fromkeys(["FR", "GR", "IT", "MC", "MR", "SM"], 27),
    **dict.fromkeys(["AL", "AZ", "BY", "CY", "DO", "GT", "HU", "LB", "PL", "SV"], 28),
    **dict.fromkeys(["BR", "EG", "PS", "QA", "UA"], 29),
    **dict.fromkeys(["IQ", "JO", "KW", "MU"], 30),
    **dict.fromkeys(["MT", "SC"], 31),
    **dict.fromkeys(["LC"], 32),
}

# Boundaries use WORD, ALNUM, LETTER (``surroundings``): a letter of Chinese, Japanese, ...
# may touch a value. Each pattern looks ahead at its first characters before it looks behind:
# a cheap test that spares the lookbehind at most offsets.
_EMAIL = re.compile(
    rf"(?=[\w%+\-])(?<!{WORD}|[.%+\-])(?:{WORD}|[%+\-])"
    rf"(?:(?:{WORD}|[.%+\-]){{0,62}}(?:{WORD}|[%+\-]))?"
    rf"@(?:{ALNUM}(?:(?:{WORD}|-){{0,61}}{ALNUM})?\.)+{LETTER}{{2,24}}(?!{WORD}|-|\.{ALNUM})"
)
# ``scheme://user:`` before an "e-mail address": a URL's password and host (``secret_patterns``),
# percent-encoded or not.
_URL_USERINFO = re.compile(r"(?i)(?::|%3a)(?://|%2f%2f)[^\s/?#@\"'<>]*(?::|%3a)[^\s/?#@\"'<>]*\Z")
_CARD = re.compile(rf"(?=\d)(?<!{WORD}|[\-.])\d(?:[ \-]?\d){{11,18}}(?!{WORD}|-|[.,]\d)")
_SSN = re.compile(
    rf"(?=\d)(?<!{WORD}|[\-.])(\d{{3}})([\- ])(\d{{2}})\2(\d{{4}})(?!{WORD}|-|[.,]\d)"
)
_SSN_BARE = re.compile(
    r"(?i)(?=s)(?<![a-z0-9])(?:ssn|ss#|social\s+security(?:\s+(?:number|no\.?|#))?)\W{0,20}"
    rf"(\d{{9}})(?!{WORD})"
)
_IBAN = re.compile(
    rf"(?=[A-Za-z]{{2}}\d)(?<!{ALNUM})[A-Za-z]{{2}}\d{{2}}(?: ?[A-Za-z0-9]){{11,30}}(?!{ALNUM})"
)
_IPV4 = re.compile(
    rf"(?=\d)(?<!{WORD}|\.)(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){{3}}"
    rf"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!{WORD}|\.\d)"
)
# Not inside a longer run of colons, but after a label: "ip:2001:db8::1", "IPv6:...".
_IPV6 = re.compile(
    rf"(?=[0-9A-Fa-f]{{0,4}}:)(?:(?<!{WORD}|[:.])|(?<=[G-Zg-z_]:)|(?<=[G-Zg-z_]\d:))"
    rf"(?:[0-9A-Fa-f]{{0,4}}:){{2,7}}(?:[0-9A-Fa-f]{{1,4}}|:)(?!{WORD}|:)"
)
_VERSION_BEFORE = re.compile(r"(?i)\b(?:version|ver\.?|release|v)\s*$")
_SEP = r"(?:[ \u00a0]?[.\-][ \u00a0]?|[ \u00a0])"
# Possessive digit runs and required separators: one way to split a number, linear time.
# A "+" may follow a label, a path or a scheme ("tel:+44", "/calls/+44"); a digit or "("
# only a label ("phone:(415) ...", "users/415-..."), never a number, date or time.
_PHONE = re.compile(
    rf"(?=[+\d(])(?:(?<!{WORD}|[+$€£¥\-])\+"
    rf"|(?:(?<!{WORD}|[+/.:$€£¥\-])|(?<=[A-Za-z][:/]))(?=[\d(]))"
    rf"(?:\(\d{{1,5}}\)[ \u00a0]?|\d++{_SEP}){{0,6}}"
    r"(?:\(\d{1,5}\)|\d++)(?:[ \u00a0]?(?:x|ext\.?|extension)[ \u00a0]?\d{1,6})?"
    rf"(?!{WORD}|/\d|[.,:\-]\d|\s?%)"
)
_PHONE_GROUPS = re.compile(r"\(?\d+\)?")
_NANP = re.compile(r"(?:\+?1[ .\-]?)?(?:\(\d{3}\) ?|\d{3}[ .\-])\d{3}[ .\-]\d{4}")
_EXTENSION = re.compile(r"(?i)[ \u00a0]?(?:x|ext\.?|extension)[ \u00a0]?\d{1,6}$")
_DATE = re.compile(
    r"(?:(?:19|20)\d\d[.\-/ ](?:0?[1-9]|1[0-2])[.\-/ ](?:0?[1-9]|[12]\d|3[01])"
    r"|(?:0?[1-9]|[12]\d|3[01])[.\-/ ](?:0?[1-9]|[12]\d|3[01])[.\-/ ](?:19|20)?\d\d)"
)
_YEAR = re.compile(r"(?:19|20)\d\d")
_PHONE_WORDS = re.compile(
    r"(?i)\b(?:phone|telephone|tel|ph|mobile|cell|cellphone|fax|call|calling|text|texts|sms|"
    r"message|messages|voicemail|answer|answering|whatsapp|contact|number|dial|ring|reach|"
    r"hotline|landline|helpline)\b\W{0,20}(?:\w+\W+){0,4}$"
)
_PHONE_LABEL_AFTER = re.compile(
    r"(?i)[ \u00a0]?[\-(:,]?[ \u00a0]?(?:office|fax|mobile|cell|home|work|tel|phone)\b"
)
# "<id> number 123 456" names an identifier, not a phone: the name right before the number,
# at most a few words between ("license number is ..."), none of them a number of its own
# ("ticket #48213 | +44 ..." names the ticket, not the phone).
_ID_NUMBER = re.compile(
    r"(?i)(?:\b(?:licen[cs]e|account|order|card|passport|policy|tracking|reference|invoice|"
    r"serial|id|identification|customer|member|membership|case|ticket|confirmation|booking|"
    r"tax|routing|model|part|security|insurance|patient|employee|student)\W+(?:number|no|#)|"
    r"\b(?:ssn|ss#|sin|nin|ein|itin)\b)\W*(?:[^\W\d]+\W+){0,3}$"
)
_CARD_WORDS = re.compile(r"(?i)\bcard\b")


def find_pii(text: str, entities: Iterable[str] = STRUCTURED_ENTITIES) -> list[Finding]:
    """The structured PII in ``text`` of the given types, sorted by offset, overlaps resolved."""
    wanted = set(entities)

    def find(text: str) -> list[Finding]:
        found: list[Finding] = []
        for entity_type, finder in _FINDERS.items():
            if entity_type in wanted:
                found.extend(Finding(entity_type, s, e, REGEX) for s, e in finder(text))
        return resolve_overlaps(found, rank)

    return scan(text, find, rank)


def rank(finding: Finding) -> int:
    """Where ``finding`` stands on overlap: validated regex types by ``PRIORITY``, then NER."""
    if finding.detector == REGEX:
        return PRIORITY.get(finding.entity_type, _UNRANKED)
    return _UNRANKED


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn (mod 10) check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_network(digits: str) -> str | None:
    """The card network whose prefix and length ``digits`` has, if any."""
    n = len(digits)
    p2, p3, p4 = int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4" and n in (13, 16, 19):
        return "visa"
    if (51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16:
        return "mastercard"
    if p2 in (34, 37) and n == 15:
        return "amex"
    if (p4 == 6011 or 644 <= p3 <= 649 or p2 == 65) and 16 <= n <= 19:
        return "discover"
    if p2 == 35 and 16 <= n <= 19:
        return "jcb"
    if p4 in (1800, 2131) and n == 15:
        return "jcb"
    if (300 <= p3 <= 305 or p4 == 3095 or p2 in (36, 38, 39)) and 14 <= n <= 19:
        return "diners"
    if p2 == 62 and 16 <= n <= 19:
        return "unionpay"
    if (p2 == 50 or 56 <= p2 <= 69) and 12 <= n <= 19:
        return "maestro"
    return None


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """Whether an SSN could have been issued (see the module doc for the rules)."""
    if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
        return False
    return area + group + serial not in ("078051120", "219099999")


def iban_ok(compact: str) -> bool:
    """Whether an IBAN (no spaces, upper case) has its country's length and mod-97 == 1."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _emails(text: str) -> Iterator[tuple[int, int]]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        if not _URL_USERINFO.search(text, max(0, m.start() - 300), m.start()):
            yield m.span()


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for m in _CARD.finditer(text):
        raw = m.group()
        digits = re.sub(r"\D", "", raw)
        separators = set(re.sub(r"\d", "", raw))
        if len(separators) > 1:
            continue
        if separators and not all(3 <= len(g) <= 6 for g in re.split(r"[ \-]", raw)):
            continue
        if len(set(digits)) == 1 or not luhn_ok(digits):
            continue
        network = card_network(digits)
        if network is None:
            continue
        if len(digits) == 12 and not _CARD_WORDS.search(text, max(0, m.start() - 40), m.start()):
            continue  # 12-digit Maestro numbers only where a card is being talked about
        yield m.span()


def _ssns(text: str) -> Iterator[tuple[int, int]]:
    for m in _SSN.finditer(text):
        if ssn_ok(m.group(1), m.group(3), m.group(4)):
            yield m.span()
    for m in _SSN_BARE.finditer(text):
        d = m.group(1)
        if ssn_ok(d[:3], d[3:5], d[5:]):
            yield m.span(1)


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN.finditer(text):
        raw = m.group()
        length = IBAN_LENGTHS.get(raw[:2].upper())
        if length is None:
            continue
        # Keep the country's number of characters; the match may have run into a next word.
        positions = [i for i, ch in enumerate(raw) if ch != " "]
        if len(positions) < length:
            continue
        end = positions[length - 1] + 1
        if end < len(raw) and raw[end] != " ":
            continue
        compact = raw[:end].replace(" ", "").upper()
        if iban_ok(compact):
            yield m.start(), m.start() + end


def _ips(text: str) -> Iterator[tuple[int, int]]:
    for m in _IPV4.finditer(text):
        if not _VERSION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
            yield m.span()
    for m in _IPV6.finditer(text):
        candidate = m.group()
        if sum(1 for g in candidate.split(":") if g) < 3:
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        yield m.span()


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for m in _PHONE.finditer(text):
        if _phone_ok(text, m.start(), m.group()):
            yield m.span()


def _phone_ok(text: str, start: int, raw: str) -> bool:
    extension = _EXTENSION.search(raw)
    main = raw[: extension.start()] if extension else raw
    groups = _PHONE_GROUPS.findall(main)
    digits = sum(ch.isdigit() for ch in main)
    if not 7 <= digits <= 15 or len(groups) < 1:
        return False
    if _DATE.fullmatch(main) or re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", main):
        return False
    if len(groups) > 1 and all(_YEAR.fullmatch(g) for g in groups):
        return False
    window = max(0, start - 40)
    if _ID_NUMBER.search(text, window, start):
        return False
    international = main.startswith(("+", "00"))
    for i, group in enumerate(groups):
        # Country code, "(0)" and one-digit area codes (+33 1 ..., +46 8 ...) are fine.
        leading = i <= 2 if international else (i == 0 and group == "1")
        if len(group) == 1 and not leading:
            return False
    if international and digits >= 8:
        return True
    if "(" in main or extension or _NANP.fullmatch(main):
        return True
    if main.startswith("0") and len(groups) >= 3 and digits >= 9:
        return True
    if _PHONE_LABEL_AFTER.match(text, start + len(raw)):
        return True
    return _PHONE_WORDS.search(text, window, start) is not None


_FINDERS: dict[str, Callable[[str], Iterator[tuple[int, int]]]] = {
    "EMAIL_ADDRESS": _emails,
    "CREDIT_CARD": _cards,
    "US_SSN": _ssns,
    "IBAN_CODE": _ibans,
    "IP_ADDRESS": _ips,
    "PHONE_NUMBER": _phones,
}
