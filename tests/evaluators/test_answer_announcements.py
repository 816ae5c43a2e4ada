"""Lines that only announce what follows ("Here is a summary of the article in 82 words:") are
no claim: the feature detector reads past them (BENCHMARKS.md, "Ninth change")."""

from __future__ import annotations

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._faithfulness.markup import blank_announcements

ARTICLE = (
    "The Harrowgate Town Council on Tuesday approved a $48.6 million operating budget for 2025. "
    "The measure passed by a vote of 5 to 2. The budget includes $4.2 million for resurfacing "
    "roads on the east side. The council raised the property tax rate by 2.1 percent."
)
SUMMARY = (
    "The Harrowgate Town Council approved a $48.6 million operating budget for 2025 by a vote "
    "of 5 to 2. It includes $4.2 million for resurfacing roads on the east side, and the "
    "property tax rate rises by 2.1 percent."
)
CHANGED = SUMMARY.replace("$4.2 million", "$2.4 million")


def summary_record(response: object) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="Summarize the following news article.",
        chunks=(Chunk(text=ARTICLE),),
        response=response,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "line",
    [
        "Here is a summary of the article in 82 words:",
        "Here's the summary within 42 words:",
        "Here\u2019s the summary you requested:",
        "Here are the main points of the article:",
        "Below is a short overview of the budget:",
        "The following is a summary of the news:",
        "Here is an objective overview of Finch & Fork based on the provided structured data:",
    ],
)
def test_an_announcing_line_is_blanked_in_place(line: str) -> None:
    text = f"{line}\n\n{SUMMARY}"
    blanked, found = blank_announcements(text)
    assert found == [line]
    assert len(blanked) == len(text)
    assert blanked.strip() == SUMMARY
    # After a sentence on the same line ("Sure! Here's ...:") only the announcement goes.
    blanked, found = blank_announcements(f"Sure! {line}\n{SUMMARY}")
    assert found == [line]
    assert blanked.startswith("Sure!")


@pytest.mark.parametrize(
    "text",
    [
        SUMMARY,
        "Here is what the council decided: it approved the budget by 5 to 2.",
        "The council said the following: the budget rises.",
        "Here, the council approved the budget.",
        "Here is the budget the council approved in 2025.",
        "",
    ],
)
def test_a_line_that_states_something_stays(text: str) -> None:
    """A colon followed by content on the same line, a sentence without a closing colon, or a
    line that does not open by announcing, is a claim like any other."""
    assert blank_announcements(text) == (text, [])


@pytest.mark.parametrize("value", [None, b"Here is a summary:\n", 42])
def test_odd_inputs_give_text_not_errors(value: object) -> None:
    blanked, found = blank_announcements(value)  # type: ignore[arg-type]
    assert isinstance(blanked, str) and isinstance(found, list)
    assert blank_announcements(None) == ("", [])


def test_a_megabyte_of_announcements_is_read_in_one_pass() -> None:
    text = ("Here is a summary of the article in 82 words:\n" + SUMMARY + "\n") * 4000
    blanked, found = blank_announcements(text)
    assert len(found) == 4000 and len(blanked) == len(text)


def test_the_announcement_is_no_claim_and_is_listed() -> None:
    announced = f"Here is a summary of the article in 37 words:\n\n{SUMMARY}"
    (plain,) = Faithfulness().evaluate(summary_record(SUMMARY))
    (score,) = Faithfulness().evaluate(summary_record(announced))
    assert score.details["calibration"] == "summary"
    assert score.details["markup_ignored"] == ["Here is a summary of the article in 37 words:"]
    assert [c["claim"] for c in score.details["claims"]] == [
        c["claim"] for c in plain.details["claims"]
    ]
    assert score.value == pytest.approx(plain.value)
    assert score.passed


def test_a_changed_number_in_an_announced_summary_is_flagged() -> None:
    """The helper-written summaries showed it: with the announcements read as claims, the
    summary model had learned to pass a summary whose one number contradicts its article."""
    (score,) = Faithfulness().evaluate(
        summary_record(f"Here's the summary within 40 words:\n{CHANGED}")
    )
    assert not score.passed, score.explanation
    assert any("$2.4 million" in c["claim"] and not c["supported"] for c in score.details["claims"])


def test_the_cross_encoder_path_reads_announcements_as_written() -> None:
    """Its models were fitted on answers as written, so it keeps reading them so."""
    announced = f"Here is a summary of the article in 37 words:\n\n{SUMMARY}"
    (score,) = Faithfulness(detector="crossencoder").evaluate(summary_record(announced))
    assert score.details["markup_ignored"] == []
    assert score.details["claims"][0]["claim"].startswith("Here is a summary")
