"""The Prometheus rule files: where ragtrace's live, their groups, the time ranges they read.

``rule_files()`` lists the shipped recording and alert rule files (``grafana/prometheus/
*.rules.yml`` of a source checkout); ``rule_files(folder)`` those of another folder (a copy with
a rule changed, say). ``ragtrace demo --prometheus`` loads the same files
(``ragtrace.demo._prometheus_stack``), ``ragtrace alerts backtest`` replays verdicts through them.

``group_order(files)`` names every group, those of recording rules first; ``ranges(files)``
finds every range an expression reads (``[1h]``, and subqueries ``[7d:5m]``). Both read files
that ``promtool check rules`` accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RULES_DIR = Path(__file__).resolve().parents[2] / "grafana" / "prometheus"
RULES_GLOB = "*.rules.yml"
_DURATION = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
            "w": 604_800_000, "y": 31_536_000_000}  # fmt: skip
# a range or subquery: `[7d]`, `[7d:5m]`, `[1h:]` (`[...]` of label matchers never has a `:`
# after a duration alone)
_RANGE = re.compile(r"\[\s*(\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)\s*(?::\s*([0-9a-z]*)\s*)?\]")


class NoRuleFiles(ValueError):
    """A folder holds no rule file (``*.rules.yml``)."""


def rule_files(folder: Path = RULES_DIR) -> list[Path]:
    """The rule files (``*.rules.yml``) of ``folder``, sorted by name.

    Raises:
        NoRuleFiles: There is none (the message names the folder and the pattern).
    """
    found = sorted(p for p in Path(folder).glob(RULES_GLOB) if p.is_file())
    if not found:
        raise NoRuleFiles(f"no rule files ({RULES_GLOB}) in {folder}")
    return found


def duration_ms(text: str) -> int | None:
    """Milliseconds of a Prometheus duration (``1h30m``, ``7d``, ``500ms``); None if it is not
    one."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(int(n) * _UNIT_MS[u] for n, u in parts)


def _groups(files: Sequence[Path]) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in files:
        with open(path, encoding="utf-8") as f:
            content = yaml.safe_load(f) or {}
        for group in content.get("groups") or ():
            yield path, group


def group_order(files: Sequence[Path]) -> list[str]:
    """Every group's name, once: the groups of recording rules only first, then the others,
    each kind in the order of the files and of the groups in them."""
    recording: list[str] = []
    others: list[str] = []
    for _, group in _groups(files):
        rules = group.get("rules") or ()
        (recording if all("record" in rule for rule in rules) else others).append(
            str(group["name"])
        )
    return list(dict.fromkeys([*recording, *others]))


@dataclass(frozen=True, slots=True)
class Range:
    """A range an expression reads.

    Attributes:
        file: The rule file's name.
        rule: The rule's name (its ``record`` or ``alert``).
        text: The range as written (``[7d]``).
        range_ms: Its length.
        resolution_ms: A subquery's resolution (0: the evaluation interval); None for a range
            of the stored samples.
    """

    file: str
    rule: str
    text: str
    range_ms: int
    resolution_ms: int | None


def ranges(files: Sequence[Path]) -> list[Range]:
    """Every range every rule's expression reads, in file order."""
    found: list[Range] = []
    for path, group in _groups(files):
        for rule in group.get("rules") or ():
            name = str(rule.get("record") or rule.get("alert") or "?")
            for match in _RANGE.finditer(str(rule.get("expr", ""))):
                length = duration_ms(match[1])
                resolution = None if match[2] is None else duration_ms(match[2]) or 0
                if length is not None:
                    found.append(Range(path.name, name, match[0], length, resolution))
    return found
