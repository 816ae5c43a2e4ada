"""Redaction policies: what each built-in one finds and replaces, at any depth, once.

The detectors are the leakage evaluators' own (``find_pii``, ``find_secrets``); these tests check
what the policy does with their findings: markers, overlaps, idempotence, records, scores, a
function that fails, pickling.
"""

from __future__ import annotations

import pickle
import re

import pytest

from ragtrace._model import Chunk, Conversation, Evaluation, RagRecord, Score, ToolCall, Turn
from ragtrace._redaction import REDACTION_FAILED, Redaction, redaction, unmarked
from ragtrace._semconv import RAGTRACE_REDACTION

EMAIL = "alice.canary@corp.example"
SSN = "123-45-6789"
KEY = "sk-proj-Canary1234567890abcdefXYZ"
LEAKY = f"mail {EMAIL}, SSN {SSN}, key {KEY}."


def test_pii_replaces_each_finding_by_its_type() -> None:
    assert redaction("pii").text(LEAKY) == (
        "mail <EMAIL_ADDRESS>, SSN <US_SSN>, key <OPENAI_API_KEY>."
    )


def test_secrets_leaves_personal_data_alone() -> None:
    assert redaction("secrets").text(LEAKY) == f"mail {EMAIL}, SSN {SSN}, key <OPENAI_API_KEY>."


@pytest.mark.parametrize("spec", [None, "none"])
def test_none_changes_nothing(spec: str | None) -> None:
    policy = redaction(spec)
    assert not policy.active and policy.name == "none"
    record = RagRecord("a" * 32, "b" * 16, LEAKY, response=LEAKY)
    assert policy.text(LEAKY) == LEAKY
    assert policy.record(record) is record


@pytest.mark.parametrize("name", ["pii", "secrets"])
def test_built_in_policies_are_idempotent(name: str) -> None:
    text = (
        f"{LEAKY} password: Hunter2!x url postgres://bob:s3cr3t99@db.example.com "
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123 call +1 (555) 010-9999 "
        "IBAN GB82 WEST 1234 5698 7654 32 ip 10.1.2.3"
    )
    once = redaction(name).text(text)
    assert redaction(name).text(once) == once
    assert "Hunter2!x" not in once and "s3cr3t99" not in once


def test_overlapping_findings_are_replaced_together() -> None:
    # the URL's password and an e-mail-looking "password@host" overlap: their union goes
    text = "dsn postgres://bob:s3cr3tpass@db.example.com/app"
    out = redaction("pii").text(text)
    assert "s3cr3tpass" not in out and out.count("<") == 1


def test_values_are_redacted_at_any_depth_keys_included() -> None:
    value = {
        "owner": EMAIL,
        EMAIL: 1,
        "nested": {"deeper": [{"ssn": SSN}, (KEY, 3.5, None, True)]},
        "n": 7,
    }
    out = redaction("pii").value(value)
    assert out == {
        "owner": "<EMAIL_ADDRESS>",
        "<EMAIL_ADDRESS>": 1,
        "nested": {"deeper": [{"ssn": "<US_SSN>"}, ("<OPENAI_API_KEY>", 3.5, None, True)]},
        "n": 7,
    }


def test_a_record_is_redacted_everywhere_and_marked_once() -> None:
    record = RagRecord(
        "a" * 32,
        "b" * 16,
        query=f"who is {EMAIL}?",
        chunks=(Chunk(LEAKY, id=EMAIL, score=0.5, metadata={"a": {"b": {"c": SSN}}}),),
        response=LEAKY,
        reference=LEAKY,
        error=f"ValueError: {EMAIL}",
        attributes={"metadata": {"user": EMAIL}, "feedback": [KEY]},
    )
    policy = redaction("pii")
    out = policy.record(record)
    assert EMAIL not in repr(out) and SSN not in repr(out) and KEY not in repr(out)
    assert out.chunks[0].metadata == {"a": {"b": {"c": "<US_SSN>"}}}
    assert out.chunks[0].score == 0.5 and out.trace_id == record.trace_id
    assert out.attributes[RAGTRACE_REDACTION] == "pii"
    assert policy.record(out) is out  # applied once
    both = redaction("secrets").record(redaction("pii").record(record))
    assert both.attributes[RAGTRACE_REDACTION] == "pii,secrets"
    assert RAGTRACE_REDACTION not in unmarked(out).attributes


