"""The command line, held to the same rules as the options.

Every number a ``ragtrace`` command takes on its command line goes through ``number`` (or
``positive``), as an option's value goes through its ``Kind``: it must be finite (``nan`` and
``inf`` are refused, as everywhere in the configuration) and in range. A flag that sets a
``Config`` option reads its text exactly as that option's ``RAGTRACE_*`` variable is read
(``option_value``). A bad flag stops the command with one line (``ArgumentParser``), exit 2,
before it starts anything::

    parser = ArgumentParser(prog="ragtrace")
    parser.add_argument("--reclaim-idle-s", type=positive(float))
    parser.add_argument("--min-gain", type=number(float, 0, 1, inclusive=True))
    parser.add_argument("--metrics-port", type=option_value("metrics_port"))
    option_flag(parser, "--sink", "sinks", repeatable=True)  # args.sinks; given_options(args)
    declared_flags(parser)  # a flag for each option declared with ``flag=Flag(...)``

A sub-command also runs on its own, as ``ragtrace <command>`` parses it (``run_subcommand``)::

    def main(argv: Sequence[str] | None = None) -> int:
        return run_subcommand("report", add_parser, run, argv)
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ragtrace._config.declared import Config
from ragtrace._config.options import ConfigError, options
from ragtrace._config.settings_file import SettingsError, check_value


class ArgumentParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose mistakes are one line on stderr, exit 2:
    ``ragtrace ingest: argument --quiet-s: must be > 0, got -1; see ragtrace ingest --help``,
    never the usage block. Its sub-commands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {one_line(message)}; see {self.prog} --help\n")


def run_subcommand(
    command: str,
    add_parser: Callable[[Any], object],
    run: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None = None,
    *,
    prog: str = "ragtrace",
) -> int:
    """Run one sub-command of ``prog`` on its own: ``add_parser`` adds it to the sub-parsers,
    ``argv`` (default ``sys.argv[1:]``) are its arguments, ``run`` runs the parsed arguments
    and returns the exit status."""
    parser = ArgumentParser(prog=prog)
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args([command, *(sys.argv[1:] if argv is None else argv)]))


def one_line(problem: BaseException | str) -> str:
    """A bad setting as the one line a command prints: every problem of a ``ConfigError`` or
    ``SettingsError``, joined with ``; ``."""
    if isinstance(problem, ConfigError):
        return "; ".join(problem.problems)
    if isinstance(problem, SettingsError):
        return "; ".join(problem.errors)
    return "; ".join(line for line in str(problem).splitlines() if line.strip())


def number(
    kind: type[int] | type[float],
    low: float,
    high: float | None = None,
    what: str = "a number",
    *,
    above_low: bool = False,
    inclusive: bool = False,
) -> Callable[[str], int | float]:
    """An argparse ``type``: a finite ``kind`` of ``text`` that is at least ``low`` (more than
    ``low`` with ``above_low``) and under ``high`` (at most ``high`` with ``inclusive``)."""
    bounds = f"> {low:g}" if above_low else f">= {low:g}"
    if high is not None:
        bounds += f" and {'<=' if inclusive else '<'} {high:g}"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {what}, got {text!r} (must be {bounds})"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(
                f"expected a finite number, got {text!r} (must be {bounds})"
            )
        low_ok = value > low if above_low else value >= low
        high_ok = high is None or (value <= high if inclusive else value < high)
        if not (low_ok and high_ok):
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value

    return parse


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse ``type``: a finite ``kind`` > 0."""
    return number(kind, 0, above_low=True)


OPTION_FLAGS = "_option_flags"
"""Where a parser notes the ``Config`` options its ``option_flag``s set (a hidden default)."""


def option_flag(
    parser: argparse.ArgumentParser, flag: str, name: str, *, repeatable: bool = False, **kw: Any
) -> None:
    """Add ``flag`` that sets the ``Config`` option ``name``: read as its variable is
    (``option_value``), kept as ``args.<name>``, and collected by ``given_options``.
    ``repeatable``: a list option whose flag may be given again (``--sink A --sink B``), each
    adding to the list."""
    action = "append" if repeatable else "store"
    parser.add_argument(flag, dest=name, type=option_value(name), action=action, **kw)
    noted = parser.get_default(OPTION_FLAGS) or ()
    parser.set_defaults(**{OPTION_FLAGS: (*noted, name)})


def declared_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flag of every ``Config`` option declared with one (``option(..., flag=Flag(...))``:
    the services' endpoints and sinks), in declaration order, each an ``option_flag``."""
    for opt in options(Config):
        if opt.flag is not None:
            option_flag(
                parser,
                opt.flag.name,
                opt.name,
                repeatable=opt.flag.repeatable,
                metavar=opt.flag.metavar,
                help=opt.flag.help or opt.help,
            )


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Config`` options the parsed ``option_flag``s set, by option name (None: the flag
    was not given, so the environment, the settings file or the default decide)."""
    given: dict[str, Any] = {}
    for name in getattr(args, OPTION_FLAGS, ()):
        value = getattr(args, name)
        if isinstance(value, list):  # a repeatable flag: each given a list of its own
            value = tuple(item for each in value for item in each)
        given[name] = value
    return given


def option_value(name: str) -> Callable[[str], Any]:
    """An argparse ``type`` for a flag that sets the ``Config`` option ``name``: its text is
    read and checked as the option's ``RAGTRACE_*`` variable would be."""
    (opt,) = (o for o in options(Config) if o.name == name)

    def parse(text: str) -> Any:
        try:
            value = opt.parse(text)
            check_value(name, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    return parse
