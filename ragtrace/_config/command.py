"""``ragtrace config``: see the configuration a process would get, check a settings file.

    ragtrace config show [--config ragtrace.yaml]    # every option, its value and its source
    ragtrace config check ragtrace.yaml [--strict]   # every mistake at once; exit 1 if any
    ragtrace config table [--write docs/configuration.md]  # the options table of the docs

``show`` resolves exactly as ``ragtrace.init`` does (explicit ``--config`` > environment >
file > default, the file's evaluators and sampling built), so it answers "why is this value
what it is"; a bad setting stops it as it stops every command: one line, exit 2. ``check``
builds what the file describes too, so an evaluator name no registry knows is a mistake there.
This command stands above the runtime (``tests/test_layout.py`` ranks it with the tools): it
runs the runtime's checks, which the rest of ``ragtrace._config`` cannot.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from ragtrace._config.arguments import one_line, option_value
from ragtrace._config.declared import Config
from ragtrace._config.options import options
from ragtrace._config.resolve import resolve
from ragtrace._config.settings_file import SettingsError, read_file
from ragtrace._config.table import UNSET, options_table, show, with_table
from ragtrace._runtime.evaluation_settings import (
    evaluation_config,
    start_config,
    with_section_errors,
)


def add_parser(subparsers: Any) -> None:
    """Add ``config`` to the ``ragtrace`` command line."""
    p = subparsers.add_parser(
        "config",
        help="show the resolved configuration, check a settings file, print the options table",
    )
    actions = p.add_subparsers(dest="config_command", required=True)
    show_p = actions.add_parser("show", help="every option with its value and where it came from")
    show_p.add_argument(
        "--config",
        type=option_value("config_file"),
        metavar="FILE",
        help="settings file (else RAGTRACE_CONFIG_FILE)",
    )
    check = actions.add_parser("check", help="report every mistake of a settings file")
    check.add_argument("file", metavar="FILE")
    check.add_argument("--strict", action="store_true", help="ignored keys fail too")
    table = actions.add_parser("table", help="the options table of the docs (Markdown)")
    table.add_argument("--write", metavar="PAGE", help="replace the table in this file")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one ``ragtrace config`` action; returns the exit status."""
    out, err = out or sys.stdout, err or sys.stderr
    if args.config_command == "table":
        if args.write:
            path = Path(args.write)
            path.write_text(with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            print(options_table(), file=out)
        return 0
    if args.config_command == "check":
        return _check(args.file, args.strict, out, err)
    handler = _Collect()
    logger = logging.getLogger("ragtrace")
    logger.addHandler(handler)
    try:
        config = start_config(config_file=args.config)
    except ValueError as exc:
        print(f"ragtrace config: {one_line(exc)}", file=err)
        return 2
    finally:
        logger.removeHandler(handler)
    for message in handler.messages:
        print(f"warning: {message}", file=err)
    width = max(len(o.name) for o in options(Config))
    for opt in options(Config):
        given = getattr(config, opt.name)
        value = UNSET.get(opt.name, "none") if given is None else show(given)
        print(f"{opt.name:<{width}}  {value}  ({config.sources[opt.name]})", file=out)
    return 0


def _check(path: str, strict: bool, out: TextIO, err: TextIO) -> int:
    """Every mistake of one file (not the environment's), and what it ignores."""
    try:
        try:
            layer = read_file(path, Config)
        except SettingsError as exc:
            raise with_section_errors(exc) from None
        evaluation_config(resolve(Config, {}, {}, layer))
    except ValueError as exc:
        print(str(exc), file=err)
        return 1
    for message in layer.warnings:
        print(f"warning: {message}", file=err)
    noted = f" ({len(layer.warnings)} ignored keys)" if layer.warnings else ""
    print(f"{path}: ok{noted}", file=out)
    return 1 if strict and layer.warnings else 0


class _Collect(logging.Handler):
    """Keeps the configuration warnings logged while resolving."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
