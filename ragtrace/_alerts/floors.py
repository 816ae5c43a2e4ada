"""Floors of an app's own: the pass ratios under which its answers are bad, from its scored answers.

The shipped floors (``evaluator:ragtrace_quality_floor:pass_ratio``) hold every app to what
normal answers of any labelled data set and task type reach, so they are low where one task
scores low (data-to-text answers fail faithfulness half the time). An app whose own answers
score far higher (a help-centre QA bot whose faithfulness passes 95%) can launch, or slide,
well under its normal quality and still sit above them. ``app_floors`` takes the verdicts of
the app's answers judged normal (a pre-launch evaluation: ``ragtrace eval --verdicts``) and
gives, per (app, evaluator), the floor its normal traffic never reaches, the way the shipped
floors are set: the pass ratio the app keeps with 3% more answers failing, less the drop
tolerance in standard deviations of its verdicts, on the lower confidence bound of the
measured ratio (Wilson's, at 2 standard errors: few verdicts give a lower floor, and a stream
where every verdict passed is not taken as flawless), rounded down to 0.01::

    floors = app_floors(verdicts, tolerance_sd=0.3)
    Path("grafana/prometheus/support-bot-floors.rules.yml").write_text(floors_rules(floors))

``floors_rules`` writes them as a rule file recording
``app_evaluator:ragtrace_declared_floor:pass_ratio``; the alert rules hold each app to the
higher of its own floor and the evaluator's (``RagtraceQualityBelowFloor``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtrace._alerts.verdicts import Verdict

DECLARED_FLOOR = "app_evaluator:ragtrace_declared_floor:pass_ratio"
TOLERANCE = "ragtrace:quality_drop_tolerance_sd"
MIN_SD = "ragtrace:quality_min_sd"
EXTRA_BAD = 0.03  # answers failing beyond the measured share that normal traffic may hold
CONFIDENCE_Z = 2.0  # the lower bound of the measured pass ratio, in standard errors
DEFAULT_MIN_VERDICTS = 100
SAFETY = re.compile(r"(pii|sensitive|secret|toxic)")  # alerted on by their own rules


class FloorError(ValueError):
    """Floors cannot be set (no rule constant to read, nothing with enough verdicts)."""


@dataclass(frozen=True)
class AppFloor:
    """The floor of one (app, evaluator) and what it was set from.

    Attributes:
        app: The ``app`` label.
        evaluator: The ``evaluator`` label.
        floor: The pass ratio under which the app's answers are bad.
        pass_ratio: The measured pass ratio of its normal answers.
        verdicts: How many verdicts that ratio holds.
    """

    app: str
    evaluator: str
    floor: float
    pass_ratio: float
    verdicts: int


def rule_constant(rule_files: Sequence[Path], record: str) -> float:
    """The number a recording rule ``record: NAME, expr: vector(N)`` of ``rule_files`` holds.

    Raises:
        FloorError: No such rule.
    """
    import yaml

    for path in rule_files:
        for group in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("groups", []):
            for rule in group.get("rules", []):
                found = re.fullmatch(r"\s*vector\(\s*([0-9.eE+-]+)\s*\)\s*", str(rule.get("expr")))
                if rule.get("record") == record and found:
                    return float(found.group(1))
    raise FloorError(f"no recording rule {record} = vector(N) in the rule files")


def wilson_lower(pass_ratio: float, verdicts: int, z: float = CONFIDENCE_Z) -> float:
    """The Wilson score interval's lower end for ``pass_ratio`` of ``verdicts``: below 1 even
    when every verdict passed, and lower the fewer verdicts there are."""
    z2n = z * z / verdicts
    centre = pass_ratio + z2n / 2
    spread = z * math.sqrt(pass_ratio * (1 - pass_ratio) / verdicts + z2n / (4 * verdicts))
    return max((centre - spread) / (1 + z2n), 0.0)


def floor_of(pass_ratio: float, verdicts: int, tolerance_sd: float, min_sd: float) -> float:
    """The floor of a stream of ``verdicts`` verdicts passing at ``pass_ratio``."""
    kept = wilson_lower(pass_ratio, verdicts) * (1 - EXTRA_BAD)
    sd = max(math.sqrt(kept * (1 - kept)), min_sd)
    return max(math.floor((kept - tolerance_sd * sd) * 100 + 1e-9) / 100, 0.0)


def app_floors(
    verdicts: Iterable[Verdict],
    *,
    tolerance_sd: float,
    min_sd: float,
    min_verdicts: int = DEFAULT_MIN_VERDICTS,
) -> list[AppFloor]:
    """Per (app, evaluator) with at least ``min_verdicts`` verdicts, its floor, sorted.

    Verdicts without one (``passed`` None) and the safety scores (PII, secrets, toxicity:
    alerted on by their own rules) are left out.
    """
    counts: dict[tuple[str, str], list[int]] = {}
    for verdict in verdicts:
        if verdict.passed is None or SAFETY.match(verdict.evaluator):
            continue
        seen = counts.setdefault((verdict.app, verdict.evaluator), [0, 0])
        seen[0] += 1
        seen[1] += bool(verdict.passed)
    out = []
    for (app, evaluator), (n, passes) in sorted(counts.items()):
        if n >= min_verdicts:
            ratio = passes / n
            floor = floor_of(ratio, n, tolerance_sd, min_sd)
            out.append(AppFloor(app, evaluator, floor, ratio, n))
    return out


def floors_rules(floors: Sequence[AppFloor], source: str = "") -> str:
    """A Prometheus rule file recording ``floors`` as ``DECLARED_FLOOR`` series.

    Raises:
        FloorError: ``floors`` is empty.
    """
    if not floors:
        raise FloorError("no floor to write")
    import yaml

    header = [
        "# The floors of apps of your own (ragtrace alerts floors): RagtraceQualityBelowFloor",
        "# holds each app to the higher of these and the evaluator's floor.",
    ]
    if source:
        header.append(f"# Set from {source}.")
    lines = [f"{line}\n" for line in header]
    for floor in floors:
        lines.append(
            f"# {floor.app} / {floor.evaluator}: passed {floor.pass_ratio:.3f} of "
            f"{floor.verdicts} verdicts\n"
        )
    rules = [
        {
            "record": DECLARED_FLOOR,
            "expr": f"vector({floor.floor:g})",
            "labels": {"app": floor.app, "evaluator": floor.evaluator},
        }
        for floor in floors
    ]
    body = yaml.safe_dump(
        {"groups": [{"name": "ragtrace.quality.app_floors", "rules": rules}]},
        sort_keys=False,
        allow_unicode=True,
    )
    return "".join(lines) + body
