"""Every PII and secret pattern, found and redacted whatever surrounds it.

Each pattern the detectors declare (``pii_patterns.STRUCTURED_ENTITIES``,
``secret_patterns.SECRET_TYPES``; the redaction policies use the same detectors) has realistic
samples below, and each sample is embedded in every context of ``CONTEXTS``: sentence ends,
brackets and quotes, Markdown, JSON (escaped too), URLs (raw, percent- and form-encoded, paths),
line breaks and tabs, numbers and dates, other identifiers right beside it, non-ASCII text. For
each embedding:

- the evaluator that covers the pattern (``pii_leakage`` or ``sensitive_data``) fails the answer
  and lists a finding of the right type over exactly the value;
- ``redact: pii`` (and ``redact: secrets`` for a secret) replaces exactly the value by
  ``<TYPE>``: no digit run or part of it survives, every character around it (brackets,
  quotes, punctuation, labels, neighbouring identifiers that are not PII) stays as it was.

A pattern added to a detector without a sample here fails ``test_every_pattern_has_samples``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, quote_plus

import pytest

from ragtrace._model import RagRecord
from ragtrace._redaction import REDACTION_POLICIES, redaction
from ragtrace._redaction.pii_patterns import STRUCTURED_ENTITIES
from ragtrace._redaction.secret_patterns import SECRET_TYPES
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._leakage.pii import PiiLeakage
from ragtrace.evaluators._leakage.sensitive_data import SensitiveDataLeakage


@dataclass(frozen=True)
class Sample:
    """One value of a pattern, as it is written in prose and as a key-value pair.

    ``lead + secret + trail`` is how it reads in a sentence (a secret that is only one with
    its label keeps the label: ``password: ...``); ``key`` names it in a key-value form
    (JSON, query string, ``key:value``), whose value is ``value_lead + secret + value_trail``.
    Only ``secret`` must go; everything else stays.
    """

    secret: str
    key: str
    lead: str = ""
    trail: str = ""
    value_lead: str = ""
    value_trail: str = ""


# Secrets are split so that no scanner flags this file itself.
PEM_RSA = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA7VJTUt9Us8cKjMzEfYyjiWA4R4wR4iYLqZbPLmjE\n"
    "R4/Yn5a1vQ7kLqAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd==\n"
    "-----END RSA PRIVATE KEY-----"
)
PEM_EC = (
    "-----BEGIN EC PRIVATE KEY-----\n"
    "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oEd1NsVnMfXtoAoGCCqGSM49\n"
    "AwEHoUQDQgAEWdp8GPcGqLtv7HyZqnChvQPXmXhRvGdyXk3aC2uyTz5CGZ8Enp3m\n"
    "-----END EC PRIVATE KEY-----"
)
CERT_A = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUXqYp0tZ9x2kLmN8oPqRsTuVwXyZwCgYIKoZIzj0EAwIw\n"
    "EjEQMA4GA1UEAwwHZXhhbXBsZTAeFw0yNDA1MTcwOTMwMDBaFw0yNTA1MTcwOTMw\n"
    "-----END CERTIFICATE-----"
)
CERT_B = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    "RTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD\n"
    "-----END CERTIFICATE-----"
)
JWT_HS = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
JWT_RS = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6ImFiYzEyMyJ9"
    ".eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5vcmciLCJleHAiOjE3MzAwMDAwMDB9"
    ".dGhpcy1pcy1ub3QtYS1yZWFsLXNpZ25hdHVyZS0wMTIzNDU2Nzg5"
)
HOOK = "https://hooks.slack.com/services/"

SAMPLES: dict[str, tuple[Sample, ...]] = {
    "EMAIL_ADDRESS": (
        Sample("jane.doe@example.com", "email"),
        Sample("j.smith+billing@mail.example.co.uk", "email"),
    ),
    "CREDIT_CARD": (
        Sample("4111 1111 1111 1111", "card_number"),
        Sample("5555-5555-5555-4444", "card_number"),
        Sample("378282246310005", "card_number"),
    ),
    "US_SSN": (
        Sample("460-89-9847", "ssn"),
        Sample("371524610", "ssn", lead="SSN "),
    ),
    "IBAN_CODE": (
        Sample("GB82 WEST 1234 5698 7654 32", "iban"),
        Sample("DE89370400440532013000", "iban"),
    ),
    "IP_ADDRESS": (
        Sample("192.168.1.20", "ip"),
        Sample("203.0.113.45", "client_ip"),
        Sample("2001:db8:85a3::8a2e:370:7334", "ip"),
    ),
    "PHONE_NUMBER": (
        Sample("+44 20 7946 0958", "phone"),
        Sample("(415) 555-0132", "phone"),
        Sample("+1-202-555-0187", "mobile"),
    ),
    "PRIVATE_KEY": (
        Sample(PEM_RSA, "private_key"),
        Sample(PEM_EC, "tls_key"),
    ),
    "PEM_CERTIFICATE": (
        Sample(CERT_A, "certificate"),
        Sample(CERT_B, "ca_cert"),
    ),
    "AWS_ACCESS_KEY_ID": (
        Sample("AKIA" + "IOSFODNN7EXAMPLE", "aws_access_key_id"),
        Sample("ASIA" + "Y34FZKBOKMUTVV7A", "aws_access_key_id"),
    ),
    "AWS_SECRET_ACCESS_KEY": (
        Sample(
            "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key",
            lead="aws_secret_access_key = ",
        ),
        Sample(
            "9drTJvcXLB89EXAMPLE" + "LB8923FB892xEXAMPLE1+",
            "aws_secret_key",
            lead="AWS secret key: ",
        ),
    ),
    "GITHUB_TOKEN": (
        Sample("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "github_token"),
        Sample("github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", "gh"),
    ),
    "SLACK_WEBHOOK": (
        Sample(HOOK + "T024BE7LD/B01ABCD2EFG/" + "a1b2C3d4E5f6G7h8I9j0K1l2", "webhook"),
        Sample(HOOK + "T8S2Q6XYZ/B04PQR5STUV/" + "ZyXwVuTsRqPoNmLkJiHg9876", "slack_url"),
    ),
    "SLACK_TOKEN": (
        Sample("xoxb-" + "1234567890-abcdefghij", "slack_token"),
        Sample("xoxp-" + "2468013579-1357924680-AbCdEfGhIjKlMn", "slack_token"),
    ),
    "STRIPE_KEY": (
        Sample("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
        Sample("rk_test_" + "51Hx2KpLq9Zr8Tv7Wy6Ub5Nc", "stripe_key"),
    ),
    "GOOGLE_API_KEY": (
        Sample("AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "google_key"),
        Sample("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K_lMnOpQrStUv", "maps_key"),
    ),
    "ANTHROPIC_API_KEY": (
        Sample("sk-ant-api03-" + "abcDEF123456ghiJKL789012mnoPQR", "anthropic_key"),
        Sample("sk-ant-" + "admin01-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1", "claude_key"),
    ),
    "OPENAI_API_KEY": (
        Sample("sk-proj-" + "abc123DEF456ghi789JKL012mno345", "openai_key"),
        Sample("sk-" + "T3BlbkFJ4x9Q2mZr7Lp0Kd8Wv5Ny1Hs6Bc3", "llm_key"),
    ),
    "JWT": (
        Sample(JWT_HS, "id_token"),
        Sample(JWT_RS, "access_token", lead="Authorization: Bearer ", value_lead="Bearer "),
    ),
    "URL_PASSWORD": (
        Sample(
            "S3cr3tP4ss",
            "database_url",
            lead="postgres://admin:",
            trail="@db.internal:5432/app",
            value_lead="postgres://admin:",
            value_trail="@db.internal:5432/app",
        ),
        Sample(
            "gh0stRider!99",
            "remote",
            lead="https://deploy:",
            trail="@git.example.com/team/repo.git",
            value_lead="https://deploy:",
            value_trail="@git.example.com/team/repo.git",
        ),
    ),
    "BASIC_AUTH": (
        Sample(
            "dXNlcjpwYXNzd29yZA==",
            "Authorization",
            lead="Authorization: Basic ",
            value_lead="Basic ",
        ),
        Sample(
            "YWRtaW46czNjcjN0UEBzcw==",
            "authorization",
            lead="Authorization: Basic ",
            value_lead="Basic ",
        ),
    ),
    "BEARER_TOKEN": (
        Sample(
            "8f14e45fceea167a5a36dedd4bea2543",
            "Authorization",
            lead="Authorization: Bearer ",
            value_lead="Bearer ",
        ),
        Sample(
            "ya29.a0AfH6SMBx3kG7qLpZ0vN2rT8uW4yE",
            "authorization",
            lead="Bearer ",
            value_lead="Bearer ",
        ),
    ),
    "PASSWORD": (
        Sample("Summer2024!", "password", lead="password: "),
        Sample("Tr0ub4dor&3", "db_password", lead="the password is "),
    ),
    "GENERIC_SECRET": (
        Sample("a1b2c3d4e5f6g7h8i9j0k1l2", "api_key", lead="api_key = "),
        Sample("7f3kQ9xZ2mP8vL1nR4tY6wB0", "client_secret", lead="client_secret: "),
    ),
    "WINDOWS_PRODUCT_KEY": (
        Sample("VK7JG-NPHTM-C97JM-9MPGT-3V66T", "product_key"),
        Sample("W269N-WFGWX-YVC9B-4J6C9-T83GX", "windows_key"),
    ),
}

# Identifiers placed right beside the value: (text, its tag under "pii", a secret?).
NEIGHBOUR_EMAIL = ("ops@example.net", "<EMAIL_ADDRESS>", False)
NEIGHBOUR_PHONE = ("+1 415-555-0100", "<PHONE_NUMBER>", False)
NEIGHBOUR_AWS = ("AKIA" + "Z7Q3XK2M9P4L6N8R", "<AWS_ACCESS_KEY_ID>", True)
NEIGHBOUR_GITHUB = ("ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8", "<GITHUB_TOKEN>", True)
Neighbour = tuple[str, str, bool]


@dataclass(frozen=True)
class Embedded:
    """A sample in a context: ``before + lead + secret + trail + after`` is the text."""

    before: str
    lead: str
    secret: str
    trail: str
    after: str
    neighbours: tuple[Neighbour, ...] = ()

    @property
    def text(self) -> str:
        return self.before + self.lead + self.secret + self.trail + self.after

    @property
    def span(self) -> tuple[int, int]:
        start = len(self.before) + len(self.lead)
        return start, start + len(self.secret)

    def redacted(self, kind: str, policy: str) -> str:
        """The text as the policy should leave it."""
        out = self.before + self.lead + f"<{kind}>" + self.trail + self.after
        for value, tag, is_secret in self.neighbours:
            if is_secret or policy == "pii":
                out = out.replace(value, tag)
        return out


Transform = Callable[[str], str]


def same(text: str) -> str:
    return text


def json_chars(text: str) -> str:
    """``text`` as it reads inside a JSON string (escapes, no quotes)."""
    return json.dumps(text)[1:-1]


def json_twice(text: str) -> str:
    """``text`` inside a JSON string that is itself inside a JSON string."""
    return json_chars(json_chars(text))


def uri_component(text: str) -> str:
    """``text`` as JavaScript's ``encodeURIComponent`` writes it."""
    return quote(text, safe="-_.!~*'()")


