"""One declaration per option: ``option(...)`` on a ``Config`` field says everything about it.

A field declared ``max_chunks: int = option(50, "chunks kept ...", check=at_least(1),
file="capture.max_chunks")`` is, from that one line:

- a ``Config`` field (the annotation and the default) and an ``init(max_chunks=...)`` keyword;
- the environment variable ``RAGTRACE_MAX_CHUNKS`` (``env=False``: none; ``env="NAME"``: that
  name), read as the field's ``Kind`` says (from the annotation, or ``kind=``);
- the settings-file key ``capture.max_chunks`` (default: the field name at the top level;
  ``file=None``: not in the file);
- the checks every value goes through, whatever its source (``check=``);
- a row of the options table of docs/configuration.md (``help``, the sources, the default,
  the check);
- with ``flag=Flag("--max-chunks", "N", help)``, a flag of ``ragtrace worker`` and ``ragtrace
  ingest`` that sets it (``ragtrace._config.arguments.declared_flags``).

``options(Config)`` lists the declared ``Option``s in field order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragtrace._config.checks import Check
from ragtrace._config.kinds import BY_ANNOTATION, Kind

T = TypeVar("T")
ENV_PREFIX = "RAGTRACE_"
_META = "ragtrace.option"


@dataclass(frozen=True)
class Flag:
    """The command-line flag of the services (``ragtrace worker``, ``ragtrace ingest``) that
    sets an option, read as its variable is.

    Attributes:
        name: The flag (``--phoenix-endpoint``).
        metavar: What its value is called in ``--help`` (``URL``).
        help: Its line in ``--help`` (None: the option's ``help``).
        repeatable: A list option whose flag may be given again, each adding to the list.
    """

    name: str
    metavar: str
    help: str | None = None
    repeatable: bool = False


@dataclass(frozen=True)
class Declaration:
    """What ``option()`` was told (the field supplies the name, annotation and default)."""

    help: str
    check: Check | None
    env: bool | str
    file: str | bool | None
    kind: Kind | None
    flag: Flag | None = None


@dataclass(frozen=True)
class Option:
    """Everything about one option.

    Attributes:
        name: The ``Config`` field and ``init`` keyword.
        help: What it does, one line.
        default: Its value when no source sets it.
        kind: How its values are read and checked.
        check: The range or shape its values must have (None: any value of its kind).
        env: Its environment variable, or None.
        file: Its dotted key in the settings file, or None.
        flag: The services' flag that sets it, or None.
    """

    name: str
    help: str
    default: Any
    kind: Kind
    check: Check | None
    env: str | None
    file: str | None
    flag: Flag | None = None

    def accept(self, value: object, *, read_text: bool = True) -> Any:
        """``value`` checked and normalised (a list becomes a tuple, an int a float, ...);
        ``read_text``: see ``Kind.from_value``.

        Raises:
            ValueError: Saying what the value must be and what it got (the caller names the
                option and its source).
        """
        with self._saying_the_rule():
            kept = self.kind.from_value(value, read_text=read_text)
        if kept is not None and self.check is not None:
            self.check(kept)
        return kept

    def parse(self, text: str) -> Any:
        """The value an environment variable's ``text`` stands for, checked."""
        with self._saying_the_rule():
            value = self.kind.from_text(text)
        return self.accept(value)

    @contextmanager
    def _saying_the_rule(self) -> Iterator[None]:
        """A value its kind refuses (``nan`` for a number) is told the check too: ``expected
        a finite number, got nan (must be >= 0)``."""
        try:
            yield
        except ValueError as exc:
            if self.check is None:
                raise
            raise ValueError(f"{exc} ({self.check})") from None


class ConfigError(ValueError, TypeError):
    """A bad option value, or an unknown option name; the message names each with its value.

    A ``ValueError`` (and, for callers that caught the ``TypeError`` an unknown name used to
    raise, a ``TypeError``). ``problems`` lists one line per mistake.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("ragtrace config: " + "; ".join(problems))


def short(value: object) -> str:
    """``repr(value)``, cut to 80 characters, for messages."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def option(
    default: T,
    help: str,
    *,
    check: Check | None = None,
    env: bool | str = True,
    file: str | bool | None = True,
    kind: Kind | None = None,
    flag: Flag | None = None,
) -> T:
    """Declare a ``Config`` field (see the module docstring)."""
    declared = Declaration(help, check, env, file, kind, flag)
    return field(default=default, metadata={_META: declared})


_declared: dict[type, tuple[Option, ...]] = {}


def options(cls: type) -> tuple[Option, ...]:
    """The declared options of a dataclass, in field order.

    Raises:
        TypeError: A field without ``option()``, or an annotation with no known kind.
    """
    if cls not in _declared:
        _declared[cls] = _collect(cls)
    return _declared[cls]


def _collect(cls: type) -> tuple[Option, ...]:
    found = []
    for f in dataclasses.fields(cls):
        declared = f.metadata.get(_META)
        if not isinstance(declared, Declaration):
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with option()")
        kind = declared.kind or BY_ANNOTATION.get(str(f.type))
        if kind is None:
            raise TypeError(f"{cls.__name__}.{f.name}: give kind= for annotation {f.type!r}")
        env: str | None = None
        if isinstance(declared.env, str):
            env = declared.env
        elif declared.env and kind.env:
            env = ENV_PREFIX + f.name.upper()
        path: str | None = f.name if declared.file is True else None
        if isinstance(declared.file, str):
            path = declared.file
        found.append(
            Option(
                f.name,
                declared.help,
                f.default,
                kind,
                declared.check,
                env,
                path,
                declared.flag,
            )
        )
    return tuple(found)
