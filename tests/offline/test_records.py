"""Reading JSON Lines into records: the field mapping, every kind of bad line, the line cap."""

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest

from ragtrace._model import Chunk
from ragtrace._offline.records import (
    DEFAULT_APP,
    Line,
    LineError,
    RecordParser,
    count_lines,
    read_lines,
)


def parse(text: str | bytes, *, require_response: bool = True, warnings: list[str] | None = None):  # type: ignore[no-untyped-def]
    data = text.encode() if isinstance(text, str) else text
    parser = RecordParser(
        require_response=require_response, warn=None if warnings is None else warnings.append
    )
    return parser.parse(Line(7, data))


def refused(text: str | bytes, **options: bool) -> str:
    with pytest.raises(LineError) as caught:
        parse(text, **options)
    return str(caught.value)


def test_maps_every_field() -> None:
    line = {
        "id": "q-1",
        "query": "How long?",
        "contexts": [
            "plain chunk",
            {
                "text": "rich chunk",
                "id": 42,
                "score": 0.5,
                "metadata": {"url": "u"},
                "source": "bm25",
            },
        ],
        "response": "30 days.",
        "reference": "Thirty days.",
        "app": "help",
        "model": "gpt-x",
        "error": "boom",
        "metadata": {"tenant": "t1"},
    }
    got = parse(json.dumps(line))
    assert got is not None
    assert (got.line, got.id) == (7, "q-1")
    r = got.record
    digest = hashlib.sha256(b"q-1").hexdigest()
    assert (r.trace_id, r.span_id) == (digest[:32], digest[32:48])
    assert r.query == "How long?"
    assert r.chunks == (
        Chunk("plain chunk"),
        Chunk("rich chunk", id="42", score=0.5, metadata={"url": "u"}, source="bm25"),
    )
    assert (r.response, r.reference, r.app, r.model, r.error) == (
        "30 days.", "Thirty days.", "help", "gpt-x", "boom"
    )  # fmt: skip
    assert dict(r.attributes) == {"tenant": "t1", "id": "q-1"}


def test_defaults_and_integer_id() -> None:
    got = parse('{"id": 12, "response": null}')
    assert got is not None
    assert got.id == "12"
    r = got.record
    assert (r.query, r.chunks, r.response, r.reference, r.app, r.model) == (
        None, (), None, None, DEFAULT_APP, None
    )  # fmt: skip


def test_blank_line_is_none() -> None:
    assert parse("   \r\n") is None
    assert parse("") is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json", "invalid JSON: Expecting value at column 1"),
        ('{"id": "a", "response": "x"', "invalid JSON: Expecting ',' delimiter at column 28"),
        ("[1, 2]", "expected a JSON object, got an array"),
        ('"text"', 'expected a JSON object, got a string ("text")'),
        ("null", "expected a JSON object, got null"),
        ('{"response": "x"}', "missing 'id'"),
        ('{"id": "", "response": "x"}', "'id' is empty"),
        ('{"id": true, "response": "x"}', "'id' must be a string or integer, got a boolean (true)"),
        ('{"id": 1.5, "response": "x"}', "'id' must be a string or integer, got a number (1.5)"),
        ('{"id": "a"}', "missing 'response' (an evaluator that needs it was asked for)"),
        ('{"id": "a", "response": 3}', "'response' must be a string or null, got a number (3)"),
        (
            '{"id": "a", "response": "x", "query": ["q"]}',
            "'query' must be a string or null, got an array",
        ),
        (
            '{"id": "a", "response": "x", "contexts": "c"}',
            "'contexts' must be a list, got a string (\"c\")",
        ),
        (
            '{"id": "a", "response": "x", "contexts": [1]}',
            "'contexts[0]' must be a string or an object, got a number (1)",
        ),
        (
            '{"id": "a", "response": "x", "contexts": ["ok", {"id": "k"}]}',
            "'contexts[1].text' must be a string, got null",
        ),
        (
            '{"id": "a", "response": "x", "contexts": [{"text": "t", "score": "high"}]}',
            "'contexts[0].score' must be a finite number, got a string (\"high\")",
        ),
        (
            '{"id": "a", "response": "x", "contexts": [{"text": "t", "score": NaN}]}',
            "'contexts[0].score' must be a finite number, got a number (NaN)",
        ),
        (
            '{"id": "a", "response": "x", "contexts": [{"text": "t", "id": [1]}]}',
            "'contexts[0].id' must be a string or integer, got an array",
        ),
        (
            '{"id": "a", "response": "x", "contexts": [{"text": "t", "metadata": 1}]}',
            "'contexts[0].metadata' must be an object, got a number (1)",
        ),
        (
            '{"id": "a", "response": "x", "app": ""}',
            "'app' must be a non-empty string, got a string (\"\")",
        ),
        (
            '{"id": "a", "response": "x", "metadata": []}',
            "'metadata' must be an object, got an array",
        ),
        ("[" * 100_000, "invalid JSON: nested too deeply"),
    ],
)
def test_refuses_bad_lines_with_the_reason(text: str, reason: str) -> None:
    assert refused(text) == reason


