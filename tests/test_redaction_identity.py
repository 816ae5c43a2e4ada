"""Side doors of redaction: identities that stay distinct, loud duplicate ids in reports,
error bodies and logs through the policy, queue names printed safely.

- An id redacted by a built-in policy keeps a keyed hash of what it replaced
  (``<EMAIL_ADDRESS:1f3a9c2e>``), so two ids stay two; free text keeps ``<EMAIL_ADDRESS>``.
- ``ragtrace report`` ends with one warning line when it skipped duplicate ids.
- The OTLP receivers' error bodies and ``Diagnostics``' log lines go through the policy.
- ``ragtrace queue stats`` writes a stream name's control characters as ``\\xNN``.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import io
import json
import logging
import pickle
import re
import urllib.parse
from pathlib import Path

import pytest

from ragtrace._diagnostics import Diagnostics
from ragtrace._ingest.decode import DecodedSpans
from ragtrace._ingest.receiver import Acceptance, OtlpReceiver, ReceiverOptions
from ragtrace._model import Chunk, Conversation, RagRecord
from ragtrace._redaction import Redaction, redaction
from ragtrace._redaction.policy import KEY_VARIABLE
from ragtrace._report import cli as report_cli
from ragtrace._semconv import SESSION_ID
from tests.components import require_module
from tests.ingest.otlp_bodies import SpanSpec, as_json
from tests.report.lines import line, score, write_lines

ALICE = "alice.canary@corp.example"
BOB = "bob.canary@corp.example"
HASHED = re.compile(r"<EMAIL_ADDRESS:[0-9a-f]{8}>")


def suffix(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()[:8]


def turn(chunk_ids: tuple[str, ...], user_id: str | None = None) -> RagRecord:
    return RagRecord(
        "a" * 32,
        "b" * 16,
        query=f"orders of {ALICE}?",
        chunks=tuple(Chunk(f"mail {ALICE}", id=i) for i in chunk_ids),
        response=f"write to {BOB}",
        conversation=Conversation(session_id="thread-9", user_id=user_id),
        attributes={"id": f"case {ALICE}", SESSION_ID: f"s {BOB}"},
    )


# -- identities ---------------------------------------------------------------------------


def test_distinct_ids_stay_distinct_and_equal_ids_equal() -> None:
    policy = Redaction("pii", key=b"k1")
    out = policy.record(turn((f"doc {ALICE}", f"doc {BOB}", f"doc {ALICE}"), user_id=ALICE))
    ids = [c.id for c in out.chunks]
    assert ids[0] == f"doc <EMAIL_ADDRESS:{suffix(b'k1', ALICE)}>"
    assert ids[1] == f"doc <EMAIL_ADDRESS:{suffix(b'k1', BOB)}>"
    assert ids[0] != ids[1] and ids[0] == ids[2]
    assert out.conversation is not None
    assert out.conversation.user_id == f"<EMAIL_ADDRESS:{suffix(b'k1', ALICE)}>"
    assert out.attributes["id"] == f"case <EMAIL_ADDRESS:{suffix(b'k1', ALICE)}>"
    assert out.attributes[SESSION_ID] == f"s <EMAIL_ADDRESS:{suffix(b'k1', BOB)}>"
    assert ALICE not in repr(out) and BOB not in repr(out)


def test_free_text_keeps_the_plain_placeholder() -> None:
    out = Redaction("pii", key=b"k1").record(turn((ALICE,)))
    assert out.query == "orders of <EMAIL_ADDRESS>?"
    assert out.response == "write to <EMAIL_ADDRESS>"
    assert out.chunks[0].text == "mail <EMAIL_ADDRESS>"
    assert redaction("pii").text(ALICE) == "<EMAIL_ADDRESS>"


def test_the_suffix_depends_on_the_key_and_the_variable_sets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = Redaction("pii", key="one"), Redaction("pii", key="two")
    assert HASHED.fullmatch(one.identity(ALICE)) and HASHED.fullmatch(two.identity(ALICE))
    assert one.identity(ALICE) != two.identity(ALICE)
    monkeypatch.setenv(KEY_VARIABLE, "one")
    assert Redaction("pii").identity(ALICE) == one.identity(ALICE)
    monkeypatch.delenv(KEY_VARIABLE)
    here = Redaction("pii")  # a random key per process: stable within it
    assert here.identity(ALICE) == Redaction("pii").identity(ALICE)
    assert pickle.loads(pickle.dumps(one)).identity(ALICE) == one.identity(ALICE)


@pytest.mark.parametrize("name", ["pii", "secrets"])
def test_identities_stay_idempotent(name: str) -> None:
    # a hash may look like a number, ``<PASSWORD:`` like a password's label: never found again
    texts = [ALICE, "password: Hunter2!x", "pg://bob:s3cr3t99@db.example.com", "+1 555 010 9999"]
    for key in range(200):
        policy = Redaction(name, key=str(key))
        for text in texts:
            once = policy.identity(f"{key} {text}")
            assert policy.identity(once) == once and policy.text(once) == once
            assert Redaction(name, key="other").identity(once) == once


def test_a_function_policy_applies_itself_to_ids() -> None:
    policy = Redaction(lambda s: s.replace("alice", "X"))
    assert policy.identity(ALICE) == policy.text(ALICE) == "X.canary@corp.example"


# -- report ---------------------------------------------------------------------------------


def test_report_warns_once_on_duplicate_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = line("a", "<EMAIL_ADDRESS>", [score("faithfulness", 0.9)])
    again = line("a", "<EMAIL_ADDRESS>", [score("faithfulness", 0.1)])
    other = line("a", "q2", [score("faithfulness", 0.5)])
    path = write_lines(tmp_path / "scores.jsonl", [first, again, other, again])
    out = tmp_path / "report.json"
    assert report_cli.main([str(path), "--json", str(out), "--quiet"]) == 0
    warnings = [w for w in capsys.readouterr().err.splitlines() if "warning:" in w]
    assert len(warnings) == 1
    assert f"2 duplicate id(s) skipped (2 in {path})" in warnings[0]
    assert "may collide" in warnings[0] and KEY_VARIABLE in warnings[0]
    files = json.loads(out.read_text())["input"]["files"]
    assert [(f["duplicate_ids"], f["records"]) for f in files] == [(2, 2)]


def test_report_without_duplicates_has_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "s.jsonl", [line("a", "q1", [score("faithfulness", 0.9)])])
    assert report_cli.main([str(path), "--quiet"]) == 0
    assert "duplicate" not in capsys.readouterr().err


# -- error bodies and logs --------------------------------------------------------------------


def refused(redact: Redaction | None, body: bytes) -> tuple[int, str]:
    def accept(decoded: DecodedSpans) -> Acceptance:
        return Acceptance(True)

    rx = OtlpReceiver(
        ReceiverOptions(port=0),
        accept,
        lambda outcome, spans: None,
        redact=None if redact is None else redact.text,
    )
    rx.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=10)
        conn.request("POST", "/v1/traces", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        status, data = response.status, response.read()
        conn.close()
    finally:
        rx.close()
    return status, json.loads(data)["message"]


def test_an_ingest_error_body_quoting_a_field_is_redacted() -> None:
    span = {"traceId": "0" * 31 + "1", "spanId": "0" * 15 + "a", "startTimeUnixNano": ALICE}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    status, message = refused(None, body)
    assert status == 400 and ALICE in message  # what the policy is there for
    status, message = refused(redaction("pii"), body)
    assert status == 400 and ALICE not in message
    assert "startTimeUnixNano" in message and "<EMAIL_ADDRESS>" in message


def test_an_invalid_id_error_naming_the_span_is_redacted() -> None:
    body = as_json([SpanSpec(1, 0, name=f"lookup {ALICE}")])
    status, message = refused(redaction("pii"), body)
    assert status == 400 and ALICE not in message and "lookup <EMAIL_ADDRESS>" in message


def test_a_grpc_invalid_id_status_naming_the_span_is_redacted() -> None:
    grpc = require_module("grpc", "pip install -e '.[ingest]'")
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

    from ragtrace._ingest.grpc_receiver import METHOD, SERVICE, OtlpGrpcReceiver
    from tests.ingest.otlp_bodies import export_request

    rx = OtlpGrpcReceiver(
        ReceiverOptions(port=0),
        lambda decoded: Acceptance(True),
        lambda outcome, spans: None,
        redact=redaction("pii").text,
    )
    rx.start()
    try:
        with grpc.insecure_channel(rx.endpoint) as channel:
            export = channel.unary_unary(
                f"/{SERVICE}/{METHOD}",
                request_serializer=pb.ExportTraceServiceRequest.SerializeToString,
                response_deserializer=pb.ExportTraceServiceResponse.FromString,
            )
            with pytest.raises(grpc.RpcError) as refused:
                export(export_request([SpanSpec(1, 0, name=f"lookup {ALICE}")]), timeout=5)
    finally:
        rx.close()
    error = refused.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert ALICE not in error.details() and "lookup <EMAIL_ADDRESS>" in error.details()


def test_diagnostics_log_an_error_quoting_input_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    diagnostics = Diagnostics(redact=redaction("pii").text)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        try:
            raise ValueError(f"cannot parse {ALICE}")
        except ValueError as exc:
            diagnostics.error("capture", exc)
        diagnostics.error("ingest", f"bad span name {BOB}")
    logged = caplog.text
    assert ALICE not in logged and BOB not in logged
    assert "ValueError('cannot parse <EMAIL_ADDRESS>')" in logged
    assert "'bad span name <EMAIL_ADDRESS>'" in logged
    assert diagnostics.counts() == {"capture": 1, "ingest": 1}


def test_diagnostics_with_a_failing_policy_log_the_type_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("policy down")

    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        Diagnostics(redact=broken).error("capture", ValueError(ALICE))
    assert ALICE not in caplog.text and "ValueError (not logged" in caplog.text


# -- queue stats ------------------------------------------------------------------------------


def test_queue_stats_print_a_stream_name_escaped(tmp_path: Path) -> None:
    from ragtrace._worker.cli import run_queue
    from tests.redis_server import run_redis

    stream = "ragtrace\x1b[31m:work"
    with run_redis(tmp_path / "redis") as server:
        url = f"{server.url}?stream={urllib.parse.quote(stream)}"
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(queue=url, queue_command="stats")
        assert run_queue(args, out, err) == 0, err.getvalue()
    printed = out.getvalue()
    assert "\x1b" not in printed and "\\u001b" not in printed
    assert json.loads(printed)["stream"] == "ragtrace\\x1b[31m:work"
