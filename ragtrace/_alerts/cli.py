"""``ragtrace alerts``: the alert rules against recorded verdicts.

::

    ragtrace alerts backtest verdicts.jsonl --json alerts.json [--rules DIR] [--step 65]

``backtest`` reads a verdicts file (``ragtrace._alerts.verdicts``; ``ragtrace eval --verdicts``
writes one), replays it through the rule files (``*.rules.yml``, the shipped ones unless
``--rules``) with promtool (``ragtrace._alerts.backtest``), writes every alert episode as JSON
and prints a table per alert.

Exit status: 0 done; 1 promtool missing or failing; 2 usage error (bad arguments, an
unreadable input or a bad line in it, no rule files, rules that do not load or evaluate, an
unwritable output), always one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ragtrace._config.arguments import number, one_line, run_subcommand
from ragtrace._network.terminal import printable

COMMAND = "alerts"
_PREFIX = "ragtrace alerts backtest"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``alerts`` and its subcommands to ``subparsers`` (``add_subparsers()``)."""
    alerts: argparse.ArgumentParser = subparsers.add_parser(
        COMMAND,
        help="the alert rules against recorded verdicts (backtest)",
        description="Check Prometheus alert rules against recorded scores.",
    )
    sub = alerts.add_subparsers(dest="alerts_command", required=True)
    backtest: argparse.ArgumentParser = sub.add_parser(
        "backtest",
        help="replay a verdicts file through the alert rules; every alert episode",
        description="Replay timestamped verdicts (JSON lines: time, app, evaluator, value, "
        "passed) through the recording and alert rules with Prometheus's own rule engine "
        "(promtool test rules) and write when each alert went pending, fired and resolved.",
        epilog="Exit status: 0 done; 1 promtool missing or failing; 2 usage error (bad input "
        "line, rules that do not load). See docs/grafana.md, 'Backtest the rules'.",
    )
    backtest.add_argument("verdicts", metavar="VERDICTS.jsonl", help="verdicts; '-' reads stdin")
    backtest.add_argument(
        "--json", metavar="PATH", help="write the alert episodes as JSON here ('-': stdout)"
    )
    backtest.add_argument(
        "--rules",
        type=Path,
        metavar="DIR",
        help="the rule files (*.rules.yml) of this folder (default: the shipped ones, "
        "grafana/prometheus)",
    )
    backtest.add_argument(
        "--step",
        type=number(int, 1, what="whole seconds"),
        default=65,
        metavar="SECONDS",
        help="scrape and rule evaluation interval (default 65: at 60 a 7-day baseline reads "
        "10,081 samples, over the 10,000 promtool allows in one query)",
    )
    backtest.add_argument(
        "--promtool", metavar="PATH", help="the promtool binary (default: promtool on PATH)"
    )
    backtest.add_argument("--quiet", action="store_true", help="print no table")
    alerts.set_defaults(handler=run)
    return alerts


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace alerts`` on its own: ``main(["backtest", "verdicts.jsonl", ...])``."""
    return run_subcommand(COMMAND, add_parser, run, argv)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace alerts ...`` with parsed arguments; returns the exit status."""
    from ragtrace._alerts.backtest import backtest
    from ragtrace._alerts.promtool import PromtoolError, RulesError, SampleLimit
    from ragtrace._alerts.rules import NoRuleFiles, rule_files
    from ragtrace._alerts.verdicts import VerdictError, read_verdicts

    def fail(message: object, status: int = 2) -> int:
        print(f"{_PREFIX}: {printable(one_line(str(message)))}", file=sys.stderr)
        return status

    try:
        rules = rule_files(args.rules) if args.rules is not None else rule_files()
        with _open_input(args.verdicts) as stream:
            verdicts = read_verdicts(stream, args.verdicts)
    except (NoRuleFiles, VerdictError) as exc:
        return fail(exc)
    except OSError as exc:
        return fail(f"{exc.filename or args.verdicts}: {exc.strerror or exc}")
    if not verdicts:
        return fail(f"no verdicts in {args.verdicts}")
    started = time.monotonic()
    try:
        result = backtest(verdicts, rules, step=args.step, promtool=args.promtool)
    except SampleLimit as exc:
        return fail(exc)
    except RulesError as exc:
        return fail(f"the rules in {rules[0].parent}: {exc}")
    except PromtoolError as exc:
        return fail(exc, status=1)
    took = time.monotonic() - started
    if args.json is not None:
        try:
            _write_json(result, args.json)
        except OSError as exc:
            return fail(f"cannot write --json {args.json}: {exc.strerror or exc}")
    if not args.quiet:
        out = sys.stderr if args.json == "-" else sys.stdout
        print(printable(summary(result, took), keep="\n"), file=out)
    return 0


def _open_input(name: str) -> IO[bytes]:
    if name == "-":
        return open(sys.stdin.fileno(), "rb", closefd=False)
    if Path(name).is_dir():
        raise IsADirectoryError(21, "is a directory", name)
    return open(name, "rb")


def _write_json(result: dict[str, Any], path: str) -> None:
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def summary(result: dict[str, Any], took_s: float) -> str:
    """The table the command prints: per alert, its episodes, how many fired, the first firing
    and the time spent firing."""
    end = result["evaluated_to"]
    per: dict[str, list[dict[str, Any]]] = {}
    for alert in result["alerts"]:
        per.setdefault(alert["alertname"], []).append(alert)
    counts = result["verdicts"]
    later = counts["read"] - counts["replayed"]
    lines = [
        f"{counts['replayed']:,} verdicts replayed ({later:,} after the last step left out), "
        f"{_utc(result['evaluated_from'])} to {_utc(end)}, every {result['step_s']} s, "
        f"in {took_s:.1f} s",
    ]
    if not per:
        return "\n".join([*lines, "no alert went pending"])
    width = max(len("alert"), *map(len, per))
    lines.append(f"{'alert':<{width}}  episodes  fired  first firing          firing for")
    for name, found in sorted(per.items()):
        fired = [a for a in found if a["firing_at"] is not None]
        first = _utc(min(a["firing_at"] for a in fired)) if fired else "-"
        firing = sum((a["resolved_at"] or end) - a["firing_at"] for a in fired)
        lines.append(
            f"{name:<{width}}  {len(found):>8}  {len(fired):>5}  {first:<20}  {_duration(firing)}"
        )
    return "\n".join(lines)


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
