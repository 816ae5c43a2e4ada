"""``ragtrace eval`` over a data set of conversations: the rows of each session are scored
together too, one line per conversation after the rows, which ``ragtrace report`` reads as scores
of their own."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragtrace._model import RagRecord, Score
from ragtrace._offline.cli import main
from ragtrace._offline.loop import EvalLoop
from ragtrace._offline.session_lines import SessionLines
from ragtrace._report.load import load_scores
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._conversation import ConversationCompleteness
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


def chats_of_two_systems() -> list[dict[str, Any]]:
    """Five sessions per system (named by ``model``): session k refuses k of its four questions
    on system a, and none on system b past the first two sessions; a row of no session too."""
    rows: list[dict[str, Any]] = []
    questions = ["My name is Ada. When does it open?", "How much is a ticket?",
                 "Is there parking?", "Can I bring my dog?"]  # fmt: skip
    for model, refusing in (("a", [0, 1, 2, 3, 4]), ("b", [2, 1, 0, 0, 0])):
        for k, refused in enumerate(refusing):
            for turn, query in enumerate(questions):
                answer = "I don't know." if turn < refused else f"Answer {turn}, Ada."
                rows.append({"id": f"chat-{k}-t{turn}", "model": model, "session_id": f"chat-{k}",
                             "turn": turn, "query": query, "response": answer})  # fmt: skip
        rows.append({"id": "single", "model": model, "query": "Open?", "response": "At 9."})
    return rows


def expected_conversations(lines: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The conversations part worked out from the scores file's session lines alone."""
    found: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for line in lines:
        if line["id"].startswith("session:"):
            for s in line["scores"]:
                found.setdefault((line["system"], s["name"]), []).append((line["session_id"], s))
    expected = {}
    for key, scored in found.items():
        assert all(s["direction"] == "higher_is_better" for _, s in scored)
        valued = [(session, s) for session, s in scored if s["error"] is None]
        judged = [s["passed"] for _, s in valued if s["passed"] is not None]
        expected[key] = {
            "sessions": len(valued),
            "mean": sum(s["value"] for _, s in valued) / len(valued) if valued else None,
            "pass_rate": sum(judged) / len(judged) if judged else None,
            "errors": len(scored) - len(valued),
            "worst": [session for session, _ in sorted(valued, key=lambda p: p[1]["value"])][:3],
        }
    return expected


def conversations_table(stdout: str) -> dict[tuple[str, str], list[str]]:
    """The printed conversations part's rows by (system, score), cells stripped."""
    part = stdout.split("conversations (", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in part.splitlines()[3:]:
        system, name, *cells = (c.strip() for c in line.strip("|").split("|"))
        rows[system, name] = cells
    return rows


def test_summary_counts_the_conversations_per_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    summary_path = tmp_path / "summary.json"
    lines = run_eval(tmp_path, chats_of_two_systems(), "--summary-json", str(summary_path))
    expected = expected_conversations(lines)
    assert {name for _, name in expected} == {"knowledge_retention", "conversation_completeness"}
    completeness = expected["a", "conversation_completeness"]
    assert completeness["sessions"] == 5 and 0 < completeness["mean"] < 1
    assert expected["b", "conversation_completeness"]["mean"] != completeness["mean"]

    rows = json.loads(summary_path.read_text())["conversations"]
    assert [(r["system"], r["name"]) for r in rows] == list(expected)
    for row in rows:
        want = expected[row["system"], row["name"]]
        assert row["sessions"] == want["sessions"]
        assert row["errors"] == want["errors"] == 0
        assert row["mean"] == pytest.approx(want["mean"])
        assert row["pass_rate"] == pytest.approx(want["pass_rate"])
        assert [w["session_id"] for w in row["worst"]] == want["worst"]

    printed = conversations_table(capsys.readouterr().out)
    assert list(printed) == list(expected)
    for key, (sessions, mean, pass_rate, _, errors, worst) in printed.items():
        want = expected[key]
        assert (int(sessions), int(errors)) == (want["sessions"], want["errors"])
        assert mean == f"{want['mean']:.3f}"
        assert pass_rate == f"{100 * want['pass_rate']:.1f}%"
        assert worst.split(", ") == want["worst"]


def test_a_run_without_sessions_prints_what_it_printed_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # rows of no session and a session of one row: nothing scored as a conversation
    rows = [row for row in ROWS if row["id"] in ("single", "solo")]
    outputs = []
    for session_evaluators in (None, ""):
        if session_evaluators is not None:  # conversation scoring off: the summary as it was
            monkeypatch.setenv("RAGTRACE_SESSION_EVALUATORS", session_evaluators)
        capsys.readouterr()
        summary_path = tmp_path / "summary.json"
        lines = run_eval(tmp_path, rows, "--summary-json", str(summary_path))
        assert [line["id"] for line in lines] == ["single", "solo"]
        stdout = re.sub(r"; [0-9.]+ s$", "", capsys.readouterr().out.rstrip("\n"))
        outputs.append((stdout, sorted(json.loads(summary_path.read_text()))))
    assert outputs[0] == outputs[1]
    assert "conversations" not in outputs[0][0] and "conversations" not in outputs[0][1]


class FailsOnSomeSessions(ConversationCompleteness):
    """``conversation_completeness`` under another name, failing on the sessions named."""

    name = "completeness_or_error"

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing

    def judge(self, turns: list[RagRecord]) -> Score | None:
        if turns[0].conversation is not None and turns[0].conversation.session_id in self.failing:
            raise RuntimeError("the session cannot be read")
        return super().judge(turns)


def test_a_session_whose_evaluator_failed_counts_as_an_error_not_a_fail() -> None:
    data = "".join(json.dumps(row) + "\n" for row in ROWS).encode()
    sessions = SessionLines([FailsOnSomeSessions({"chat-2"})])
    engine = EvalLoop([registry.create("looping")], progress=False, sessions=sessions)
    sink = io.StringIO()
    try:
        engine.run(io.BytesIO(data), sink)
    finally:
        engine.close()
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    errors = [s["error"] for line in lines[len(ROWS) :] for s in line["scores"]]
    assert errors == [None, "RuntimeError: the session cannot be read"]

    (row,) = engine.summary_json(1.0)["conversations"]
    assert (row["sessions"], row["errors"], row["passed"], row["pass_rate"]) == (1, 1, 1, 1.0)
    assert engine.conversations.errors == 1  # what makes ``ragtrace eval --strict`` exit 1
    assert row["worst"] == [{"session_id": "chat-1", "value": 1.0}]
    printed = engine.conversations.table(with_system=False).splitlines()[2]
    assert [c.strip() for c in printed.strip("|").split("|")] == [
        "completeness_or_error", "1", "1.000", "100.0%", "0.5", "1", "chat-1"
    ]  # fmt: skip


def test_docs_eval_conversations_example_prints_what_the_page_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/eval.md's conversations example, run as written."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "eval.md").read_text(encoding="utf-8")
    section = doc.split("The run's summary then ends with a conversations part", 1)[1]
    records = re.search(r"```json\n(.*?)```", section, re.S)
    printed = re.search(r"```text\n(.*?)```", section, re.S)
    assert records is not None and printed is not None
    rows = [json.loads(line) for line in records.group(1).splitlines()]
    capsys.readouterr()
    lines = run_eval(tmp_path, rows)
    assert [line["id"] for line in lines][-3:] == [
        "session:chat-1",
        "session:chat-2",
        "session:chat-3",
    ]
    assert printed.group(1) in capsys.readouterr().out
