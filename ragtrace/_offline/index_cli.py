"""``ragtrace index``: fill a passage store with what the evaluators compute from a corpus.

::

    ragtrace index --store passages.sqlite chunks.jsonl
    ragtrace index --store passages.sqlite --processes 8 --config ragtrace.yaml more.jsonl
    ragtrace index --store passages.sqlite --describe       # what it holds, per namespace
    RAGTRACE_PASSAGE_STORE=passages.sqlite ragtrace worker --queue redis://...   # then serve

Each input line is one chunk as the retriever returns it: a JSON string, or an object whose
``--field`` (default: the first of ``text``, ``page_content``, ``content``) holds the text.
Evaluators: the online suite by default (``--profile static`` for its static profile), or
``--evaluators`` / ``--option`` / ``--config`` as in ``ragtrace eval``; only the model-backed
ones run (``ragtrace._offline.index``). Index with the evaluators and options the service runs:
a store holds values per model, and a model it was not built with finds nothing in it.

Bad lines are reported on stderr with their line number, skipped and counted. Exit status: 0
when the run finished; 1 with ``--strict`` when a line was refused or an evaluator failed on a
passage; 2 for a usage error (no input, unreadable input, a store that cannot be written, bad
evaluators); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any

from ragtrace._config.arguments import option_value, positive, run_subcommand
from ragtrace._offline.records import MAX_LINE_BYTES, read_lines

COMMAND = "index"
PROGRESS_EVERY_S = 10.0
DEFAULT_FIELDS = ("text", "page_content", "content")
_PREFIX = "ragtrace index"


def add_parser(subparsers: Any) -> None:
    """Add ``index`` to the ``ragtrace`` command line."""
    p = subparsers.add_parser(
        COMMAND,
        help="precompute the evaluators' passage work for a corpus (a passage store)",
        description="Run the model-backed evaluators over each chunk of a corpus and keep the "
        "sentence vectors and entities they compute in a passage store (SQLite), so that "
        "evaluation processes opening it ($RAGTRACE_PASSAGE_STORE) meet those chunks warm.",
    )
    p.add_argument("inputs", nargs="*", metavar="CHUNKS.jsonl", help="JSON Lines; - for stdin")
    p.add_argument("--store", required=True, metavar="FILE", help="the store (created if new)")
    p.add_argument(
        "--describe",
        action="store_true",
        help="print what the store holds (values per model and splitter) and exit",
    )
    p.add_argument(
        "--field",
        metavar="NAME",
        help=f"the field holding the text (default: the first of {', '.join(DEFAULT_FIELDS)})",
    )
    p.add_argument(
        "--profile",
        default="default",
        help="online suite profile (default, static; select indexes every sentence, as default)",
    )
    p.add_argument(
        "--evaluators", "-e", action="append", metavar="A,B", help="instead of the suite"
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="EVALUATOR.KEY=VALUE",
        help="an option of an --evaluators one, as in ragtrace eval (repeatable)",
    )
    p.add_argument("--config", metavar="SETTINGS.yaml", help="evaluators of a settings file")
    p.add_argument(
        "--batch-size",
        type=positive(int),
        default=16,
        metavar="N",
        help="chunks a batch (default 16)",
    )
    p.add_argument(
        "--processes",
        type=positive(int),
        default=1,
        metavar="N",
        help="worker processes scoring batches side by side, each with its own models (default 1)",
    )
    p.add_argument(
        "--max-chunk-chars",
        type=option_value("max_chunk_chars"),
        metavar="N",
        help="cut chunks as capture does at N characters (default: ragtrace.Config's, 4000)",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 if a line or a passage failed")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(handler=run)


def main(argv: Sequence[str] | None = None) -> int:
    """``ragtrace index`` on its own."""
    return run_subcommand(COMMAND, add_parser, run, argv)


def run(args: argparse.Namespace) -> int:
    """Run ``ragtrace index`` with parsed arguments; returns the exit status."""
    from ragtrace._backends.passage_store import PassageStore, PassageStoreError
    from ragtrace._offline.index import IndexReport, index_passages

    if args.describe:
        if args.inputs:
            return _usage("--describe reads the store only; give no input files")
        return _describe(args.store)
    if not args.inputs:
        return _usage("give the CHUNKS.jsonl files to index (- for stdin), or --describe")
    if min(args.batch_size, args.processes, args.max_chunk_chars or 1) < 1:
        return _usage("--batch-size, --processes and --max-chunk-chars must be >= 1")
    if args.inputs.count("-") > 1:
        return _usage("- (stdin) can be read only once")
    missing = [n for n in args.inputs if n != "-" and not os.path.isfile(n)]
    if missing:  # before the store is created
        return _usage(f"{missing[0]}: not a file")
    try:
        evaluators = _evaluators(args)
        store = PassageStore(args.store, writable=True)
    except (ValueError, PassageStoreError) as exc:
        return _usage(str(exc))
    refused = [0]
    shown = [0.0]

    def progress(report: IndexReport) -> None:
        if args.quiet or report.seconds - shown[0] < PROGRESS_EVERY_S:
            return
        shown[0] = report.seconds
        print(f"{_PREFIX}: {report.passages} chunks read, {report.values} values written, "
              f"{report.seconds:.0f} s", file=sys.stderr)  # fmt: skip

    try:
        texts = _texts(args.inputs, args.field, refused)
        report = index_passages(
            texts,
            store,
            evaluators,
            batch_size=args.batch_size,
            max_chunk_chars=args.max_chunk_chars,
            progress=progress,
            processes=args.processes,
        )
    except OSError as exc:
        return _usage(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
    except ValueError as exc:
        return _usage(str(exc))
    except KeyboardInterrupt:
        print(f"{_PREFIX}: interrupted; what was indexed is kept", file=sys.stderr)
        return 130
    finally:
        store.close()
    _summary(report, refused[0], args.store)
    return 1 if args.strict and (refused[0] or report.errors) else 0


def _evaluators(args: argparse.Namespace) -> list[Any]:
    from ragtrace._offline.selection import build_evaluators, parse_options, split_names

    names = split_names(args.evaluators)
    if names or args.option or args.config:
        if args.profile != "default":
            raise ValueError(
                "--profile applies to the online suite; not with --evaluators/--config"
            )
        return build_evaluators(names, parse_options(args.option), args.config)
    from ragtrace.evaluators._suites import online_suite

    # The select profile embeds the sentences an answer asks for; a store serves every answer.
    return online_suite("default" if args.profile == "select" else args.profile)


def _texts(inputs: Sequence[str], field: str | None, refused: list[int]) -> Iterator[str]:
    """The chunk text of each usable line, in order; refused lines reported and counted."""
    for name in inputs:
        if name != "-" and os.path.isdir(name):
            raise IsADirectoryError(21, "is a directory", name)
        stream: IO[bytes] = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115
        try:
            for line in read_lines(stream, MAX_LINE_BYTES):
                if line.data is None:
                    _refuse(name, line.number, f"longer than {MAX_LINE_BYTES} bytes", refused)
                    continue
                if not line.data.strip():
                    continue
                try:
                    text = _text(json.loads(line.data), field)
                except ValueError as exc:  # bad JSON, bad UTF-8, no text
                    _refuse(name, line.number, str(exc), refused)
                except RecursionError:
                    _refuse(name, line.number, "JSON nested too deeply", refused)
                else:
                    yield text
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def _text(item: object, field: str | None) -> str:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON string or object, got {type(item).__name__}")
    fields = (field,) if field else DEFAULT_FIELDS
    for name in fields:
        value = item.get(name)
        if isinstance(value, str):
            return value
    raise ValueError(f"no text field ({' or '.join(fields)} holding a string)")


def _refuse(name: str, number: int, reason: str, refused: list[int]) -> None:
    refused[0] += 1
    print(f"{_PREFIX}: {name}:{number}: {reason[:300]}; skipped", file=sys.stderr)


def _summary(report: Any, refused: int, store: str) -> None:
    print(
        f"{_PREFIX}: {report.passages} chunks indexed into {store} "
        f"({report.values} values, {report.seconds:.1f} s); "
        f"{report.duplicates} duplicates, {report.empty} empty, {report.cut} cut, "
        f"{refused} lines refused; evaluators: {', '.join(report.evaluators)}"
    )
    for name, count in sorted(report.errors.items()):
        message = report.error_messages.get(name, "")
        print(f"{_PREFIX}: {name} failed on {count} chunks: {message}", file=sys.stderr)


def _describe(path: str) -> int:
    import sqlite3

    from ragtrace._backends.passage_store import PassageStore, PassageStoreError

    try:
        store = PassageStore(path)
    except PassageStoreError as exc:
        return _usage(str(exc))
    try:
        summary = store.describe()
    except (sqlite3.Error, OSError) as exc:
        return _usage(f"{path}: cannot be read ({exc})")
    finally:
        store.close()
    print(f"{summary.path}: {summary.format}, {summary.values:,} values, "
          f"{summary.size_bytes / 1e6:.1f} MB")  # fmt: skip
    if summary.namespaces is None:
        print("  values per namespace: not counted (written by an earlier ragtrace)")
        return 0
    width = max((len(name) for name in summary.namespaces), default=0)
    for name, count in summary.namespaces.items():
        print(f"  {name:<{width}}  {count:>10,}")
    return 0


def _usage(message: str) -> int:
    print(f"{_PREFIX}: error: {message}", file=sys.stderr)
    return 2
