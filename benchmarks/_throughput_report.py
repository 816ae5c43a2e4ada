"""What ``throughput.py`` measures against, and the tables it prints.

The default online suite and its target (``TARGET_RPS`` records per second on 2 cores), one
row per measurement with the target met or how many times faster the suite must get, and the
suite's split by evaluator (where the time goes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace.offline.summary import markdown_table

DEFAULT_SUITE = (
    "answer_relevance", "context_relevance", "groundedness", "faithfulness", "pii_leakage",
    "sensitive_data", "toxicity", "language_mismatch", "looping",
)  # fmt: skip
NOOP = "_noop"
TARGET_RPS = 50.0
NOTE_CHARS = 72  # the table's note column; the JSON keeps whole messages


def describe(r: dict[str, Any]) -> str:
    what = f"{r['kind']}{_via(r)} {','.join(r['evaluators']) or '-'} [{r['workload']}, {_shape(r)}]"
    if "error" in r:
        return f"{what}: {r['error']}"
    return f"{what}: load {r['load_s']:.2f} s, {r['records_per_s']:,.1f} rec/s"


def _label(r: dict[str, Any]) -> str:
    if r["kind"] == "alone":
        name = r["evaluators"][0]
        return "engine alone (no-op evaluator)" if name == NOOP else name
    n, asked = len(r["evaluators"]), len(r["asked"])
    return f"suite {n} of {asked}{_via(r)}, {_shape(r)}"


def _via(r: dict[str, Any]) -> str:
    """`` via pipeline`` for a run through the online pipeline; the engine goes unnamed."""
    return " via pipeline" if r.get("via") == "pipeline" else ""


def _shape(r: dict[str, Any]) -> str:
    """``2p x 1w``: worker processes x runner workers (threads) in each; ``, unshared`` when
    the processes ran without their shared cache."""
    unshared = r.get("processes", 1) > 1 and r.get("shared_cache_mb", 32.0) == 0
    variant = f", {r['variant']}" if r.get("variant") else ""
    return f"{r.get('processes', 1)}p x {r['workers']}w{', unshared' if unshared else ''}{variant}"


def rows(results: list[dict[str, Any]], asked: Sequence[str]) -> list[tuple[str, ...]]:
    table: list[tuple[str, ...]] = []
    complete_suite = set(DEFAULT_SUITE) <= set(asked)
    for r in results:
        label, workload = _label(r), r["workload"]
        if "error" in r:
            status = "missing" if r["kind"] == "alone" else "not run"
            note = f"{status}: {r['error']}"
            note = note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 3] + "..."
            table.append((label, workload, "-", "-", "-", "-", "-", "-", note))
            continue
        target, met, note = "-", "-", ""
        if r["kind"] == "suite":
            target = f">= {TARGET_RPS:g}"
            whole = complete_suite and len(r["evaluators"]) == len(r["asked"])
            met = _met(r["records_per_s"]) if whole else "n/a"
            missing = sorted(set(r["asked"]) - set(r["evaluators"]))
            note = f"incomplete, without {', '.join(missing)}" if missing else ""
        if r["errors"]:
            note = f"{r['errors']:,} error scores; {note}".rstrip("; ")
        table.append(
            (label, workload, f"{r['load_s']:.2f}", f"{r['records_per_s']:,.1f}",
             f"{r['ms_per_record']:.2f}", f"{r['cores']:.2f}", target, met, note)
        )  # fmt: skip
    return table


def _met(records_per_s: float) -> str:
    """``yes``, or how many times faster the suite must get to reach the target."""
    if records_per_s >= TARGET_RPS:
        return "yes"
    return f"NO, {TARGET_RPS / records_per_s:.1f}x short" if records_per_s > 0 else "NO"


def suite_split(results: list[dict[str, Any]]) -> str:
    """A table of where each suite run's time went: ms/record per evaluator."""
    runs = [r for r in results if "evaluator_ms_per_record" in r and r["kind"] == "suite"]
    if not runs:
        return ""
    names = list(dict.fromkeys(n for r in runs for n in r["evaluators"]))
    header = ("evaluator", *(f"{r['workload']}, {_shape(r)}" for r in runs))
    body = [(name, *(_ms(r["evaluator_ms_per_record"].get(name)) for r in runs)) for name in names]
    body.append(("whole suite (wall)", *(_ms(r["ms_per_record"]) for r in runs)))
    return markdown_table(header, body)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


HEADER = ("measurement", "workload", "load s", "rec/s", "ms/rec", "CPU cores", "target", "met?",
          "note")  # fmt: skip
