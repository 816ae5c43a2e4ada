"""Presentation marks read past: with ``read_past_markup``, faithfulness checks what an answer
states, not its format (off by default: BENCHMARKS.md, "Eighth change", for its cost)."""

from __future__ import annotations

import pytest

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators._faithfulness import Faithfulness
from ragtrace.evaluators._faithfulness.markup import blank_markup

HELP = (
    "The Aurora H5 home battery stores 13.5 kWh and delivers 5 kW continuous power. "
    "Installation takes about four hours. The H5 can be installed indoors or outdoors."
)
COPIED = [
    "The Aurora H5 home battery stores 13.5 kWh and delivers 5 kW continuous power.",
    "Installation takes about four hours.",
]


def kept_in_place(original: str, blanked: str) -> bool:
    """Every character of ``blanked`` is the original's or a space put in its place."""
    return len(original) == len(blanked) and all(
        b == o or b == " " for o, b in zip(original, blanked, strict=True)
    )


@pytest.mark.parametrize(
    "text, marks",
    [
        ("It stores 13.5 kWh [1]. It takes four hours [2, 3].", ["[1]", "[2, 3]"]),
        (
            "It stores 13.5 kWh[^1] and 5 kW\u30104\u2020source\u3011.",
            ["[^1]", "\u30104\u2020source\u3011"],
        ),
        ("It stores 13.5 kWh [doc 2].", ["[doc 2]"]),
        ("1. Open the app.\n2) Tap Settings.\n- Done.\n\u2022 Saved.", ["1.", "2)", "-", "\u2022"]),
        ("## Steps\n**Open** the app.", ["##", "**", "**"]),
        ("**Answer:** four hours.", ["**", "**", "Answer:"]),
        ("It takes four hours (Source: help centre).", ["(Source: help centre)"]),
        (
            "It takes four hours.\nSources: [1] help centre, [2] manual",
            ["Sources: [1] help centre, [2] manual"],
        ),
        (
            "According to the provided context, it takes four hours.",
            ["According to the provided context,"],
        ),
        ("Based on the information provided, yes.", ["Based on the information provided,"]),
    ],
)
def test_each_kind_of_mark_is_blanked_in_place(text: str, marks: list[str]) -> None:
    blanked, found = blank_markup(text)
    assert kept_in_place(text, blanked)
    assert sorted(found) == sorted(marks)
    for mark in marks:
        assert mark not in blanked


@pytest.mark.parametrize(
    "text",
    [
        "It stores 13.5 kWh and costs $4,999.",  # numbers inside sentences are claims
        "Version 2.1 [sic] added 3 modes.",  # brackets holding words
        "According to NASA, the Moon is 384,400 km away.",  # a named source must be supported
        "-5 degrees is the lowest charging temperature.",  # a sign, not a bullet
        "1.5 kWh is reserved for backups.",  # a decimal, not a list marker
        "The answer: four hours.",  # a colon inside the sentence
    ],
)
def test_what_states_something_stays(text: str) -> None:
    assert blank_markup(text) == (text, [])


def test_empty_odd_and_huge_answers() -> None:
    assert blank_markup(None) == ("", [])
    assert blank_markup("") == ("", [])
    assert blank_markup(12) == ("12", [])  # type: ignore[arg-type]
    huge = "It takes four hours [1]. " * 80_000  # 2 MB: every pattern is bounded
    blanked, found = blank_markup(huge)
    assert len(blanked) == len(huge) and len(found) == 80_000 and "[1]" not in blanked
    odd = "\udcff\x00[1] \u200b**x**"  # lone surrogate, NUL, zero-width space
    assert kept_in_place(odd, blank_markup(odd)[0])


def record(answer: str) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="How much does the H5 store and how long does installing it take?",
        chunks=(Chunk(text=HELP),),
        response=answer,
    )


@pytest.mark.parametrize(
    "answer",
    [
        f"{COPIED[0][:-1]} [1]. {COPIED[1][:-1]} [1].",
        f"**Answer:** {COPIED[0]} {COPIED[1]}",
        f"{COPIED[0]} {COPIED[1]} (Source: Aurora help centre)",
        f"{COPIED[0]} {COPIED[1]}\nSources: [1] Aurora help centre",
        f"Based on the provided context, t{COPIED[0][1:]} {COPIED[1]}",
    ],
)
def test_a_copied_answer_passes_whatever_its_format(answer: str) -> None:
    (score,) = Faithfulness(read_past_markup=True).evaluate(record(answer))
    assert score.passed, score.explanation
    assert score.details["markup_ignored"]
    assert score.details["unsupported"] == 0


def test_list_markers_are_read_as_written_by_the_evaluator() -> None:
    """The models learned RAGTruth's list answers with their markers, so the evaluator keeps
    them (BENCHMARKS.md, "Eighth change"); ``blank_markup`` blanks them when asked."""
    listed = f"1. {COPIED[0]}\n2. {COPIED[1]} [3]"
    assert blank_markup(listed, lists=False)[1] == ["[3]"]
    assert sorted(blank_markup(listed)[1]) == ["1.", "2.", "[3]"]
    (score,) = Faithfulness(read_past_markup=True).evaluate(record(listed))
    assert score.details["markup_ignored"] == ["[3]"]
    assert [c["claim"][:2] for c in score.details["claims"]] == ["1.", "2."]


def test_an_invented_number_is_still_flagged_under_citations() -> None:
    answer = "The H5 stores 27 kWh [1]. It costs $9,999 [2]."
    (score,) = Faithfulness(read_past_markup=True).evaluate(record(answer))
    assert not score.passed
    assert score.details["markup_ignored"] == ["[1]", "[2]"]


def test_by_default_the_answer_is_read_as_written() -> None:
    """The default suite reads answers as written: a sentence read past its marks is new text
    to embed, which the online suite's cost budget does not carry."""
    cited = f"{COPIED[0][:-1]} [1]. {COPIED[1][:-1]} [2]."
    (default,) = Faithfulness().evaluate(record(cited))
    (past,) = Faithfulness(read_past_markup=True).evaluate(record(cited))
    assert default.details["markup_ignored"] == []
    assert [c["claim"][-4:] for c in default.details["claims"]] == ["[1].", "[2]."]
    assert ["[" in c["claim"] for c in past.details["claims"]] == [False, False]
    assert past.value > default.value
