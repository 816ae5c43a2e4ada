"""The report page's cross-score parts: the systems and the classification leaderboards.

``systems_section`` shows, per system, the cases it was asked and left unanswered (with the
most common reasons), its latency and cost when the scores file carries them, the retrieval
versus generation failures, and the cross-score insights (least reliable, fastest and slowest,
cheapest and most expensive, best and worst retrieval). ``classification_section`` shows each
classification score's report per system: accuracy, macro and weighted averages, per-class
precision, recall and F1, and the confusion matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace._report.html_format import num, pct
from ragtrace._report.html_score import insights_list, unanswered_cell
from ragtrace._report.svg import esc


def systems_section(report: Mapping[str, Any]) -> str:
    """Unanswered cases, latency, cost and failure sources per system, and their insights."""
    answers: Mapping[str, Mapping[str, Any]] = report.get("answers", {})
    sources: Mapping[str, Mapping[str, Any]] = report.get("failure_sources", {})
    rows = "".join(_system_row(system, stats) for system, stats in answers.items())
    table = (
        '<div class="scroll"><table class="systems"><thead><tr><th>system</th>'
        '<th class="num">asked</th><th class="num">unanswered</th><th>why (most common)</th>'
        '<th class="num">median latency</th><th class="num">p95 latency</th>'
        '<th class="num">tokens / answer</th><th class="num">cost / answer</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )
    return (
        '<section id="systems"><h2>Systems<a class="back" href="#overview">↑ overview</a></h2>'
        '<p class="meta">How each system answered: unanswered cases (it raised, timed out or '
        "returned nothing) count against it in every score; latency and cost as the scores "
        "file reports them (all answered calls, perturbed ones included).</p>"
        + table
        + _sources(sources)
        + insights_list(report.get("insights", []))
        + "</section>"
    )


def _system_row(system: str, stats: Mapping[str, Any]) -> str:
    reasons = "; ".join(f"{r['error']} ({r['count']})" for r in stats["reasons"])
    latency = stats["latency"] or {}
    usage = stats["usage"] or {}
    tokens = (
        f"{usage.get('input_tokens', 0) + usage.get('output_tokens', 0):.0f}"
        if "input_tokens" in usage or "output_tokens" in usage
        else "-"
    )
    cost = f"${usage['cost_usd']:.6f}" if "cost_usd" in usage else "-"
    return (
        f'<tr data-system="{esc(system)}"><td>{esc(system)}</td>'
        f'<td class="num asked">{stats["asked"]}</td>'
        f"{unanswered_cell(stats['unanswered'])}<td>{esc(reasons) or '-'}</td>"
        f'<td class="num latency">{_seconds(latency.get("median_s"))}</td>'
        f'<td class="num">{_seconds(latency.get("p95_s"))}</td>'
        f'<td class="num tokens">{tokens}</td><td class="num cost">{cost}</td></tr>'
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _sources(sources: Mapping[str, Mapping[str, Any]]) -> str:
    if not sources:
        return ""
    rows = "".join(
        f'<tr data-system="{esc(s)}"><td>{esc(s)}</td><td class="num">{v["cases"]}</td>'
        f'<td class="num">{v["unanswered"]}</td>'
        f'<td class="num retrieval">{v["retrieval_failures"]} of {v["retrieval_cases"]} '
        f"({pct(v['retrieval_failure_rate'])})</td>"
        f'<td class="num generation">{v["generation_failures"]} '
        f"({pct(v['generation_failure_rate'])})</td>"
        f'<td class="num">{v["generation_failures_with_good_retrieval"]}</td></tr>'
        for s, v in sources.items()
    )
    return (
        '<h3>Retrieval versus generation failures</h3><p class="note">Every system on the same '
        "cases (those all were asked and judged on both sides): the retrieval failed when a "
        "score of what was retrieved (context relevance, precision, recall, a check's context "
        "side) failed, compared on the cases every system answered; the generation failed when "
        "a score of the answer failed, or (under <code>--unanswered fail</code>) when the "
        "system left the case unanswered. The last column counts answers that failed although "
        "their contexts passed: the generator's own failures.</p>"
        '<table class="failure-sources"><thead><tr><th>system</th><th class="num">cases</th>'
        '<th class="num">unanswered</th>'
        '<th class="num">retrieval failures</th><th class="num">generation failures</th>'
        '<th class="num">generation failures, retrieval fine</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def classification_section(boards: Sequence[Mapping[str, Any]]) -> str:
    """Per classification score: a leaderboard, then each system's classes and matrix."""
    if not boards:
        return ""
    return (
        '<section id="classification"><h2>Classification<a class="back" href="#overview">'
        '↑ overview</a></h2><p class="meta">Per system, over the compared cases: accuracy, '
        "precision, recall and F1 per class and averaged (macro: each class alike; weighted: "
        "by support), and the confusion matrix (rows: expected, columns: predicted). An "
        "unanswered case is a wrong prediction: a miss of its class (the no answer column) and "
        "a false positive shared among the other classes.</p>"
        + "".join(_board(board) for board in boards)
        + "</section>"
    )


