"""The report as one self-contained HTML page: inline CSS and SVG, no script, no network.

``render_page(report)`` takes ``build.build_report``'s data and prints its numbers as they are
(3 decimals; pass rates as percentages of the same numbers), so the page and the JSON agree. A
Content-Security-Policy forbids every script and every fetch, and all text is escaped: answers
that contain HTML show as text. Reading order: which system is better (with its interval), an
overview, then per score: leaderboard, comparisons, problems and insights, heatmap of the
hardest cases, distributions, flipped verdicts and the worst answers with their claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.report import svg
from ragtrace.report.svg import esc

MAX_FLIPS_SHOWN = 50
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232b;
background:#f6f7f9}
header,main,footer{max-width:1180px;margin:0 auto;padding:12px 20px}
header{border-bottom:1px solid #dde1e6}h1{font-size:22px;margin:6px 0}
h2{font-size:18px;margin:4px 0 8px}h3{font-size:15px;margin:14px 0 6px;color:#3a4654}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:12px 16px;
margin:14px 0}
.meta{color:#56616e;margin:2px 0}table{border-collapse:collapse;margin:4px 0}
th,td{padding:3px 9px;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
th{font-weight:600;color:#3a4654;background:#f2f4f6}td.num,th.num{text-align:right;
font-variant-numeric:tabular-nums}
ul.headline{list-style:none;padding:0;margin:0}ul.headline li{padding:5px 8px;margin:3px 0;
border-left:4px solid #b8c0c8;background:#f7f8f9}ul.headline li.clear{border-color:#2b8a3e}
.problems li{color:#a61b1b}.problems li.note{color:#56616e}.insights li{color:#1b4f8a}
.note{color:#56616e;font-size:12px}
pre.text{white-space:pre-wrap;word-break:break-word;background:#f7f8f9;padding:6px 8px;
margin:2px 0 8px;border-radius:4px;max-height:260px;overflow:auto}
details.example{border:1px solid #e4e7eb;border-radius:4px;margin:6px 0;padding:4px 8px}
details.example summary{cursor:pointer}.claims li.unsupported{color:#a61b1b}
.claims li.supported{color:#2b6a36}.verdict-fail{color:#a61b1b;font-weight:600}
.verdict-pass{color:#2b6a36;font-weight:600}.histograms{display:flex;flex-wrap:wrap;gap:14px}
figure{margin:0}figcaption{font-size:12px;color:#3a4654}
svg text{font:11px system-ui,sans-serif;fill:#333}.scroll{overflow-x:auto}
"""


def render_page(report: Mapping[str, Any]) -> str:
    """The whole page for ``report`` (``build.build_report``'s data)."""
    systems = report["systems"]
    title = "ragtrace report: " + (" vs ".join(systems[:4]) if systems else "no scores")
    body = [
        _header(report),
        _verdict(report),
        _gates(report.get("gates", [])),
        _overview(report),
        *(_score(i, s) for i, s in enumerate(report["scores"])),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        + "".join(body[:1])
        + "<main>"
        + "".join(body[1:])
        + f'</main><footer class="note">ragtrace report · {esc(report["format"])}</footer>'
        "</body></html>\n"
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _interval(low: float | None, high: float | None, fmt: Any = _num) -> str:
    return "" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}]"


