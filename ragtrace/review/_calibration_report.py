"""The report of ``ragtrace review calibrate``: a table, the settings entry, or JSON.

``render`` prints what ``calibration.labelled_scores`` read and skipped, each calibration's
``calibration.CalibrationFit`` (balanced accuracy, false alarms and caught, now and held out)
and the settings entry that applies the proposed thresholds (``settings_snippet``), or that
the current thresholds stay; ``as_json`` gives the same as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ragtrace.review._calibration import (
    CalibrationFit,
    FitOptions,
    LabelledSet,
    Quality,
    proposed_thresholds,
)


def settings_snippet(evaluator: str, thresholds: Mapping[str, float]) -> str:
    """The settings file entry that applies ``thresholds`` (YAML)."""
    pairs = ", ".join(f"{k}: {v}" for k, v in sorted(thresholds.items()))
    return f"evaluators:\n  - name: {evaluator}\n    thresholds: {{{pairs}}}\n"


def as_json(
    evaluator: str,
    read: LabelledSet,
    fits: Sequence[CalibrationFit],
    source: str,
    options: FitOptions,
) -> dict[str, Any]:
    """What ``ragtrace review calibrate --json`` prints: ``render``'s content as data."""
    return {
        "evaluator": evaluator,
        "source": source,
        "answers": len(read.rows),
        "skipped": dict(read.skipped),
        "options": asdict(options),
        "fits": [asdict(f) for f in fits],
        "thresholds": proposed_thresholds(fits),
    }


def _quality(q: Quality | None) -> str:
    if q is None:
        return "- | - | -"
    return f"{q.balanced_accuracy:.3f} | {q.false_alarms:.0%} | {q.caught:.0%}"


def render(evaluator: str, read: LabelledSet, fits: Sequence[CalibrationFit], source: str) -> str:
    """The report ``ragtrace review calibrate`` prints: what was read and skipped, a table of
    the fits (the AUROC of the labels; balanced accuracy, share of faithful answers flagged,
    share of hallucinated ones caught: now, and with the cut re-chosen without each label's
    fold) and the settings entry to use, or that the current thresholds stay."""
    lines = [
        f"{len(read.rows)} labelled answers with a {evaluator} score ({source}); "
        f"skipped: {read.skipped_text()}",
        "",
        "| calibration | hallucinated | faithful | AUROC | cut now | BA now | false alarms now "
        "| caught now | BA held out | false alarms held out | caught held out | proposed cut "
        "| note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for fit in fits:
        cut = "-" if fit.proposed_cut is None else f"{fit.proposed_cut:.3f}"
        ranking = "-" if fit.ranking is None else f"{fit.ranking:.3f}"
        lines.append(
            f"| {fit.calibration} | {fit.hallucinated} | {fit.faithful} | {ranking} "
            f"| {fit.current_cut:.4f} | {_quality(fit.now)} | {_quality(fit.held_out)} "
            f"| {cut} | {fit.note} |"
        )
    proposed = proposed_thresholds(fits)
    lines.append("")
    if proposed:
        lines.append("Verdict thresholds on the hallucination probability; a settings file entry:")
        lines.append("")
        lines.append(settings_snippet(evaluator, proposed).rstrip("\n"))
        lines.append("")
        lines.append(f"In code: {evaluator.capitalize()}(thresholds={proposed!r})")
    else:
        lines.append("Nothing to change: the current thresholds stay.")
    return "\n".join(lines) + "\n"
