"""PII leakage: the regex suite's validators, its false-positive guards, and the evaluator."""

from __future__ import annotations

import json
import time

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace._redaction.pii_patterns import (
    card_network,
    find_pii,
    iban_ok,
    luhn_ok,
    ssn_ok,
)
from ragtrace.evaluators._leakage.pii import PiiLeakage
from ragtrace.evaluators._registry import create


def record(response: object, *chunks: str, query: str = "What is on file?") -> RagRecord:
    return RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query=query,
        chunks=tuple(Chunk(c) for c in chunks),
        response=response,  # type: ignore[arg-type]
    )


def found(text: str) -> list[tuple[str, str]]:
    return [(f.entity_type, text[f.start : f.end]) for f in find_pii(text)]


@pytest.fixture(scope="module")
def regex_only() -> PiiLeakage:
    return PiiLeakage(ner=False)


@pytest.fixture(scope="module")
def with_ner() -> PiiLeakage:
    return PiiLeakage(ner=True)


# --- validators --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digits", "ok"),
    [
        ("79927398713", True),  # the textbook Luhn example
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("378282246310005", True),  # Amex test number
        ("378282246310006", False),
        ("0", True),
        ("18", True),
        ("19", False),
    ],
)
def test_luhn(digits: str, ok: bool) -> None:
    assert luhn_ok(digits) is ok


@pytest.mark.parametrize(
    ("digits", "network"),
    [
        ("4111111111111111", "visa"),
        ("4222222222222", "visa"),
        ("5555555555554444", "mastercard"),
        ("2223003122003222", "mastercard"),
        ("378282246310005", "amex"),
        ("6011111111111117", "discover"),
        ("30569309025904", "diners"),
        ("3530111333300000", "jcb"),
        ("180016070420458", "jcb"),
        ("6200000000000005", "unionpay"),
        ("4111111111111", "visa"),
        ("41111111111111", None),  # Visa has no 14-digit numbers
        ("9111111111111111", None),
        ("1111111111111111", None),
    ],
)
def test_card_network(digits: str, network: str | None) -> None:
    assert card_network(digits) == network


@pytest.mark.parametrize(
    ("ssn", "ok"),
    [
        ("460-89-9847", True),
        ("001-01-0001", True),
        ("000-12-3456", False),  # area 000
        ("666-12-3456", False),  # area 666
        ("900-12-3456", False),  # areas 900-999
        ("999-12-3456", False),
        ("123-00-4567", False),  # group 00
        ("123-45-0000", False),  # serial 0000
        ("078-05-1120", False),  # the Woolworth wallet specimen
        ("219-09-9999", False),  # the SSA's advertising specimen
        ("899-45-6789", True),
    ],
)
def test_ssn_rules(ssn: str, ok: bool) -> None:
    area, group, serial = ssn.split("-")
    assert ssn_ok(area, group, serial) is ok
    assert bool(found(f"SSN: {ssn}")) is ok


@pytest.mark.parametrize(
    ("iban", "ok"),
    [
        ("GB82WEST12345698765432", True),
        ("DE89370400440532013000", True),
        ("FR1420041010050500013M02606", True),
        ("NO9386011117947", True),
        ("GB83WEST12345698765432", False),  # check digits off by one
        ("GB82WEST1234569876543", False),  # one character short for GB
        ("DE89370400440532013001", False),
        ("XX82WEST12345698765432", False),  # no such country
    ],
)
def test_iban_mod97(iban: str, ok: bool) -> None:
    assert iban_ok(iban) is ok


