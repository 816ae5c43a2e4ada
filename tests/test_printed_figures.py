"""The rule by which tests hold printed figures to the docs: words and counts exactly, each
decimal within one unit of its last printed place."""

from __future__ import annotations

from tests.printed_figures import block_in, same_figures, shown_in


def test_a_last_digit_on_a_rounding_edge_reads_the_same() -> None:
    assert same_figures(
        "faithfulness = 0.0173 < threshold 0.7532", "faithfulness = 0.018 < threshold 0.7532"
    )
    assert same_figures("| 0.8021 | pass |", "| 0.8022 | pass |")
    assert same_figures("mean 0.457", "mean 0.456")


def test_more_than_the_last_digit_words_or_counts_do_not() -> None:
    assert not same_figures("mean 0.459", "mean 0.456")
    assert not same_figures("| 0.8021 | fail |", "| 0.8021 | pass |")
    assert not same_figures("8 scored case(s)", "7 scored case(s)")
    assert not same_figures("0.5 of 3", "0.5 of 3 and 4")
    assert not same_figures("threshold 0.75", "threshold 0.7532 ")


def test_a_block_reads_as_consecutive_lines_of_the_page() -> None:
    page = "intro\n| a | 0.5490 |\n| b | 0.8182 |\nend"
    assert block_in("| a | 0.5491 |\n| b | 0.8182 |", page)
    assert not block_in("| b | 0.8182 |\n| a | 0.5490 |", page)
    assert shown_in("| b | 0.8183 |", page.split("\n"))
    assert not shown_in("| c | 0.8182 |", page.split("\n"))
