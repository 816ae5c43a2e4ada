"""docs/grafana.md's figures, produced by what they describe: the demo command as the page
writes it runs the evaluators the page names (each one reports in a real Prometheus), and the
operating points the page quotes are the alert rules' own."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading

import pytest
import yaml

from grafana.operating_points import recorded_constant
from ragtrace.demo._evaluators import DEMO_EVALUATORS
from tests.components import require_binary, wait_until, with_sigint_ignored
from tests.grafana.artifacts import ALERTMANAGER_EXAMPLE, REPO
from tests.grafana.test_demo_prometheus import api

DOC = REPO / "docs" / "grafana.md"
URL_LINE = re.compile(r"^prometheus at (http://127\.0\.0\.1:\d+) ")


def paragraph(starts: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(starts)}.*?(?=\n\n)", text, re.M | re.S)
    assert found is not None, starts
    return found.group(0)


def named_evaluators() -> list[str]:
    """The evaluators the page says the demo runs, in its order."""
    said = paragraph("The demo runs").split(" runs only ")[0]
    return re.findall(r"`([a-z_]+)`", said)


def documented_command() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"^\$ (ragtrace demo --prometheus[^\n]*)$", text, re.M)
    assert found is not None
    return found.group(1).split()


def test_the_page_names_the_demos_evaluators() -> None:
    assert named_evaluators() == list(DEMO_EVALUATORS)


def test_the_operating_points_the_page_quotes_are_the_rules() -> None:
    said = paragraph("Panels that an alert watches")
    threshold = recorded_constant("ragtrace:quality_evidence_threshold")
    assert f"threshold of {threshold:g} standard errors" in said
    decides = paragraph("Two rules serve every evaluator")
    assert f"- {recorded_constant('ragtrace:quality_drop_tolerance_sd'):g} sd)" in decides
    assert f"passes {threshold:g} for 5 minutes" in decides
    assert f"from {recorded_constant('ragtrace:quality_min_verdicts'):g} verdicts" in decides


@pytest.mark.integration
def test_the_documented_demo_fills_every_named_evaluators_panels() -> None:
    """``ragtrace demo --prometheus --duration 0`` as written (plus a free metrics port and a
    quiet terminal): Prometheus gets scores of every evaluator the page names."""
    require_binary("prometheus")
    written = documented_command()
    assert written == ["ragtrace", "demo", "--prometheus", "--duration", "0"]
    command = [
        *(sys.executable, "-m", *written),
        *("--rate", "20", "--metrics-port", "0", "--no-live", "--quiet"),
    ]
    process = subprocess.Popen(
        with_sigint_ignored(command),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()

    def printed_url() -> str | None:
        return next((m[1] for line in list(lines) if (m := URL_LINE.match(line))), None)

    expected = {name.split(".")[0] for name in named_evaluators()}
    try:
        url = wait_until("the demo to print the Prometheus URL", printed_url, timeout_s=300)

        def scored() -> set[str]:
            query = 'count by (evaluator) (ragtrace_evaluations_total{outcome=~"pass|fail"})'
            found = api(url, "query", query=query)["result"]
            return {r["metric"]["evaluator"].split(".")[0] for r in found}

        wait_until(f"scores of {sorted(expected)}", lambda: expected <= scored(), timeout_s=300)
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(60)
        reader.join(10)
    assert returncode in (0, 130), "".join(lines)
    # The line the page shows is the one printed, but for ports and the checkout's path.
    shown = re.search(r"^\$ ragtrace demo --prometheus.*?\n(prometheus at [^\n]*)", DOC.read_text(
        encoding="utf-8"), re.M)  # fmt: skip
    assert shown is not None
    printed = next(line.rstrip("\n") for line in lines if URL_LINE.match(line))

    def plain(line: str) -> str:
        line = re.sub(r"(127\.0\.0\.1):\d+", r"\1:PORT", line)
        return re.sub(r"from \S*/grafana/prometheus", "from .../grafana/prometheus", line)

    assert plain(printed) == plain(shown.group(1))


def test_the_routing_the_page_shows_is_the_shipped_alertmanager_configurations() -> None:
    """The YAML under "One page per incident" is the example's routes and inhibition rules as
    shipped (the group waits and intervals left out)."""
    section = DOC.read_text(encoding="utf-8").split("### One page per incident", 1)[1]
    shown = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    shipped = yaml.safe_load(ALERTMANAGER_EXAMPLE.read_text(encoding="utf-8"))
    timing = ("group_wait", "group_interval", "repeat_interval")
    assert shown["route"] == {k: v for k, v in shipped["route"].items() if k not in timing}
    assert shown["inhibit_rules"] == shipped["inhibit_rules"]
