"""Which evaluators ``ragtrace eval`` runs, and with which options.

Evaluators come from ``--evaluators a,b`` (registry names), with options from
``--option a.key=value``, and/or from the ``evaluators`` section of a settings file
(``--config settings.yaml``, read by ``ragtrace._config``; its other sections are ignored
offline, where every record is evaluated). Both go through ``ragtrace._config``, so an
unknown name or option fails the same way as in a settings file, with a did-you-mean.

- ``--config`` alone: every evaluator the file configures.
- ``--config`` and ``--evaluators``: the named ones; a configured name keeps the file's options,
  another is built with its defaults and its ``--option`` values.
- ``--option`` for an evaluator the file configures is refused: change the file instead (the
  file's entry is built as written, so the two cannot be merged safely).

An ``--option`` value is read as JSON when it parses (``0.6``, ``true``, ``["a", "b"]``,
``"quoted"``), otherwise taken as a plain string (``groundedness.model=my/model``).

In code (``ragtrace.evaluate``), ``evaluators_from(specs)`` takes names (``"faithfulness"``, or
several comma-separated), ``(name, options)`` pairs, mappings with a ``name`` (a settings file's
entries) and ``Evaluator`` objects, through the same settings code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypeGuard

from ragtrace._config import SettingsError
from ragtrace._runtime.evaluation_settings import load_settings, settings_from_mapping
from ragtrace.evaluators._base import Evaluator

OPTION_FORM = "EVALUATOR.KEY=VALUE"
OPTION_EXAMPLE = "groundedness.threshold=0.6"

EvaluatorSpec: TypeAlias = str | Evaluator | tuple[str, Mapping[str, Any]] | Mapping[str, Any]
"""One evaluator for ``ragtrace.evaluate`` and ``ragtrace.testing.assert_scores``: a registry
name (``"faithfulness"``, or several comma-separated), a ``(name, options)`` pair, a settings
file's entry (``{"name": ..., **options}``) or an ``Evaluator`` object."""
SPEC_FORMS = "an evaluator name, a (name, options) pair, a mapping with a 'name', or an Evaluator"


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
    return _built(entries, "--evaluators")


def evaluators_from(
    specs: EvaluatorSpec | Sequence[EvaluatorSpec], where: str = "evaluators"
) -> list[Evaluator]:
    """The evaluators ``specs`` describe, in order (see the module docstring).

    Raises:
        SelectionError: None given, a spec of another type, an unknown name or option, a bad
            value, or an evaluator that cannot be built; ``where`` starts the message.
    """
    entries: list[Evaluator | dict[str, Any]] = []
    for index, spec in enumerate(spec_list(specs)):
        if isinstance(spec, Evaluator):
            entries.append(spec)
        elif isinstance(spec, str):
            names = split_names([spec])
            if not names:
                raise SelectionError(f"{where}[{index}]: an empty evaluator name")
            entries.extend({"name": name} for name in names)
        elif _is_pair(spec):
            name, options = spec  # options may hold a 'name' of their own (judge_geval's)
            entries.append({"name": name, "options": dict(options)})
        elif isinstance(spec, Mapping) and "name" in spec:
            entries.append(dict(spec))
        else:
            raise SelectionError(
                f"{where}[{index}]: expected {SPEC_FORMS}; got {type(spec).__name__} {spec!r:.80}"
            )
    if not entries:
        raise SelectionError(f"{where}: no evaluators given; e.g. ['faithfulness']")
    return _built(entries, where)


def spec_list(specs: EvaluatorSpec | Sequence[EvaluatorSpec]) -> list[EvaluatorSpec]:
    """``specs`` as a list: one spec (a name, an object, a pair, a mapping) becomes a list of it."""
    if isinstance(specs, str | Evaluator | Mapping) or _is_pair(specs):
        return [specs]
    if isinstance(specs, Iterable):
        return list(specs)
    return [specs]


def _is_pair(spec: object) -> TypeGuard[tuple[str, Mapping[str, Any]]]:
    return (
        isinstance(spec, tuple)
        and len(spec) == 2
        and isinstance(spec[0], str)
        and isinstance(spec[1], Mapping)
    )


def _built(entries: list[Evaluator | dict[str, Any]], where: str) -> list[Evaluator]:
    try:
        return list(settings_from_mapping({"evaluators": entries}, where).evaluators)
    except SettingsError as exc:
        raise SelectionError(str(exc)) from None


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