def form_value(text: str) -> str:
    """``text`` as an HTML form (``urlencode``) writes it: spaces become ``+``."""
    return quote_plus(text, safe="-_.~")


def path_segment(text: str) -> str:
    return quote(text, safe="@:+!*'()~")


def prose(before: str, after: str, encode: Transform = same) -> Callable[[str, Sample], Embedded]:
    """A context that holds the sample as it reads in a sentence."""

    def embed(kind: str, s: Sample) -> Embedded:
        return Embedded(before, encode(s.lead), encode(s.secret), encode(s.trail), after)

    return embed


def keyed(
    before: Callable[[str], str], after: str, encode: Transform = same
) -> Callable[[str, Sample], Embedded]:
    """A context that holds the sample as a key and a value (``before(key)`` precedes it)."""

    def embed(kind: str, s: Sample) -> Embedded:
        return Embedded(
            before(s.key),
            encode(s.value_lead),
            encode(s.secret),
            encode(s.value_trail),
            after,
        )

    return embed


def beside(left: Neighbour, right: Neighbour, sep: str) -> Callable[[str, Sample], Embedded]:
    """A context with another identifier right before and right after the sample."""

    def embed(kind: str, s: Sample) -> Embedded:
        return Embedded(
            left[0] + sep, s.lead, s.secret, s.trail, sep + right[0], neighbours=(left, right)
        )

    return embed


