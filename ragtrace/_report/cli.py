"""``ragtrace report``: leaderboards, comparisons and CI gates from ``ragtrace eval`` scores files.

::

    ragtrace report scores.jsonl --html report.html --json report.json \\
        --fail-if 'faithfulness.pass_rate < 0.9' --fail-if 'faithfulness.mean[model=gpt-x] < 0.8'

Reads one or more scores files (``ragtrace._report.load``), computes the report
(``ragtrace._report.build``), writes the page (``ragtrace._report.html``) and the JSON, prints
which system is better per score and checks the gates (``ragtrace._report.gates``). Lines
skipped as duplicate ids end the run with a one-line warning on stderr (redacted ids may
collide).

Exit status: 0 done and every gate held; 1 a gate failed (each failing check is printed on
stderr), or with ``--strict`` a line of the input was bad; 2 usage error (bad arguments or gate,
unreadable input, unwritable output, a gate naming a score or system the report lacks).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragtrace._config.arguments import number, run_subcommand
from ragtrace._network.terminal import printable
from ragtrace._offline.records import MAX_LINE_BYTES

if TYPE_CHECKING:
    from ragtrace._report.load import Loaded

COMMAND = "report"
_PREFIX = "ragtrace report"
MESSAGES_PRINTED = 20


def _gate(text: str) -> Any:
    from ragtrace._report.gates import GateError, parse_gate

    try:
        return parse_gate(text)
    except GateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``report`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``); returns it."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        COMMAND,
        help="leaderboards, comparisons and CI gates from `ragtrace eval` scores files",
        description="Compare systems (models, prompts, apps) on the scores `ragtrace eval` "
        "wrote: which is better on each score with a bootstrap interval, problems and insights, "
        "a heatmap of systems by test cases, flipped verdicts under perturbation, the worst "
        "answers, unanswered cases, latency and cost per system, classification reports. Every "
        "system of a score is compared on the cases every system was asked. Writes a "
        "self-contained HTML page and a JSON; --fail-if gates a CI run.",
        epilog="Exit status: 0 done, every gate held; 1 a gate failed (or, with --strict, a bad "
        "input line); 2 usage error. Gates: SCORE.STAT[system=NAME] OP NUMBER, STAT one of n, "
        "errors, unanswered, mean, mean_low, mean_high, pass_rate, pass_rate_low, "
        "pass_rate_high, flips, diff, diff_low, diff_high (diff needs [system=A,vs=B]). See "
        "docs/report.md.",
    )
    parser.add_argument("scores", nargs="+", metavar="SCORES.jsonl", help="scores files")
    parser.add_argument("--html", metavar="PATH", help="write the self-contained HTML page here")
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON ('-': stdout)")
    parser.add_argument(
        "--fail-if",
        action="append",
        default=[],
        type=_gate,
        metavar="EXPR",
        help="exit 1 when EXPR holds, e.g. 'faithfulness.pass_rate < 0.9'; repeatable",
    )
    parser.add_argument(
        "--resamples",
        type=number(int, 10),
        default=1000,
        metavar="N",
        help="bootstrap resamples per interval (default 1000)",
    )
    parser.add_argument(
        "--level",
        type=number(float, 0.5, 1.0),
        default=0.95,
        help="confidence level of the intervals (default 0.95)",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--unanswered",
        choices=("fail", "paired"),
        default="fail",
        help="a case a system left unanswered (it raised, timed out, returned nothing): 'fail' "
        "(default) counts it as a failure (failed verdict; the worst value in a mean), "
        "'paired' leaves it out for every system; either way systems are compared on the "
        "cases every one of them was asked",
    )
    parser.add_argument(
        "--max-cases",
        type=number(int, 1),
        default=40,
        metavar="N",
        help="heatmap columns: the N hardest test cases (default 40)",
    )
    parser.add_argument(
        "--worst",
        type=number(int, 0),
        default=5,
        metavar="N",
        help="worst answers shown per score (default 5)",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=number(int, 1),
        default=MAX_LINE_BYTES,
        metavar="N",
        help=f"skip longer lines (default {MAX_LINE_BYTES:,} = 10 MiB)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a line of the input was bad"
    )
    parser.add_argument("--quiet", action="store_true", help="print only failing gates")
    parser.set_defaults(handler=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace report`` on its own: ``main(["scores.jsonl", "--html", ...])``."""
    return run_subcommand(COMMAND, add_parser, run, argv)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace report`` with parsed arguments; returns the exit status."""
    from ragtrace._report.build import ReportOptions, build_report
    from ragtrace._report.gates import GateError, check_gates
    from ragtrace._report.load import ScoresFileError, load_scores

    def fail(message: str) -> int:
        print(f"{_PREFIX}: {message}", file=sys.stderr)
        return 2

    try:
        loaded = load_scores(args.scores, args.max_line_bytes)
    except ScoresFileError as exc:
        return fail(str(exc))
    for message in loaded.messages[:MESSAGES_PRINTED]:
        print(f"{_PREFIX}: {printable(message)}", file=sys.stderr)
    if loaded.problems > MESSAGES_PRINTED:
        print(f"{_PREFIX}: ... {loaded.problems} input problems in all", file=sys.stderr)
    options = ReportOptions(
        resamples=args.resamples,
        level=args.level,
        seed=args.seed,
        max_cases=args.max_cases,
        worst=args.worst,
        unanswered=args.unanswered,
    )
    report = build_report(loaded, options)
    try:
        results = check_gates(args.fail_if, report)
    except GateError as exc:
        return fail(str(exc))
    report["gates"] = [r.as_json() for r in results]
    if not loaded.rows:
        names = printable(", ".join(args.scores))
        print(f"{_PREFIX}: no scores found in {names}", file=sys.stderr)
    written = _write_outputs(args, report)
    if written is not None:
        return fail(written)
    if not args.quiet:
        _print_summary(report, sys.stdout if args.json != "-" else sys.stderr)
    failed = [m for r in results for m in r.messages()]
    for message in failed:
        print(f"{_PREFIX}: gate failed: {printable(message)}", file=sys.stderr)
    if loaded.duplicate_ids:
        print(duplicates_warning(loaded), file=sys.stderr)
    if failed:
        return 1
    if args.strict and loaded.bad_lines:
        print(f"{_PREFIX}: --strict: {loaded.bad_lines} bad input line(s)", file=sys.stderr)
        return 1
    return 0


def duplicates_warning(loaded: Loaded) -> str:
    """One line on the ids skipped as duplicates, per file: a scores file whose ids went through
    a redaction policy without a key may hold two cases under one redacted id."""
    per_file = ", ".join(f"{f.duplicate_ids} in {f.path}" for f in loaded.files if f.duplicate_ids)
    return printable(
        f"{_PREFIX}: warning: {loaded.duplicate_ids} duplicate id(s) skipped ({per_file}): "
        "only the first line of each (system, id) counts; ids redacted by a policy may collide "
        "(run `ragtrace eval` with RAGTRACE_REDACTION_KEY set to keep distinct ids distinct)"
    )


def _write_outputs(args: argparse.Namespace, report: dict[str, Any]) -> str | None:
    """Write the page and the JSON; the error message when one cannot be written."""
    from ragtrace._report.html import render_page

    outputs: list[tuple[str, Callable[[], str]]] = []
    if args.html:
        outputs.append((args.html, lambda: render_page(report)))
    if args.json:
        outputs.append((args.json, lambda: json.dumps(report, indent=1, ensure_ascii=False)))
    for path, render in outputs:
        text = render()
        if path == "-":
            sys.stdout.write(text + "\n")
            continue
        tmp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return f"cannot write {path}: {exc.strerror or exc}"
    return None


def _print_summary(report: dict[str, Any], out: Any) -> None:
    """The summary on the terminal; system and evaluator names come from the scores files, so
    no control character in them passes (``printable``)."""
    lines = [c["text"] for c in report["headline"]]
    summary = report["summary"]
    counted = "as failures" if report["settings"]["unanswered"] == "fail" else "apart"
    for system, stats in report["answers"].items():
        if stats["unanswered"]:
            lines.append(
                f"{system} left {stats['unanswered']} of {stats['asked']} case(s) unanswered "
                f"(counted {counted})"
            )
    lines.append(
        f"{len(report['systems'])} system(s), {summary['scores']} score(s): "
        f"{summary['problems']} problem(s), {summary['insights']} insight(s), "
        f"{summary['flips']} flipped verdict(s); {report['input']['bad_lines']} bad line(s)"
    )
    for result in report["gates"]:
        lines.append(f"gate {'FAILED' if result['failed'] else 'ok'}: {result['expression']}")
    for line in lines:
        print(printable(line, keep="\n"), file=out)
