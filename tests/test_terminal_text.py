"""Names from outside reach a terminal escaped: ``printable`` writes every C0/C1 control
character as ``\\xNN``, and ``ragtrace review list/show``, ``ragtrace report`` and ``ragtrace
eval`` print app, evaluator, system and session names through it."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from pathlib import Path

import pytest

from ragtrace._model import Conversation
from ragtrace._network.terminal import printable
from ragtrace._offline.cli import main as eval_main
from ragtrace._report.cli import main as report_main
from ragtrace.review._cli import add_parser, run
from ragtrace.review._store import open_store
from tests.report.lines import line, score, write_lines
from tests.review.conftest import make_item

EVIL = "\x1b[31mevil\r\x9b2J"
ESCAPED = "\\x1b[31mevil\\x0d\\x9b2J"


def assert_escaped(text: str) -> None:
    assert ESCAPED in text
    assert not any(c in text for c in "\x1b\r\x9b"), repr(text)


@pytest.mark.parametrize(
    ("text", "keep", "shown"),
    [
        (EVIL, "", ESCAPED),
        ("a\nb\tc", "", "a\\x0ab\\x09c"),
        ("a\nb\tc\r", "\n", "a\nb\\x09c\\x0d"),
        ("a\nb\tc", "\n\t", "a\nb\tc"),
        ("\x00\x07\x7f\x80\x9f", "", "\\x00\\x07\\x7f\\x80\\x9f"),
        ("café ☕ 東京 \u00a0", "", "café ☕ 東京 \u00a0"),  # printable text as it is
        (42, "", "42"),
    ],
)
def test_printable_escapes_control_characters(text: object, keep: str, shown: str) -> None:
    assert printable(text, keep) == shown


def review(db: Path, *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="ragtrace")
    add_parser(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    args = parser.parse_args(["review", argv[0], "--db", str(db), *argv[1:]])
    assert run(args, out, err) == 0, err.getvalue()
    return out.getvalue()


def test_review_list_and_show_escape_names(tmp_path: Path) -> None:
    db = tmp_path / "review.db"
    item = make_item(1, app=EVIL, reasons=(EVIL,), query=f"Where is {EVIL}?")
    conversation = Conversation(session_id=EVIL, user_id=EVIL, turn=0)
    with open_store(str(db)) as store:
        item_id = store.enqueue(dataclasses.replace(item, conversation=conversation, model=EVIL))
    listed = review(db, "list")
    assert_escaped(listed)
    assert f"[{ESCAPED}] Where is \\x1b[31mevil \\x9b2J?" in listed  # \r: blank, as any space
    shown = review(db, "show", str(item_id))
    assert_escaped(shown)
    assert f"app {ESCAPED}  model {ESCAPED}" in shown
    assert f"session {ESCAPED}  user {ESCAPED}" in shown
    assert "\nQuestion:\n" in shown  # the layout's own newlines stay
    assert json.loads(review(db, "list", "--json"))["app"] == EVIL  # JSON: escaped its own way


def test_report_escapes_system_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        line(system, case, [score("faithfulness", value)])
        for system, values in ((EVIL, (0.9, 0.95, 0.8)), ("plain", (0.2, 0.3, 0.1)))
        for case, value in zip(("q1", "q2", "q3"), values, strict=True)
    ]
    scores = write_lines(tmp_path / "scores.jsonl", rows)
    assert report_main([str(scores), "--resamples", "50"]) == 0
    printed = capsys.readouterr().out
    assert_escaped(printed)
    assert f"{ESCAPED} is better than plain on faithfulness" in printed


def test_eval_summary_escapes_system_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "in.jsonl"
    rows = [
        {"id": "r1", "query": "q", "model": EVIL, "response": "The sky. The sky. Grass."},
        {"id": "r2", "query": "q", "model": "plain", "response": "Hi there."},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert eval_main(["-i", str(cases), "-o", str(out), "-e", "looping", "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert_escaped(printed.out + printed.err)
    assert f"| {ESCAPED} | looping.unique_sentences" in printed.out + printed.err
