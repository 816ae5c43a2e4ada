"""TokensPresence: the catalogue's constraint lists, boolean expressions, targets and errors."""

from __future__ import annotations

import time

import pytest

from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._tokens_presence import TokensPresence

PAGE_EXAMPLE_1 = ["15,969", "REGEXP:[Mm]illion", "REGEXP:^15,969 [Mm]illion$", ["either", "or"]]
PAGE_EXAMPLE_2 = [["either", "or", "REGEXP:[Mm]illion"]]


def record(response: str | None = "answer", *chunks: str) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="q",
        chunks=tuple(Chunk(c) for c in chunks),
        response=response,
    )


def by_name(ev: TokensPresence, rec: RagRecord) -> dict[str, Score]:
    return {s.name: s for s in ev.evaluate(rec)}


def answer_value(ev: TokensPresence, response: str) -> float | None:
    return by_name(ev, record(response, "ctx"))["tokens_presence.answer"].value


def test_declares_what_it_is() -> None:
    ev = TokensPresence(["x"])
    assert ev.name == "tokens_presence"
    assert ev.kind == "lexical"
    assert ev.direction == "higher_is_better"
    assert ev.threshold == 0.5
    assert ev.requires == frozenset({"chunks", "response"})
    assert TokensPresence(["x"], targets=["answer"]).requires == frozenset({"response"})
    assert TokensPresence(["x"], targets=("context",)).requires == frozenset({"chunks"})
    assert isinstance(create("tokens_presence", constraints=["x"]), TokensPresence)


def test_page_example_1_every_item_is_required() -> None:
    ev = TokensPresence(PAGE_EXAMPLE_1, targets=["answer"])
    # "15,969 million": 15,969 yes, [Mm]illion yes, ^15,969 [Mm]illion$ yes, either/or no -> 0.
    got = ev.evaluate(record("15,969 million"))
    assert [s.name for s in got] == ["tokens_presence.answer"]
    s = got[0]
    assert (s.value, s.passed, s.label) == (0.0, False, "fail")
    assert s.details == {
        "expression": (
            "('15,969' AND REGEXP:'[Mm]illion' AND REGEXP:'^15,969 [Mm]illion$' "
            "AND ('either' OR 'or'))"
        ),
        "terms": [
            {"term": "15,969", "kind": "substring", "matched": True, "span": [0, 6]},
            {"term": "[Mm]illion", "kind": "regex", "matched": True, "span": [7, 14]},
            {"term": "^15,969 [Mm]illion$", "kind": "regex", "matched": True, "span": [0, 14]},
            {"term": "either", "kind": "substring", "matched": False, "span": None},
            {"term": "or", "kind": "substring", "matched": False, "span": None},
        ],
    }
    # Without the anchored regex the rest can hold: "for" contains "or".
    ev = TokensPresence(PAGE_EXAMPLE_1[:2] + PAGE_EXAMPLE_1[3:], targets=["answer"])
    assert answer_value(ev, "15,969 Million for sure") == 1.0
    assert answer_value(ev, "15,969 Million!") == 0.0
    assert answer_value(ev, "15969 million, either way") == 0.0


def test_page_example_2_a_list_is_any_of() -> None:
    ev = TokensPresence(PAGE_EXAMPLE_2, targets=["answer"])
    assert answer_value(ev, "about a Million") == 1.0
    assert answer_value(ev, "either way") == 1.0
    assert answer_value(ev, "nothing here") == 0.0


def test_context_is_searched_chunk_by_chunk() -> None:
    ev = TokensPresence(["REGEXP:^beta$", "alpha"])
    got = by_name(ev, record("no tokens", "alpha", "beta", "beta"))
    ctx = got["tokens_presence.context"]
    assert ctx.value == 1.0 and ctx.passed is True
    assert ctx.details["terms"] == [
        {"term": "^beta$", "kind": "regex", "matched": True, "chunks": [1, 2]},
        {"term": "alpha", "kind": "substring", "matched": True, "chunks": [0]},
    ]
    assert got["tokens_presence.answer"].value == 0.0
    # Anchors hold at chunk bounds, not across the joined context.
    assert by_name(ev, record("x", "alpha beta"))["tokens_presence.context"].value == 0.0


def test_expression_precedence_not_and_or() -> None:
    # a OR b AND NOT c  ==  a OR (b AND (NOT c))
    ev = TokensPresence(expression="a OR b AND NOT c", targets=["answer"])
    assert ev.expression == "('a' OR ('b' AND NOT 'c'))"
    assert answer_value(ev, "b") == 1.0  # F or (T and T)
    assert answer_value(ev, "b c") == 0.0  # F or (T and F)
    assert answer_value(ev, "a c") == 1.0  # T
    assert answer_value(ev, "zzz") == 0.0  # F or (F and T)


def test_expression_parentheses_and_double_not() -> None:
    ev = TokensPresence(expression="(a OR b) AND NOT NOT c", targets=["answer"])
    assert ev.expression == "(('a' OR 'b') AND NOT NOT 'c')"
    assert answer_value(ev, "b c") == 1.0
    assert answer_value(ev, "b") == 0.0