def test_an_agent_turn_is_redacted_in_its_conversation_tool_calls_and_sub_queries() -> None:
    record = RagRecord(
        "a" * 32,
        "b" * 16,
        query="and the other one?",
        chunks=(Chunk("text", id="c1", query=f"orders of {EMAIL}", step=0, source="search"),),
        conversation=Conversation(
            session_id="thread-9",
            user_id=EMAIL,
            turn=1,
            history=(Turn("user", f"I am {EMAIL}, SSN {SSN}"), Turn("assistant", "Noted.")),
            standalone_query=f"What did {EMAIL} order?",
        ),
        tool_calls=(ToolCall("orders", f'{{"email": "{EMAIL}"}}', "error", f"no {KEY}", 0.1),),
        llm_calls=2,
    )
    out = redaction("pii").record(record)
    assert EMAIL not in repr(out) and SSN not in repr(out) and KEY not in repr(out)
    assert out.conversation is not None
    assert out.conversation.session_id == "thread-9" and out.conversation.turn == 1
    assert out.conversation.history == (
        Turn("user", "I am <EMAIL_ADDRESS>, SSN <US_SSN>"),
        Turn("assistant", "Noted."),
    )
    assert re.fullmatch(r"<EMAIL_ADDRESS:[0-9a-f]{8}>", out.conversation.user_id or "")
    assert out.chunks[0].query == "orders of <EMAIL_ADDRESS>"
    assert (out.chunks[0].step, out.chunks[0].source, out.llm_calls) == (0, "search", 2)
    call = out.tool_calls[0]
    assert (call.name, call.status, call.duration_s) == ("orders", "error", 0.1)
    assert call.arguments == '{"email": "<EMAIL_ADDRESS>"}'


def test_scores_are_redacted_in_every_text_field() -> None:
    score = Score(
        "faithfulness",
        0.2,
        label=f"fail: {EMAIL}",
        explanation=f"the answer repeats {SSN}",
        error=f"timeout on {KEY}",
        details={"claims": [{"text": f"reach {EMAIL}"}]},
    )
    (evaluation,) = redaction("pii").evaluations([Evaluation("faithfulness", (score,), 1, 2)])
    (out,) = evaluation.scores
    assert (out.label, out.explanation, out.error) == (
        "fail: <EMAIL_ADDRESS>",
        "the answer repeats <US_SSN>",
        "timeout on <OPENAI_API_KEY>",
    )
    assert out.details == {"claims": [{"text": "reach <EMAIL_ADDRESS>"}]}
    assert (out.value, out.name) == (0.2, "faithfulness")


def test_a_function_that_fails_never_lets_the_text_through() -> None:
    def broken(text: str) -> str:
        raise RuntimeError("down")

    def not_text(text: str) -> str:
        return None  # type: ignore[return-value]

    assert Redaction(broken).text(LEAKY) == REDACTION_FAILED
    assert Redaction(not_text).text(LEAKY) == REDACTION_FAILED
    assert Redaction(str.upper).name == "custom"


def test_unknown_policies_are_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="none, secrets, pii"):
        Redaction("everything")


def test_a_policy_pickles_as_its_spec() -> None:
    policy = pickle.loads(pickle.dumps(redaction("pii")))
    assert policy.text(LEAKY) == redaction("pii").text(LEAKY)


def test_long_texts_are_redacted_past_the_cache_size() -> None:
    text = ("filler " * 3000) + EMAIL
    assert redaction("pii").text(text).endswith("<EMAIL_ADDRESS>")
