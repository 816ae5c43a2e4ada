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
  after the word "card". Runs of one repeated digit are not cards. Every span of a run of
  digit groups that starts at the run's start or after a space inside it, and ends at its end
  or before a space, is a candidate checked on its own; of those starting at one group the
  longest that passes is kept ("ref 20240517 4111 1111 1111 1111", "... 1111 12/27").
- ``US_SSN``: ``AAA-GG-SSSS`` or with spaces; a bare 9-digit number only after "SSN" or
  "social security". Invalid numbers are rejected as the SSA never issues them: area 000, 666
  or 900-999, group 00, serial 0000, and the two famous specimens 078-05-1120 and 219-09-9999.
- ``IBAN_CODE``: country code, check digits and BBAN (spaces allowed every 4 characters, any
  case), the length the country's IBAN has (``IBAN_LENGTHS``) and ISO 13616's mod-97 == 1;
  tried from every word start that could open one, so an identifier before it
  ("VAT DE123456789 DE89 ...") hides nothing.
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
  one-digit area code after a country code (``+33 1 ...``) or a leading trunk ``1``. A run
  of digit groups that is not a phone number as a whole is tried from each space inside it
  and up to each space inside it (``_phones_inside``): "ref 20240517 (415) 555-0132",
  "+44 20 7946 0958 2 items".

Surroundings (``surroundings``; tested in ``tests/evaluators/test_detector_surroundings.py``):
a value is found and its span is exactly the value wherever it is written: at a sentence's
end, in brackets or quotes of any kind, in Markdown (bold, code, links, tables, lists), in JSON
(escaped JSON too), in a URL (raw, percent- or form-encoded, in a path), after a label with no
space (``SSN:460-89-9847,``, ``tel:+44 ...``, ``ip:2001:db8::1``), on its own line or between
tabs, beside numbers, dates and other identifiers (a digit run, a date or a quantity right
before it, an expiry, a card code or an order number right after it), and touching Chinese,
Japanese, Korean or Thai text.

Unicode digits other than ASCII are not matched. Patterns run in linear time on any input, and
the candidates tried inside a run are a few per digit group.
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
# Cards: every span of a run of digit groups (each split from the next by one space or dash)
# that starts at the run's start or after a space inside it, and ends at the run's end or
# before a space: a card right after a date, a reference or a quantity, or before an expiry.
_DIGIT_RUN = re.compile(r"(?=\d)\d++(?:[ \-]\d++)*+")
_DIGIT_GROUP = re.compile(r"\d+")
_CARD_START = re.compile(rf"(?<!{WORD}|[\-.])")
_CARD_END = re.compile(rf"(?!{WORD}|-|[.,]\d)")
_SSN = re.compile(
    rf"(?=\d)(?<!{WORD}|[\-.])(\d{{3}})([\- ])(\d{{2}})\2(\d{{4}})(?!{WORD}|-|[.,]\d)"
)
_SSN_BARE = re.compile(
    r"(?i)(?=s)(?<![a-z0-9])(?:ssn|ss#|social\s+security(?:\s+(?:number|no\.?|#))?)\W{0,20}"
    rf"(\d{{9}})(?!{WORD})"
)
# IBANs: from every word start that could open one, exactly its country's length (a space
# allowed between any two characters), whatever precedes or follows it.
_IBAN_START = re.compile(rf"(?=[A-Za-z]{{2}}\d\d)(?<!{ALNUM})")
_IBAN_BODY = {
    n: re.compile(rf"[A-Za-z]{{2}}\d\d(?: ?[A-Za-z0-9]){{{n - 4}}}(?!{ALNUM})")
    for n in sorted(set(IBAN_LENGTHS.values()))
}
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
_PHONE_END = re.compile(rf"(?!{WORD}|/\d|[.,:\-]\d|\s?%)")
_SPACES = " \u00a0"
_PHONE_OPENERS = frozenset("+(0123456789")
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
    for run in _DIGIT_RUN.finditer(text):
        if run.end() - run.start() >= 12:
            groups = [g.span() for g in _DIGIT_GROUP.finditer(text, run.start(), run.end())]
            yield from _run_cards(text, groups)


