"""Two runs of ``alarms.py`` side by side: every rate of one against the other's.

    RAGTRACE_EMBEDDING_BACKEND=onnx .venv/bin/python benchmarks/alarms.py --part locked --points \
        --only answer_relevance,groundedness,context_relevance,faithfulness --json A.json
    RAGTRACE_EMBEDDING_BACKEND=onnx-int8 .venv/bin/python benchmarks/alarms.py ... --json B.json
    .venv/bin/python benchmarks/alarms_compare.py A.json B.json [--tolerance 0.01]

For each score and operating point: the largest difference between the two runs over every cell
(false alarms per data set, detection per bad kind and data set), the worst false-alarm rate of
each, and whether the second keeps the false-alarm budget where the first did. The verdict (the
rule of docs/decisions/embedding-cost.md): every difference within ``--tolerance`` and no budget
lost. Exits 0 when it holds, 1 when it does not.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from alarms import FALSE_ALARM_BUDGET

from ragtrace.offline.summary import markdown_table


def rows(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (evaluator, operating point, score) found in both runs."""
    out = []
    for evaluator, points in first["points"].items():
        for point, info in points.items():
            other = second["points"].get(evaluator, {}).get(point)
            if other is None:
                continue
            for score, a in info["summary"].items():
                b = other["summary"].get(score)
                if b is None:
                    continue
                both = set(a.get("cells", {})) & set(b.get("cells", {}))
                diffs = {
                    c: abs(a["cells"][c] - b["cells"][c])
                    for c in both
                    if a["cells"][c] is not None and b["cells"][c] is not None
                }
                worst = max(diffs.values(), default=0.0)
                where = max(diffs, key=diffs.__getitem__) if worst > 0 else ""
                out.append(
                    {
                        "evaluator": evaluator,
                        "point": point,
                        "score": score,
                        "max_diff": worst,
                        "cell": where,
                        "fa": (a["worst_false_alarms"], b["worst_false_alarms"]),
                        "det": (a["worst_detection"], b["worst_detection"]),
                        "budget_lost": _within(a["worst_false_alarms"])
                        and not _within(b["worst_false_alarms"]),
                    }
                )
    return out


def _within(rate: float | None) -> bool:
    return rate is not None and rate <= FALSE_ALARM_BUDGET


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args(argv)
    first, second = (json.loads(p.read_text()) for p in (args.first, args.second))
    found = rows(first, second)
    table = [
        [
            r["evaluator"],
            r["point"],
            r["score"],
            f"{r['max_diff']:.3f}",
            r["cell"],
            f"{_pct(r['fa'][0])} / {_pct(r['fa'][1])}",
            f"{_pct(r['det'][0])} / {_pct(r['det'][1])}",
            "LOST" if r["budget_lost"] else "",
        ]
        for r in found
    ]
    header = ["evaluator", "point", "score", "max |diff|", "at", "worst FA", "worst det", "budget"]
    print(f"{args.first} / {args.second}")
    print(markdown_table(header, table))
    beyond = [r for r in found if r["max_diff"] > args.tolerance]
    lost = [r for r in found if r["budget_lost"]]
    holds = not beyond and not lost
    print(
        f"\n{len(beyond)} of {len(found)} rows differ by more than {args.tolerance}; "
        f"{len(lost)} lose the false-alarm budget: the rule "
        f"{'holds' if holds else 'does NOT hold'}"
    )
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
