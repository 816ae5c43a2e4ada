"""Does a change leave every score of the default online suite where it was?

    .venv/bin/python benchmarks/same_scores.py --compare-with OTHER_CHECKOUT [--per-cell 6]
        [--part tuning|locked] [--tolerance 1e-6] [--data-dir ../shared/data]
        [--json benchmarks/results/same_scores.json]

For a change meant to cost less and score the same (a faster model setting, a cache, fewer
conversions): the default online suite (``ragtrace.evaluators.suites.online_suite()``, every
evaluator on every record) scores the same records with ragtrace imported from this checkout
and from ``OTHER_CHECKOUT`` (for instance a ``git worktree`` of the commit before the change),
each in a fresh process with no cache tier installed. The records are the alarm benchmark's
cases of ``--part`` (``_alarm_cases``: normal answers and answers made bad every way the suite
names), at most ``--per-cell`` per (evaluator, bad kind, data set), drawn as ``alarms.py
--traffic`` draws its rows. Printed: per score, how many values were compared and the largest
difference; scores present on one side only, and verdicts (``passed``) that differ. Exits 1 when
a value differs by more than ``--tolerance``, a verdict differs or a score is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from _labelled_data import data_dir

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROWS_SEED = 6606
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
CHILD_TIMEOUT_S = 3600


def scores(folder: Path, part: str, per_cell: int) -> dict[str, dict[str, Any]]:
    """``"<data set>|<case id>|<kind>|<score>"`` -> the score's value, verdict and error, for the
    chosen cases of ``part``, with the ragtrace this process imports."""
    from _alarm_cases import build
    from alarms import bounded_cases

    from ragtrace.evaluators.suites import online_suite

    cases = build(folder, (part,))
    chosen: dict[tuple[str, str, str], Any] = {}
    for name in sorted(cases.by_evaluator):
        for case in bounded_cases(cases.by_evaluator[name], per_cell, ROWS_SEED):
            chosen.setdefault((case.dataset, case.id, case.kind), case)
    out: dict[str, dict[str, Any]] = {}
    suite = online_suite()
    for (dataset, case_id, kind), case in sorted(chosen.items()):
        for evaluator in suite:
            if evaluator.missing_fields(case.record):
                continue
            for score in evaluator.evaluate(case.record):
                out[f"{dataset}|{case_id}|{kind}|{score.name}"] = {
                    "value": None if score.value is None else float(score.value),
                    "passed": score.passed,
                    "error": score.error,
                }
    return out


def compare(
    ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]], tolerance: float
) -> dict[str, Any]:
    """Per score name: values compared and the largest difference; and every key, verdict or
    error that is not the same on both sides."""
    largest: dict[str, float] = defaultdict(float)
    counted: dict[str, int] = defaultdict(int)
    problems: list[str] = []
    for key in sorted(set(ours) | set(theirs)):
        name = key.rsplit("|", 1)[1]
        if key not in ours or key not in theirs:
            problems.append(f"{key}: only in {'this' if key in ours else 'the other'} checkout")
            continue
        a, b = ours[key], theirs[key]
        if a["error"] != b["error"] or a["passed"] != b["passed"]:
            problems.append(f"{key}: {a} against {b}")
        if (a["value"] is None) != (b["value"] is None):
            problems.append(f"{key}: value {a['value']} against {b['value']}")
            continue
        if a["value"] is None:
            continue
        if math.isnan(a["value"]) or math.isnan(b["value"]):
            difference = 0.0 if math.isnan(a["value"]) and math.isnan(b["value"]) else math.inf
        else:
            difference = abs(a["value"] - b["value"])
        counted[name] += 1
        largest[name] = max(largest[name], difference)
        if difference > tolerance:
            problems.append(f"{key}: {a['value']!r} against {b['value']!r}")
    return {
        "scores": {n: {"values": counted[n], "largest_difference": largest[n]} for n in counted},
        "largest_difference": max(largest.values(), default=0.0),
        "problems": problems,
    }


def _child(checkout: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``scores`` in a fresh process that imports ragtrace from ``checkout``."""
    env = {**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(checkout)}
    env.pop("RAGTRACE_PASSAGE_STORE", None)
    spec = {"data_dir": str(args.data_dir), "part": args.part, "per_cell": args.per_cell}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"scoring with {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare-with", type=Path, help="the other checkout's root")
    parser.add_argument("--part", choices=("tuning", "locked"), default="tuning")
    parser.add_argument("--per-cell", type=int, default=6)
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--data-dir")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "same_scores.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(scores(Path(spec["data_dir"]), spec["part"], spec["per_cell"])))
        return 0
    if args.compare_with is None or not (args.compare_with / "ragtrace").is_dir():
        parser.error("--compare-with: the root of another checkout (holding ragtrace/)")
    args.data_dir = data_dir(args.data_dir)
    ours, theirs = _child(ROOT, args), _child(args.compare_with.resolve(), args)
    found = compare(ours, theirs, args.tolerance)
    keys = {k.split("|", 3)[1] + k.split("|", 3)[2] for k in ours}
    print(f"{len(ours)} scores of {len(keys)} records ({args.part} part, {args.per_cell} a cell)")
    for name, row in sorted(found["scores"].items()):
        largest = row["largest_difference"]
        print(f"  {name}: {row['values']} values, largest difference {largest:.2e}")
    for problem in found["problems"][:40]:
        print(f"  DIFFERS {problem}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"compare_with": str(args.compare_with), **found}, indent=1))
    same = not found["problems"]
    print(f"largest difference {found['largest_difference']:.2e}: {'same' if same else 'NOT same'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
