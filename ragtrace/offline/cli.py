"""``ragtrace eval``: score a JSON Lines data set with any evaluators, offline.

::

    ragtrace eval --input answers.jsonl --evaluators groundedness,looping \\
        --option groundedness.threshold=0.6 --output scores.jsonl --summary-json summary.json

Reads records (format: ``ragtrace.offline.records``), runs the evaluators over them in batches
(``ragtrace.pipeline.runner``), writes one line per record (``ragtrace.offline.output``) and
prints a summary table (``ragtrace.offline.summary``). Bad lines are reported on stderr with
their line number, skipped and counted; so are duplicate ids (the first occurrence is kept).

Exit status: 0 when the run finished; 1 with ``--strict`` when a line was refused or an
evaluator produced an error Score; 2 for a usage error (unknown evaluator or option, unreadable
input or settings file, output not writable); 130 when interrupted.

``add_parser(subparsers)`` adds the command to a parser; ``run(args)`` runs it;
``python -m ragtrace.offline ARGS`` is ``ragtrace eval ARGS``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING, Any, TextIO

from ragtrace.offline.records import MAX_LINE_BYTES

if TYPE_CHECKING:
    from ragtrace.evaluators.base import Evaluator
    from ragtrace.judges.usage import UsageTally

COMMAND = "eval"
DEFAULT_PROGRESS_EVERY_S = 10.0
_PREFIX = "ragtrace eval"


def _number(kind: type[int] | type[float], low: float, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not value >= low:
            raise argparse.ArgumentTypeError(f"must be >= {low:g}, got {text}")
        return value

    return parse


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``eval`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``); returns it."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        COMMAND,
        help="score a JSON Lines data set with evaluators, offline",
        description="Run evaluators over records (one JSON object per line: id, query, "
        "contexts, response, optional reference, app, model), write one line of scores per "
        "record and print a summary per score name.",
        epilog="Exit status: 0 done; 1 with --strict when a line or an evaluator failed; "
        "2 usage error.",
    )
    parser.add_argument(
        "--input", "-i", required=True, metavar="FILE.jsonl", help="records; '-' reads stdin"
    )
    parser.add_argument(
        "--output", "-o", required=True, metavar="SCORES.jsonl", help="scores; '-' is stdout"
    )
    parser.add_argument(
        "--evaluators",
        "-e",
        action="append",
        metavar="A,B,...",
        help="evaluator names (see ragtrace.evaluators.names()); repeatable",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="EVALUATOR.KEY=VALUE",
        help="an evaluator option, VALUE read as JSON when it parses "
        "(e.g. groundedness.threshold=0.6); repeatable",
    )
    parser.add_argument(
        "--config",
        metavar="SETTINGS.yaml",
        help="take evaluators and their options from a settings file's 'evaluators' section",
    )
    parser.add_argument("--summary-json", metavar="PATH", help="also write the summary as JSON")
    parser.add_argument(
        "--timeout",
        type=_number(float, 1e-3, "seconds"),
        metavar="SECONDS",
        help="per record of a call (default: each evaluator's own timeout_s)",
    )
    parser.add_argument(
        "--workers",
        type=_number(int, 1, "an integer"),
        default=1,
        metavar="N",
        help="evaluators run at the same time (threads, in each process; default 1)",
    )
    parser.add_argument(
        "--processes",
        type=_number(int, 1, "an integer"),
        default=1,
        metavar="N",
        help="worker processes, each with its own models (default 1; use one per core, "
        "with RAGTRACE_MODEL_THREADS=1)",
    )
    parser.add_argument(
        "--shared-cache-mb",
        type=_number(float, 0, "a number"),
        default=None,
        metavar="MB",
        help="with --processes: the cache of sentence vectors and NER results the processes "
        "share (default $RAGTRACE_SHARED_CACHE_MB, else 32; 0 turns it off)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 if any line or evaluator failed"
    )
    parser.add_argument(
        "--max-line-bytes",
        type=_number(int, 1, "an integer"),
        default=MAX_LINE_BYTES,
        metavar="N",
        help=f"refuse longer lines (default {MAX_LINE_BYTES:,} = 10 MiB)",
    )
    parser.add_argument(
        "--progress-every",
        type=_number(float, 0.0, "seconds"),
        default=DEFAULT_PROGRESS_EVERY_S,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal (default 10)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace eval`` on its own: ``main(["--input", ...])``."""
    parser = argparse.ArgumentParser(prog="ragtrace")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([COMMAND, *(sys.argv[1:] if argv is None else argv)])
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace eval`` with parsed arguments; returns the exit status."""
    from ragtrace.offline.selection import (
        SelectionError,
        build_evaluators,
        parse_options,
        split_names,
    )

    try:
        evaluators = build_evaluators(
            split_names(args.evaluators), parse_options(args.option), args.config
        )
    except SelectionError as exc:
        return _usage(str(exc))
    if args.input != "-" and args.output != "-" and _same_file(args.input, args.output):
        return _usage(f"--output {args.output} is the input file")
    with ExitStack() as stack:
        try:
            source = _open_input(args.input, stack)
            sink = _open_output(args.output, stack)
        except OSError as exc:
            return _usage(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return _evaluate(args, evaluators, source, sink)


def _evaluate(
    args: argparse.Namespace, evaluators: Sequence[Evaluator], source: IO[bytes], sink: TextIO
) -> int:
    from ragtrace.offline.engine import Engine

    report = sys.stderr
    table_to = sys.stderr if args.output == "-" else sys.stdout
    try:
        engine = Engine(
            evaluators,
            input_name=args.input,
            max_line_bytes=args.max_line_bytes,
            timeout_s=args.timeout,
            workers=args.workers,
            processes=args.processes,
            shared_cache_mb=args.shared_cache_mb,
            progress_every_s=args.progress_every,
            progress=not args.no_progress,
            messages=report,
        )
    except ValueError as exc:  # e.g. an evaluator that cannot go to a worker process
        return _usage(str(exc))
    from ragtrace.judges import usage as judge_usage

    tally = judge_usage.add_listener(judge_usage.UsageTally())
    start = time.monotonic()
    try:
        engine.run(source, sink)
    except KeyboardInterrupt:
        sink.flush()
        print(f"{_PREFIX}: interrupted after {engine.summary.input.records:,} records",
              file=report)  # fmt: skip
        return 130
    finally:
        engine.close()
        judge_usage.remove_listener(tally)
    duration = time.monotonic() - start
    summary = engine.summary
    print(summary.table(), file=table_to)
    print(f"\n{summary.input_line()}; {duration:.1f} s", file=table_to)
    if tally.calls:
        print(judge_line(tally), file=table_to)
    if args.summary_json:
        data = engine.summary_json(duration)
        if tally.calls:
            data["judge"] = judge_summary(tally)
        try:
            with open(args.summary_json, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
                f.write("\n")
        except OSError as exc:
            print(f"{_PREFIX}: cannot write --summary-json: {exc}", file=report)
            return 2
    failed = summary.input.bad_lines > 0 or summary.errors > 0
    return 1 if failed and args.strict else 0


def judge_summary(tally: UsageTally) -> dict[str, Any]:
    """What the run's judge calls cost: calls by outcome, tokens, USD, seconds."""
    return {
        "calls": tally.calls,
        "outcomes": dict(sorted(tally.outcomes.items())),
        "input_tokens": tally.input_tokens,
        "output_tokens": tally.output_tokens,
        "cost_usd": round(tally.cost_usd, 6),
        "seconds": round(tally.seconds, 3),
    }


def judge_line(tally: UsageTally) -> str:
    """One line for the end of the run: judge calls, failures, cache hits, tokens, cost."""
    outcomes = ", ".join(f"{k} {v:,}" for k, v in sorted(tally.outcomes.items()))
    return (
        f"judge: {tally.calls:,} calls ({outcomes}); tokens {tally.input_tokens:,} in, "
        f"{tally.output_tokens:,} out; ${tally.cost_usd:.4f}"
    )


def _open_input(path: str, stack: ExitStack) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    return stack.enter_context(open(path, "rb"))


def _open_output(path: str, stack: ExitStack) -> TextIO:
    from ragtrace.offline.output import ENCODING_ERRORS

    if path == "-":
        sys.stdout.reconfigure(errors=ENCODING_ERRORS)  # type: ignore[union-attr]
        return sys.stdout
    return stack.enter_context(
        open(path, "w", encoding="utf-8", errors=ENCODING_ERRORS, newline="\n")
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _usage(message: str) -> int:
    print(f"{_PREFIX}: {message}", file=sys.stderr)
    return 2
