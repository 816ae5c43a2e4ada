"""``cost_profile.py``'s figures: per-record summaries, the goals, and the printed tables."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ragtrace.offline.summary import markdown_table

GOAL_COLD_MS, GOAL_WARM_MS, GOAL_DEMO_RPS = 100.0, 20.0, 50.0
DEMO_CORES = 2
WORKLOADS = ("cold", "cold_batched", "warm", "indexed")
MODEL_KEYS = ("calls", "passes", "texts", "tokens", "positions", "model_cpu_ms")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's records: ms per record, by evaluator, per model call and per sentence."""
    model = {k: statistics.fmean(r["model"][k] for r in rows) for k in rows[0]["model"]}
    model["model_cpu_ms"] = 1000 * model.pop("model_cpu_s")
    texts = sum(r["model"]["texts"] for r in rows)
    positions = sum(r["model"]["positions"] for r in rows)
    model_ms = 1000 * sum(r["model"]["model_cpu_s"] for r in rows)
    names = list(rows[0]["by_evaluator_ms"])
    return {
        "records": len(rows),
        "ms": statistics.fmean(r["ms"] for r in rows),
        "median_ms": statistics.median(r["ms"] for r in rows),
        "by_evaluator_ms": {
            n: statistics.fmean(r["by_evaluator_ms"][n] for r in rows) for n in names
        },
        "model_per_record": model,
        "model_ms_per_sentence": model_ms / texts if texts else 0.0,
        "model_ms_per_position": model_ms / positions if positions else 0.0,
        "split_ms": statistics.fmean(r["split_ms"] for r in rows),
        "context_words": statistics.fmean(r["context_words"] for r in rows),
    }


def median_of(runs: Sequence[dict[str, Any]], *path: str) -> float:
    """The median over rounds of the value at ``path`` in each run."""
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value))
    return statistics.median(values)


