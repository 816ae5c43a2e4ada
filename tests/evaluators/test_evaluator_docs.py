"""The evaluator pages agree with the code they document.

docs/evaluators.md (the contract) holds a summary table (name | kind | scores | direction |
default threshold | requires); docs/evaluators-online.md lists the online suite before its first
section; between them, docs/evaluators-online.md and docs/evaluators-offline.md hold one
``### `name``` section per local (non-judge) built-in evaluator, and per section a "Scores"
bullet, a "Runs" bullet with ``batch_size`` and ``timeout_s``, and an options table (or "Options
are those of `other`"). Each evaluator is built once with default options (``tokens_presence``
with a one-word expression) and scores one small hand-made record (an agent's turn, with a tool
call); the pages must state what the built evaluator says about itself.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from ragtrace._model import Chunk, RagRecord, Score, ToolCall
from ragtrace.evaluators import Evaluator, create
from ragtrace.evaluators._registry import BUILTIN, ONLINE_SUITE

DOCS = Path(__file__).resolve().parents[2] / "docs"
# The contract first, then the tiers' pages: read as one text, in this order.
PAGES = tuple(
    DOCS / name for name in ("evaluators.md", "evaluators-online.md", "evaluators-offline.md")
)
ONLINE_PAGE = DOCS / "evaluators-online.md"
LOCAL = tuple(name for name in BUILTIN if not name.startswith("judge_"))
REQUIRED_OPTIONS: dict[str, dict[str, Any]] = {"tokens_presence": {"expression": '"refund"'}}
SUMMARY_HEADER = "| name | kind | scores | direction | default threshold | requires |"
OPTIONS_HEADER = "| option | default | what it does |"
SECTION = re.compile(r"^### `([^`]+)`\s*$")
HEADING = re.compile(r"^#{1,3} ")
TICKED = re.compile(r"`([^`]+)`")
RUNS = re.compile(r"`batch_size` (\d+),\s+`timeout_s` (\d+(?:\.\d+)?)")
SAME_OPTIONS = re.compile(r"Options are those of `([^`]+)`")
DIRECTION = re.compile(r"\b(higher|lower)\s+is\s+better")

RECORD = RagRecord(
    trace_id="0" * 32,
    span_id="0" * 16,
    query="How long do I have to request a refund for the Pro plan?",
    chunks=(
        Chunk(
            "Refunds are available within 30 days of purchase. Contact the billing team by email.",
            id="refunds",
        ),
        Chunk("The Pro plan costs 25 dollars per month in Paris.", id="pricing"),
    ),
    response="You can request a refund within 30 days of purchase. "
    "Contact the billing team by email.",
    reference="Refunds are available within 30 days of purchase in Paris.",
    # an agent's turn, for the agent evaluators (the others do not read these fields)
    tool_calls=(ToolCall("search_docs", '{"query": "refund window Pro plan"}'),),
    llm_calls=2,
)


# --- the page, parsed ---------------------------------------------------------------------------


@functools.cache
def doc_lines() -> tuple[str, ...]:
    return tuple(line for page in PAGES for line in page.read_text(encoding="utf-8").splitlines())


@functools.cache
def headings() -> tuple[tuple[int, str], ...]:
    """``(line index, line)`` of every heading outside fenced code blocks."""
    found = []
    fenced = False
    for index, line in enumerate(doc_lines()):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and HEADING.match(line):
            found.append((index, line))
    return tuple(found)


def section_names() -> list[str]:
    return [m.group(1) for _, line in headings() if (m := SECTION.match(line))]


@functools.cache
def sections() -> dict[str, str]:
    """Each ``### `name``` section's text, up to the next heading."""
    lines = doc_lines()
    bounds = [index for index, _ in headings()] + [len(lines)]
    found = {}
    for (start, line), end in zip(headings(), bounds[1:], strict=True):
        if m := SECTION.match(line):
            found[m.group(1)] = "\n".join(lines[start + 1 : end])
    return found


def intro() -> str:
    """The online page up to its first evaluator section."""
    lines = ONLINE_PAGE.read_text(encoding="utf-8").splitlines()
    first = next(index for index, line in enumerate(lines) if SECTION.match(line))
    return "\n".join(lines[:first])


def table(text: str, header: str) -> list[list[str]]:
    """The cells of each row of the markdown table under ``header`` in ``text``."""
    lines = text.splitlines()
    start = lines.index(header) + 2  # skip the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


@functools.cache
def summary() -> dict[str, list[str]]:
    rows = table("\n".join(doc_lines()), SUMMARY_HEADER)
    by_name: dict[str, list[str]] = {}
    for row in rows:
        assert len(row) == 6, row
        (name,) = TICKED.findall(row[0])
        assert name not in by_name, f"{name} has two rows in the summary table"
        by_name[name] = row
    return by_name


def bullet(section: str, label: str) -> str:
    """The text of the top-level ``- **label:**`` bullet of a section (with its nested lines)."""
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"- **{label}:**"))
    end = start + 1
    while end < len(lines) and lines[end].startswith(" ") and lines[end].strip():
        end += 1
    return "\n".join(lines[start:end])


def documented_scores(name: str) -> dict[str, str]:
    """Score name -> direction (``higher_is_better``, ...) from the section's Scores bullet.

    A score's direction is the first "higher/lower is better" after its first mention (so
    "`a`, `b` (each higher is better)" gives both).
    """
    text = bullet(sections()[name], "Scores")
    found = {}
    for m in TICKED.finditer(text):
        score = m.group(1)
        if score not in found and (score == name or score.startswith(f"{name}.")):
            direction = DIRECTION.search(text, m.end())
            assert direction is not None, f"{name}: no direction after `{score}`"
            found[score] = f"{direction.group(1)}_is_better"
    return found


