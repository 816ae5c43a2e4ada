"""Configuration mistakes stop ``ragtrace worker`` and ``ragtrace ingest`` at start, each with a
message that names the mistake and the fix: evaluators that need options given on
``--evaluators``, unknown evaluators, misspelled queue options, a review store that cannot be
opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._cli import main
from ragtrace._worker.evaluator_names import named_evaluators

QUEUE = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--queue", QUEUE],
        ["ingest", "--listen", "127.0.0.1:0"],
    ],
    ids=["worker", "ingest"],
)
def test_an_evaluator_that_needs_options_names_them_and_where_to_set_them(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--evaluators", "looping,tokens_presence"]) == 2
    said = capsys.readouterr().err
    assert "--evaluators tokens_presence" in said
    assert "`constraints` or `expression`" in said  # the options it needs
    assert "--config FILE" in said and "name: tokens_presence" in said  # where to give them


@pytest.mark.parametrize("command", [["worker", "--queue", QUEUE], ["ingest"]])
def test_an_unknown_evaluator_lists_the_known_ones(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--evaluators", "groundednes"]) == 2
    said = capsys.readouterr().err
    assert "unknown evaluator 'groundednes'" in said and "groundedness" in said


@pytest.mark.parametrize(
    "command",
    [["worker"], ["ingest", "--listen", "127.0.0.1:0", "--evaluators", "looping"]],
    ids=["worker", "ingest"],
)
def test_a_misspelled_queue_option_stops_the_start(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:  # the flag's value is refused as it is read
        main([*command, "--queue", QUEUE + "?max_backlg=50000"])
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert "unknown option 'max_backlg' (did you mean 'max_backlog'?)" in said
    assert len(said.strip().splitlines()) == 1, said  # one line, no usage block


def test_named_evaluators_build_each_with_its_defaults() -> None:
    built = named_evaluators(("looping", "sensitive_data"))
    assert [e.name for e in built] == ["looping", "sensitive_data"]


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--queue", QUEUE, "--evaluators", "looping"],
        ["ingest", "--listen", "127.0.0.1:0", "--evaluators", "looping"],
    ],
    ids=["worker", "ingest"],
)
def test_a_review_store_that_cannot_be_opened_stops_the_start_with_one_line(
    command: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    where = str(tmp_path / "a-file" / "review.db")
    monkeypatch.setenv("RAGTRACE_REVIEW_DB", where)  # the option, not the flag
    assert main(command) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"ragtrace {command[0]}: review_db: cannot open {where!r} ("), said
    assert len(said.strip().splitlines()) == 1, said
