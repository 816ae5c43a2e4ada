"""Which evaluators ``ragtrace eval`` runs, and with which options.

Evaluators come from ``--evaluators a,b`` (registry names), with options from
``--option a.key=value``, and/or from the ``evaluators`` section of a settings file
(``--config settings.yaml``, read by ``ragtrace.settings``; its other sections are ignored
offline, where every record is evaluated). Both go through ``ragtrace.settings``, so an
unknown name or option fails the same way as in a settings file, with a did-you-mean.

- ``--config`` alone: every evaluator the file configures.
- ``--config`` and ``--evaluators``: the named ones; a configured name keeps the file's options,
  another is built with its defaults and its ``--option`` values.
- ``--option`` for an evaluator the file configures is refused: change the file instead (the
  file's entry is built as written, so the two cannot be merged safely).

An ``--option`` value is read as JSON when it parses (``0.6``, ``true``, ``["a", "b"]``,
``"quoted"``), otherwise taken as a plain string (``groundedness.model=my/model``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ragtrace.evaluators.base import Evaluator
from ragtrace.settings import SettingsError, load_settings, settings_from_mapping

OPTION_FORM = "EVALUATOR.KEY=VALUE"
OPTION_EXAMPLE = "groundedness.threshold=0.6"


class SelectionError(ValueError):
    """The evaluators or their options cannot be used; the message says why."""


def split_names(values: Iterable[str] | None) -> list[str]:
    """Names from ``--evaluators`` values (each comma-separated), in order, blanks dropped."""
    return [n.strip() for value in values or () for n in value.split(",") if n.strip()]


def parse_options(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["a.key=value", ...]`` as ``{"a": {"key": value}}`` (values read as JSON if they parse).

    Raises:
        SelectionError: An item is not ``EVALUATOR.KEY=VALUE`` or sets a key twice.
    """
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        key, equals, raw = item.partition("=")
        name, dot, option = key.strip().partition(".")
        if not equals or not dot or not name or not option:
            raise SelectionError(
                f"--option {item!r}: expected {OPTION_FORM}, e.g. --option {OPTION_EXAMPLE}"
            )
        if option in options.get(name, {}):
            raise SelectionError(f"--option {name}.{option} is given twice")
        options.setdefault(name, {})[option] = _value(raw)
    return options


def build_evaluators(
    names: Sequence[str], options: dict[str, dict[str, Any]], config: str | None = None
) -> list[Evaluator]:
    """The evaluators to run, in order (see the module docstring for how the inputs combine).

    Raises:
        SelectionError: Nothing to run, an unknown name or option, a bad value, a settings file
            that cannot be read, or an evaluator that cannot be built (a missing extra, ...).
    """
    configured: dict[str, Evaluator] = {}
    if config is not None:
        try:
            configured = {e.name: e for e in load_settings(config).evaluators}
        except SettingsError as exc:
            raise SelectionError(str(exc)) from None
        if not names:
            names = list(configured)
        clash = sorted(set(options) & set(configured))
        if clash:
            raise SelectionError(
                f"--option for {', '.join(clash)}: configured in {config}; "
                "set the option in the file instead"
            )
    if not names:
        where = f"{config} configures none" if config else "none given"
        raise SelectionError(
            f"no evaluators to run ({where}): pass --evaluators a,b or --config settings.yaml"
        )
    unused = sorted(set(options) - set(names))
    if unused:
        raise SelectionError(
            f"--option for {', '.join(unused)}, which is not among the evaluators to run "
            f"({', '.join(names)})"
        )
    entries: list[Evaluator | dict[str, Any]] = [
        configured[n] if n in configured else {"name": n, **options.get(n, {})} for n in names
    ]
    try:
        return list(settings_from_mapping({"evaluators": entries}, "--evaluators").evaluators)
    except SettingsError as exc:
        raise SelectionError(str(exc)) from None


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