# --- the regex suite on text -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mail jane.doe+tag@mail.example.co.uk now.", "jane.doe+tag@mail.example.co.uk"),
        ("Card: 4111 1111 1111 1111.", "4111 1111 1111 1111"),
        ("Card: 4111-1111-1111-1111", "4111-1111-1111-1111"),
        ("Card 378282246310005 on file", "378282246310005"),
        ("ssn 460899847", "460899847"),
        ("Pay to GB82 WEST 1234 5698 7654 32 today", "GB82 WEST 1234 5698 7654 32"),
        ("iban gb82west12345698765432", "gb82west12345698765432"),
        ("from 192.168.1.20 yesterday", "192.168.1.20"),
        ("host 2001:db8:85a3::8a2e:370:7334 up", "2001:db8:85a3::8a2e:370:7334"),
        ("Call (415) 555-0132 today", "(415) 555-0132"),
        ("Call 415-555-0132", "415-555-0132"),
        ("Call 1-800-555-0199 x123", "1-800-555-0199 x123"),
        ("Ring +44 20 7946 0958 please", "+44 20 7946 0958"),
        ("Ring +33 1 42 68 53 00", "+33 1 42 68 53 00"),
        ("Ring +41 (0)96 471 07 95", "+41 (0)96 471 07 95"),
        ("Contact 0487 98 11 92", "0487 98 11 92"),
        ("My phone is 358 0594.", "358 0594"),
        ("99 668472 office", "99 668472"),
    ],
)
def test_finds(text: str, expected: str) -> None:
    assert [value for _, value in found(text)] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "Released 2024-05-17 at 09:30:15, patch 17.05.2024 and 05/17/2024.",
        "Upgrade to version 1.2.3.4, v10.0.19041.1 or 3.11.4.",
        "It costs $1,234,567.89, €1 234 567 or 1 234 567 units.",
        "Sales grew 12.5% from 2019 2020 2021 to 2022.",
        "ISBN 978-3-16-148410-0 and DOI 10.1000/182.",
        "Order 4111111111111112 shipped; tracking 1Z999AA10123456784.",
        "0000 0000 0000 0000 is not a card.",
        "Ref 123456789012 for card-less customers.",  # 12 digits, no 'card' word right before
        "My driver's license number is 281211981.",
        "The meeting is at 12:30:45; use std::vector<int> and a::b in C++.",
        "MAC 00:1A:2B:3C:4D:5E and IP 256.1.1.1 are not IPs.",
        "user@localhost is not an address; nor is @handle or a@b.",
        "Population 8 336 817 in 2019; area 783.8 km2; coordinates 40.7128, -74.0060.",
        "SSN-like 666-12-3456 and 900-12-3456 are never issued.",
        "Invoice INV-2024-000123, part number 5501-223-44.",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert found(text) == []


def test_twelve_digit_maestro_only_near_card() -> None:
    assert found("my card 584528792610 is blocked") == [("CREDIT_CARD", "584528792610")]
    assert found("reference 584528792610 is blocked") == []


def test_iban_followed_by_words() -> None:
    text = "IBAN DE89 3704 0044 0532 0130 00 and more text"
    assert found(text) == [("IBAN_CODE", "DE89 3704 0044 0532 0130 00")]


def test_overlap_keeps_specific_type() -> None:
    # 123-45-6789 is shaped like an SSN and a phone number after "call": the SSN wins.
    assert found("call 460-89-9847") == [("US_SSN", "460-89-9847")]


# --- values inside longer runs of digits and identifiers ----------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ref 20240517 4111 1111 1111 1111;", ("CREDIT_CARD", "4111 1111 1111 1111")),
        ("paid 2024-05-17 4111-1111-1111-1111", ("CREDIT_CARD", "4111-1111-1111-1111")),
        ("card 4111 1111 1111 1111 12/27", ("CREDIT_CARD", "4111 1111 1111 1111")),
        ("378282246310005 10/26 cvc 999", ("CREDIT_CARD", "378282246310005")),
        ("2 5555 5555 5555 4444 on order", ("CREDIT_CARD", "5555 5555 5555 4444")),
        ("card 4111 1111 1111 1111 48213 ORD-20931", ("CREDIT_CARD", "4111 1111 1111 1111")),
        ("VAT DE123456789 IBAN DE89370400440532013000", ("IBAN_CODE", "DE89370400440532013000")),
        (
            "VAT DE123456789 DE89 3704 0044 0532 0130 00",
            ("IBAN_CODE", "DE89 3704 0044 0532 0130 00"),
        ),
        ("ref AB12CD34 GB82 WEST 1234 5698 7654 32", ("IBAN_CODE", "GB82 WEST 1234 5698 7654 32")),
        ("ref 20240517 (415) 555-0132", ("PHONE_NUMBER", "(415) 555-0132")),
        ("2 415-555-0132 today", ("PHONE_NUMBER", "415-555-0132")),
        ("call +44 20 7946 0958 2 items", ("PHONE_NUMBER", "+44 20 7946 0958")),
    ],
)
def test_finds_a_value_inside_a_longer_run(text: str, expected: tuple[str, str]) -> None:
    assert found(text) == [expected]


