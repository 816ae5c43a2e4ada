"""Hand-made scores lines in the shared schema, and a small two-system test set built from them.

``TWO_SYSTEMS`` answers four cases with ``model-a`` and ``model-b`` on ``faithfulness`` (higher
is better, threshold 0.75) and ``hallucination`` (lower is better, threshold 0.5); ``model-b``
also answers case q2 with typos (its verdict flips) and q1 with typos (no flip). Values:

    case   model-a faith  model-b faith   model-a halluc  model-b halluc
    q1     0.90 pass      0.95 pass       0.10 pass       0.05 pass
    q2     0.60 fail      0.80 pass       0.40 pass       0.20 pass
    q3     0.50 fail      0.70 fail       0.70 fail       0.60 fail
    q4     0.70 fail      0.85 pass       0.30 pass       0.10 pass
    q2~typos              0.40 fail
    q1~typos              0.92 pass

model-a: faithfulness mean 0.675 (below 0.75: a problem), pass rate 1/4; model-b: mean 0.825,
pass rate 3/4. Hallucination: model-a 0.375, model-b 0.2375 (best: lower). q3 is failed by both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAYLOAD = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'

FAITH = {
    ("model-a", "q1"): 0.90, ("model-a", "q2"): 0.60, ("model-a", "q3"): 0.50,
    ("model-a", "q4"): 0.70, ("model-b", "q1"): 0.95, ("model-b", "q2"): 0.80,
    ("model-b", "q3"): 0.70, ("model-b", "q4"): 0.85,
}  # fmt: skip
HALLUC = {
    ("model-a", "q1"): 0.10, ("model-a", "q2"): 0.40, ("model-a", "q3"): 0.70,
    ("model-a", "q4"): 0.30, ("model-b", "q1"): 0.05, ("model-b", "q2"): 0.20,
    ("model-b", "q3"): 0.60, ("model-b", "q4"): 0.10,
}  # fmt: skip


def score(
    name: str,
    value: float | None,
    threshold: float | None = 0.75,
    direction: str = "higher_is_better",
    passed: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One score object; ``passed`` follows the threshold unless given."""
    if passed is None and value is not None and threshold is not None:
        passed = value >= threshold if direction == "higher_is_better" else value <= threshold
    return {
        "name": name,
        "evaluator": name.split(".", maxsplit=1)[0],
        "value": value,
        "label": None if passed is None else ("pass" if passed else "fail"),
        "passed": passed,
        "threshold": threshold,
        "direction": direction,
        "explanation": extra.pop("explanation", f"{name} = {value}"),
        "error": extra.pop("error", None),
        "kind": "model",
        "model": "some-evaluator-model",
        "details": extra.pop("details", {}),
    }


def line(
    system: str,
    case: str,
    scores: list[dict[str, Any]],
    perturbation: str | None = None,
    response: str | None = None,
) -> dict[str, Any]:
    """One scores line in the shared schema."""
    return {
        "id": case if perturbation is None else f"{case}~{perturbation}",
        "system": system,
        "case": case,
        "perturbation": perturbation,
        "scores": scores,
        "skipped": [],
        "record": {
            "query": f"question {case}" + (" (with typos)" if perturbation else ""),
            "response": response if response is not None else f"{system} answers {case}",
            "reference": f"reference {case}",
        },
    }


def claims_details(*claims: tuple[str, bool, float]) -> dict[str, Any]:
    """``details`` as the faithfulness evaluator writes them."""
    return {
        "claims": [
            {"claim": c, "support": s, "supported": ok, "closest_passage_sentence": 0}
            for c, ok, s in claims
        ],
        "claim_ratio": sum(ok for _, ok, _ in claims) / len(claims),
    }


def two_systems() -> list[dict[str, Any]]:
    """The test set of the module docstring; model-a's q3 response holds a script payload."""
    rows = []
    for (system, case), faith in FAITH.items():
        details = (
            claims_details(
                ("Aurora opened in Lyon in 2019.", False, 0.08), ("It sells.", True, 0.9)
            )
            if (system, case) == ("model-a", "q3")
            else {}
        )
        rows.append(
            line(
                system,
                case,
                [
                    score("faithfulness", faith, details=details),
                    score("hallucination", HALLUC[system, case], 0.5, "lower_is_better"),
                ],
                response=f"Answer {PAYLOAD}" if (system, case) == ("model-a", "q3") else None,
            )
        )
    rows.append(line("model-b", "q2", [score("faithfulness", 0.40)], perturbation="typos"))
    rows.append(line("model-b", "q1", [score("faithfulness", 0.92)], perturbation="typos"))
    return rows


def write_lines(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON Lines (a str row is written as is, for broken lines)."""
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def unanswered_line(
    system: str, case: str, evaluators: list[str], error: str = "TimeoutError: no answer in 30 s"
) -> dict[str, Any]:
    """A line as ``ragtrace eval`` writes it when the system raised: no response, no scores,
    every evaluator skipped for lack of what the system was to produce, and the error."""
    found = line(system, case, [])
    found["record"]["response"] = None
    found["skipped"] = [{"evaluator": e, "missing": ["chunks", "response"]} for e in evaluators]
    found["error"] = error
    return found


LABELS = {"q1": "billing", "q2": "shipping", "q3": "billing", "q4": "returns"}
PREDICTED = {
    "model-a": {"q1": "billing", "q2": "billing", "q3": "billing", "q4": "returns"},
    "model-b": {"q1": "billing", "q2": "shipping", "q3": "returns", "q4": "returns"},
    "model-c": {"q1": "shipping", "q2": "shipping", "q4": "returns"},
}
LATENCY = {"model-a": 0.8, "model-b": 0.3, "model-c": 2.0}
COST = {"model-a": 0.002, "model-b": 0.0005, "model-c": 0.001}


def three_systems() -> list[dict[str, Any]]:
    """``two_systems`` plus ``model-c``, which timed out on q3, a ``classification`` score on
    every answer, and each system's latency and cost."""
    rows = two_systems()
    for case, faith in (("q1", 0.85), ("q2", 0.75), ("q4", 0.80)):
        rows.append(line("model-c", case, [score("faithfulness", faith)]))
    rows.append(unanswered_line("model-c", "q3", ["faithfulness", "classification"]))
    for row in rows:
        system, case = row["system"], row["case"]
        if row["perturbation"] is None and case in PREDICTED[system]:
            predicted, expected = PREDICTED[system][case], LABELS[case]
            row["scores"].append(
                score(
                    "classification",
                    float(predicted == expected),
                    0.5,
                    details={"predicted": predicted, "expected": expected},
                )
            )
        if row.get("error") is None:
            row["latency_s"] = LATENCY[system]
            row["usage"] = {"input_tokens": 500, "output_tokens": 40, "cost_usd": COST[system]}
    return rows


def report_of(
    tmp_path: Path, rows: list[Any], *, resamples: int = 300, **options: Any
) -> dict[str, Any]:
    """The report's JSON for ``rows``, written to ``tmp_path`` and read back as the CLI reads
    them."""
    from ragtrace._report.build import ReportOptions, build_report
    from ragtrace._report.load import load_scores

    loaded = load_scores([write_lines(tmp_path / "scores.jsonl", rows)])
    return build_report(loaded, ReportOptions(resamples=resamples, **options))


def section(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The report's section for score ``name`` (exactly one)."""
    (found,) = [s for s in report["scores"] if s["name"] == name]
    return found
