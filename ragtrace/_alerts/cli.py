"""``ragtrace alerts``: the alert rules against recorded verdicts.

::

    ragtrace alerts backtest verdicts.jsonl --json alerts.json [--rules DIR] [--step 65]
    ragtrace alerts floors verdicts.jsonl --out grafana/prometheus/my-floors.rules.yml

``backtest`` reads a verdicts file (``ragtrace._alerts.verdicts``; ``ragtrace eval --verdicts``
writes one), replays it through the rule files (``*.rules.yml``, the shipped ones unless
``--rules``) with promtool (``ragtrace._alerts.backtest``), writes every alert episode as JSON
and prints a table per alert. ``floors`` reads the verdicts of an app's normal answers (a
pre-launch evaluation) and writes the app's own floors as a rule file
(``ragtrace._alerts.floors``), printing each floor beside the pass ratio it came from.

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

from ragtrace._alerts.floors import DEFAULT_MIN_VERDICTS
from ragtrace._config.arguments import number, one_line, run_subcommand
from ragtrace._network.terminal import printable

COMMAND = "alerts"


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
    floors: argparse.ArgumentParser = sub.add_parser(
        "floors",
        help="an app's own floors from the verdicts of its normal answers, as a rule file",
        description="Set the floors RagtraceQualityBelowFloor holds an app to from the verdicts "
        "of its normal answers (ragtrace eval --verdicts on a pre-launch set): per app and "
        "evaluator, the pass ratio its normal traffic never reaches. Writes a rule file to "
        "load beside the shipped ones.",
        epilog="Exit status: 0 done; 2 usage error (bad input line, no evaluator with enough "
        "verdicts, rules without the constants). See docs/grafana.md, 'Floors of your own'.",
    )
    floors.add_argument("verdicts", metavar="VERDICTS.jsonl", help="verdicts; '-' reads stdin")
    floors.add_argument(
        "--out", metavar="PATH", help="write the rule file here (default: print it)"
    )
    floors.add_argument(
        "--rules",
        type=Path,
        metavar="DIR",
        help="read the drop tolerance and minimum deviation from these rule files (default: "
        "the shipped ones)",
    )
    floors.add_argument(
        "--min-verdicts",
        type=number(int, 1, what="a whole number of verdicts"),
        default=DEFAULT_MIN_VERDICTS,
        metavar="N",
        help=f"set a floor only from at least N verdicts (default {DEFAULT_MIN_VERDICTS})",
    )
    alerts.set_defaults(handler=run)
    return alerts


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace alerts`` on its own: ``main(["backtest", "verdicts.jsonl", ...])``."""
    return run_subcommand(COMMAND, add_parser, run, argv)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace alerts ...`` with parsed arguments; returns the exit status."""
    if args.alerts_command == "floors":
        return run_floors(args)
    return run_backtest(args)


def _fail(command: str, message: object, status: int = 2) -> int:
    print(f"ragtrace alerts {command}: {printable(one_line(str(message)))}", file=sys.stderr)
    return status


def run_floors(args: argparse.Namespace) -> int:
    """``ragtrace alerts floors``: the app's own floors as a rule file."""
    import yaml

    from ragtrace._alerts.floors import (
        MIN_SD,
        TOLERANCE,
        FloorError,
        app_floors,
        floors_rules,
        rule_constant,
    )
    from ragtrace._alerts.rules import NoRuleFiles, rule_files
    from ragtrace._alerts.verdicts import VerdictError, read_verdicts

    try:
        rules = rule_files(args.rules) if args.rules is not None else rule_files()
        tolerance, min_sd = (rule_constant(rules, name) for name in (TOLERANCE, MIN_SD))
        with _open_input(args.verdicts) as stream:
            verdicts = read_verdicts(stream, args.verdicts)
        floors = app_floors(
            verdicts, tolerance_sd=tolerance, min_sd=min_sd, min_verdicts=args.min_verdicts
        )
        if not floors:
            raise FloorError(
                f"no app and evaluator with {args.min_verdicts} verdicts in {args.verdicts}"
            )
        text = floors_rules(floors, source=f"{len(verdicts):,} verdicts of {args.verdicts}")
    except (NoRuleFiles, VerdictError, FloorError, yaml.YAMLError) as exc:
        return _fail("floors", exc)
    except OSError as exc:
        return _fail("floors", f"{exc.filename or args.verdicts}: {exc.strerror or exc}")
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        return _fail("floors", f"cannot write --out {args.out}: {exc.strerror or exc}")
    for floor in floors:
        print(
            f"{printable(floor.app)} / {printable(floor.evaluator)}: floor {floor.floor:.2f} "
            f"(passed {floor.pass_ratio:.3f} of {floor.verdicts:,})"
        )
    print(f"wrote {args.out}: load it beside the shipped rules")
    return 0


def run_backtest(args: argparse.Namespace) -> int:
    """``ragtrace alerts backtest``: every alert episode of the verdicts."""
    from ragtrace._alerts.backtest import backtest
    from ragtrace._alerts.promtool import PromtoolError, RulesError, SampleLimit
    from ragtrace._alerts.rules import NoRuleFiles, rule_files
    from ragtrace._alerts.verdicts import VerdictError, read_verdicts

    def fail(message: object, status: int = 2) -> int:
        return _fail("backtest", message, status)

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