def options_table(name: str, seen: tuple[str, ...] = ()) -> dict[str, str]:
    """Option -> default cell of the section's options table (following "those of `x`")."""
    text = sections()[name]
    if OPTIONS_HEADER not in text.splitlines():
        other = SAME_OPTIONS.search(text)
        assert other is not None, f"{name}: no options table and no 'Options are those of'"
        assert other.group(1) not in seen, f"{name}: options refer in a circle"
        return options_table(other.group(1), (*seen, name))
    found = {}
    for row in table(text, OPTIONS_HEADER):
        (option,) = TICKED.findall(row[0])
        found[option] = row[1]
    return found


# --- the code -----------------------------------------------------------------------------------


class Built:
    """Each evaluator built once (default options) and its Scores on ``RECORD``."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Evaluator, list[Score]]] = {}

    def __call__(self, name: str) -> tuple[Evaluator, list[Score]]:
        if name not in self._cache:
            evaluator = create(name, **REQUIRED_OPTIONS.get(name, {}))
            self._cache[name] = (evaluator, evaluator.evaluate(RECORD))
        return self._cache[name]


@pytest.fixture(scope="module")
def built() -> Built:
    return Built()


def init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """Keyword parameters of ``cls.__init__`` itself (not inherited), without ``**options``."""
    init = cls.__dict__.get("__init__")
    if init is None:
        return {}
    return {
        p.name: p
        for p in inspect.signature(init).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }


def as_tuples(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(as_tuples(v) for v in value)
    return value


# --- the tests ----------------------------------------------------------------------------------


def test_every_local_evaluator_has_one_section() -> None:
    names = section_names()
    assert len(names) == len(set(names)), f"duplicate sections: {names}"
    assert set(names) - set(BUILTIN) == set(), "sections for evaluators that do not exist"
    assert set(LOCAL) - set(names) == set(), "local evaluators without a section"
    assert not [n for n in names if n.startswith("judge_")], "judges belong in judges.md"


def test_summary_table_lists_every_local_evaluator() -> None:
    assert set(summary()) == set(LOCAL)


def test_intro_lists_the_online_suite() -> None:
    paragraph = next(
        p for p in intro().split("\n\n") if "`registry.ONLINE_SUITE` is the default" in p
    )
    listed = [t for t in TICKED.findall(paragraph) if t in BUILTIN]
    assert set(ONLINE_SUITE) - set(listed) == set(), "online-suite evaluators missing"
    assert set(listed) == set(ONLINE_SUITE), "names listed that are not in the online suite"


@pytest.mark.parametrize("name", LOCAL)
def test_summary_row_matches_the_evaluator(name: str, built: Built) -> None:
    evaluator, _ = built(name)
    _, kind, _, direction, threshold, requires = summary()[name]
    assert kind == evaluator.kind
    assert f"{direction.split()[0].rstrip(';')}_is_better" == evaluator.direction
    if evaluator.threshold_per_record:
        assert threshold == "by task"
    else:
        assert (None if threshold == "none" else float(threshold)) == evaluator.threshold
    assert set(TICKED.findall(requires.split(" (")[0])) == set(evaluator.requires)


@pytest.mark.parametrize("name", LOCAL)
def test_listed_scores_are_those_emitted(name: str, built: Built) -> None:
    evaluator, scores = built(name)
    assert [s.error for s in scores if s.error] == []
    emitted = {s.name: s for s in scores}
    assert len(emitted) == len(scores), f"{name} emitted a score name twice"
    in_table = TICKED.findall(summary()[name][2])
    assert sorted(in_table) == sorted(emitted), "summary table"
    in_section = documented_scores(name)
    assert sorted(in_section) == sorted(emitted), "Scores bullet"
    for score_name, score in emitted.items():
        assert in_section[score_name] == score.direction, score_name
        if evaluator.threshold_per_record:  # a calibrated cut for the record's task
            assert score.threshold is not None and 0.0 < score.threshold < 1.0, score_name
            assert score.passed == (
                score.value >= score.threshold
                if score.direction == "higher_is_better"
                else score.value <= score.threshold
            ), score_name
        else:  # the evaluator's, or its operating point's for that score
            assert score.threshold == evaluator.threshold_of(score_name), score_name


@pytest.mark.parametrize("name", LOCAL)
def test_runs_line_gives_batch_size_and_timeout(name: str, built: Built) -> None:
    evaluator, _ = built(name)
    found = RUNS.search(sections()[name])
    assert found is not None, f"{name}: no '`batch_size` N, `timeout_s` N' in its section"
    assert int(found.group(1)) == evaluator.batch_size
    assert float(found.group(2)) == evaluator.timeout_s


@pytest.mark.parametrize("name", LOCAL)
def test_options_table_matches_the_constructor(name: str, built: Built) -> None:
    cls = type(built(name)[0])
    documented = options_table(name)
    own = {
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    assert own - set(documented) == set(), "constructor options missing from the table"
    by_class = [init_parameters(c) for c in cls.__mro__]
    accepted = set().union(*by_class)
    assert set(documented) - accepted == set(), "table lists options the constructor refuses"
    for option, cell in documented.items():
        literal = re.fullmatch(r"`([^`]*)`", cell)
        if literal is None:
            continue  # a default described in words
        try:
            expected = ast.literal_eval(literal.group(1))
        except (ValueError, SyntaxError):
            continue
        default = next(params[option].default for params in by_class if option in params)
        assert as_tuples(expected) == as_tuples(default), f"{option}: documented {cell}"