def test_longest_validated_card_of_a_run_wins() -> None:
    # The first 16 digits pass Luhn and so do all 19: one finding, the 19-digit card.
    assert found("ref 4111 1111 1111 1111 003") == [("CREDIT_CARD", "4111 1111 1111 1111 003")]
    # Two cards in one run of groups: both, apart.
    assert found("4111 1111 1111 1111 5555 5555 5555 4444") == [
        ("CREDIT_CARD", "4111 1111 1111 1111"),
        ("CREDIT_CARD", "5555 5555 5555 4444"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "0000 0000 0000 0000 and 1234 5678 9012 3456 7890",
        "ref 20240517 0487 98 11 92",  # a spaced number after a digit run: no form sets it apart
        "ORD-4111111111111111 and 4111-1111-1111-1111-12",  # part of a dashed identifier
        "ref 20240517 4111 1111 1111 1112;",  # fails Luhn
        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
    ],
)
def test_no_value_carved_out_of_a_run_that_holds_none(text: str) -> None:
    assert found(text) == []


def test_patterns_are_linear_on_pathological_input() -> None:
    nasty = "1 " * 200_000 + "9" * 200_000 + "a@" * 50_000 + "GB82 " * 40_000
    started = time.perf_counter()
    find_pii(nasty)
    assert time.perf_counter() - started < 10


def test_long_runs_of_digit_groups_and_many_findings_stay_fast() -> None:
    texts = [
        "1234 " * 50_000,
        "4111 1111 1111 1111 " * 10_000,  # one run of 40,000 groups, 10,000 cards
        "(415) 555-0132 2 " * 10_000,
        "+1 2 3 4 5 6 7 8 9 " * 10_000,
        "DE12 3456 " * 25_000,
        bytes(range(256)).decode("latin-1") * 1_000,
    ]
    started = time.perf_counter()
    counts = [len(find_pii(text)) for text in texts]
    assert counts == [0, 10_000, 10_000, 0, 0, 0]
    assert time.perf_counter() - started < 20


# --- the evaluator -----------------------------------------------------------------------------


def test_answer_and_context_scores(regex_only: PiiLeakage) -> None:
    rec = record(
        "Write to jane.doe@acme.com; card 4111 1111 1111 1111 is on file.",
        "Support: jane.doe@acme.com, +1 415-555-0132.",
        "Invoices are sent monthly.",
    )
    context, answer = regex_only.evaluate(rec)
    # The context's finding is information about the knowledge base (no verdict); the
    # answer's is the alarm.
    assert (context.name, context.value, context.passed) == ("pii_leakage.context", 0.0, None)
    assert (context.label, context.threshold) == ("found", None)
    assert (answer.name, answer.value, answer.passed) == ("pii_leakage.answer", 0.0, False)
    assert context.details["counts"] == {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}
    assert context.details["chunks"] == [0]
    assert [f["chunk"] for f in context.details["findings"]] == [0, 0]
    by_type = {f["type"]: f for f in answer.details["findings"]}
    assert by_type["EMAIL_ADDRESS"]["in_context"] is True  # repeated from retrieval
    assert by_type["CREDIT_CARD"]["in_context"] is False  # produced by the model
    assert by_type["EMAIL_ADDRESS"]["masked"] == "****.***@****.***"
    assert by_type["CREDIT_CARD"]["masked"] == "**** **** **** ****"
    assert (by_type["EMAIL_ADDRESS"]["start"], by_type["EMAIL_ADDRESS"]["end"]) == (9, 26)
    assert answer.explanation == (
        "answer: 2 PII entity(s) found (CREDIT_CARD x1, EMAIL_ADDRESS x1); "
        "1 also in the retrieved context"
    )


