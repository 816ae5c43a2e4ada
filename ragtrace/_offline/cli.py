"""``ragtrace eval``: score a JSON Lines data set with any evaluators, offline.

::

    ragtrace eval --input answers.jsonl --evaluators groundedness,looping \\
        --option groundedness.threshold=0.6 --output scores.jsonl --summary-json summary.json
    ragtrace eval --list        # evaluators by tier, the online suite, each point's rates

Reads records (format: ``ragtrace._offline.records``), runs the evaluators over them in batches
(``ragtrace._engine.evaluation``), writes one line per record (``ragtrace._offline.output``) and
prints a summary table (``ragtrace._offline.summary``; the sessions' conversation scores in
``ragtrace._offline.conversation_summary``). Bad lines are reported on stderr with
their line number, skipped and counted; so are duplicate ids (the first occurrence is kept).

Several systems in one run (``ragtrace._offline.systems``): records naming their ``model``
(or ``app``, or ``prompt_version``: ``--system-key``), or several ``--input`` files (one system
each); ids are unique per system, and the summary has one row per system and score name::

    ragtrace eval --input gpt-x.jsonl --input gpt-y.jsonl -e groundedness -o scores.jsonl

Systems given as Python objects are asked the inputs' questions, as written and perturbed
(``ragtrace._offline.callables``, ``ragtrace._offline.perturb``); a table of verdict flips per
perturbation closes the run::

    ragtrace eval --input questions.jsonl --system-callable ragtrace.demo.systems:demo_chain \\
        --perturb typos,casing -e looping -o scores.jsonl

Exit status: 0 when the run finished; 1 with ``--strict`` when a line was refused or an
evaluator (a conversation's too) produced an error Score; 2 for a usage error (unknown evaluator
or option, unreadable input or settings file, output not writable); 130 when interrupted.

``add_parser(subparsers)`` adds the command to a parser; ``run(args)`` runs it;
``python -m ragtrace._offline ARGS`` is ``ragtrace eval ARGS``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import IO, TYPE_CHECKING, Any, TextIO

from ragtrace._backends import tier_counts
from ragtrace._config.arguments import number, one_line, option_value, run_subcommand
from ragtrace._config.kinds import REDACTION_POLICIES
from ragtrace._offline.perturb import PERTURBATIONS
from ragtrace._offline.records import MAX_LINE_BYTES
from ragtrace._offline.systems import SYSTEM_KEYS

if TYPE_CHECKING:
    from ragtrace._config import Config
    from ragtrace._engine.outcomes import Outcome
    from ragtrace._offline.asking import Asker
    from ragtrace._offline.loop import EvalLoop, OutcomeHook
    from ragtrace._offline.reading import Input
    from ragtrace._offline.session_lines import SessionLines
    from ragtrace._offline.systems import EvalItem
    from ragtrace.evaluators._base import Evaluator

COMMAND = "eval"
DEFAULT_PROGRESS_EVERY_S = 10.0
_PREFIX = "ragtrace eval"


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
        "--list",
        action="store_true",
        help="list the evaluators by tier (online, offline, LLM judges), the default online "
        "suite, and each operating point's thresholds with its measured false-alarm and "
        "detection rates, then exit",
    )
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        metavar="FILE.jsonl",
        help="records; '-' reads stdin; repeatable (one system per file unless --system-key "
        "says otherwise)",
    )
    parser.add_argument(
        "--system-key",
        choices=SYSTEM_KEYS,
        default="auto",
        help="what names each record's system: file (the input's name), model, app or "
        "prompt_version; auto (default): file with several inputs, else model, else app",
    )
    parser.add_argument(
        "--system-callable",
        action="append",
        default=[],
        metavar="[NAME=]MODULE:ATTR",
        help="ask this system (a LangChain runnable, a LlamaIndex query engine, a function of "
        "the query, or a factory of one) the inputs' questions and score its answers; repeatable",
    )
    parser.add_argument(
        "--perturb",
        action="append",
        metavar="A,B,...",
        help="with --system-callable: also ask each question perturbed "
        f"({', '.join(PERTURBATIONS)}) and count verdict flips; repeatable",
    )
    parser.add_argument(
        "--perturb-seed",
        type=number(int, 0, what="an integer"),
        default=0,
        metavar="N",
        help="seed of the perturbations (default 0)",
    )
    parser.add_argument(
        "--output", "-o", metavar="SCORES.jsonl", help="scores; '-' is stdout (required)"
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
        type=option_value("config_file"),
        metavar="SETTINGS.yaml",
        help="take evaluators and their options from a settings file's 'evaluators' section",
    )
    parser.add_argument("--summary-json", metavar="PATH", help="also write the summary as JSON")
    parser.add_argument(
        "--verdicts",
        metavar="PATH",
        help="also write one line per score (time, app, evaluator, value, passed) for "
        "`ragtrace alerts backtest`; time: the answer's (a --system-callable's call, or the "
        "record's metadata.time in unix seconds), else when it was scored; perturbed answers "
        "are left out",
    )
    parser.add_argument(
        "--redact",
        choices=REDACTION_POLICIES,
        help="redact every answer before the evaluators read it (raw_text_evaluators, "
        "pii_leakage and sensitive_data by default, read it as written), and every score and "
        "message before it is written: none, secrets or pii (default: $RAGTRACE_REDACT, else "
        "the settings file's `redact`, else none); docs/data-safety.md",
    )
    parser.add_argument(
        "--timeout",
        type=number(float, 1e-3, what="seconds"),
        metavar="SECONDS",
        help="per record of a call (default: each evaluator's own timeout_s)",
    )
    parser.add_argument(
        "--workers",
        type=number(int, 1, what="an integer"),
        default=1,
        metavar="N",
        help="evaluators run at the same time (threads, in each process; default 1)",
    )
    parser.add_argument(
        "--processes",
        type=number(int, 1, what="an integer"),
        default=1,
        metavar="N",
        help="worker processes, each with its own models (default 1; use one per core, "
        "with RAGTRACE_MODEL_THREADS=1)",
    )
    parser.add_argument(
        "--shared-cache-mb",
        type=number(float, 0),
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
        type=number(int, 1, what="an integer"),
        default=MAX_LINE_BYTES,
        metavar="N",
        help=f"refuse longer lines (default {MAX_LINE_BYTES:,} = 10 MiB)",
    )
    parser.add_argument(
        "--progress-every",
        type=number(float, 0.0, what="seconds"),
        default=DEFAULT_PROGRESS_EVERY_S,
        metavar="SECONDS",
        help="seconds between progress lines when stderr is not a terminal (default 10)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace eval`` on its own: ``main(["--input", ...])``."""
    return run_subcommand(COMMAND, add_parser, run, argv)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace eval`` with parsed arguments; returns the exit status."""
    from ragtrace._offline.selection import (
        SelectionError,
        build_evaluators,
        parse_options,
        split_names,
    )

    if args.list:
        from ragtrace._offline.listing import format_listing

        sys.stdout.write(format_listing(split_names(args.evaluators) or None))
        return 0
    missing = [
        flag for flag, value in (("--input", args.input), ("--output", args.output)) if not value
    ]
    if missing:
        return _usage(f"the following arguments are required: {', '.join(missing)}")
    from ragtrace._config import Config

    # Every setting (``--redact`` > RAGTRACE_* > the settings file) is checked before anything
    # is built or opened: a bad one stops the command (one line, exit 2).
    try:
        args.settings = Config.resolve(redact=args.redact, config_file=args.config)
    except ValueError as exc:
        return _usage(one_line(exc))
    try:
        evaluators = build_evaluators(
            split_names(args.evaluators), parse_options(args.option), args.config
        )
    except SelectionError as exc:
        return _usage(str(exc))
    from ragtrace._backends.passage_store import configured_problem

    problem = _check_inputs(args) or configured_problem()
    if problem:
        return _usage(problem)
    with ExitStack() as stack:
        try:
            sources = [(name, _open_input(name, stack)) for name in args.input]
            asker = _asker(args, stack)
            sink = _open_output(args.output, stack)
            verdicts = _open_output(args.verdicts, stack) if args.verdicts else None
        except ValueError as exc:  # a --system-callable that cannot be used
            return _usage(str(exc))
        except OSError as exc:
            return _usage(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return _evaluate(args, evaluators, sources, sink, asker, verdicts)


def _check_inputs(args: argparse.Namespace) -> str | None:
    """What is wrong with the inputs, systems and perturbations asked for, if anything."""
    from ragtrace._offline.perturb import UnknownPerturbation, parse_names
    from ragtrace._offline.systems import file_systems

    if args.input.count("-") > 1:
        return "--input - (stdin) can be read only once"
    for name in args.input:
        if name != "-" and args.output != "-" and _same_file(name, args.output):
            return f"--output {args.output} is the input file"
        if args.verdicts and name != "-" and _same_file(name, args.verdicts):
            return f"--verdicts {args.verdicts} is the input file"
    if args.verdicts and (args.verdicts == "-" or _same_file(args.verdicts, args.output)):
        return "--verdicts needs a file of its own (not '-', not the --output file)"
    try:
        args.perturbations = parse_names(args.perturb)
    except UnknownPerturbation as exc:
        return f"--perturb: {exc}"
    if args.perturbations and not args.system_callable:
        return (
            "--perturb needs --system-callable: perturbed questions must be asked of a system "
            "(e.g. --system-callable ragtrace.demo.systems:demo_chain)"
        )
    if args.system_callable and args.system_key != "auto":
        return "--system-key does not apply with --system-callable (each callable is a system)"
    several = args.system_key == "auto" and len(args.input) > 1 and not args.system_callable
    if args.system_key == "file" or several:
        try:
            file_systems(args.input)
        except ValueError as exc:
            return str(exc)
    return None


def _asker(args: argparse.Namespace, stack: ExitStack) -> Asker | None:
    """The systems to ask, built (raises ValueError with a usage message), or None."""
    if not args.system_callable:
        return None
    from ragtrace._offline.asking import Asker, close_systems
    from ragtrace._offline.callables import System, load_system

    systems: list[System] = []
    stack.callback(close_systems, systems)
    for spec in args.system_callable:
        system = load_system(spec)
        systems.append(system)
        if [s.name for s in systems].count(system.name) > 1:
            raise ValueError(
                f"--system-callable {spec}: a second system named {system.name!r}; "
                "name them: --system-callable NAME=module:attr"
            )
    return Asker(systems, args.perturbations, seed=args.perturb_seed)


def _loop(
    args: argparse.Namespace,
    evaluators: Sequence[Evaluator],
    messages: TextIO,
    verdicts: TextIO | None = None,
) -> EvalLoop:
    """The loop the arguments ask for, with the redaction policy that applies (``--redact``
    > ``RAGTRACE_REDACT`` > the settings file's ``redact`` > none).

    Raises:
        ValueError: Bad settings, or an evaluator that cannot go to a worker process.
    """
    from ragtrace._offline.loop import EvalLoop
    from ragtrace._redaction import redaction

    config = args.settings
    return EvalLoop(
        evaluators,
        input_name=args.input[0],
        max_line_bytes=args.max_line_bytes,
        timeout_s=args.timeout,
        workers=args.workers,
        processes=args.processes,
        shared_cache_mb=args.shared_cache_mb,
        progress_every_s=args.progress_every,
        progress=not args.no_progress,
        messages=messages,
        redaction=redaction(config.redact),
        raw_text_evaluators=config.raw_text_evaluators,
        on_outcome=None if verdicts is None else _verdict_writer(verdicts),
        sessions=_session_lines(config, evaluators),
    )


def _session_lines(config: Config, evaluators: Sequence[Evaluator]) -> SessionLines | None:
    """The conversation scores of the run (``Config.session_evaluators``; none: not scored)."""
    from ragtrace._offline.session_lines import SessionLines
    from ragtrace._redaction import redaction
    from ragtrace.evaluators._conversation import conversation_evaluators

    relevance = next((e for e in evaluators if e.name == "answer_relevance"), None)
    chosen = conversation_evaluators(config.session_evaluators, relevance)
    return SessionLines(chosen, redaction(config.redact)) if chosen else None


def _verdict_writer(sink: TextIO) -> OutcomeHook:
    """Writes each answer's scores to ``sink`` as verdicts (``ragtrace._alerts.verdicts``)."""
    from ragtrace._alerts.verdicts import answer_time, verdict_lines

    def write(item: EvalItem, outcome: Outcome) -> None:
        if item.perturbation is None:
            record = item.record
            scores = (score for _, score in outcome.scores)
            sink.writelines(verdict_lines(answer_time(record), record.app, scores))

    return write


def _evaluate(
    args: argparse.Namespace,
    evaluators: Sequence[Evaluator],
    sources: Sequence[Input],
    sink: TextIO,
    asker: Asker | None,
    verdicts: TextIO | None = None,
) -> int:
    report = sys.stderr
    table_to = sys.stderr if args.output == "-" else sys.stdout
    try:
        engine = _loop(args, evaluators, report, verdicts)
    except ValueError as exc:  # e.g. an evaluator that cannot go to a worker process
        return _usage(str(exc))
    from ragtrace._judges import usage as judge_usage
    from ragtrace._offline.summary import judge_summary

    tally = judge_usage.add_listener(judge_usage.UsageTally())
    lookups_before = tier_counts.COUNTS.snapshot()
    start = time.monotonic()
    try:
        engine.run_inputs(sources, sink, system_key=args.system_key, asker=asker)
    except KeyboardInterrupt:
        sink.flush()
        print(f"{_PREFIX}: interrupted after {engine.summary.input.records:,} records",
              file=report)  # fmt: skip
        return 130
    finally:
        engine.close()
        judge_usage.remove_listener(tally)
    duration = time.monotonic() - start
    lookups = tier_counts.since(tier_counts.COUNTS.snapshot(), lookups_before)
    summary = engine.summary
    _print_summary(engine, asker, judge_summary(tally) if tally.calls else None, lookups,
                   f"{summary.input_line()}; {duration:.1f} s", table_to)  # fmt: skip
    if args.summary_json:
        data = engine.summary_json(duration)
        if tally.calls:
            data["judge"] = judge_summary(tally)
        if lookups:
            data["cache_lookups"] = tier_counts.by_tier(lookups)
        try:
            with open(args.summary_json, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
                f.write("\n")
        except OSError as exc:
            print(f"{_PREFIX}: cannot write --summary-json: {exc}", file=report)
            return 2
    failed = summary.input.bad_lines > 0 or summary.errors > 0 or engine.conversations.errors > 0
    failed = failed or (asker is not None and asker.counts.failed > 0)
    return 1 if failed and args.strict else 0


def _print_summary(
    engine: EvalLoop,
    asker: Asker | None,
    judged: dict[str, Any] | None,
    lookups: dict[tier_counts.Key, int],
    input_line: str,
    table_to: TextIO,
) -> None:
    """The tables and lines ``ragtrace eval`` prints when it is done. Evaluator, system and
    file names come from outside: no control character in them passes (``printable``)."""
    from ragtrace._network.terminal import printable
    from ragtrace._offline.summary import judge_line

    parts = [engine.summary.table()]
    if engine.flips is not None:
        parts.append("\nverdict flips (cases flipped / compared) per perturbation:")
        parts.append(engine.flips.table())
    classes = engine.classes.table()
    if classes:
        parts.append(f"\n{classes}")
    if engine.conversations:
        several = len(engine.summary.systems) > 1
        parts.append("\nconversations (one score per session; worst sessions first):")
        parts.append(engine.conversations.table(with_system=several))
    parts.append(f"\n{input_line}")
    if asker is not None:
        parts.append(asker.line())
    if judged is not None:
        parts.append(judge_line(judged))
    if lookups:
        parts.append(tier_counts.line(lookups))
    for part in parts:
        print(printable(part, keep="\n"), file=table_to)


def _open_input(path: str, stack: ExitStack) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    return stack.enter_context(open(path, "rb"))


def _open_output(path: str, stack: ExitStack) -> TextIO:
    from ragtrace._offline.output import ENCODING_ERRORS

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
