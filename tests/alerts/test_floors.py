"""``ragtrace alerts floors``: an app's own floors from the verdicts of its normal answers.

The floors follow the shipped rule (3% more failing answers, the drop tolerance, the lower
confidence bound); the rule file it writes loads in promtool, and replayed through the shipped
rules with ``ragtrace alerts backtest`` it makes an app that launches sloppy page where the
evaluator's own floor cannot; bad input stops it with one line. The demo's floors file is
the one this command's rule gives from the demo's careful answers.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragtrace._alerts.floors import (
    DECLARED_FLOOR,
    FloorError,
    app_floors,
    floor_of,
    floors_rules,
    rule_constant,
    wilson_lower,
)
from ragtrace._alerts.rules import rule_files
from ragtrace._alerts.verdicts import Verdict
from ragtrace._cli import main
from ragtrace.demo._prometheus_stack import DEMO_FLOORS
from ragtrace.demo._run import APP as DEMO_APP
from tests.alerts.test_backtest import T0, backtest, write_lines
from tests.components import require_binary

SHIPPED = rule_files()
TOLERANCE = rule_constant(SHIPPED, "ragtrace:quality_drop_tolerance_sd")
MIN_SD = rule_constant(SHIPPED, "ragtrace:quality_min_sd")


def verdicts(app: str, evaluator: str, n: int, pass_ratio: float, seed: int = 3) -> list[Verdict]:
    rng = random.Random(seed)
    return [Verdict(T0 + i, app, evaluator, None, rng.random() < pass_ratio) for i in range(n)]


def rows(found: list[Verdict]) -> list[dict[str, Any]]:
    return [{"time": v.time, "app": v.app, "evaluator": v.evaluator, "value": v.value,
             "passed": v.passed} for v in found]  # fmt: skip


def test_the_shipped_constants_are_read_from_the_rules() -> None:
    assert (TOLERANCE, MIN_SD) == (0.3, 0.14)
    with pytest.raises(FloorError, match="no recording rule nope"):
        rule_constant(SHIPPED, "nope")


def test_a_floor_lies_under_the_app_s_normal_quality_and_falls_with_fewer_verdicts() -> None:
    many = floor_of(0.95, 2000, TOLERANCE, MIN_SD)
    few = floor_of(0.95, 100, TOLERANCE, MIN_SD)
    assert 0.8 < many < 0.95 * 0.97  # 3% more failing answers, less the tolerance
    assert few < many
    assert floor_of(0.95, 2000, 0.0, MIN_SD) > many  # the tolerance lowers it
    assert floor_of(0.0, 500, TOLERANCE, MIN_SD) == 0.0  # never negative
    assert round(many * 100) == many * 100  # rounded down to 0.01


def test_a_stream_where_every_verdict_passed_is_not_taken_as_flawless() -> None:
    assert wilson_lower(1.0, 150) == pytest.approx(0.974, abs=0.001)
    assert wilson_lower(1.0, 100) < wilson_lower(1.0, 1000) < 1.0
    assert wilson_lower(0.9, 400) < 0.9 and wilson_lower(0.0, 50) == 0.0
    assert floor_of(1.0, 150, TOLERANCE, MIN_SD) < floor_of(1.0, 5000, TOLERANCE, MIN_SD)


def test_floors_per_app_and_evaluator_leave_out_safety_scores_and_thin_streams() -> None:
    found = app_floors(
        verdicts("bot", "faithfulness", 600, 0.95)
        + verdicts("bot", "pii_leakage.answer", 600, 0.99)
        + verdicts("bot", "groundedness", 99, 0.98)
        + verdicts("other", "faithfulness", 600, 0.6)
        + [Verdict(T0, "bot", "faithfulness", 0.5, None)],  # no verdict: left out
        tolerance_sd=TOLERANCE,
        min_sd=MIN_SD,
    )
    assert [(f.app, f.evaluator, f.verdicts) for f in found] == [
        ("bot", "faithfulness", 600),
        ("other", "faithfulness", 600),
    ]
    bot, other = found
    assert bot.floor == floor_of(bot.pass_ratio, 600, TOLERANCE, MIN_SD)
    assert other.floor < bot.floor < bot.pass_ratio


def test_the_rule_file_loads_in_promtool_and_records_each_floor(tmp_path: Path) -> None:
    promtool = require_binary("promtool")
    found = app_floors(
        verdicts('bot "x"', "faithfulness", 300, 0.9), tolerance_sd=TOLERANCE, min_sd=MIN_SD
    )
    path = tmp_path / "floors.rules.yml"
    path.write_text(floors_rules(found, source="a test"))
    checked = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (group,) = yaml.safe_load(path.read_text())["groups"]
    (rule,) = group["rules"]
    assert rule["record"] == DECLARED_FLOOR
    assert rule["labels"] == {"app": 'bot "x"', "evaluator": "faithfulness"}
    assert rule["expr"] == f"vector({found[0].floor:g})"
    with pytest.raises(FloorError):
        floors_rules([])


def test_an_app_launched_sloppy_pages_on_its_own_floor_and_not_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Faithfulness passing 72% from the first minute sits far above the evaluator's floor
    (0.33); with the floor set from the app's careful answers (95%) it pages within hours."""
    careful = write_lines(tmp_path / "careful.jsonl", rows(verdicts("bot", "faithfulness",
                                                                   600, 0.95)))  # fmt: skip
    floors_file = tmp_path / "floors.rules.yml"
    assert main(["alerts", "floors", str(careful), "--out", str(floors_file)]) == 0
    printed = capsys.readouterr().out
    assert "bot / faithfulness: floor 0." in printed and f"wrote {floors_file}" in printed
    rules = tmp_path / "rules"
    rules.mkdir()
    for path in [*SHIPPED, floors_file]:
        shutil.copy(path, rules)
    launch = verdicts("bot", "faithfulness", 3 * 3600, 0.72, seed=5)
    sloppy = write_lines(tmp_path / "sloppy.jsonl", rows(launch))
    own = backtest(sloppy, tmp_path / "own.json", capsys, "--rules", str(rules))
    shipped = backtest(sloppy, tmp_path / "shipped.json", capsys)
    paged = [a for a in own["alerts"] if a["firing_at"] is not None]
    assert {a["alertname"] for a in paged} == {"RagtraceQualityBelowFloor"}
    assert paged[0]["labels"]["evaluator"] == "faithfulness"
    assert paged[0]["firing_at"] - T0 < 30 * 60
    assert [a for a in shipped["alerts"] if a["firing_at"] is not None] == []


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragtrace alerts floors: "), lines
    return lines[0]


