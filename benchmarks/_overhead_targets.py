"""The capture targets of the request-path issue, judged on one ``overhead.py`` run.

Per scenario with a target: ragtrace's CPU overhead against its ceiling, and OpenLLMetry's
overhead as a multiple of ragtrace's against the multiple asked for. Each line says ``met`` or
how far off it is (the CPU ragtrace must still shed, the multiple still missing), so a run
prints the remaining distance and not only a verdict. Scenarios without a target (stream,
50-way async) are reported beside, with their figures and no verdict. Where the time goes:
``capture_profile.py`` splits ragtrace's part by callback.
"""

from __future__ import annotations

from typing import Any

# scenario -> (most ragtrace CPU overhead per request, us; least OpenLLMetry / ragtrace multiple)
CAPTURE_TARGETS: dict[str, tuple[float, float]] = {
    "lc-invoke": (350.0, 7.0),
    "li-query": (400.0, 12.0),
}
PEER = "openllmetry"


def verdicts(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per measured scenario: ragtrace's overhead and added p99, the peer's multiple, and
    against each target (if the scenario has one) whether it is met and the distance left."""
    out: dict[str, dict[str, Any]] = {}
    for scenario, by_config in results.items():
        ours = by_config.get("ragtrace") or {}
        overhead = ours.get("overhead_us")
        if overhead is None:
            continue
        peer = (by_config.get(PEER) or {}).get("overhead_vs_ragtrace")
        row: dict[str, Any] = {
            "overhead_us": overhead,
            "added_p99_us": ours.get("added_p99_us"),
            "peer_multiple": peer,
        }
        if scenario in CAPTURE_TARGETS:
            ceiling, multiple = CAPTURE_TARGETS[scenario]
            row.update(
                ceiling_us=ceiling,
                overhead_met=overhead <= ceiling,
                overhead_to_shed_us=max(0.0, overhead - ceiling),
                multiple_wanted=multiple,
                multiple_met=None if peer is None else peer >= multiple,
            )
        out[scenario] = row
    return out


def render(verdict: dict[str, dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """The targets table's lines (empty when ragtrace was not measured)."""
    if not verdict:
        return []
    lines = [
        f"Capture targets (ragtrace's CPU overhead per request; {PEER}'s overhead as a multiple "
        "of ragtrace's; added wall p99)",
        "",
    ]
    for scenario, row in verdict.items():
        text = f"  {labels.get(scenario, scenario):<22} +{row['overhead_us'] / 1000:.3f} ms"
        if "ceiling_us" in row:
            text += f" (<= {row['ceiling_us'] / 1000:.2f}: " + _overhead_verdict(row) + ")"
        peer = row["peer_multiple"]
        text += f", {PEER} {peer:.1f}x" if peer is not None else f", {PEER} not measured"
        if "multiple_wanted" in row and peer is not None:
            wanted = row["multiple_wanted"]
            text += f" (>= {wanted:g}x: " + ("met" if row["multiple_met"] else "MISSED") + ")"
        if row["added_p99_us"] is not None:
            text += f", p99 {row['added_p99_us']:+.0f} us"
        lines.append(text)
    return lines


def _overhead_verdict(row: dict[str, Any]) -> str:
    if row["overhead_met"]:
        return "met"
    shed = row["overhead_to_shed_us"]
    return f"MISSED by {shed / 1000:.3f} ms, {shed / row['ceiling_us']:.0%}"
