"""The summary the demo prints when it stops: requests, evaluations, drops, spans, /metrics."""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.demo._board import Counts
from ragtrace.demo._fleet import FleetTally, format_tally


@dataclass(frozen=True)
class DemoSummary:
    """What a demo run did.

    Attributes:
        counts: The registry's counts at the end.
        elapsed_s: Wall time of the request stream.
        spans: Spans finished (RAG, retrieval, LLM, chain steps and evaluation spans).
        metrics_url: Where ``/metrics`` was served.
        otlp_endpoint: Where spans were exported, if anywhere.
        otlp_exported: Spans the OTLP exporter delivered.
        otlp_failed: Spans it failed to deliver.
        interrupted: Whether Ctrl-C ended the run.
        fleet: With ``--queue``: what the workers did with the shipped records.
        catches: The demo model's bad answers caught, and false alarms on its good ones
            (``ragtrace.demo._catches``), as lines.
        scenario: The run's scenario and, if it degraded, when (``ragtrace.demo._scenario``).
    """

    counts: Counts
    elapsed_s: float
    spans: int
    metrics_url: str
    otlp_endpoint: str | None
    otlp_exported: int = 0
    otlp_failed: int = 0
    interrupted: bool = False
    fleet: FleetTally | None = None
    catches: tuple[str, ...] = ()
    scenario: str = ""

    @property
    def spans_per_request(self) -> float:
        return self.spans / max(1, self.counts.total_requests)


def format_summary(summary: DemoSummary) -> str:
    """The summary as text (a block of lines ending in a newline)."""
    c = summary.counts
    n = c.total_requests
    rate = n / summary.elapsed_s if summary.elapsed_s > 0 else 0.0
    statuses = ", ".join(f"{k} {int(v)}" for k, v in sorted(c.requests.items())) or "none"
    stopped = " (stopped by Ctrl-C)" if summary.interrupted else ""
    where = "kept in process (add --otlp-endpoint to export them)"
    if summary.otlp_endpoint:
        where = f"{summary.otlp_exported} exported with OTLP to {summary.otlp_endpoint}"
        if summary.otlp_failed:
            where += f", {summary.otlp_failed} failed to export"
    lines = [
        "",
        f"ragtrace demo summary{stopped}",
        f"  requests         {n} in {summary.elapsed_s:.1f} s ({rate:.1f}/s): {statuses}",
        *([f"  scenario         {summary.scenario}"] if summary.scenario else []),
        f"  spans            {summary.spans} ({summary.spans_per_request:.1f} per request), "
        + where,
        "  evaluations",
        f"    {'evaluator':<36} {'pass':>6} {'fail':>6} {'error':>6} {'skipped':>8} "
        f"{'mean':>6} {'pass rate':>10}",
    ]
    for name in sorted(c.evaluations):
        outcomes = c.evaluations[name]
        mean, pass_rate = c.mean_score(name), c.pass_rate(name)
        cells = [f"{int(outcomes.get(k, 0)):>{w}}" for k, w in _OUTCOME_WIDTHS]
        lines.append(
            f"    {name:<36} {' '.join(cells)} "
            f"{'-' if mean is None else f'{mean:.3f}':>6} "
            f"{'-' if pass_rate is None else f'{pass_rate:.1%}':>10}"
        )
    if not c.evaluations:
        lines.append("    (no evaluations)")
    lines += list(summary.catches)
    lines += [
        f"  drops            {_listing(c.drops)}",
        f"  internal errors  {_listing(c.internal_errors)}",
        *([format_tally(summary.fleet, int(sum(c.drops.values())))] if summary.fleet else []),
        f"  metrics          served at {summary.metrics_url} while the demo ran",
        "",
    ]
    return "\n".join(lines)


_OUTCOME_WIDTHS = (("pass", 6), ("fail", 6), ("error", 6), ("skipped", 8))


def _listing(values: dict[str, float]) -> str:
    shown = {k: int(v) for k, v in sorted(values.items()) if v}
    if not shown:
        return "none"
    return f"{sum(shown.values())} (" + ", ".join(f"{k} {v}" for k, v in shown.items()) + ")"