def test_bad_input_stops_it_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thin = write_lines(tmp_path / "thin.jsonl", rows(verdicts("bot", "faithfulness", 50, 0.9)))
    assert "no app and evaluator with 100 verdicts" in refused(
        ["alerts", "floors", str(thin)], capsys
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"time": 1}\n\xff\xfe\n')
    assert "bad.jsonl:1: missing" in refused(["alerts", "floors", str(bad)], capsys)
    assert "missing.jsonl" in refused(["alerts", "floors", str(tmp_path / "missing.jsonl")], capsys)
    assert "cannot write --out" in refused(
        ["alerts", "floors", str(thin), "--min-verdicts", "10", "--out", str(tmp_path)], capsys
    )
    (tmp_path / "norules").mkdir()
    assert "no rule files" in refused(
        ["alerts", "floors", str(thin), "--rules", str(tmp_path / "norules")], capsys
    )


def test_the_demo_floors_hold_its_app_above_the_evaluators_floor_on_faithfulness() -> None:
    """The demo's careful assistant passes faithfulness 95%: its own floor, not the
    evaluator's 0.33, is what a sloppy launch (72%) falls under."""
    (group,) = yaml.safe_load(DEMO_FLOORS.read_text())["groups"]
    declared = {r["labels"]["evaluator"]: float(r["expr"][7:-1]) for r in group["rules"]}
    assert {r["labels"]["app"] for r in group["rules"]} == {DEMO_APP}
    assert {r["record"] for r in group["rules"]} == {DECLARED_FLOOR}
    assert 0.72 + 0.05 < declared["faithfulness"] < 0.95