def _run_cards(text: str, groups: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The cards in one run of digit groups: from each group that may open one, the longest
    span that passes ``_card_ok`` (at most 19 digits: a few spans a group)."""
    last = len(groups) - 1
    for i, (start, first_end) in enumerate(groups):
        opens = _CARD_START.match(text, start) if i == 0 else text[start - 1] == " "
        first = first_end - start
        if not opens or not (3 <= first <= 6 or 12 <= first <= 19):
            continue
        sep = text[first_end] if i < last else ""
        digits = 0
        best: tuple[int, int] | None = None
        for j in range(i, last + 1):
            g_start, g_end = groups[j]
            digits += g_end - g_start
            if digits > 19:
                break
            if j > i and (first > 6 or not 3 <= g_end - g_start <= 6 or text[g_start - 1] != sep):
                break
            if digits < 12:
                continue
            closes = _CARD_END.match(text, g_end) if j == last else text[g_end] == " "
            if closes and _card_ok(text, start, text[start:g_end]):
                best = (start, g_end)
        if best is not None:
            yield best


def _card_ok(text: str, start: int, raw: str) -> bool:
    digits = raw.replace(" ", "").replace("-", "")
    if card_network(digits) is None or len(set(digits)) == 1 or not luhn_ok(digits):
        return False
    # 12-digit Maestro numbers only where a card is being talked about.
    return len(digits) != 12 or _CARD_WORDS.search(text, max(0, start - 40), start) is not None


def _ssns(text: str) -> Iterator[tuple[int, int]]:
    for m in _SSN.finditer(text):
        if ssn_ok(m.group(1), m.group(3), m.group(4)):
            yield m.span()
    for m in _SSN_BARE.finditer(text):
        d = m.group(1)
        if ssn_ok(d[:3], d[3:5], d[5:]):
            yield m.span(1)


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN_START.finditer(text):
        start = m.start()
        length = IBAN_LENGTHS.get(text[start : start + 2].upper())
        if length is None:
            continue
        body = _IBAN_BODY[length].match(text, start)
        if body is not None and iban_ok(body.group().replace(" ", "").upper()):
            yield body.span()


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
        else:
            yield from _phones_inside(text, m.start(), m.end())


def _phones_inside(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Phone numbers in a run of digit groups that is not one as a whole: one after a date, a
    reference or a quantity, or before other numbers ("... 0958 2 items"). Each start is the
    run's or one after a space inside it; each end the longest match's or one before a space
    inside it, the longest that ``_phone_ok`` accepts (at most 7 groups: a few spans a start).
    A space cuts a number out of the run only where the number's own form sets it apart: it
    opens with ``+`` or ``(``, or its groups are joined by dots or dashes, not spaces (so
    "0000 0000 0000 0000" holds no "0000 0000 0000")."""
    starts = [start]
    starts.extend(
        i for i in range(start + 1, end) if text[i - 1] in _SPACES and text[i] in _PHONE_OPENERS
    )
    done = start
    for p in starts:
        if p < done:
            continue
        longest = _PHONE.match(text, p)
        if longest is None:
            continue
        for q in _phone_ends(text, p, longest.end()):
            fits = q == longest.end() or (
                _PHONE_END.match(text, q) is not None and _PHONE.fullmatch(text, p, q) is not None
            )
            raw = text[p:q]
            apart = raw[0] in "+(" or not any(ch in _SPACES for ch in raw)
            if fits and apart and _phone_ok(text, p, raw):
                yield p, q
                done = q
                break


def _phone_ends(text: str, start: int, end: int) -> list[int]:
    """Where a phone number starting at ``start`` may end, longest first: ``end``, and before
    each space inside that leaves 7 to 15 digits (E.164's range) before it."""
    ends = [end]
    digits = 0
    for i in range(start, end):
        ch = text[i]
        if ch in _SPACES and 7 <= digits <= 15 and text[i - 1] in "0123456789)":
            ends.append(i)
        elif "0" <= ch <= "9":
            digits += 1
    ends[1:] = ends[:0:-1]
    return ends


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
    international = main.startswith(("+", "00"))
    for i, group in enumerate(groups):
        # Country code, "(0)" and one-digit area codes (+33 1 ..., +46 8 ...) are fine.
        leading = i <= 2 if international else (i == 0 and group == "1")
        if len(group) == 1 and not leading:
            return False
    window = max(0, start - 40)
    if _ID_NUMBER.search(text, window, start):
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