def link_target(kind: str, s: Sample) -> Embedded:
    """A Markdown link whose target holds the sample: ``mailto:`` or a search URL."""
    if kind == "EMAIL_ADDRESS":
        return Embedded("Write to [the owner](mailto:", "", s.secret, "", ") today.")
    enc = uri_component
    before = "See [the record](https://example.org/lookup?q="
    return Embedded(before, enc(s.lead), enc(s.secret), enc(s.trail), "&src=chat) for more.")


def json_in_json(kind: str, s: Sample) -> Embedded:
    """A JSON document logged as a JSON string: ``{"payload": "{\\"key\\": \\"...\\"}"}``."""
    before = '{"payload": "' + json_chars('{"id": 48213, ' + json.dumps(s.key) + ': "')
    after = json_chars('", "ok": true}') + '"}'
    return Embedded(
        before,
        json_twice(s.value_lead),
        json_twice(s.secret),
        json_twice(s.value_trail),
        after,
    )


QUERY = "https://app.example.org/profile?uid=48213&{}="

CONTEXTS: dict[str, Callable[[str, Sample], Embedded]] = {
    "plain": prose("The value is ", " as requested"),
    "sentence_end": prose("The value on file is ", "."),
    "question_end": prose("Is the right one ", "?"),
    "parentheses": prose("Contact details (", ") were shared."),
    "square_brackets": prose("Saved as [", "] in the log."),
    "angle_brackets": prose("From: Jane Doe <", ">"),
    "curly_braces": prose("Filled template {", "} ok"),
    "double_quotes": prose('He typed "', '" twice.'),
    "single_quotes": prose("Set it to '", "', please."),
    "smart_quotes": prose("She wrote \u201c", "\u201d and left."),
    "backticks": prose("Run `", "` to check."),
    "markdown_bold": prose("Your value: **", "**."),
    "markdown_code_block": prose("```\n", "\n```"),
    "markdown_link_text": prose("Open [", "](https://example.org/contact) now."),
    "markdown_link_target": link_target,
    "markdown_table": prose("| name | value | state |\n|---|---|---|\n| Jane | ", " | active |"),
    "markdown_list": prose("- first item\n- ", "\n- last item"),
    "json_value": keyed(lambda k: '{"id": 48213, ' + json.dumps(k) + ': "', '", "ok": true}'),
    "json_escaped": json_in_json,
    "json_string_lines": prose('{"answer": "Here you go:\\n', '\\nAnything else?"}', json_chars),
    "url_query": keyed(QUERY.format, "&lang=en"),
    "url_query_encoded": keyed(QUERY.format, "&lang=en", uri_component),
    "url_query_form": keyed(QUERY.format, "&lang=en", form_value),
    "url_path": prose("https://crm.example.org/users/", "/edit?tab=1", path_segment),
    "line_breaks": prose("Contact below:\n", "\nThanks"),
    "crlf_line_breaks": prose("Line one\r\n", "\r\nLine three"),
    "tabs": prose("Jane\t", "\t2024-05-17"),
    "numbers_and_dates": prose("Paid 2024-05-17 10:30, ref 48213: ", " exp 12/27, 2 items."),
    "label_tight": keyed(lambda k: f"{k}:", ",next=1"),
    "env_line": keyed(lambda k: f"export APP_{k.upper()}=", "\nexport DEBUG=0"),
    "german": prose("R\u00fcckfragen bitte an ", " \u2013 danke sch\u00f6n!"),
    "cyrillic_guillemets": prose(
        "\u041d\u0430\u043f\u0438\u0448\u0438\u0442\u0435 \u043d\u0430 \u00ab",
        "\u00bb, \u0441\u043f\u0430\u0441\u0438\u0431\u043e.",
    ),
    "cjk_punctuation": prose("\u8bf7\u8054\u7cfb\uff1a", "\u3002\u8c22\u8c22\uff01"),
    "cjk_adjacent": prose("\u8bf7\u8054\u7cfb", "\u8c22\u8c22"),
    "japanese_adjacent": prose("\u9023\u7d61\u5148\u306f", "\u3067\u3059\u3002"),
    "emoji": prose("\U0001f4e7", "\u2705"),
    "ids_around": prose("ticket #48213 | ", " | sha256 9f86d081884c7d65"),
    "ids_tight": prose("uuid=123e4567-e89b-12d3-a456-426614174000;", ";ref=ORD-20931"),
    # Numbers and identifiers right beside the value, a space apart: a digit run, a date or a
    # quantity before it, an expiry, a card code or an order number after it. A digit group
    # may begin or end a longer run of digit groups that is no value as a whole.
    "digit_run_before": prose("ref 20240517 ", ";"),
    "date_before": prose("Paid 2024-05-17 ", " today."),
    "slash_date_before": prose("On 05/17/2024 ", " was charged."),
    "quantity_before": prose("Bought 2 ", " today."),
    "expiry_after": prose("Charge ", " 12/27 now."),
    "expiry_cvc_after": prose("Charge ", " 10/26 cvc 999."),
    "order_id_after": prose("Paid with ", " 48213917 ORD-20931."),
    "digit_runs_around": prose("ref 48213 ", " 20240517 ok"),
    "reference_before": prose("ref AB12CD34 ", " done"),
    "vat_id_before": prose("VAT DE123456789 ", " paid"),
    "pii_around": beside(NEIGHBOUR_EMAIL, NEIGHBOUR_PHONE, ", "),
    "secrets_around": beside(NEIGHBOUR_AWS, NEIGHBOUR_GITHUB, " "),
}