def test_expression_operands_quoted_regex_and_escapes() -> None:
    ev = TokensPresence(
        expression=r"""'two words' AND REGEXP:"^(yes|no)\b" AND "say \"hi\"" AND REGEXP:\d+""",
        targets=["answer"],
    )
    assert [t["term"] for t in ev.terms] == ["two words", r"^(yes|no)\b", 'say "hi"', r"\d+"]
    assert [t["kind"] for t in ev.terms] == ["substring", "regex", "substring", "regex"]
    assert answer_value(ev, 'yes, two words: say "hi" 42 times') == 1.0
    assert answer_value(ev, 'yesno two words say "hi" 42') == 0.0


def test_expression_and_list_agree() -> None:
    listed = TokensPresence(PAGE_EXAMPLE_1, targets=["answer"])
    written = TokensPresence(
        expression="'15,969' AND REGEXP:'[Mm]illion' AND REGEXP:'^15,969 [Mm]illion$' "
        "AND (either OR or)",
        targets=["answer"],
    )
    assert listed.expression == written.expression


def test_ignore_case_and_duplicate_terms() -> None:
    ev = TokensPresence(["HELLO", ["hello", "REGEXP:WORLD"]], ignore_case=True, targets=["answer"])
    assert len(ev.terms) == 3  # "HELLO" and "hello" differ; only exact repeats are merged
    assert answer_value(ev, "hello world") == 1.0
    same = TokensPresence(expression="x AND (x OR y)", targets=["answer"])
    assert [t["term"] for t in same.terms] == ["x", "y"]
    assert answer_value(TokensPresence(["HELLO"], targets=["answer"]), "hello") == 0.0


def test_regex_special_characters_are_literal_in_substrings() -> None:
    ev = TokensPresence(["a.b", "(x)"], targets=["answer"])
    assert answer_value(ev, "a.b (x)") == 1.0
    assert answer_value(ev, "axb x") == 0.0


def test_threshold_option() -> None:
    ev = TokensPresence(["x"], threshold=1.0, targets=["answer"])
    s = by_name(ev, record("x"))["tokens_presence.answer"]
    assert (s.threshold, s.passed) == (1.0, True)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('"a" AND', "position 7: expected a string, NOT or '\\(', found the end"),
        ("(a", "position 2: expected '\\)', found the end"),
        ("a b", "position 2: expected AND, OR or the end, found 'b'"),
        ("AND a", "position 0: expected a string, NOT or '\\(', found 'AND'"),
        ("a OR ()", "position 6: .*found '\\)'"),
        ("a)", "position 1: expected AND, OR or the end, found '\\)'"),
        ('x AND "open', "position 6: unterminated string"),
        ("x AND REGEXP:[", "invalid regular expression 'REGEXP:\\[' at position 6"),
        ("REGEXP:", "empty string or pattern 'REGEXP:' at position 0"),
        ("   ", "expression is empty"),
        ("(" * 200 + "a" + ")" * 200, "nesting deeper than 100"),
    ],
)
def test_bad_expressions_name_the_token_and_position(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokensPresence(expression=expression)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of `constraints` or `expression`"),
        ({"constraints": ["a"], "expression": "a"}, "exactly one"),
        ({"constraints": "a"}, "constraints must be a list"),
        ({"constraints": []}, "constraints is empty"),
        ({"constraints": ["a", []]}, r"constraints\[1\] must be a string or a non-empty list"),
        ({"constraints": ["a", ["b", 3]]}, r"constraints\[1\]\[1\] must be a string"),
        ({"constraints": [""]}, r"empty string or pattern '' in constraints\[0\]"),
        ({"constraints": [["REGEXP:(a"]]}, r"'REGEXP:\(a' in constraints\[0\]\[0\]"),
        ({"expression": 5}, "expression must be a string"),
        ({"constraints": ["a"], "targets": ["answer", "query"]}, "targets must be"),
        ({"constraints": ["a"], "targets": "answer"}, "targets must be"),
        ({"constraints": ["a"], "targets": []}, "targets must be"),
    ],
)
def test_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokensPresence(**options)  # type: ignore[arg-type]


def test_base_options_pass_through() -> None:
    ev = TokensPresence(["a"], inline=True, timeout_s=1.5)
    assert (ev.inline, ev.timeout_s) == (True, 1.5)
    with pytest.raises(TypeError):
        TokensPresence(["a"], bogus=True)


def test_missing_fields_follow_targets() -> None:
    both = TokensPresence(["a"])
    assert both.missing_fields(record(None)) == ("chunks", "response")
    answer_only = TokensPresence(["a"], targets=["answer"])
    assert answer_only.missing_fields(record("a")) == ()


def test_odd_unicode() -> None:
    ev = TokensPresence(["é", "REGEXP:😀+"], targets=["answer", "context"])
    got = by_name(ev, record("caf\u00e9 😀😀 \ud800", "\x00 é 😀"))
    assert got["tokens_presence.answer"].value == 1.0
    assert got["tokens_presence.context"].value == 1.0
    # A decomposed "é" (e + combining accent) is a different string: no normalisation.
    assert answer_value(TokensPresence(["é"], targets=["answer"]), "cafe\u0301") == 0.0


def test_huge_text_finishes() -> None:
    big = "lorem ipsum dolor sit amet " * 80_000  # ~2 MB
    ev = TokensPresence(expression="ipsum AND NOT needle AND REGEXP:'amet\\s+lorem'")
    started = time.monotonic()
    got = by_name(ev, record(big + "end", big, big))
    assert time.monotonic() - started < 30  # generous guard: searches are linear
    assert got["tokens_presence.answer"].value == 1.0
    assert got["tokens_presence.context"].value == 1.0
