"""``ragtrace eval`` over a data set of conversations: the rows of each session are scored
together too, one line per conversation after the rows, which ``ragtrace report`` reads as scores
of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrace._offline.cli import main
from ragtrace._report.load import load_scores
from tests.offline.test_cli import read_jsonl, write_jsonl

ROWS: list[dict[str, Any]] = [
    # chat-1, given out of order: turn 1 before turn 0; every question answered
    {"id": "c1-t1", "session_id": "chat-1", "turn": 1, "query": "How much is a ticket?",
     "response": "A ticket costs 12 euros."},
    {"id": "c1-t0", "session_id": "chat-1", "turn": 0,
     "query": "My name is Ada. When does the museum open?", "response": "It opens at 9 am."},
    # a row of no conversation, and a session of one row (no conversation line: it is the row)
    {"id": "single", "query": "Is there parking?", "response": "Yes, behind the museum."},
    {"id": "solo", "session_id": "chat-3", "query": "Is there parking?", "response": "No."},
    # chat-2: two of three questions refused
    {"id": "c2-t0", "session_id": "chat-2", "turn": 0, "query": "When does it open?",
     "response": "I don't know."},
    {"id": "c2-t1", "session_id": "chat-2", "turn": 1, "query": "How much is a ticket?",
     "response": "A ticket costs 12 euros."},
    {"id": "c2-t2", "session_id": "chat-2", "turn": 2, "query": "Is there parking?",
     "response": "I cannot answer that."},
]  # fmt: skip


def run_eval(tmp_path: Path, rows: list[dict[str, Any]], *extra: str) -> list[dict[str, Any]]:
    src = write_jsonl(tmp_path / "chats.jsonl", rows)
    out = tmp_path / "scores.jsonl"
    assert main(["-i", str(src), "-o", str(out), "-e", "looping", "--no-progress", *extra]) == 0
    return read_jsonl(out)


def test_each_session_gets_a_line_of_conversation_scores(tmp_path: Path) -> None:
    lines = run_eval(tmp_path, ROWS)
    assert [line["id"] for line in lines] == [
        *(row["id"] for row in ROWS),
        "session:chat-1",
        "session:chat-2",
    ]
    sessions = {line["session_id"]: line for line in lines[len(ROWS) :]}
    scores = {(session, s["name"]): s for session, line in sessions.items() for s in line["scores"]}
    completeness = scores[("chat-1", "conversation_completeness")]
    assert (completeness["value"], completeness["passed"]) == (1.0, True)
    completeness = scores[("chat-2", "conversation_completeness")]
    assert completeness["value"] == pytest.approx(1 / 3)
    assert completeness["passed"] is False
    assert [u["turn"] for u in completeness["details"]["unanswered"]] == [0, 2]
    assert sessions["chat-1"]["turns"] == 2
    # no answer_relevance among the evaluators: no conversation_relevancy
    assert not any(name == "conversation_relevancy" for _, name in scores)
    # the turn rows keep their own scores
    assert all(s["evaluator"] == "looping" for line in lines[: len(ROWS)] for s in line["scores"])

    loaded = load_scores([tmp_path / "scores.jsonl"])
    assert loaded.problems == 0
    names = {row.name for row in loaded.rows}
    assert {"conversation_completeness", "looping.unique_sentences"} <= names


def test_session_evaluators_choose_and_a_bad_turn_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGTRACE_SESSION_EVALUATORS", "conversation_completeness")
    lines = run_eval(tmp_path, [*ROWS, {**ROWS[0], "id": "bad", "turn": -1}])
    assert "'turn' must be an integer >= 0" in capsys.readouterr().err
    assert [line["id"] for line in lines][-2:] == ["session:chat-1", "session:chat-2"]
    assert {s["name"] for line in lines[-2:] for s in line["scores"]} == {
        "conversation_completeness"
    }
    assert json.dumps(lines)  # strict JSON throughout