PII = frozenset(STRUCTURED_ENTITIES)
SECRETS = frozenset(SECRET_TYPES)
PATTERNS = (*STRUCTURED_ENTITIES, *SECRET_TYPES)


CASES = [
    (kind, i, context)
    for kind in PATTERNS
    for i in range(len(SAMPLES.get(kind, ())))
    for context in CONTEXTS
]


def params(policy: str | None = None) -> list[object]:
    """The cases as pytest parameters named ``[policy-]TYPE#sample-context``."""
    chosen = [c for c in CASES if policy in (None, "pii") or c[0] in SECRETS]
    lead = (policy,) if policy else ()
    return [
        pytest.param(*lead, *case, id="-".join((*lead, f"{case[0]}#{case[1]}", case[2])))
        for case in chosen
    ]


def embedded(kind: str, i: int, context: str) -> Embedded:
    return CONTEXTS[context](kind, SAMPLES[kind][i])


@pytest.fixture(scope="module")
def evaluators() -> dict[str, Evaluator]:
    return {"pii": PiiLeakage(), "secrets": SensitiveDataLeakage()}


def test_every_pattern_has_samples() -> None:
    missing = [k for k in PATTERNS if len({s.secret for s in SAMPLES.get(k, ())}) < 2]
    assert not missing, f"patterns without two distinct samples in SAMPLES: {missing}"
    assert not set(SAMPLES) - set(PATTERNS), "samples of patterns no detector declares"
    assert set(REDACTION_POLICIES) == {"none", "secrets", "pii"}, "a policy with no test here"
    assert len(CONTEXTS) >= 15


