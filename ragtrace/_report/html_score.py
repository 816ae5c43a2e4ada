"""One score's part of the report page: leaderboard, differences, findings, heatmap, details.

``score_section(index, section)`` renders a ``build`` score section. What is read first stays
open (leaderboard, differences, problems and insights, heatmap); distributions, flipped verdicts
and the worst answers are folded (``<details>``). Problems are de-duplicated: flipped verdicts
are one folded item, inside it one folded group per system, perturbation and direction
(regressions in red, improvements in green), each listing its cases once; the flips table holds
the values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace._report import svg
from ragtrace._report.html_format import interval, num, pct, signed
from ragtrace._report.svg import esc

MAX_FLIPS_SHOWN = 50
MAX_PROBLEMS_SHOWN = 100
MAX_CASES_NAMED = 30


def score_section(index: int, section: Mapping[str, Any]) -> str:
    """The part of the page for one score (``build``'s section)."""
    edges = section["histograms"]["edges"]
    value_range = (edges[0], edges[-1])
    direction = (
        "lower is better" if section["direction"] == "lower_is_better" else ("higher is better")
    )
    facts = f"evaluator {section['evaluator']} · {direction} · {_thresholds(section)}"
    return (
        f'<section class="score" id="score-{index}" data-score="{esc(section["name"])}">'
        f'<h2>{esc(section["name"])}<a class="back" href="#overview">↑ overview</a></h2>'
        f'<p class="meta">{esc(facts)}</p>'
        + _basis(section)
        + _leaderboard(section, value_range)
        + _comparisons(section["comparisons"])
        + _findings(section)
        + _heatmap(section, value_range)
        + _histograms(section)
        + _flips(section)
        + _worst(section["worst"])
        + "</section>"
    )


def thresholds_of(section: Mapping[str, Any]) -> list[float]:
    """Every threshold the score's rows carry (most common first)."""
    listed = [t["threshold"] for t in section.get("thresholds", [])]
    if not listed and section["threshold"] is not None:
        listed = [section["threshold"]]
    return listed


def _thresholds(section: Mapping[str, Any]) -> str:
    found = section.get("thresholds", [])
    if len(found) > 1:
        each = ", ".join(f"{t['threshold']:g} ({t['rows']} rows)" for t in found)
        return f"thresholds differ by row: {each}; each row is judged on its own"
    threshold = section["threshold"]
    return "threshold " + ("none" if threshold is None else f"{threshold:g}")


def _basis(section: Mapping[str, Any]) -> str:
    basis = section.get("basis")
    if not basis:
        return ""
    if not basis["shared"]:
        text = (
            "The systems were asked different cases: each is taken over its own, and the "
            "differences are unpaired."
        )
    else:
        rule = (
            "a case a system left unanswered counts as a failure"
            if basis["mode"] == "fail"
            else "cases a system left unanswered are left out for every system"
        )
        text = f"Compared on the {basis['cases']} case(s) every system was asked; {rule}"
        if basis["left_out"]:
            text += f" ({basis['left_out']} case(s) with a value left out)"
        text += "."
    if basis.get("note"):
        text += f" Here {basis['note']}."
    return f'<p class="note basis">{esc(text)}</p>'


def _leaderboard(section: Mapping[str, Any], value_range: tuple[float, float]) -> str:
    ticks = thresholds_of(section)
    rows = "".join(
        f'<tr data-system="{esc(e["system"])}"><td class="num rank">{e["rank"]}</td>'
        f'<td class="system">{esc(e["system"])}</td><td class="num n">{e["n"]}</td>'
        f'<td class="num mean">{num(e["mean"])}</td>'
        f'<td class="num mean-ci">{interval(e["mean_low"], e["mean_high"])}</td>'
        f"<td>{svg.interval_bar(e['mean'], e['mean_low'], e['mean_high'], value_range, ticks)}"
        f'</td><td class="num pass-rate">{pct(e["pass_rate"])}</td>'
        f'<td class="num pass-rate-ci">{interval(e["pass_rate_low"], e["pass_rate_high"], pct)}'
        f"</td>{unanswered_cell(e['unanswered'])}"
        f'<td class="num errors">{e["errors"]}</td><td class="num flips">{e["flips"]}</td>'
        "</tr>"
        for e in section["leaderboard"]
    )
    return (
        '<h3>Leaderboard</h3><div class="scroll"><table class="leaderboard"><thead><tr>'
        '<th class="num">#</th><th>system</th><th class="num">n</th><th class="num">mean</th>'
        '<th class="num">interval</th><th></th><th class="num">pass rate</th>'
        '<th class="num">interval</th><th class="num">unanswered</th>'
        '<th class="num">errors</th><th class="num">flips</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def unanswered_cell(count: int) -> str:
    """A table cell counting unanswered cases, marked when there are any."""
    some = " some" if count else ""
    return f'<td class="num unanswered{some}">{count}</td>'


def _pairing(c: Mapping[str, Any]) -> str:
    if not c["paired"]:
        return f"unpaired, n={c['n']}"
    left_out = c.get("left_out") or 0
    if not left_out:
        return f"paired, n={c['n']}"
    cases = "case" if left_out == 1 else "cases"
    return f"paired, n={c['n']} ({left_out} {cases} not every system has, left out)"


def _comparisons(comparisons: Sequence[Mapping[str, Any]]) -> str:
    if not comparisons:
        return ""
    rows = "".join(
        f'<tr data-system="{esc(c["system"])}" data-vs="{esc(c["vs"])}">'
        f"<td>{esc(c['system'])}</td><td>{esc(c['vs'])}</td>"
        f'<td class="num diff">{signed(c["diff"])}</td>'
        f'<td class="num diff-ci">{interval(c["low"], c["high"], signed)}</td>'
        f"<td>{_pairing(c)}</td>"
        f"<td>{'clear' if c['clear'] else 'not clear'}</td></tr>"
        for c in comparisons
    )
    return (
        '<h3>Differences</h3><table class="comparisons"><thead><tr><th>system</th><th>vs</th>'
        '<th class="num">mean difference</th><th class="num">interval</th><th>cases</th>'
        f"<th>difference</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _findings(section: Mapping[str, Any]) -> str:
    problems = section["problems"]
    plain = [p for p in problems if p["kind"] != "flipped"]
    items = [f"<li>{esc(p['text'])}</li>" for p in plain[:MAX_PROBLEMS_SHOWN]]
    if len(plain) > MAX_PROBLEMS_SHOWN:
        items.append(f'<li class="note">and {len(plain) - MAX_PROBLEMS_SHOWN} more (JSON)</li>')
    flipped = [p for p in problems if p["kind"] == "flipped"]
    if flipped:
        regressions = sum(p.get("flip") == "regression" for p in flipped)
        items.append(
            f'<li class="flip-summary"><details><summary>{len(flipped)} verdict(s) flipped '
            f"under perturbation: {regressions} regression(s), {len(flipped) - regressions} "
            f"improvement(s)</summary><ul>{''.join(_flip_groups(flipped))}</ul></details></li>"
        )
    return (
        f'<h3>Problems</h3><ul class="problems">{"".join(items) or "<li class=note>none</li>"}'
        "</ul>" + insights_list(section["insights"])
    )


def insights_list(insights: Sequence[Mapping[str, Any]]) -> str:
    """The insights under their heading ("none" when there are none)."""
    items = "".join(f'<li class="{esc(i["kind"])}">{esc(i["text"])}</li>' for i in insights)
    return f'<h3>Insights</h3><ul class="insights">{items or "<li class=note>none</li>"}</ul>'


def _flip_groups(flipped: Sequence[Mapping[str, Any]]) -> list[str]:
    """Flipped verdicts, one folded item per (system, perturbation, direction), cases once."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for p in flipped:
        key = (p["system"], p["perturbation"], p.get("flip", "regression"))
        groups.setdefault(key, []).append(p["case"])
    items = []
    for (system, perturbation, kind), cases in groups.items():
        word = "regression" if kind == "regression" else "improvement"
        change = "pass to fail" if kind == "regression" else "fail to pass"
        listed = ", ".join(dict.fromkeys(cases[:MAX_CASES_NAMED]))
        more = f" and {len(cases) - MAX_CASES_NAMED} more" if len(cases) > MAX_CASES_NAMED else ""
        items.append(
            f'<li class="flip-{word}" data-system="{esc(system)}" '
            f'data-perturbation="{esc(perturbation)}" data-count="{len(cases)}"><details>'
            f"<summary>{esc(system)}: {len(cases)} {word}(s) under '{esc(perturbation)}' "
            f"({change})</summary>cases: {esc(listed)}{esc(more)}</details></li>"
        )
    return items


def _heatmap(section: Mapping[str, Any], value_range: tuple[float, float]) -> str:
    data = section["heatmap"]
    if not data["cases"]:
        return ""
    note = (
        f"showing the {data['shown']} hardest of the {data['total_cases']} compared test cases"
        if data["shown"] < data["total_cases"]
        else f"the {data['total_cases']} compared test cases, hardest first"
    )
    left_out = data.get("left_out") or 0
    if left_out:
        note += (
            "; 1 case not every system has is left out"
            if left_out == 1
            else f"; {left_out} cases not every system has are left out"
        )
    counted = (
        "an unanswered case counts as failed, as in the leaderboard"
        if section["basis"]["mode"] == "fail"
        else "as in the leaderboard"
    )
    return (
        f'<h3>Heatmap</h3><p class="note heatmap-note">{esc(note)} ({counted}); hover a cell '
        "for its value (red: bad, green: good, grey: no value, dark ✕: not answered, white: "
        "not asked).</p>"
        f'<div class="scroll">{svg.heatmap(section, value_range)}</div>'
    )


def _histograms(section: Mapping[str, Any]) -> str:
    data = section["histograms"]
    lower = section["direction"] == "lower_is_better"
    ticks = thresholds_of(section)
    figures = "".join(
        f"<figure>{svg.histogram(data['edges'], counts, system, ticks, lower)}"
        f"<figcaption>{esc(system)} ({sum(counts)} values)</figcaption></figure>"
        for system, counts in data["counts"].items()
    )
    return (
        '<details class="fold distribution"><summary>Distribution</summary>'
        f'<div class="histograms">{figures}</div></details>'
    )


def _flips(section: Mapping[str, Any]) -> str:
    total = section["flip_count"]
    if not total:
        return ""
    shown_flips = section["flips"][:MAX_FLIPS_SHOWN]
    rows = "".join(
        f'<tr class="flip-{esc(f.get("kind", "regression"))}"><td>{esc(f["system"])}</td>'
        f"<td>{esc(f['case'])}</td><td>{esc(f['perturbation'])}</td>"
        f'<td class="verdict-{esc(f["before"])}">{esc(f["before"])} ({num(f["value_before"])})'
        f'</td><td class="verdict-{esc(f["after"])}">{esc(f["after"])} '
        f"({num(f['value_after'])})</td><td>{esc(svg.short(f['query'] or '', 120))}</td></tr>"
        for f in shown_flips
    )
    regressions = sum(f.get("kind") == "regression" for f in section["flips"])
    shown = len(shown_flips)
    note = f"{total} flipped verdict(s)" + (f"; the first {shown} shown" if shown < total else "")
    return (
        f'<details class="fold flips-fold"><summary>Flipped verdicts under perturbation: {total}'
        f" ({regressions} regression(s) pass → fail, {len(section['flips']) - regressions} "
        f'improvement(s) fail → pass, of those listed)</summary><p class="note">{note}</p>'
        '<table class="flips"><thead><tr><th>system</th><th>case</th><th>perturbation</th>'
        "<th>unperturbed</th><th>perturbed</th><th>query</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details>"
    )


def _worst(examples: Sequence[Mapping[str, Any]]) -> str:
    if not examples:
        return ""
    return (
        f'<details class="fold worst"><summary>Worst answers ({len(examples)})</summary>'
        + "".join(_example(e, i == 0) for i, e in enumerate(examples))
        + "</details>"
    )


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
        f"{esc(example['case'])}{esc(perturbed)} · {num(example['value'])}"
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
