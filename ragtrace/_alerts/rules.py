"""Where ragtrace's Prometheus rules live: ``grafana/prometheus/*.rules.yml`` of a source checkout.

``rule_files()`` lists the shipped recording and alert rule files; ``rule_files(folder)`` those
of another folder (a copy with a rule changed, say). ``ragtrace demo --prometheus`` loads the
same files (``ragtrace.demo.prometheus_stack``), ``ragtrace alerts backtest`` replays verdicts
through them.
"""

from __future__ import annotations

from pathlib import Path

RULES_DIR = Path(__file__).resolve().parents[2] / "grafana" / "prometheus"
RULES_GLOB = "*.rules.yml"


class NoRuleFiles(ValueError):
    """A folder holds no rule file (``*.rules.yml``)."""


def rule_files(folder: Path = RULES_DIR) -> list[Path]:
    """The rule files (``*.rules.yml``) of ``folder``, sorted by name.

    Raises:
        NoRuleFiles: There is none (the message names the folder and the pattern).
    """
    found = sorted(p for p in Path(folder).glob(RULES_GLOB) if p.is_file())
    if not found:
        raise NoRuleFiles(f"no rule files ({RULES_GLOB}) in {folder}")
    return found