def demo_figures(runs: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Medians over rounds of the demo throughput runs, and the capacity they imply."""
    cpu = statistics.median(r["cpu_ms_per_record"] for r in runs)
    return {
        "cpu_ms_per_record": cpu,
        "capacity_records_per_s": DEMO_CORES * 1000 / cpu,
        "wall_records_per_s": statistics.median(r["records_per_s"] for r in runs),
        "cores": statistics.median(r["cores"] for r in runs),
    }


def goals(result: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    """Each goal with the default's value, met or not, and the distance (value / goal, or goal /
    value for a rate)."""
    runs = result["profiles"][variant]
    cold, warm = median_of(runs, "cold", "ms"), median_of(runs, "warm", "ms")
    out = [
        _goal(f"cold RAGTruth record <= {GOAL_COLD_MS:g} ms CPU", cold, cold / GOAL_COLD_MS),
        _goal(f"seen passages <= {GOAL_WARM_MS:g} ms CPU", warm, warm / GOAL_WARM_MS),
    ]
    if result["demo"].get(variant):
        demo = demo_figures(result["demo"][variant])
        capacity = demo["capacity_records_per_s"]
        goal = _goal(
            f"demo records >= {GOAL_DEMO_RPS:g}/s on {DEMO_CORES} cores",
            capacity,
            GOAL_DEMO_RPS / capacity,
        )
        out.append({**goal, "wall_records_per_s": demo["wall_records_per_s"]})
    return out


def _goal(name: str, value: float, distance: float) -> dict[str, Any]:
    return {"goal": name, "value": value, "met": distance <= 1.0, "distance": distance}


def _cells(values: Sequence[float], digits: int = 1) -> list[str]:
    return [f"{v:,.{digits}f}" for v in values]


def tables(result: dict[str, Any]) -> str:
    """Everything ``cost_profile.py`` prints, as Markdown tables."""
    profiles = result["profiles"]
    variants = list(profiles)
    cold = profiles[variants[0]][0]["cold"]
    out = [
        f"load average {result['load_before']} -> {result['load_after']} on {result['cpus']} "
        f"CPUs; {cold['records']} cold RAGTruth records (context {cold['context_words']:.0f} "
        f"words on average); medians over {len(profiles[variants[0]])} round(s); "
        f"{result.get('threads', 1)} model thread(s) per process",
        "",
        "ms of CPU per cold record, by evaluator (suite order):",
    ]
    rows = [
        [name, *_cells([median_of(profiles[v], "cold", "by_evaluator_ms", name) for v in variants])]
        for name in cold["by_evaluator_ms"]
    ]
    rows.append(["whole suite", *_cells([median_of(profiles[v], "cold", "ms") for v in variants])])
    out += [markdown_table(["evaluator", *variants], rows), ""]
    out.append("per cold record: the embedding model, per call, sentence and token; the splitter:")
    rows = [
        [key, *_cells([median_of(profiles[v], "cold", "model_per_record", key) for v in variants])]
        for key in MODEL_KEYS
    ]
    for key, label in (
        ("model_ms_per_sentence", "model ms per sentence"),
        ("model_ms_per_position", "model ms per token position"),
        ("split_ms", "sentence splitting ms"),
    ):
        rows.append([label, *_cells([median_of(profiles[v], "cold", key) for v in variants], 3)])
    out += [markdown_table(["", *variants], rows), ""]
    out.append("ms of CPU per record, whole suite, by workload (and what each record brings):")
    first = profiles[variants[0]]
    rows = [
        [
            w,
            f"{median_of(first, w, 'context_words'):.0f}",
            f"{median_of(first, w, 'model_per_record', 'texts'):.1f}",
            f"{median_of(first, w, 'model_per_record', 'tokens'):.0f}",
            *_cells([median_of(profiles[v], w, "ms") for v in variants]),
        ]
        for w in WORKLOADS
    ]
    header = ["workload", "context words", "sentences embedded", "tokens embedded", *variants]
    out += [markdown_table(header, rows), ""]
    load = [median_of(profiles[v], "load", "cpu_s") for v in variants]
    out += [f"model loading and the first record, s of CPU: {', '.join(_cells(load))}", ""]
    demos = {v: demo_figures(r) for v, r in result["demo"].items() if r}
    if demos:
        out.append(f"demo's short records, cold, online pipeline with {DEMO_CORES} processes:")
        rows = [
            [
                v,
                f"{d['cpu_ms_per_record']:.1f}",
                f"{d['capacity_records_per_s']:.1f}",
                f"{d['wall_records_per_s']:.1f}",
                f"{d['cores']:.2f}",
            ]
            for v, d in demos.items()
        ]
        header = ["variant", "ms CPU/record", "records/s on 2 cores", "measured/s", "cores used"]
        out += [markdown_table(header, rows), ""]
    if result.get("fleet"):
        out.append("ragtrace worker processes on Redis:")
        rows = [
            [
                workers,
                workload,
                f"{runs[workload]['records_per_s']:.1f}",
                f"{runs[workload]['cpu_ms_per_record']:.1f}",
            ]
            for workers, runs in result["fleet"].items()
            for workload in ("cold", "warm", "indexed")
        ]
        header = ["fleet", "workload", "records/s", "ms CPU/record"]
        out += [markdown_table(header, rows), ""]
    if result.get("judge"):
        out += [_judge_line(result), ""]
    out.append(f"goals (the default: {result['default_variant']}):")
    rows = [
        [
            g["goal"],
            f"{g['value']:.1f}",
            _state(g),
            f"{g['wall_records_per_s']:.1f}/s" if "wall_records_per_s" in g else "",
        ]
        for g in result["goals"]
    ]
    out.append(markdown_table(["goal", "value", "state", "wall clock here"], rows))
    others = {
        v: found
        for v, found in result.get("goals_by_variant", {}).items()
        if v != result["default_variant"]
    }
    if others:
        out += ["", "the same goals for the other variants (opt-in):"]
        rows = [
            [v, g["goal"], f"{g['value']:.1f}", _state(g)]
            for v, found in others.items()
            for g in found
        ]
        out.append(markdown_table(["variant", "goal", "value", "state"], rows))
    return "\n".join(out)


def _state(goal: dict[str, Any]) -> str:
    return "met" if goal["met"] else f"NOT met ({goal['distance']:.2f}x)"


def _judge_line(result: dict[str, Any]) -> str:
    judge = result["judge"]
    rows = [r for r in judge["records"] if not r["error"]]
    if not rows:
        return f"LLM judge: every call failed ({judge['records'][0]['error']})"
    cpu = statistics.fmean(r["cpu_ms"] for r in rows)
    wall = statistics.fmean(r["wall_s"] for r in rows)
    suite = median_of(result["profiles"][result["default_variant"]], "cold", "ms")
    return (
        f"LLM judge ({judge['evaluator']}, local {judge['model']}, one thread, same cold "
        f"records): {cpu:,.0f} ms CPU and {wall:.1f} s wall per record ({len(rows)} records), "
        f"{cpu / suite:,.0f}x the default suite's CPU"
    )