@pytest.mark.parametrize(("kind", "i", "context"), params())
def test_evaluator_flags_it(
    kind: str, i: int, context: str, evaluators: dict[str, Evaluator]
) -> None:
    e = embedded(kind, i, context)
    evaluator = evaluators["pii" if kind in PII else "secrets"]
    (answer,) = evaluator.evaluate(RagRecord("a" * 32, "b" * 16, "q?", response=e.text))
    start, end = e.span
    spans = [(f["type"], f["start"], f["end"]) for f in answer.details["findings"]]
    assert (answer.value, answer.passed) == (0.0, False), f"not flagged in {e.text!r}"
    assert (kind, start, end) in spans, f"{kind} at {start}:{end} not among {spans} in {e.text!r}"


def _fragments(kind: str, secret: str) -> list[str]:
    """Parts of a value that must not survive redaction: digit runs and words of 4+."""
    parts = re.findall(r"\d{2,}|[^\W\d_]{4,}", secret)
    if kind == "EMAIL_ADDRESS":
        parts.append(secret.split("@", maxsplit=1)[0])
    return parts


@pytest.mark.parametrize(("policy", "kind", "i", "context"), params("pii") + params("secrets"))
def test_policy_redacts_exactly_the_value(policy: str, kind: str, i: int, context: str) -> None:
    e = embedded(kind, i, context)
    out = redaction(policy).text(e.text)
    expected = e.redacted(kind, policy)
    raw = SAMPLES[kind][i].secret
    for part in _fragments(kind, raw):
        assert out.count(part) == expected.count(part), f"{part!r} survived in {out!r}"
    assert out == expected