def test_values_never_echoed(regex_only: PiiLeakage) -> None:
    secrets = ["jane.doe@acme.com", "4111 1111 1111 1111", "460-89-9847", "415-555-0132"]
    rec = record(" and ".join(secrets), *secrets)
    for score in regex_only.evaluate(rec):
        dumped = json.dumps([score.label, score.explanation, dict(score.details)])
        for value in secrets:
            assert value not in dumped
        assert "4111" not in dumped and "acme" not in dumped


def test_clean_record_passes(regex_only: PiiLeakage) -> None:
    rec = record("Open Settings, then Security, then Reset (step 2 of 3).", "Reset takes 5 min.")
    context, answer = regex_only.evaluate(rec)
    assert (context.value, context.label, answer.value, answer.label) == (1.0, "none", 1.0, "pass")
    assert answer.explanation == "answer: no PII entity found"


def test_structured_identifiers_by_default_and_names_are_no_leak() -> None:
    # An ordinary answer about a news article names people and places: no finding by default.
    article = "Angela Merkel met Emmanuel Macron in Paris on Monday to discuss the budget."
    default = PiiLeakage()
    assert (default.kind, default.ner, default.operating_point) == ("lexical", False, "default")
    context, answer = default.evaluate(record("Merkel and Macron met in Paris.", article))
    assert (answer.value, answer.passed, context.value, context.passed) == (1.0, True, 1.0, None)
    leaked = default.evaluate(record("Call Angela on +1 415-555-0132.", article))[1]
    assert (leaked.value, leaked.passed) == (0.0, False)


def test_strict_point_makes_the_context_an_alarm_and_a_number_sets_both() -> None:
    rec = record("Here is how to reset it.", "Support line: +1 415-555-0132.")
    for options in ({"threshold": "strict"}, {"threshold": 0.5}):
        context, answer = PiiLeakage(**options).evaluate(rec)  # type: ignore[arg-type]
        assert (context.passed, answer.passed) == (False, True)


def test_no_chunks_gives_answer_score_only(regex_only: PiiLeakage) -> None:
    scores = regex_only.evaluate(record("mail me: a.b@example.org"))
    assert [(s.name, s.value) for s in scores] == [("pii_leakage.answer", 0.0)]


def test_targets_and_requires() -> None:
    context_only = PiiLeakage(ner=False, targets=["context"])
    assert context_only.requires == frozenset({"chunks"})
    scores = context_only.evaluate(record("a.b@example.org", "nothing here"))
    assert [(s.name, s.value) for s in scores] == [("pii_leakage.context", 1.0)]
    assert PiiLeakage(ner=False).requires == frozenset({"response"})
    with pytest.raises(ValueError, match="targets"):
        PiiLeakage(targets=["query"])


def test_configuration_errors() -> None:
    with pytest.raises(ValueError, match="unknown entity"):
        PiiLeakage(entities=["EMAIL", "PERSON"])
    with pytest.raises(ValueError, match="need NER"):
        PiiLeakage(ner=False, entities=["EMAIL_ADDRESS", "PERSON"])
    with pytest.raises(ValueError, match="non-empty"):
        PiiLeakage(entities=[])
    assert PiiLeakage(ner=False).kind == "lexical"
    assert PiiLeakage().kind == "lexical"
    assert PiiLeakage(ner=True).kind == "model"
    assert PiiLeakage(entities=["EMAIL_ADDRESS", "PERSON"]).kind == "model"  # NER implied
    assert PiiLeakage(ner_candidates_only=True).ner is True  # so is it here


@pytest.mark.parametrize(
    "response",
    [None, b"mail a.b@example.org \xff\xfe", "mail a.b@example.org \udcff\ud800", 12345, ""],
)
def test_bad_input(regex_only: PiiLeakage, response: object) -> None:
    (answer,) = regex_only.evaluate(record(response))
    expect = 0.0 if isinstance(response, bytes | str) and "@" in str(response) else 1.0
    assert answer.value == expect


