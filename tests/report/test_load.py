"""Reading scores files: bad lines reported and counted, odd bytes survived, old lines accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrace._report.build import build_report
from ragtrace._report.load import TEXT_CHARS, ScoresFileError, load_scores
from tests.report.lines import line, score, two_systems, write_lines


def old_line(record_id: str, value: float, **extra: object) -> dict[str, object]:
    """A line as `ragtrace eval` wrote it before system/case/perturbation/record existed."""
    return {"id": record_id, "scores": [score("faithfulness", value)], "skipped": [], **extra}


def test_the_schema_lines_load_as_written(tmp_path: Path) -> None:
    loaded = load_scores([write_lines(tmp_path / "s.jsonl", two_systems())])
    assert loaded.problems == 0 and loaded.bad_lines == 0
    typos = [r for r in loaded.rows if r.perturbation == "typos"]
    assert {(r.system, r.case, r.id) for r in typos} == {
        ("model-b", "q2", "q2~typos"),
        ("model-b", "q1", "q1~typos"),
    }
    first = loaded.rows[0]
    assert (first.system, first.case, first.name, first.value, first.passed) == (
        "model-a", "q1", "faithfulness", 0.9, True
    )  # fmt: skip
    assert first.record.query == "question q1" and first.direction == "higher_is_better"
    assert loaded.files[0].records == 10 and loaded.files[0].lines == 10


def test_bad_lines_are_reported_with_their_number_and_counted(tmp_path: Path) -> None:
    good = line("a", "q1", [score("faithfulness", 0.8)])
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            good,
            "{not json",
            "[1, 2]",
            json.dumps({"scores": []}),  # no id
            json.dumps({"id": "q9"}),  # no scores
            "",
            json.dumps(good),  # the same (system, id) again
            json.dumps(line("a", "q2", [score("faithfulness", 0.5), {"value": 1}, "junk"])),
            '{"id": "q3", "system": "a", "scores": [{"name": "faithfulness", "value": NaN}]}',
            json.dumps(line("a", "q4", [{"name": "faithfulness", "value": "high"}])),
            "x" * 2000,  # past the cap below
        ],
    )
    loaded = load_scores([path], max_line_bytes=1500)
    assert [(r.case, r.value) for r in loaded.rows] == [("q1", 0.8), ("q2", 0.5)]
    assert loaded.bad_lines == 6  # lines 2, 3, 4, 5, 7, 11
    assert loaded.files[0].blank_lines == 1 and loaded.files[0].records == 4
    by_line = {m.split(": ")[0].rsplit(":", 1)[1]: m for m in loaded.messages}
    assert set(by_line) == {"2", "3", "4", "5", "7", "8", "9", "10", "11"}
    assert "invalid JSON" in by_line["2"] and "longer than 1,500 bytes" in by_line["11"]
    assert "duplicate id 'q1' for system 'a'" in by_line["7"]
    assert "not a finite number" in by_line["9"] and "not a finite number" in by_line["10"]
    assert loaded.problems == 10  # 6 bad lines + 2 bad scores on line 8 + 1 each on 9, 10


def test_an_empty_file_gives_an_empty_report(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    loaded = load_scores([path])
    assert loaded.rows == [] and loaded.problems == 0
    report = build_report(loaded)
    assert report["scores"] == [] and report["headline"] == [] and report["systems"] == []


def test_non_utf8_bytes_are_replaced_and_the_line_kept(tmp_path: Path) -> None:
    raw = json.dumps(line("a", "q1", [score("faithfulness", 0.8)], response="caf\u00e9"))
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(raw.encode("ascii").replace(b"caf\\u00e9", b"caf\xe9") + b"\n")
    loaded = load_scores([path])
    (row,) = loaded.rows
    assert row.record.response == "caf\ufffd"
    assert loaded.bad_lines == 0 and "not valid UTF-8" in loaded.messages[0]


def test_lone_surrogates_and_huge_texts_become_safe(tmp_path: Path) -> None:
    data = line("a", "q1", [score("faithfulness", 0.8)], response="x" * (TEXT_CHARS + 50))
    text = json.dumps(data).replace('"query": "question q1"', '"query": "bad \\ud800 half"')
    loaded = load_scores([write_lines(tmp_path / "s.jsonl", [text])])
    (row,) = loaded.rows
    assert row.record.query == "bad ? half"
    assert row.record.response == "x" * TEXT_CHARS + "…"


def test_old_lines_without_the_new_fields_still_load(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "old.jsonl", [old_line("q1", 0.9), old_line("q2", 0.3)])
    loaded = load_scores([path])
    assert [(r.system, r.case, r.id, r.perturbation) for r in loaded.rows] == [
        ("default", "q1", "q1", None),
        ("default", "q2", "q2", None),
    ]
    assert loaded.rows[0].record.query is None and loaded.problems == 0


def test_old_files_one_per_system_are_told_apart_by_file_name(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "prompt-v1.jsonl", [old_line("q1", 0.9)])
    b = write_lines(tmp_path / "prompt-v2.jsonl", [old_line("q1", 0.5)])
    c = write_lines(tmp_path / "third.jsonl", [old_line("q1", 0.1, model="gpt-x")])
    loaded = load_scores([a, b, c])
    assert [(r.system, r.case) for r in loaded.rows] == [
        ("prompt-v1", "q1"),
        ("prompt-v2", "q1"),
        ("gpt-x", "q1"),  # a line's own model wins over the file name
    ]


def test_an_unreadable_file_raises(tmp_path: Path) -> None:
    with pytest.raises(ScoresFileError, match="cannot read"):
        load_scores([tmp_path / "missing.jsonl"])
    with pytest.raises(ScoresFileError, match="cannot read"):
        load_scores([tmp_path])  # a directory
