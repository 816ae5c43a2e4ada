"""``ragtrace eval`` over several systems: a ``model`` field, several input files, --system-key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtrace._offline.output import ELLIPSIS, RECORD_TEXT_CHARS, cut_text
from tests.offline.test_cli import in_process, ragtrace_eval, read_jsonl, write_jsonl

LOOPED = "Loop here. Loop here. Loop here. Loop here."  # unique sentences 1/4: fails at 0.75
FINE = "Refunds take thirty days. Shipping is free."  # 2/2: passes


def answers(model: str | None, responses: list[str], **extra: Any) -> list[dict[str, Any]]:
    rows = []
    for i, response in enumerate(responses):
        row = {"id": f"c{i}", "query": f"question {i}", "response": response, **extra}
        if model is not None:
            row["model"] = model
        rows.append(row)
    return rows


def summary_rows(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["system"], r["name"]): r for r in json.loads(path.read_text())["scores"]}


def table_cells(stdout: str) -> dict[tuple[str, str], list[str]]:
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| system "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0], cells[1]] = cells[2:]
    return rows


def test_model_field_names_the_systems(tmp_path: Path) -> None:
    rows = [
        *answers("gpt-x", [FINE, LOOPED, FINE]),
        *answers("gpt-y", [LOOPED, LOOPED, FINE]),  # same ids: another system
        {"id": "c0", "query": "q", "response": FINE, "model": "gpt-y"},  # duplicate in gpt-y
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--summary-json", summary)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        f"ragtrace eval: {src}:7: duplicate id 'c0' in system 'gpt-y' (first on line 4); "
        "line skipped\n"
    )
    lines = read_jsonl(out)
    assert [(x["system"], x["id"], x["case"], x["perturbation"]) for x in lines] == [
        (m, f"c{i}", f"c{i}", None) for m in ("gpt-x", "gpt-y") for i in range(3)
    ]
    assert lines[1]["record"] == {"query": "question 1", "response": LOOPED, "reference": None}
    by_row = summary_rows(summary)
    name = "looping.unique_sentences"
    assert (by_row["gpt-x", name]["count"], by_row["gpt-x", name]["pass_rate"]) == (
        3, pytest.approx(2 / 3)
    )  # fmt: skip
    assert by_row["gpt-y", name]["pass_rate"] == pytest.approx(1 / 3)
    assert json.loads(summary.read_text())["input"]["duplicate_ids"] == 1
    table = table_cells(proc.stdout)
    assert table["gpt-x", name][:5] == ["looping", "3", "0", "0.750", "66.7%"]  # (1 + 1/4 + 1) / 3
    assert table["gpt-y", name][:5] == ["looping", "3", "0", "0.500", "33.3%"]
    assert proc.stdout.splitlines()[0].startswith("| system ")


def test_several_input_files_are_one_system_each(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "prompt-v1.jsonl", answers("same-model", [FINE, LOOPED]))
    b = write_jsonl(tmp_path / "prompt-v2.jsonl", answers("same-model", [FINE, FINE, FINE]))
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    proc = ragtrace_eval("-i", a, "-i", b, "-o", out, "-e", "looping", "--summary-json", summary)
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(out)
    assert [(x["system"], x["id"]) for x in lines] == [
        ("prompt-v1", "c0"), ("prompt-v1", "c1"),
        ("prompt-v2", "c0"), ("prompt-v2", "c1"), ("prompt-v2", "c2"),
    ]  # fmt: skip
    data = json.loads(summary.read_text())
    assert data["input"]["lines"] == 5 and data["input"]["records"] == 5
    assert summary_rows(summary)["prompt-v2", "looping.unique_sentences"]["pass_rate"] == 1.0
    assert "5 records from 5 lines" in proc.stdout
    # The records' model instead: one system, and now c0 and c1 come twice in it.
    by_model = ragtrace_eval("-i", a, "-i", b, "-o", out, "-e", "looping", "--system-key", "model")
    assert by_model.returncode == 0
    assert by_model.stderr.splitlines() == [
        f"ragtrace eval: {b}:1: duplicate id 'c0' in system 'same-model' (first on {a}:1); "
        "line skipped",
        f"ragtrace eval: {b}:2: duplicate id 'c1' in system 'same-model' (first on {a}:2); "
        "line skipped",
    ]
    assert {x["system"] for x in read_jsonl(out)} == {"same-model"}
    assert by_model.stdout.splitlines()[0].startswith("| score ")  # one system: no column


def test_system_keys_app_and_prompt_version(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "response": FINE, "app": "web", "prompt_version": "v1"},
        {"id": "1", "response": FINE, "app": "mobile", "prompt_version": "v2"},
        {"id": "2", "response": FINE, "app": "web"},  # no prompt_version
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    assert (
        ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--system-key", "app").returncode == 0
    )
    assert [x["system"] for x in read_jsonl(out)] == ["web", "mobile", "web"]
    proc = ragtrace_eval("-i", src, "-o", out, "-e", "looping", "--system-key", "prompt_version")
    assert [x["system"] for x in read_jsonl(out)] == ["v1", "v2"]
    assert proc.stderr == (
        f"ragtrace eval: {src}:3: no 'prompt_version' to name the system by "
        "(--system-key prompt_version); line skipped\n"
    )
    # auto on one file: the model when there is one, else the app.
    mixed = write_jsonl(tmp_path / "m.jsonl", [{"id": "1", "response": FINE, "model": "m1"},
                                               {"id": "1", "response": FINE}])  # fmt: skip
    assert ragtrace_eval("-i", mixed, "-o", out, "-e", "looping").returncode == 0
    assert [x["system"] for x in read_jsonl(out)] == ["m1", "default"]


def test_input_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    a = write_jsonl(tmp_path / "run.jsonl", answers(None, [FINE]))
    b = write_jsonl(tmp_path / "x" / "run.jsonl", answers(None, [FINE]))
    out = tmp_path / "o.jsonl"
    code, err = in_process(capsys, "-i", a, "-i", b, "-o", out, "-e", "looping")
    assert code == 2
    assert err == (
        f"ragtrace eval: --input {a} and --input {b} would both be system 'run': rename one, "
        "or pick --system-key model, app or prompt_version\n"
    )
    assert in_process(capsys, "-i", "-", "-i", "-", "-o", out, "-e", "looping") == (
        2, "ragtrace eval: --input - (stdin) can be read only once\n"
    )  # fmt: skip
    assert in_process(capsys, "-i", a, "-i", b, "-o", b, "-e", "looping")[1] == (
        f"ragtrace eval: --output {b} is the input file\n"
    )
    code, err = in_process(capsys, "-i", a, "-o", out, "-e", "looping", "--system-key", "x")
    assert code == 2 and "argument --system-key: invalid choice: 'x'" in err
    assert not out.exists()


def test_record_texts_are_cut_at_the_limit(tmp_path: Path) -> None:
    long = "word " * 2000
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "1", "query": long, "response": FINE}])
    out = tmp_path / "o.jsonl"
    assert ragtrace_eval("-i", src, "-o", out, "-e", "looping").returncode == 0
    (line,) = read_jsonl(out)
    assert line["record"]["query"] == long[:RECORD_TEXT_CHARS] + ELLIPSIS
    assert line["record"]["response"] == FINE
    assert cut_text(None) is None and cut_text("abc", 3) == "abc" and cut_text("abcd", 3) == "abc…"


def test_compare_generators_example_makes_a_two_system_input(tmp_path: Path) -> None:
    import runpy

    example = Path(__file__).parents[2] / "examples" / "compare_generators.py"
    main = runpy.run_path(str(example))["main"]
    src = tmp_path / "compare.jsonl"
    assert main(["--output", str(src)]) == 0
    rows = read_jsonl(src)
    assert {r["model"] for r in rows} == {"aurora-careful", "aurora-sloppy"}
    answered = [r for r in rows if r["response"]]
    assert answered and all(r["contexts"] and r["contexts"][0]["id"] for r in answered)
    out = tmp_path / "o.jsonl"
    proc = ragtrace_eval("-i", src, "-o", out, "-e", "looping")
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(out)
    assert [x["system"] for x in lines] == [r["model"] for r in rows]
    assert {x["case"] for x in lines if x["system"] == "aurora-careful"} == {
        x["case"] for x in lines if x["system"] == "aurora-sloppy"
    }