def test_huge_input_is_capped(regex_only: PiiLeakage) -> None:
    huge = "lorem ipsum dolor sit amet " * 200_000 + "a.b@example.org"  # ~5.4 MB
    (answer,) = regex_only.evaluate(record(huge))
    assert answer.details["truncated"] is True
    assert answer.value == 1.0  # the e-mail lies beyond the 50,000 scanned characters


def test_registry_builds_it() -> None:
    assert isinstance(create("pii_leakage", ner=False), PiiLeakage)


# --- with NER (Presidio + the packaged spaCy model) --------------------------------------------


def test_ner_finds_names_and_places(with_ner: PiiLeakage) -> None:
    rec = record("Please forward the contract to John Smith in London by Friday.")
    (answer,) = with_ner.evaluate(rec)
    kinds = {(f["type"], rec.response[f["start"] : f["end"]]) for f in answer.details["findings"]}
    assert kinds == {("PERSON", "John Smith"), ("LOCATION", "London")}
    assert all(f["detector"] == "presidio:SpacyRecognizer" for f in answer.details["findings"])
    assert answer.value == 0.0


def test_regex_wins_overlaps_with_ner(with_ner: PiiLeakage) -> None:
    text = "Write to john.smith@example.com for details."
    (finding,) = with_ner.detect([text])[0]
    assert (finding.entity_type, finding.detector) == ("EMAIL_ADDRESS", "regex")


def test_ner_batch_matches_single(with_ner: PiiLeakage) -> None:
    texts = ["Maria Garcia moved to Madrid.", "", "No names here.", "Ask Peter in Berlin."]
    batch = with_ner.detect(texts)
    assert batch == [with_ner.detect([t])[0] for t in texts]
    assert batch[1] == [] and batch[2] == []


# --- allow-list --------------------------------------------------------------------------------


def test_allowed_values_are_counted_not_flagged() -> None:
    # spaCy's small English model reads the product name "Aurora" as a PERSON.
    context = "The Aurora Gateway links the Aurora H5 to the app. Write to help@aurora.example."
    answer = "Ask Maria Garcia: the Aurora Gateway is set up by help@aurora.example."
    plain = PiiLeakage(entities=["PERSON", "EMAIL_ADDRESS"])
    ctx_plain, answer_plain = plain.evaluate(record(answer, context))
    assert ctx_plain.value == 0.0 and ctx_plain.details["allowed"] == 0
    allowing = PiiLeakage(
        entities=["PERSON", "EMAIL_ADDRESS"],
        allow=["Aurora Gateway", "aurora h5", "REGEXP:[\\w.+-]+@aurora\\.example"],
    )
    ctx, ans = allowing.evaluate(record(answer, context))
    assert (ctx.value, ctx.passed) == (1.0, None)
    assert ctx.details["counts"] == {} and ctx.details["allowed"] >= 2
    # The customer's name is still flagged; the product and the support address are not.
    assert ans.value == 0.0 and ans.details["counts"] == {"PERSON": 1}
    assert ans.details["allowed"] == answer_plain.details["findings_listed"] - 1


def test_allow_matches_whole_values_only(regex_only: PiiLeakage) -> None:
    allowing = PiiLeakage(ner=False, allow=["support@acme.example", "REGEXP:\\+1 415 555 0\\d{3}"])
    text = "Mail support@acme.example or jo@acme.example, call +1 415 555 0100 or +1 415 555 9999."
    (score,) = allowing.evaluate(record(text))
    assert score.details["counts"] == {"EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}
    assert score.details["allowed"] == 2
    (unfiltered,) = regex_only.evaluate(record(text))
    assert unfiltered.details["allowed"] == 0 and sum(unfiltered.details["counts"].values()) == 4


@pytest.mark.parametrize(
    ("allow", "message"),
    [
        ("Aurora", "allow must be a list"),
        ([""], "non-empty strings"),
        ([3], "non-empty strings"),
        (["REGEXP:(unclosed"], "bad allow pattern"),
    ],
)
def test_bad_allow_entries(allow: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PiiLeakage(ner=False, allow=allow)  # type: ignore[arg-type]
