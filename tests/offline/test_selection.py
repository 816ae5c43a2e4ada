"""Choosing evaluators: names, --option values, settings files, and the errors they give."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._offline.selection import (
    SelectionError,
    build_evaluators,
    parse_options,
    split_names,
)
from ragtrace.evaluators._looping import LoopingDetection
from ragtrace.evaluators._tokens_presence import TokensPresence


def test_split_names() -> None:
    assert split_names(["looping, tokens_presence", "bleu", " ,"]) == [
        "looping", "tokens_presence", "bleu"
    ]  # fmt: skip
    assert split_names(None) == []


def test_option_values_are_json_when_they_parse() -> None:
    got = parse_options(
        [
            "a.threshold=0.6",
            "a.inline=true",
            'a.tokens=["x", "y"]',
            'b.expression=sky OR NOT "sea"',
            "b.model=org/model-1",
            'b.quoted="0.6"',
            "b.empty=",
            "b.equals=k=v",
        ]
    )
    assert got == {
        "a": {"threshold": 0.6, "inline": True, "tokens": ["x", "y"]},
        "b": {
            "expression": 'sky OR NOT "sea"',
            "model": "org/model-1",
            "quoted": "0.6",
            "empty": "",
            "equals": "k=v",
        },
    }


@pytest.mark.parametrize("item", ["a=1", "a.=1", ".b=1", "a.b", "a.b1"])
def test_malformed_options(item: str) -> None:
    with pytest.raises(SelectionError, match=r"expected EVALUATOR\.KEY=VALUE"):
        parse_options([item])


def test_an_option_given_twice() -> None:
    with pytest.raises(SelectionError, match=r"--option a\.x is given twice"):
        parse_options(["a.x=1", "a.x=2"])


def test_builds_in_order_with_options() -> None:
    built = build_evaluators(
        ["tokens_presence", "looping"],
        parse_options(["tokens_presence.expression=sky", "looping.threshold=0.5"]),
    )
    assert [type(e) for e in built] == [TokensPresence, LoopingDetection]
    assert built[0].expression == "'sky'"  # type: ignore[attr-defined]
    assert built[1].threshold == 0.5


def test_config_and_names_combine(tmp_path: Path) -> None:
    config = tmp_path / "s.toml"
    config.write_text('[[evaluators]]\nname = "looping"\nthreshold = 0.4\n')
    (only,) = build_evaluators([], {}, str(config))
    assert isinstance(only, LoopingDetection) and only.threshold == 0.4
    both = build_evaluators(
        ["tokens_presence", "looping"],
        {"tokens_presence": {"constraints": ["x"]}},
        str(config),
    )
    assert [e.name for e in both] == ["tokens_presence", "looping"]
    assert both[1].threshold == 0.4
    config.write_text("[sampling]\nrate = 0.5\n")
    with pytest.raises(SelectionError, match=r"no evaluators to run \(.*s\.toml configures none\)"):
        build_evaluators([], {}, str(config))
    with pytest.raises(SelectionError, match="cannot read the file"):
        build_evaluators([], {}, str(tmp_path / "missing.yaml"))