def _board(board: Mapping[str, Any]) -> str:
    rows = "".join(
        f'<tr data-system="{esc(e["system"])}"><td class="num">{e["rank"]}</td>'
        f'<td>{esc(e["system"])}</td><td class="num n">{e["n"]}</td>'
        f'<td class="num accuracy">{num(e["accuracy"])}</td>'
        + "".join(
            f'<td class="num {k}-{m}">{num(e[k][m])}</td>'
            for k in ("macro", "weighted")
            for m in ("precision", "recall", "f1")
        )
        + unanswered_cell(e["unanswered"])
        + "</tr>"
        for e in board["systems"]
    )
    head = "".join(
        f'<th class="num">{k} {m}</th>' for k in ("macro", "weighted") for m in ("P", "R", "F1")
    )
    details = "".join(_classes(board["score"], e) for e in board["systems"])
    return (
        f'<h3 data-score="{esc(board["score"])}">{esc(board["score"])}</h3>'
        f'<div class="scroll"><table class="classification-board" '
        f'data-score="{esc(board["score"])}"><thead><tr><th class="num">#</th><th>system</th>'
        f'<th class="num">n</th><th class="num">accuracy</th>{head}'
        f'<th class="num">unanswered</th></tr></thead><tbody>{rows}</tbody></table></div>' + details
    )


def _classes(score: str, entry: Mapping[str, Any]) -> str:
    labels: Sequence[str] = entry["labels"]
    per_class = "".join(
        f'<tr data-label="{esc(label)}"><td>{esc(label)}</td>'
        + "".join(
            f'<td class="num {k}">{num(entry["per_class"][label][k])}</td>'
            for k in ("precision", "recall", "f1")
        )
        + f'<td class="num support">{entry["per_class"][label]["support"]}</td></tr>'
        for label in labels
    )
    extra_columns = [
        (name, key)
        for name, key in (("other", "other_predictions"), ("no answer", "no_answer"))
        if any(entry[key])
    ]
    matrix_head = "".join(f"<th class=num>{esc(label)}</th>" for label in labels) + "".join(
        f"<th class=num>{esc(name)}</th>" for name, _ in extra_columns
    )
    matrix_rows = "".join(
        f"<tr><th>{esc(label)}</th>"
        + "".join(
            f'<td class="num{" diag" if i == j else ""}">{count}</td>'
            for j, count in enumerate(entry["confusion_matrix"][i])
        )
        + "".join(f'<td class="num">{entry[key][i]}</td>' for _, key in extra_columns)
        + "</tr>"
        for i, label in enumerate(labels)
    )
    left_out = (
        f'<p class="note">{entry["classes_left_out"]} more class(es) in the JSON.</p>'
        if entry["classes_left_out"]
        else ""
    )
    return (
        f'<details class="fold classes" data-score="{esc(score)}" '
        f'data-system="{esc(entry["system"])}"><summary>{esc(entry["system"])}: per class and '
        "confusion matrix</summary>"
        '<table class="per-class"><thead><tr><th>class</th><th class="num">precision</th>'
        '<th class="num">recall</th><th class="num">F1</th><th class="num">support</th></tr>'
        f"</thead><tbody>{per_class}</tbody></table>"
        '<div class="scroll"><table class="matrix"><thead><tr><th>expected \\ predicted</th>'
        f"{matrix_head}</tr></thead><tbody>{matrix_rows}</tbody></table></div>{left_out}"
        "</details>"
    )