# --- what the wider reading must not find ----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Sales grew 12.5%, then 50%20 more; see https://example.org/a%20b/c?q=rag%20eval&p=2.",
        "Open C:\\new\\table\\users\\report.txt or \\\\server\\share\\notes.",
        'The JSON was {"answer": "Line one\\nLine two\\t\\"quoted\\" \\u00e9t\\u00e9"}.',
        "Solve x=1+2+3 and y=2024+05+17; the query ?q=c+++and&n=3 is fine.",
        "Search https://example.org/find?q=order+4111+and+ref%3D20240517&lang=en today.",
        "Versions 10.0.19041.1 and v2.3.4.5 ship on 2024-05-17 at 10:30 (build 4111).",
        "\u8ba2\u5355\u53f720240517\u5df2\u53d1\u8d27\uff0c\u5171 3 \u4ef6\u3002",
        "Ticket #48213: 12 items, 3 boxes, total 49.90 EUR, paid 2024-05-17.",
        "Password: see the vault; api_key = <your key>; Bearer tokens go in a header.",
        "The password is changeme; token: ${API_TOKEN}; secret=your_api_key_goes_here.",
    ],
)
def test_no_findings_in_ordinary_text(text: str) -> None:
    assert redaction("pii").text(text) == text


def test_escape_heavy_input_stays_linear() -> None:
    texts = [
        "a" * 200_000 + " %41",
        "%41%42 " * 40_000,
        "?a=" + "+" * 200_000 + "!",
        "\\n\\t\\\\" * 40_000,
        "\\u0041\\ud83d\\ude00\\ud800" * 20_000,
        "%C3%A9%F0%9F%98%80%FF" * 20_000,
    ]
    started = time.perf_counter()
    for text in texts:
        redaction("pii").text(text)
    assert time.perf_counter() - started < 20
