"""Building a ``Config`` from its sources, one rule for every key.

explicit argument > ``RAGTRACE_*`` environment variable > settings file > default, key by
key: a source that does not name a key leaves it to the next one.

A value that cannot be used stops the start, whatever its source and whatever the option:

- explicit (code, a command-line flag) or environment: ``ConfigError`` naming every bad key
  (code: the option, environment: the variable) with its value and what it must be; a bad
  variable counts even where an explicit argument names the same key, as a bad file value does
  where a higher source names it: each source is checked whole;
- settings file: ``SettingsError`` listing every mistake of the file at once.

A ``RAGTRACE_*`` variable that is no option and none of ``ragtrace._config.variables``, and a
settings-file key that is no option, are names rather than values: each is logged once with the
closest known name.

The file is read by ``ragtrace._config.settings_file`` into a ``FileLayer``; a queue URL's
options are checked on every source's value through its ``check_value``. What only later parts
of ragtrace can judge (that an evaluator name is registered, a sampling section's rules) is
checked by the runtime when it builds them (``ragtrace._runtime.evaluation_settings``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from ragtrace._config.options import ENV_PREFIX, ConfigError, Option, options
from ragtrace._config.settings_file import FileLayer, check_value, read_file
from ragtrace._config.suggestions import suggest
from ragtrace._config.variables import VARIABLES

logger = logging.getLogger("ragtrace")
C = TypeVar("C")
"""The configuration class (``ragtrace._config.Config``) being built."""

EXPLICIT, ENV, FILE, DEFAULT = "explicit", "env", "file", "default"
_logged: set[str] = set()
_log_lock = threading.Lock()


def log_once(message: str) -> None:
    """Log a configuration warning the first time this process sees it."""
    with _log_lock:
        if message in _logged:
            return
        _logged.add(message)
    logger.warning("%s", message)


def resolve(
    cls: type[C],
    env: Mapping[str, str] | None,
    explicit: Mapping[str, Any],
    layer: FileLayer | None = None,
) -> C:
    """``Config.resolve`` (see the module docstring); ``layer`` stands for the settings file
    (a file already read, or a mapping: ``read_layer``)."""
    env = os.environ if env is None else env
    declared = {o.name: o for o in options(cls)}
    unknown = sorted(set(explicit) - set(declared))
    if unknown:
        raise ConfigError(
            [f"unknown option {name!r}{suggest(name, declared, show=str)}" for name in unknown]
        )
    given = {k: v for k, v in explicit.items() if v is not None}
    values, problems = _checked(declared, given)
    from_env, bad_env = _environment(declared.values(), env)
    problems += bad_env.values()
    if problems:
        raise ConfigError(problems)
    sources = dict.fromkeys(values, EXPLICIT)
    _warn_unknown_variables(env, declared.values())
    path = values.get("config_file", from_env.get("config_file"))
    if layer is None:
        layer = read_file(path, cls) if path else FileLayer("")
    for message in layer.warnings:
        log_once(message)
    for opt in declared.values():
        if opt.name in values:
            continue
        if opt.name in from_env:
            values[opt.name], sources[opt.name] = from_env[opt.name], opt.env or ENV
        elif opt.name in layer.values:
            values[opt.name], sources[opt.name] = layer.values[opt.name], layer.source
    config = cls(**values)
    object.__setattr__(config, "_sources", MappingProxyType(sources))
    return config


def _checked(
    declared: Mapping[str, Option], given: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in given.items():
        try:
            values[name] = declared[name].accept(value)
            check_value(name, values[name])
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    return values, problems


def _environment(declared: Any, env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Values of the options' variables that are set, and the problems of the bad ones. A
    variable set to blanks counts as unset, except for a list (``RAGTRACE_EVALUATORS=``: none)."""
    values: dict[str, Any] = {}
    bad: dict[str, str] = {}
    for opt in declared:
        raw = None if opt.env is None else env.get(opt.env)
        if raw is None or (not raw.strip() and not opt.kind.listed):
            continue
        try:
            value = opt.parse(raw)
            check_value(opt.name, value)
            values[opt.name] = value
        except ValueError as exc:
            bad[opt.name] = f"{opt.env}: {exc}"
    return values, bad


def known_variables(declared: Any) -> set[str]:
    """Every ``RAGTRACE_*`` variable ragtrace reads: the options' and ``VARIABLES``."""
    return {o.env for o in declared if o.env} | set(VARIABLES)


def _warn_unknown_variables(env: Mapping[str, str], declared: Any) -> None:
    known = known_variables(declared)
    suffixes = {k.removeprefix(ENV_PREFIX): k for k in known}
    for name in env:
        if name.startswith(ENV_PREFIX) and name not in known:
            suffix = name.removeprefix(ENV_PREFIX)
            hint = suggest(suffix, suffixes, cutoff=0.75, show=suffixes.__getitem__) or (
                "; see the options table in docs/configuration.md"
            )
            log_once(f"ragtrace config: unknown environment variable {name}{hint}")