def _header(report: Mapping[str, Any]) -> str:
    settings, source = report["settings"], report["input"]
    files = ", ".join(f"{f['path']} ({f['records']} records)" for f in source["files"])
    parts = [
        "<header><h1>ragtrace report</h1>",
        f'<p class="meta">Systems: <b>{esc(", ".join(report["systems"]) or "none")}</b>'
        f" · {report['summary']['scores']} score(s) · files: {esc(files)}</p>",
        f'<p class="meta">Intervals: {settings["level"] * 100:g}% percentile bootstrap, '
        f"{settings['resamples']} resamples, seed {settings['seed']}. Leaderboards use "
        "unperturbed answers; flips compare each perturbed answer with its unperturbed one.</p>",
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
        lead = "Best system vs runner-up per score, clear differences first:"
    else:
        items = "".join(
            f'<li data-score="{esc(s["name"])}">{esc(e["system"])}: {esc(s["name"])} mean '
            f"{_num(e['mean'])} {_interval(e['mean_low'], e['mean_high'])}, pass rate "
            f"{_pct(e['pass_rate'])}</li>"
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
    head = "".join(f'<th class="num">{esc(s)}</th>' for s in systems)
    rows = []
    for i, section in enumerate(report["scores"]):
        by_system = {e["system"]: e for e in section["leaderboard"]}
        cells = "".join(
            f'<td class="num">{_num(by_system[s]["mean"])} ({_pct(by_system[s]["pass_rate"])})</td>'
            if s in by_system
            else '<td class="num">-</td>'
            for s in systems
        )
        arrow = "↓" if section["direction"] == "lower_is_better" else "↑"
        rows.append(
            f'<tr><td><a href="#score-{i}">{esc(section["name"])}</a> {arrow}</td>{cells}'
            f'<td class="num">{len(section["problems"])}</td></tr>'
        )
    return (
        '<section id="overview"><h2>Overview</h2><p class="meta">Mean (pass rate) per score '
        "and system; ↑ higher is better, ↓ lower is better.</p>"
        f'<div class="scroll"><table><thead><tr><th>score</th>{head}<th class="num">problems'
        f"</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _score(index: int, section: Mapping[str, Any]) -> str:
    edges = section["histograms"]["edges"]
    value_range = (edges[0], edges[-1])
    threshold = section["threshold"]
    direction = (
        "lower is better" if section["direction"] == "lower_is_better" else ("higher is better")
    )
    facts = f"evaluator {section['evaluator']} · {direction} · threshold " + (
        "none" if threshold is None else f"{threshold:g}"
    )
    return (
        f'<section class="score" id="score-{index}" data-score="{esc(section["name"])}">'
        f'<h2>{esc(section["name"])}</h2><p class="meta">{esc(facts)}</p>'
        + _leaderboard(section, value_range)
        + _comparisons(section["comparisons"])
        + _findings(section)
        + _heatmap(section, value_range)
        + _histograms(section)
        + _flips(section)
        + _worst(section["worst"])
        + "</section>"
    )


def _leaderboard(section: Mapping[str, Any], value_range: tuple[float, float]) -> str:
    rows = "".join(
        f'<tr data-system="{esc(e["system"])}"><td class="num rank">{e["rank"]}</td>'
        f'<td class="system">{esc(e["system"])}</td><td class="num n">{e["n"]}</td>'
        f'<td class="num mean">{_num(e["mean"])}</td>'
        f'<td class="num mean-ci">{_interval(e["mean_low"], e["mean_high"])}</td>'
        f"<td>{svg.interval_bar(e['mean'], e['mean_low'], e['mean_high'], value_range, section['threshold'])}</td>"  # noqa: E501
        f'<td class="num pass-rate">{_pct(e["pass_rate"])}</td>'
        f'<td class="num pass-rate-ci">{_interval(e["pass_rate_low"], e["pass_rate_high"], _pct)}'
        f'</td><td class="num errors">{e["errors"]}</td><td class="num flips">{e["flips"]}</td>'
        "</tr>"
        for e in section["leaderboard"]
    )
    return (
        '<h3>Leaderboard</h3><div class="scroll"><table class="leaderboard"><thead><tr>'
        '<th class="num">#</th><th>system</th><th class="num">n</th><th class="num">mean</th>'
        '<th class="num">interval</th><th></th><th class="num">pass rate</th>'
        '<th class="num">interval</th><th class="num">errors</th><th class="num">flips</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _pairing(c: Mapping[str, Any]) -> str:
    if not c["paired"]:
        return f"unpaired, n={c['n']}"
    left_out = c.get("left_out") or 0
    if not left_out:
        return f"paired, n={c['n']}"
    cases = "case" if left_out == 1 else "cases"
    return f"paired, n={c['n']} ({left_out} {cases} only one system has, left out)"


def _comparisons(comparisons: Sequence[Mapping[str, Any]]) -> str:
    if not comparisons:
        return ""
    rows = "".join(
        f'<tr data-system="{esc(c["system"])}" data-vs="{esc(c["vs"])}">'
        f"<td>{esc(c['system'])}</td><td>{esc(c['vs'])}</td>"
        f'<td class="num diff">{_signed(c["diff"])}</td>'
        f'<td class="num diff-ci">{_interval(c["low"], c["high"], _signed)}</td>'
        f"<td>{_pairing(c)}</td>"
        f"<td>{'clear' if c['clear'] else 'not clear'}</td></tr>"
        for c in comparisons
    )
    return (
        '<h3>Differences</h3><table class="comparisons"><thead><tr><th>system</th><th>vs</th>'
        '<th class="num">mean difference</th><th class="num">interval</th><th>cases</th>'
        f"<th>difference</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _findings(section: Mapping[str, Any]) -> str:
    problems = "".join(f"<li>{esc(p['text'])}</li>" for p in section["problems"][:100])
    more = len(section["problems"]) - 100
    problems += f'<li class="note">and {more} more (in the JSON)</li>' if more > 0 else ""
    insights = "".join(f"<li>{esc(i['text'])}</li>" for i in section["insights"])
    return (
        f'<h3>Problems</h3><ul class="problems">{problems or "<li class=note>none</li>"}</ul>'
        f'<h3>Insights</h3><ul class="insights">{insights or "<li class=note>none</li>"}</ul>'
    )


def _heatmap(section: Mapping[str, Any], value_range: tuple[float, float]) -> str:
    data = section["heatmap"]
    if not data["cases"]:
        return ""
    note = (
        f"showing the {data['shown']} hardest of {data['total_cases']} test cases"
        if data["shown"] < data["total_cases"]
        else f"all {data['total_cases']} test cases, hardest first"
    )
    return (
        f'<h3>Heatmap</h3><p class="note heatmap-note">{esc(note)}; hover a cell for its value '
        "(red: bad, green: good, grey: no value, white: not answered).</p>"
        f'<div class="scroll">{svg.heatmap(section, value_range)}</div>'
    )


def _histograms(section: Mapping[str, Any]) -> str:
    data = section["histograms"]
    lower = section["direction"] == "lower_is_better"
    figures = "".join(
        f"<figure>{svg.histogram(data['edges'], counts, system, section['threshold'], lower)}"
        f"<figcaption>{esc(system)} ({sum(counts)} values)</figcaption></figure>"
        for system, counts in data["counts"].items()
    )
    return f'<h3>Distribution</h3><div class="histograms">{figures}</div>'


def _flips(section: Mapping[str, Any]) -> str:
    total = section["flip_count"]
    if not total:
        return ""
    rows = "".join(
        f"<tr><td>{esc(f['system'])}</td><td>{esc(f['case'])}</td>"
        f'<td>{esc(f["perturbation"])}</td><td class="verdict-{esc(f["before"])}">'
        f"{esc(f['before'])} ({_num(f['value_before'])})</td>"
        f'<td class="verdict-{esc(f["after"])}">{esc(f["after"])} ({_num(f["value_after"])})'
        f"</td><td>{esc(svg.short(f['query'] or '', 120))}</td></tr>"
        for f in section["flips"][:MAX_FLIPS_SHOWN]
    )
    shown = min(total, MAX_FLIPS_SHOWN, len(section["flips"]))
    note = f"{total} flipped verdict(s)" + (f"; the first {shown} shown" if shown < total else "")
    return (
        f'<h3>Flipped verdicts under perturbation</h3><p class="note">{note}</p>'
        '<table class="flips"><thead><tr><th>system</th><th>case</th><th>perturbation</th>'
        "<th>unperturbed</th><th>perturbed</th><th>query</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _worst(examples: Sequence[Mapping[str, Any]]) -> str:
    if not examples:
        return ""
    return "<h3>Worst answers</h3>" + "".join(_example(e, i == 0) for i, e in enumerate(examples))


def _example(example: Mapping[str, Any], is_open: bool) -> str:
    verdict = example["verdict"]
    perturbed = f" · perturbed: {example['perturbation']}" if example["perturbation"] else ""
    texts = "".join(
        f'<div class="field"><b>{label}</b><pre class="text {key}">{esc(example[key])}</pre></div>'
        for key, label in (("query", "Query"), ("response", "Response"), ("reference", "Reference"))
        if example[key] is not None
    )
    if not texts:
        texts = '<p class="note">The scores file carries no texts for this answer.</p>'
    explanation = (
        f'<p class="explanation"><b>Why:</b> {esc(example["explanation"])}</p>'
        if example["explanation"]
        else ""
    )
    claims = "".join(_claim(c) for c in example["claims"])
    return (
        f'<details class="example"{" open" if is_open else ""} '
        f'data-system="{esc(example["system"])}" '
        f'data-case="{esc(example["case"])}"><summary>{esc(example["system"])} · case '
        f"{esc(example['case'])}{esc(perturbed)} · {_num(example['value'])}"
        + (f' · <span class="verdict-{esc(verdict)}">{esc(verdict)}</span>' if verdict else "")
        + f"</summary>{texts}{explanation}"
        + (f'<b>Claims</b><ul class="claims">{claims}</ul>' if claims else "")
        + "</details>"
    )


def _claim(claim: Mapping[str, Any]) -> str:
    supported = claim["supported"]
    mark, kind = {True: ("✓", "supported"), False: ("✗", "unsupported")}.get(
        supported, ("·", "unknown")
    )
    extra = [f"support {claim['support']:.3f}"] if claim["support"] is not None else []
    extra += [claim["verdict"]] if claim.get("verdict") else []
    extra += [claim["note"]] if claim.get("note") else []
    tail = f' <span class="note">({esc(", ".join(extra))})</span>' if extra else ""
    return f'<li class="{kind}">{mark} {esc(claim["text"])}{tail}</li>'
