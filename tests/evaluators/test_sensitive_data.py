"""Sensitive data leakage: each secret type, its false-positive guards, and the evaluator."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace._redaction.findings import Finding
from ragtrace._redaction.secret_patterns import SECRET_TYPES, find_secrets, jwt_ok
from ragtrace.evaluators._leakage.sensitive_data import SensitiveDataLeakage
from ragtrace.evaluators._registry import create


def b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


JWT = (
    b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + b64url({"sub": "1234567890", "name": "Jane"})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
NOT_JWT = b64url({"typ": "x"}) + "." + b64url({"sub": "1"}) + ".c2lnbmF0dXJl"
RSA_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7VJTUt9Us8cKjMzEfYyjiWA4R4\n"
    "R4/Yn5a1vQ7kLq==\n-----END RSA PRIVATE KEY-----"
)
# Split so that no scanner flags this test file itself.
GH = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
OPENAI = "sk-proj-" + "abc123DEF456ghi789JKL012mno345"
ANTHROPIC = "sk-ant-api03-" + "abcDEF123456ghiJKL789012mnoPQR"
SLACK = "xoxb-" + "1234567890-abcdefghij"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def found(text: str) -> list[tuple[str, str]]:
    return [(f.entity_type, text[f.start : f.end]) for f in find_secrets(text)]


def record(response: object, *chunks: str) -> RagRecord:
    return RagRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        query="How do I connect?",
        chunks=tuple(Chunk(c) for c in chunks),
        response=response,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        (f"here it is:\n{RSA_KEY}\nbye", "PRIVATE_KEY", RSA_KEY),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAA\nthen we\n",
            "PRIVATE_KEY",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAA",
        ),
        (
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
            "PEM_CERTIFICATE",
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        ),
        (f"key id {AWS_ID} ok", "AWS_ACCESS_KEY_ID", AWS_ID),
        (f"aws_secret_access_key = {AWS_SECRET}", "AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        (f"token {GH}.", "GITHUB_TOKEN", GH),
        (f"slack {SLACK}", "SLACK_TOKEN", SLACK),
        (f"stripe {STRIPE}", "STRIPE_KEY", STRIPE),
        (f"google {GOOGLE}", "GOOGLE_API_KEY", GOOGLE),
        (f"OPENAI_API_KEY={OPENAI}", "OPENAI_API_KEY", OPENAI),
        (f"claude {ANTHROPIC}", "ANTHROPIC_API_KEY", ANTHROPIC),
        (f"Authorization: Bearer {JWT}", "JWT", JWT),
        (
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
            "BEARER_TOKEN",
            "abcdefghijklmnopqrstuvwxyz012345",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "BASIC_AUTH", "dXNlcjpwYXNzd29yZA=="),
        ("use postgres://admin:S3cr3tP4ss@db.internal:5432/app", "URL_PASSWORD", "S3cr3tP4ss"),
        ("Your password: Summer2024! (change it)", "PASSWORD", "Summer2024!"),
        ("api_key = 'a1b2c3d4e5f6g7h8i9j0k1l2'", "GENERIC_SECRET", "a1b2c3d4e5f6g7h8i9j0k1l2"),
        (
            "Windows key VK7JG-NPHTM-C97JM-9MPGT-3V66T",
            "WINDOWS_PRODUCT_KEY",
            "VK7JG-NPHTM-C97JM-9MPGT-3V66T",
        ),
    ],
)
def test_finds_each_type(text: str, kind: str, value: str) -> None:
    assert found(text) == [(kind, value)]


def test_every_type_is_covered_above() -> None:
    assert set(SECRET_TYPES) == {
        "PRIVATE_KEY", "PEM_CERTIFICATE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN", "SLACK_WEBHOOK", "SLACK_TOKEN", "STRIPE_KEY", "GOOGLE_API_KEY",
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "JWT", "URL_PASSWORD", "BASIC_AUTH",
        "BEARER_TOKEN", "PASSWORD", "GENERIC_SECRET", "WINDOWS_PRODUCT_KEY",
    }  # fmt: skip
    hook = "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    assert found(f"post to {hook}") == [("SLACK_WEBHOOK", hook)]


def test_jwt_header_must_be_json_with_alg() -> None:
    assert jwt_ok(JWT)
    assert not jwt_ok(NOT_JWT)
    assert not jwt_ok("eyJ!!!.eyJ.abc")
    assert not jwt_ok(b64url([1, 2]) + ".x.y")
    assert found(f"token {NOT_JWT}") == []


@pytest.mark.parametrize(
    "text",
    [
        "Connect with postgres://user:password@localhost/db (replace the placeholders).",
        "Use https://user:${DB_PASSWORD}@host or https://u:<secret>@host or ftp://a:****@b.",
        "The password is required; password: must have 8 characters; pwd=changeme.",
        "Set api_key = your_api_key_goes_here and secret: see the vault.",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
        "pk_live_" + "4eC39HqLyjWDarjtT1zdp7dc is a publishable key.",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b, sha256 "
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "UUID 123e4567-e89b-12d3-a456-426614174000 and https://example.com/a?b=c#d",
        "Use scikit-learn; the task-management app sk-learn plugin; see sk-this-is-prose-only.",
        "Bearer of bad news: the bearer token must be sent in a header.",
        "HELLO-WORLD-THESE-WORDS-ARENT is shouting, not a key.",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert found(text) == []


def test_evaluator_answer_and_context() -> None:
    evaluator = SensitiveDataLeakage()
    rec = record(
        f"Connect with the key {GH} as shown.",
        "Docs: set the GITHUB_TOKEN variable.",
        f"Old notes: {GH}\n{RSA_KEY}",
    )
    context, answer = evaluator.evaluate(rec)
    assert (context.name, context.value, context.passed) == ("sensitive_data.context", 0.0, False)
    assert context.details["counts"] == {"GITHUB_TOKEN": 1, "PRIVATE_KEY": 1}
    assert context.details["chunks"] == [1]
    assert (answer.name, answer.value) == ("sensitive_data.answer", 0.0)
    (finding,) = answer.details["findings"]
    assert finding["type"] == "GITHUB_TOKEN" and finding["in_context"] is True
    assert finding["masked"] == "***_" + "*" * 36
    assert answer.explanation == (
        "answer: 1 secret(s) found (GITHUB_TOKEN x1); 1 also in the retrieved context"
    )
    for score in (context, answer):
        dumped = json.dumps([score.label, score.explanation, dict(score.details)])
        assert GH not in dumped and "MIIEpAIB" not in dumped and GH[4:12] not in dumped


def test_evaluator_passes_clean_text_and_options() -> None:
    evaluator = create("sensitive_data", types=["JWT"])
    (answer,) = evaluator.evaluate(record(f"password: Summer2024! and {JWT}"))
    assert answer.details["counts"] == {"JWT": 1}
    (clean,) = SensitiveDataLeakage().evaluate(record("Open Settings and press Reset."))
    assert (clean.value, clean.label, clean.explanation) == (1.0, "pass", "answer: no secret found")
    with pytest.raises(ValueError, match="types"):
        SensitiveDataLeakage(types=["PASSWORDS"])
    with pytest.raises(ValueError, match="types"):
        SensitiveDataLeakage(types="JWT")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("response", "value"),
    [
        (None, 1.0),
        (f"key {GH}".encode() + b"\xff", 0.0),
        (f"key {GH} \udcff\ud800", 0.0),
        (object(), 1.0),
    ],
)
def test_bad_input(response: object, value: float) -> None:
    (answer,) = SensitiveDataLeakage().evaluate(record(response))
    assert answer.value == value


def test_huge_input_is_capped() -> None:
    huge = ("-----BEGIN x " + "A" * 1000 + " password: " + "eyJ" * 300) * 2_000 + GH  # ~5 MB
    (answer,) = SensitiveDataLeakage().evaluate(record(huge))
    assert answer.details["truncated"] is True
    assert answer.value == 1.0  # the token lies beyond the 200,000 scanned characters


def test_batch_equals_single() -> None:
    evaluator = SensitiveDataLeakage()
    records = [record(f"{GH}", RSA_KEY), record("fine"), record(JWT, "x", "y")]
    assert evaluator.evaluate_batch(records) == [evaluator.evaluate(r) for r in records]


def test_documented_example_key_can_be_allowed() -> None:
    # A docs site that prints the same placeholder token in every article allows it by value.
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    text = f"Use a token like {GH}; never paste a real one such as {other}."
    (answer,) = SensitiveDataLeakage(allow=[GH], targets=("answer",)).evaluate(record(text))
    assert answer.value == 0.0
    assert answer.details["counts"] == {"GITHUB_TOKEN": 1} and answer.details["allowed"] == 1
    assert answer.details["findings"][0]["start"] == text.index(other)


def test_a_passage_seen_again_is_not_scanned_again_and_scores_the_same() -> None:
    scanned: list[str] = []

    class Counting(SensitiveDataLeakage):
        def detect(self, texts: Sequence[str]) -> list[list[Finding]]:
            scanned.extend(texts)
            return super().detect(texts)

    evaluator = Counting()
    passages = ("Docs: set the GITHUB_TOKEN variable.", f"Old notes: {GH}\n{RSA_KEY}")
    first, second = record(f"The key is {GH}.", *passages), record("Set the variable.", *passages)
    assert evaluator.evaluate(first) == SensitiveDataLeakage().evaluate(first)
    assert scanned == [first.response, *passages]
    scanned.clear()
    assert evaluator.evaluate(second) == SensitiveDataLeakage().evaluate(second)
    assert scanned == [second.response]  # the passages' findings were remembered
    scanned.clear()
    fresh = Counting()  # nothing remembered: a batch still scans each passage once
    assert fresh.evaluate_batch([first, second]) == [
        SensitiveDataLeakage().evaluate(r) for r in (first, second)
    ]
    assert scanned == [first.response, *passages, second.response]


def test_an_evaluator_that_remembers_passages_still_goes_to_a_worker_process() -> None:
    """Pickled for a process pool, it keeps its sizes and starts with nothing remembered."""
    import pickle

    evaluator = SensitiveDataLeakage()
    first = record(f"The key is {GH}.", f"Old notes: {GH}")
    before = evaluator.evaluate(first)
    copy = pickle.loads(pickle.dumps(evaluator))
    assert copy.evaluate(first) == before
    assert copy.evaluate_batch([first, first]) == [before, before]
