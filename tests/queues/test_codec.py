"""Work items survive the trip through bytes; anything else is refused with a reason."""

from __future__ import annotations

import json

import pytest

from ragtrace._model import Chunk, Conversation, Evaluation, RagRecord, Score, ToolCall, Turn
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.codec import SCHEMA_VERSION, CodecError, decode_item, encode_item


def full_item() -> WorkItem:
    record = RagRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        query="Wie lange dauert die Rückerstattung? ✓",
        chunks=(
            Chunk(
                "Refunds take 5 days.", id="kb-1", score=0.91, metadata={"page": 3, "tags": ["a"]}
            ),
            Chunk("Shipping is free.", source="bm25"),
        ),
        response="Five days.",
        reference="5 days",
        app="support",
        model="gpt-x",
        start_ns=1,
        end_ns=2_000_000_000,
        error=None,
        status="error",
        attributes={"route": "/ask", "tokens": {"in": 3}},
    )
    done = Evaluation(
        "looping",
        (Score("looping", 0.25, label="pass", threshold=0.5, passed=True, details={"n": [1, 2]}),),
        10,
        20,
    )
    return WorkItem(record, ("groundedness", "toxicity"), (done,))


def test_a_full_item_round_trips() -> None:
    item = full_item()
    assert decode_item(encode_item(item)) == item


def agent_item() -> WorkItem:
    record = RagRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        query="And the Borealis?",
        chunks=(
            Chunk(
                "Borealis: 5 years.",
                id="kb-2",
                source="search/kb",
                query="borealis",
                step=1,
                retrieval=1,
                used=True,
            ),
            Chunk("Aurora: 3 years.", id="kb-1", retrieval=0, used=False),
        ),
        response="Five years.",
        conversation=Conversation(
            session_id="thread-1",
            user_id="u-7",
            turn=1,
            history=(Turn("user", "Aurora warranty?"), Turn("assistant", "Three years.")),
            standalone_query="What is the Borealis warranty?",
        ),
        tool_calls=(
            ToolCall("search", '{"query":"aurora"}', "error", "TimeoutError: slow", 0.5, "c1"),
            ToolCall("search", '{"query":"borealis"}', duration_s=0.25, call_id="c2"),
        ),
        llm_calls=3,
    )
    return WorkItem(record, ("groundedness",), ())


def test_an_agent_turn_round_trips_with_its_conversation_and_tool_calls() -> None:
    item = agent_item()
    assert decode_item(encode_item(item)) == item


def test_a_plain_record_is_written_without_the_conversation_keys() -> None:
    doc = json.loads(encode_item(full_item()))
    assert not {"conversation", "tool_calls", "llm_calls"} & set(doc["record"])
    assert not {"query", "step", "retrieval", "used"} & set(doc["record"]["chunks"][0])


def test_a_chunk_written_before_used_was_known_reads_as_not_known() -> None:
    doc = json.loads(encode_item(agent_item()))
    for chunk in doc["record"]["chunks"]:
        del chunk["retrieval"], chunk["used"]
    chunks = decode_item(json.dumps(doc)).record.chunks
    assert [(c.id, c.retrieval, c.used) for c in chunks] == [
        ("kb-2", None, None),
        ("kb-1", None, None),
    ]
    doc["record"]["chunks"][0]["used"] = "yes"
    with pytest.raises(CodecError) as caught:
        decode_item(json.dumps(doc))
    assert caught.value.reason == "schema"


def test_a_bad_tool_call_status_is_refused() -> None:
    doc = json.loads(encode_item(agent_item()))
    doc["record"]["tool_calls"][0]["status"] = "maybe"
    with pytest.raises(CodecError) as caught:
        decode_item(json.dumps(doc))
    assert caught.value.reason == "schema"


def test_the_payload_is_versioned_json_never_pickle() -> None:
    doc = json.loads(encode_item(full_item()))
    assert doc["v"] == SCHEMA_VERSION
    assert doc["record"]["chunks"][0]["metadata"] == {"page": 3, "tags": ["a"]}


def test_odd_values_are_written_safely() -> None:
    record = RagRecord(
        "ab" * 16, "cd" * 8, "bad \ud800 surrogate", attributes={"obj": object(), "nan": 1.5},
        chunks=(Chunk("x", score=float("nan")),),
    )  # fmt: skip
    back = decode_item(encode_item(WorkItem(record, ("looping",)))).record
    assert back.query is not None
    assert back.query.startswith("bad \ufffd") and back.query.endswith(" surrogate")
    assert back.chunks[0].score is None
    assert back.attributes["obj"].startswith("<object object")


def test_a_megabyte_record_round_trips() -> None:
    record = RagRecord("ab" * 16, "cd" * 8, "q", response="é" * 1_000_000)
    assert decode_item(encode_item(WorkItem(record, ()))).record.response == "é" * 1_000_000


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\x80\x81 not json", "not_json"),
        (b"", "not_json"),
        (b"[1, 2]", "schema"),
        (b'{"v": 2, "record": {}}', "version"),
        (b'{"record": {}}', "version"),
        (b'{"v": 1}', "schema"),
        (b'{"v": 1, "record": {"trace_id": 5, "span_id": "x", "app": "a"}}', "schema"),
        (
            b'{"v": 1, "record": {"trace_id": "t", "span_id": "s", "app": "a", "status": "odd"}}',
            "schema",
        ),
        (
            b'{"v": 1, "record": {"trace_id": "t", "span_id": "s", "app": "a"}, "evaluators": [1]}',
            "schema",
        ),
    ],
)
def test_bad_payloads_are_refused_with_a_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(CodecError) as caught:
        decode_item(payload)
    assert caught.value.reason == reason


def test_a_minimal_document_decodes_with_defaults() -> None:
    item = decode_item(b'{"v": 1, "record": {"trace_id": "t", "span_id": "s", "app": "a"}}')
    assert item == WorkItem(RagRecord("t", "s", None, app="a"), ())


def nested(depth: int) -> bytes:
    """A work item whose record attributes nest ``depth`` levels deep."""
    doc = json.loads(encode_item(full_item()))
    doc["record"]["attributes"] = {"deep": "@@"}
    deep = '{"d":' * depth + '"bottom"' + "}" * depth  # past what json.dumps itself can write
    return json.dumps(doc).replace('"@@"', deep).encode()


@pytest.mark.parametrize("depth", [40, 5000], ids=["past-the-bound", "past-the-parser"])
def test_a_deeply_nested_payload_is_refused_at_once(depth: int) -> None:
    with pytest.raises(CodecError) as refused:
        decode_item(nested(depth))
    assert refused.value.reason == "too_deep"


def test_nesting_within_the_bound_decodes() -> None:
    assert decode_item(nested(20)).record.attributes["deep"]["d"]["d"]


def test_a_payload_past_the_size_bound_is_refused_before_it_is_parsed() -> None:
    payload = encode_item(full_item())
    with pytest.raises(CodecError) as refused:
        decode_item(payload, max_bytes=len(payload) - 1)
    assert refused.value.reason == "too_large"
    assert decode_item(payload, max_bytes=len(payload)).record.trace_id == "ab" * 16


def test_the_idempotency_key_round_trips() -> None:
    item = WorkItem(full_item().record, ("looping",), key="9f2c00aa11bb22cc")
    assert decode_item(encode_item(item)).key == "9f2c00aa11bb22cc"
    assert decode_item(encode_item(full_item())).key is None
    doc = json.loads(encode_item(item))
    doc["key"] = 7
    with pytest.raises(CodecError, match="key"):
        decode_item(json.dumps(doc).encode())
