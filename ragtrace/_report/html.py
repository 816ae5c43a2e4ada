"""The report as one self-contained HTML page: inline CSS and SVG, no script, no network.

``render_page(report)`` takes ``build.build_report``'s data and prints its numbers as they are
(3 decimals; pass rates as percentages of the same numbers), so the page and the JSON agree. A
Content-Security-Policy forbids every script and every fetch, and all text is escaped: answers
that contain HTML show as text.

Layout: an index of every part stays in view beside the page (CSS ``position: sticky``; on a
narrow screen it sits on top), and every part links back to the overview. Reading order: which
system is better (clear differences first), the gates, the systems (unanswered cases, latency,
cost, H2O's cross-score insights, retrieval versus generation failures), the classification
leaderboards, an overview of every score coloured like the heatmaps, then per score
(``html_score``): leaderboard, differences, problems and insights, heatmap, and, folded,
distributions, flipped verdicts and the worst answers with their claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace._report import html_score, html_systems, svg
from ragtrace._report.html_format import interval, num, pct
from ragtrace._report.svg import esc

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
STYLE = """
html{scroll-behavior:smooth}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232b;
background:#f6f7f9}
.layout{display:grid;grid-template-columns:210px minmax(0,1fr);gap:14px;max-width:1420px;
margin:0 auto;padding:0 14px}
nav#index{position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;
padding:12px 4px 12px 0;font-size:13px}
nav#index ol{list-style:none;padding:0;margin:0}nav#index li{margin:1px 0}
nav#index a{display:block;padding:2px 6px;border-radius:4px;color:#1b4f8a;text-decoration:none;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
nav#index a:hover{background:#e6ecf2}nav#index .count{color:#a61b1b;font-size:11px}
nav#index h2{font-size:13px;margin:0 6px 6px;color:#3a4654}
@media (max-width:900px){.layout{display:block}nav#index{position:static;max-height:none}}
header{border-bottom:1px solid #dde1e6;padding:12px 0}h1{font-size:22px;margin:6px 0}
h2{font-size:18px;margin:4px 0 8px}h3{font-size:15px;margin:14px 0 6px;color:#3a4654}
a.back{font-size:12px;font-weight:400;margin-left:10px;color:#1b4f8a;text-decoration:none}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:12px 16px;
margin:14px 0;scroll-margin-top:8px}
.meta{color:#56616e;margin:2px 0}table{border-collapse:collapse;margin:4px 0}
th,td{padding:3px 9px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
th{font-weight:600;color:#3a4654;background:#f2f4f6}td.num,th.num{text-align:right;
font-variant-numeric:tabular-nums}
ul.headline{list-style:none;padding:0;margin:0}ul.headline li{padding:5px 8px;margin:3px 0;
border-left:4px solid #b8c0c8;background:#f7f8f9}ul.headline li.clear{border-color:#2b8a3e}
.problems li{color:#a61b1b}.problems li.note{color:#56616e}.insights li{color:#1b4f8a}
.problems details summary{cursor:pointer}.problems details ul{margin:2px 0 4px}
.flip-regression{color:#a61b1b}.flip-improvement,.problems li.flip-improvement{color:#1d6b32}
tr.flip-regression td:first-child{border-left:3px solid #c0392b}
tr.flip-improvement td:first-child{border-left:3px solid #2b8a3e}
.note{color:#56616e;font-size:12px}.basis{background:#f4f7fb;border-radius:4px;padding:4px 8px}
td.unanswered.some{color:#a61b1b;font-weight:600}td.cell{color:#1d232b}
pre.text{white-space:pre-wrap;word-break:break-word;background:#f7f8f9;padding:6px 8px;
margin:2px 0 8px;border-radius:4px;max-height:260px;overflow:auto}
details.fold{margin:8px 0}details.fold>summary{cursor:pointer;font-weight:600;color:#3a4654}
details.example{border:1px solid #e4e7eb;border-radius:4px;margin:6px 0;padding:4px 8px}
details.example summary{cursor:pointer}.claims li.unsupported{color:#a61b1b}
.claims li.supported{color:#2b6a36}.verdict-fail{color:#a61b1b;font-weight:600}
.verdict-pass{color:#2b6a36;font-weight:600}.histograms{display:flex;flex-wrap:wrap;gap:14px}
figure{margin:0}figcaption{font-size:12px;color:#3a4654}
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.mark{fill:#fff;font-weight:700}
.scroll{overflow-x:auto}table.matrix td.diag{font-weight:700;background:#eef6ee}
"""


def render_page(report: Mapping[str, Any]) -> str:
    """The whole page for ``report`` (``build.build_report``'s data)."""
    systems = report["systems"]
    title = "ragtrace report: " + (" vs ".join(systems[:4]) if systems else "no scores")
    main = [
        _header(report),
        _verdict(report),
        _gates(report.get("gates", [])),
        html_systems.systems_section(report),
        html_systems.classification_section(report.get("classification", [])),
        _overview(report),
        *(html_score.score_section(i, s) for i, s in enumerate(report["scores"])),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f'<div class="layout">{_index(report)}<main id="top">'
        + "".join(main)
        + f'<footer class="note">ragtrace report · {esc(report["format"])}</footer>'
        "</main></div></body></html>\n"
    )


def _index(report: Mapping[str, Any]) -> str:
    """The table of contents that stays in view: fixed parts, then one link per score."""
    parts = [("verdict", "Which system is better", "")]
    if report.get("gates"):
        failed = sum(g["failed"] for g in report["gates"])
        parts.append(("gates", "Gates", f"{failed} failed" if failed else ""))
    parts.append(("systems", "Systems", ""))
    if report.get("classification"):
        parts.append(("classification", "Classification", ""))
    parts.append(("overview", "Overview", ""))
    parts += [
        (f"score-{i}", s["name"], f"{len(s['problems'])}" if s["problems"] else "")
        for i, s in enumerate(report["scores"])
    ]
    items = "".join(
        f'<li><a href="#{anchor}" title="{esc(label)}">{esc(label)}'
        + (f' <span class="count">{esc(count)}</span>' if count else "")
        + "</a></li>"
        for anchor, label, count in parts
    )
    return f'<nav id="index" aria-label="index"><h2>Contents</h2><ol>{items}</ol></nav>'


def _header(report: Mapping[str, Any]) -> str:
    settings, source = report["settings"], report["input"]
    files = ", ".join(f"{f['path']} ({f['records']} records)" for f in source["files"])
    mode = settings.get("unanswered", "fail")
    treatment = (
        "a case a system left unanswered counts as a failure (its verdict fails; in a mean it "
        "takes the score's worst value)"
        if mode == "fail"
        else "a case a system left unanswered is left out for every system (counted beside)"
    )
    parts = [
        "<header><h1>ragtrace report</h1>",
        f'<p class="meta">Systems: <b>{esc(", ".join(report["systems"]) or "none")}</b>'
        f" · {report['summary']['scores']} score(s) · files: {esc(files)}</p>",
        f'<p class="meta">Every system of a score is compared on the same cases: those every '
        f"system was asked; {esc(treatment)} (<code>--unanswered {esc(mode)}</code>). Means "
        f"and differences have {settings['level'] * 100:g}% percentile bootstrap intervals "
        f"({settings['resamples']} resamples, seed {settings['seed']}), pass rates Wilson "
        "intervals. Leaderboards use unperturbed answers; flips compare each perturbed answer "
        "with its unperturbed one.</p>",
    ]
    if source["problems"]:
        items = "".join(f"<li>{esc(m)}</li>" for m in source["messages"])
        parts.append(
            f'<details class="input-problems"><summary>{source["problems"]} input problem(s), '
            f"{source['bad_lines']} bad line(s) skipped</summary><ul>{items}</ul></details>"
        )
    parts.append("</header>")
    return "".join(parts)


def _verdict(report: Mapping[str, Any]) -> str:
    headline = report["headline"]
    if headline:
        items = "".join(
            f'<li class="{"clear" if c["clear"] else "unclear"}" data-score="{esc(c["score"])}">'
            f"{esc(c['text'])}{' (paired by case)' if c['paired'] else ''}</li>"
            for c in headline
        )
        lead = (
            "Per score, the best system against every other one (whom it clearly beats, whom "
            "not), clear differences first:"
        )
    else:
        items = "".join(
            f'<li data-score="{esc(s["name"])}">{esc(e["system"])}: {esc(s["name"])} mean '
            f"{num(e['mean'])} {interval(e['mean_low'], e['mean_high'])}, pass rate "
            f"{pct(e['pass_rate'])}</li>"
            for s in report["scores"]
            for e in s["leaderboard"][:1]
        )
        lead = "One system: nothing to compare; its scores:"
    return (
        f'<section id="verdict"><h2>Which system is better</h2><p class="meta">{lead}</p>'
        f'<ul class="headline">{items or "<li>No scores.</li>"}</ul></section>'
    )


def _gates(gates: Sequence[Mapping[str, Any]]) -> str:
    if not gates:
        return ""
    items = "".join(
        f'<li class="{"verdict-fail" if g["failed"] else "verdict-pass"}">'
        f"{'FAILED' if g['failed'] else 'held'}: <code>{esc(g['expression'])}</code>"
        + "".join(f"<br>{esc(c['message'])}" for c in g["checks"] if c["failed"])
        + "</li>"
        for g in gates
    )
    failed = sum(g["failed"] for g in gates)
    return (
        f'<section id="gates"><h2>Gates</h2><p class="meta">{failed} of {len(gates)} gate(s) '
        f"failed.</p><ul>{items}</ul></section>"
    )


def _overview(report: Mapping[str, Any]) -> str:
    systems = report["systems"]
    answers = report.get("answers", {})
    head = "".join(f'<th class="num">{esc(s)}</th>' for s in systems)
    unanswered = "".join(
        f'<td class="num unanswered{" some" if answers.get(s, {}).get("unanswered") else ""}" '
        f'data-system="{esc(s)}">{_unanswered_cell(answers.get(s))}</td>'
        for s in systems
    )
    rows = [f'<tr class="unanswered-row"><td>unanswered (of asked)</td>{unanswered}<td></td></tr>']
    for i, section in enumerate(report["scores"]):
        by_system = {e["system"]: e for e in section["leaderboard"]}
        edges = section["histograms"]["edges"]
        lower = section["direction"] == "lower_is_better"
        cells = "".join(
            _overview_cell(by_system[s], (edges[0], edges[-1]), lower)
            if s in by_system
            else '<td class="num">-</td>'
            for s in systems
        )
        arrow = "↓" if lower else "↑"
        rows.append(
            f'<tr data-score="{esc(section["name"])}"><td><a href="#score-{i}">'
            f"{esc(section['name'])}</a> {arrow}</td>{cells}"
            f'<td class="num">{len(section["problems"])}</td></tr>'
        )
    return (
        '<section id="overview"><h2>Overview</h2><p class="meta">Mean (pass rate) per score '
        "and system over the compared cases, coloured like the heatmaps (red: bad, green: "
        "good, on each score's range); ↑ higher is better, ↓ lower is better.</p>"
        f'<div class="scroll"><table class="overview"><thead><tr><th>score</th>{head}'
        f'<th class="num">problems</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
        "</div></section>"
    )


def _unanswered_cell(stats: Mapping[str, Any] | None) -> str:
    if not stats:
        return "-"
    return f"{stats['unanswered']} of {stats['asked']}"


def _overview_cell(entry: Mapping[str, Any], value_range: tuple[float, float], lower: bool) -> str:
    fill = svg.tint(entry["mean"], *value_range, lower)
    return (
        f'<td class="num cell" style="background:{fill}" data-system="{esc(entry["system"])}" '
        f'title="{esc(entry["system"])}: mean {num(entry["mean"])}, n={entry["n"]}">'
        f"{num(entry['mean'])} ({pct(entry['pass_rate'])})</td>"
    )