def test_response_key_needed_only_when_an_evaluator_needs_it() -> None:
    got = parse('{"id": "a", "query": "q"}', require_response=False)
    assert got is not None and got.record.response is None


def test_non_utf8_is_refused_but_json_escaped_surrogates_are_kept() -> None:
    assert refused(b'{"id": "a", "response": "caf\xe9"}') == (
        "not valid UTF-8 (byte 29 of the line: invalid continuation byte)"
    )
    got = parse('{"id": "a", "response": "half \\ud800 pair"}')
    assert got is not None and got.record.response == "half \ud800 pair"


def test_unknown_fields_are_reported_once_with_a_suggestion() -> None:
    warnings: list[str] = []
    parser = RecordParser(require_response=False, warn=warnings.append)
    for n in range(3):
        parser.parse(
            Line(n, b'{"id": "a", "contxts": [], "contexts": [{"text": "t", "scroe": 1}]}')
        )
    assert warnings == [
        "unknown field 'contxts' ignored (did you mean 'contexts'?); known: id, query, contexts, "
        "response, reference, app, model, error, metadata, prompt_version",
        "unknown field 'contexts[].scroe' ignored (did you mean 'contexts[].score'?); known: "
        "text, id, score, metadata, source, used",
    ]


def test_read_lines_numbers_lines_and_strips_a_bom() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\n\n{"b": 2}\r\nlast without newline'
    assert list(read_lines(io.BytesIO(data))) == [
        Line(1, b'{"a": 1}\n'),
        Line(2, b"\n"),
        Line(3, b'{"b": 2}\r\n'),
        Line(4, b"last without newline"),
    ]


def test_read_lines_drops_long_lines_without_keeping_them() -> None:
    cap = 10
    data = b"0123456789\n" + b"x" * 11 + b"\n" + b"y" * 5000 + b"\nok\n" + b"z" * 11
    got = list(read_lines(io.BytesIO(data), max_bytes=cap))
    # Exactly `cap` bytes plus the newline is allowed; longer ones (also at EOF) are dropped.
    assert got == [
        Line(1, b"0123456789\n"),
        Line(2, None),
        Line(3, None),
        Line(4, b"ok\n"),
        Line(5, None),
    ]
    parser = RecordParser(require_response=False, max_line_bytes=cap)
    with pytest.raises(LineError, match="line longer than the limit of 10 bytes"):
        parser.parse(got[1])


def test_count_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\n")
    assert count_lines(str(path)) == 2
    path.write_bytes(b"a\nb")
    assert count_lines(str(path)) == 2
    path.write_bytes(b"")
    assert count_lines(str(path)) == 0
    assert count_lines(str(tmp_path / "missing")) is None
    assert count_lines(str(tmp_path)) is None
    read, write = os.pipe()
    os.write(write, b"a\n")
    assert count_lines(f"/dev/fd/{read}") is None  # a pipe is never read ahead
    assert os.read(read, 10) == b"a\n"
    os.close(read)
    os.close(write)


def test_a_context_may_say_whether_the_answer_saw_it() -> None:
    line = {"id": "q", "response": "r", "contexts": [{"text": "a", "used": True}, "b"]}
    got = parse(json.dumps(line))
    assert got is not None and [c.used for c in got.record.chunks] == [True, None]
    line["contexts"] = [{"text": "a", "used": "yes"}]
    assert (
        refused(json.dumps(line))
        == "'contexts[0].used' must be true, false or null, got a string (\"yes\")"
    )
