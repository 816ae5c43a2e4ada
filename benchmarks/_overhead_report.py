"""The tables ``overhead.py`` prints: CPU per request with overheads and ratios, span sizes,
where chunk ids, scores and text are carried, added wall latency, and how noisy the run was.

Each function takes the summarised results (``overhead.summarise``): scenario -> configuration
-> entry.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import Any

from _overhead_runner import BUSY_CORES
from _overhead_worker import SCENARIOS


def _cell(entry: dict[str, Any] | None, config: str) -> str:
    if not entry or "cpu_us_per_request" not in entry:
        status = (entry or {}).get("status", "not run")
        return "n/a" if status in ("not installed", "unsupported") else status
    text = f"{entry['cpu_us_per_request'] / 1000:.3f}"
    if config == "baseline" or "overhead_us" not in entry:
        return text
    text += f" {entry['overhead_us'] / 1000:+.3f}"
    ratio = entry.get("overhead_vs_ragtrace")
    if config != "ragtrace" and ratio is not None:
        text += f" {ratio:.1f}x"
    return text


def _latency_cell(entry: dict[str, Any] | None) -> str:
    if not entry or "added_p50_us" not in entry:
        return "-"
    return f"{entry['added_p50_us']:+.0f} / {entry['added_p99_us']:+.0f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _where(keys: list[str]) -> str:
    """How a piece of content is carried: its own attribute, metadata, or inside an I/O blob."""
    if not keys:
        return "-"
    if any(("document" in k or "retrieval" in k) and "metadata" not in k for k in keys):
        return "attr"
    if any("metadata" in k for k in keys):
        return "meta"
    return "blob"


def render(results: dict[str, dict[str, dict[str, Any]]], configs: list[str], rounds: int) -> str:
    labels = {s: SCENARIOS[s][1] for s in results}
    out = [
        f"CPU ms per request, median of {rounds} round(s): 'cpu +overhead Nx'; overhead = median "
        "over rounds of (config - baseline of the same round), Nx = overhead / ragtrace's",
        "",
        _table(
            ["scenario", *configs],
            [[labels[s], *(_cell(by.get(c), c) for c in configs)] for s, by in results.items()],
        ),
        "",
        "Spans and attribute text per request (str attribute values + event attributes, bytes)",
        "",
    ]
    out.append(_table(["scenario", *configs], _span_rows(results, labels, configs, _size_cell)))
    out += [
        "",
        "Chunk ids / scores / text on spans (attr: own attribute; meta: in document metadata; "
        "blob: only inside serialized input/output; -: absent)",
        "",
    ]
    rows = _span_rows(results, labels, configs, _capture_cell)
    out.append(_table(["scenario", *configs], rows))
    out += [
        "",
        "Added wall latency per request, us, p50 / p99: median over rounds of (config - baseline "
        "of the same round); sequential requests only",
        "",
        _table(
            ["scenario", *configs],
            [
                [labels[s], *(_latency_cell(by.get(c)) for c in configs)]
                for s, by in results.items()
            ],
        ),
    ]
    notes = []
    for s, by in results.items():
        for c, entry in by.items():
            if entry["status"] != "ok":
                detail = entry.get("detail", "").strip().splitlines()
                notes.append(
                    f"- {labels[s]} / {c}: {entry['status']}: {detail[-1] if detail else ''}"
                )
    if notes:
        out += ["", "Not measured:", *notes]
    out += ["", noise_note(results)]
    return "\n".join(out)


def noise_note(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """How much the rounds disagree, and whether other processes competed for the CPU."""
    spreads = [
        f"{SCENARIOS[s][1]} {by['baseline']['spread']:.0%}"
        for s, by in results.items()
        if "spread" in by.get("baseline", {})
    ]
    loads = [x for by in results.values() for e in by.values() for x in e["background_cores"]]
    text = "Baseline spread across rounds ((max-min)/median): " + (", ".join(spreads) or "-")
    if loads:
        mean = statistics.mean(loads)
        text += f".\nOther processes used {mean:.2f} cores on average while workers ran"
        text += f" (max {max(loads):.2f}; this machine has {os.cpu_count()} cores)."
        if mean > BUSY_CORES:
            text += (
                "\nWARNING: the machine was busy; CPU times are inflated and noisy. "
                "Rerun on an idle machine, or with more --rounds."
            )
    return text


def _span_rows(
    results: dict[str, Any],
    labels: dict[str, str],
    configs: Sequence[str],
    cell: Any,
) -> list[list[str]]:
    """One row per scenario: ``cell(spans)`` per configuration ('-' for baseline, 'n/a' if none)."""
    rows = []
    for s, by in results.items():
        row = [labels[s]]
        for c in configs:
            spans = (by.get(c) or {}).get("spans")
            row.append("-" if c == "baseline" else cell(spans) if spans else "n/a")
        rows.append(row)
    return rows


def _size_cell(spans: dict[str, Any]) -> str:
    kb = spans["attr_bytes_per_request"] / 1000
    return f"{spans['spans_per_request']:g} spans, {kb:.1f} kB"


def _capture_cell(spans: dict[str, Any]) -> str:
    cap = spans["captures"]
    return "/".join(_where(cap[k]) for k in ("chunk_ids", "chunk_scores", "chunk_text"))
