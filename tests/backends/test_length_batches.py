"""Forward passes grouped by token count: little padding, every text once, outputs unchanged."""

from __future__ import annotations

import pytest

from ragtrace._backends.length_batches import length_groups


def _padding(lengths: list[int], groups: list[list[int]]) -> int:
    return sum(max(lengths[i] for i in g) - lengths[i] for g in groups for i in g)


def test_every_text_once_longest_first() -> None:
    lengths = [12, 250, 9, 30, 31, 11, 250, 8]
    groups = length_groups(lengths, max_texts=64)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert groups == [[1, 6], [4, 3], [0, 5, 2, 7]]
    # One pass for all would pad every text to 250 tokens: 1,399 padding positions, not 9.
    assert _padding(lengths, groups) == 9
    assert _padding(lengths, [list(range(len(lengths)))]) == 1399


def test_a_pass_is_joined_while_its_padding_costs_less_than_another_pass() -> None:
    # Together: 2 x 20 positions and one pass; apart: 20 + 10 positions and two.
    assert length_groups([20, 10], max_texts=8, pass_cost=11) == [[0, 1]]
    assert length_groups([20, 10], max_texts=8, pass_cost=9) == [[0], [1]]
    assert length_groups([20, 10], max_texts=8, pass_cost=10) == [[0, 1]]  # a tie: fewer passes
    # Greedy filling would put 40 with 36 and leave 20, 18 apart; the cheapest cut pairs them.
    assert length_groups([40, 36, 20, 18], max_texts=8, pass_cost=10) == [[0, 1], [2, 3]]
    assert length_groups([40, 36, 20, 18], max_texts=8, pass_cost=100) == [[0, 1, 2, 3]]


def test_texts_and_positions_bound_a_pass() -> None:
    assert sorted(map(len, length_groups([10, 10, 10, 10], max_texts=3))) == [1, 3]
    assert sorted(map(len, length_groups([100] * 3, max_texts=8, max_positions=250))) == [1, 2]
    assert length_groups([500], max_texts=8, max_positions=250) == [[0]]
    assert length_groups([], max_texts=8) == []


@pytest.mark.parametrize(
    "options",
    [{"max_texts": 0}, {"max_texts": 1, "pass_cost": -1}, {"max_texts": 1, "max_positions": -1}],
)
def test_bad_options_are_refused(options: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        length_groups([1, 2], **options)
